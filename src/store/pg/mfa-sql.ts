/**
 * PostgreSQL statements of second factors (implements MfaRowStore, src/store/auth-store.ts;
 * issue 24): the counterpart of src/store/sqlite/mfa-sql.ts over `_totpFactors`,
 * `_recoveryCodes`, `_mfaAttempts` and `_mfaTries` of bootstrap.ts. WebAuthn factors live in
 * `_passkeys` (factor = 1, link-sql.ts).
 *
 * Integers (`lastStep`, `tries`, `expires`, counts) are read as BigInt and answered as numbers,
 * as on SQLite. SQLite accepts an empty `IN ()`; PostgreSQL does not, so dropping the attempts of
 * no purpose is spelled as a statement that deletes nothing.
 */
import type { WriteStep } from '../write-job.js';
import type { MfaAttemptRow, MfaRowStore, StepFail } from '../auth-store.js';
import type { PgReader } from './reader.js';

export class PgMfaSql implements MfaRowStore {
  constructor(private reader: PgReader) {}

  totpFactors(collectionId: string, recordId: string): { id: string; secret: string; lastStep: number }[] {
    return this.reader.all('SELECT "id","secret","lastStep" FROM "_totpFactors" WHERE "collectionId" = ? AND "recordId" = ? ORDER BY "created", "id"', [collectionId, recordId])
      .map((r) => ({ id: String(r[0]), secret: String(r[1]), lastStep: Number(r[2]) }));
  }

  addTotpStep(id: string, collectionId: string, recordId: string, secret: string, lastStep: number, created: string): WriteStep {
    return { sql: 'INSERT INTO "_totpFactors" ("id","collectionId","recordId","secret","lastStep","created") VALUES (?,?,?,?,?,?)', params: [id, collectionId, recordId, secret, lastStep, created] };
  }

  useTotpStep(id: string, step: number, fail: StepFail): WriteStep {
    return { sql: 'UPDATE "_totpFactors" SET "lastStep" = ? WHERE "id" = ? AND "lastStep" < ?', params: [step, id, step], expect: 'change', fail };
  }

  removeTotpStep(collectionId: string, recordId: string): WriteStep {
    return { sql: 'DELETE FROM "_totpFactors" WHERE "collectionId" = ? AND "recordId" = ?', params: [collectionId, recordId] };
  }

  recoveryCodes(collectionId: string, recordId: string): { id: string; hash: string }[] {
    return this.reader.all('SELECT "id","hash" FROM "_recoveryCodes" WHERE "collectionId" = ? AND "recordId" = ?', [collectionId, recordId])
      .map((r) => ({ id: String(r[0]), hash: String(r[1]) }));
  }

  replaceRecoveryStep(collectionId: string, recordId: string, codes: { id: string; hash: string }[], created: string): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_recoveryCodes" WHERE "collectionId" = ? AND "recordId" = ?', params: [collectionId, recordId] },
      ...codes.map((c) => ({ sql: 'INSERT INTO "_recoveryCodes" ("id","collectionId","recordId","hash","created") VALUES (?,?,?,?,?)', params: [c.id, collectionId, recordId, c.hash, created] })),
    ];
  }

  useRecoveryStep(id: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_recoveryCodes" WHERE "id" = ?', params: [id], expect: 'change', fail };
  }

  attempt(id: string, collectionId: string): MfaAttemptRow | undefined {
    const r = this.reader.get('SELECT "id","hash","recordId","purpose","tries","data","expires" FROM "_mfaAttempts" WHERE "id" = ? AND "collectionId" = ?', [id, collectionId]);
    return r
      ? { id: String(r[0]), hash: String(r[1]), collectionId, recordId: String(r[2]), purpose: String(r[3]) as MfaAttemptRow['purpose'], tries: Number(r[4]), data: String(r[5]), expires: Number(r[6]) }
      : undefined;
  }

  addAttemptSteps(row: MfaAttemptRow, created: string, nowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_mfaAttempts" WHERE "expires" <= ?', params: [nowMs] },
      {
        sql: 'INSERT INTO "_mfaAttempts" ("id","hash","collectionId","recordId","purpose","tries","data","expires","created") VALUES (?,?,?,?,?,?,?,?,?)',
        params: [row.id, row.hash, row.collectionId, row.recordId, row.purpose, row.tries, row.data, row.expires, created],
      },
    ];
  }

  setAttemptDataStep(id: string, data: string): WriteStep {
    return { sql: 'UPDATE "_mfaAttempts" SET "data" = ? WHERE "id" = ?', params: [data, id] };
  }

  failAttemptSteps(id: string, maxTries: number): WriteStep[] {
    return [
      { sql: 'UPDATE "_mfaAttempts" SET "tries" = "tries" + 1 WHERE "id" = ?', params: [id] },
      { sql: 'DELETE FROM "_mfaAttempts" WHERE "id" = ? AND "tries" >= ?', params: [id, maxTries] },
    ];
  }

  consumeAttemptStep(id: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_mfaAttempts" WHERE "id" = ?', params: [id], expect: 'change', fail };
  }

  dropAttemptsStep(collectionId: string, recordId: string, purposes: readonly string[]): WriteStep {
    const among = purposes.length ? `"purpose" IN (${purposes.map(() => '?').join(',')})` : 'false';
    return { sql: `DELETE FROM "_mfaAttempts" WHERE "collectionId" = ? AND "recordId" = ? AND ${among}`, params: [collectionId, recordId, ...purposes] };
  }

  triesSince(collectionId: string, recordId: string, sinceMs: number): number {
    const r = this.reader.get('SELECT count(*) FROM "_mfaTries" WHERE "collectionId" = ? AND "recordId" = ? AND "at" > ?', [collectionId, recordId, sinceMs]);
    return r ? Number(r[0]) : 0;
  }

  addTrySteps(collectionId: string, recordId: string, nowMs: number, windowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_mfaTries" WHERE "collectionId" = ? AND "recordId" = ? AND "at" <= ?', params: [collectionId, recordId, nowMs - windowMs] },
      { sql: 'INSERT INTO "_mfaTries" ("collectionId","recordId","at") VALUES (?,?,?)', params: [collectionId, recordId, nowMs] },
    ];
  }
}
