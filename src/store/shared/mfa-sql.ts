/**
 * Statements of second factors on both backends (implements MfaRowStore, src/store/auth-store.ts;
 * docs/auth.md, "Two-factor sign-in"; docs/api.md, "Two-factor"), over the backend-neutral
 * SqlReader (src/store/backend.ts): `_totpFactors` (TOTP seeds, encrypted, with the last accepted
 * time step), `_recoveryCodes` (hashed, single use), `_mfaAttempts` (pending logins, enrollments
 * and management capabilities with their tries) and `_mfaTries` (the durable per-account limit).
 * WebAuthn factors live in `_passkeys` (factor = 1, src/store/shared/link-sql.ts). The tables
 * themselves are created by each backend's bootstrap: MFA_DDL of src/store/sqlite/mfa-sql.ts,
 * SYSTEM_DDL of src/store/pg/bootstrap.ts.
 *
 * Integers (`lastStep`, `tries`, `expires`, counts: BigInt from SQLite and from PostgreSQL's
 * bigint, numbers from its integer) are answered as numbers on both backends. SQLite accepts an empty `IN ()`; PostgreSQL does not, so dropping
 * the attempts of no purpose is spelled, on both, as a statement that deletes nothing (`false`).
 * What the backends spell differently is in {@link TOTP_ORDER}.
 */
import type { WriteStep } from '../write-job.js';
import type { MfaAttemptRow, MfaRowStore, StepFail } from '../auth-store.js';
import type { BackendKind, SqlReader } from '../backend.js';
import { slotList } from '../slots.js';

/**
 * The ORDER BY of a record's TOTP factors, per backend. SQLite orders by `created` and leaves its
 * ties to its index order; PostgreSQL breaks them by the factor id.
 */
export const TOTP_ORDER: Readonly<Record<BackendKind, string>> = { sqlite: '"created"', postgres: '"created", "id"' };

/**
 * The statement that serialises proof reservations of one account (its one parameter: the
 * `collectionId/recordId` key), per backend, run first in the reserving job
 * ({@link MfaSql.reserveTrySteps}). SQLite needs none: one writer thread applies every job in
 * turn. On PostgreSQL several instances write at once, so two of them could each count the
 * account's proofs before either inserts its own: a transaction-scoped advisory lock on the
 * account makes the second wait for the first's commit.
 */
export const MFA_ACCOUNT_LOCK: Readonly<Record<BackendKind, string>> = {
  sqlite: '',
  postgres: 'SELECT pg_advisory_xact_lock(hashtext(CAST($1 AS text)))',
};

/**
 * The second-factor store over one backend's reader; `totpOrder`: that backend's
 * {@link TOTP_ORDER}.
 */
export class MfaSql implements MfaRowStore {
  /** `accountLock`: that backend's {@link MFA_ACCOUNT_LOCK} ('' for none). */
  constructor(private reader: SqlReader, private totpOrder: string, private accountLock = '') {}

  async totpFactors(collectionId: string, recordId: string): Promise<{ id: string; secret: string; lastStep: number }[]> {
    return (await this.reader.all(`SELECT "id","secret","lastStep" FROM "_totpFactors" WHERE "collectionId" = $1 AND "recordId" = $2 ORDER BY ${this.totpOrder}`, [collectionId, recordId]))
      .map((r) => ({ id: String(r[0]), secret: String(r[1]), lastStep: Number(r[2]) }));
  }

  addTotpStep(id: string, collectionId: string, recordId: string, secret: string, lastStep: number, created: string): WriteStep {
    return { sql: 'INSERT INTO "_totpFactors" ("id","collectionId","recordId","secret","lastStep","created") VALUES ($1,$2,$3,$4,$5,$6)', params: [id, collectionId, recordId, secret, lastStep, created] };
  }

  useTotpStep(id: string, step: number, fail: StepFail): WriteStep {
    return { sql: 'UPDATE "_totpFactors" SET "lastStep" = $1 WHERE "id" = $2 AND "lastStep" < $3', params: [step, id, step], expect: 'change', fail };
  }

  removeTotpStep(collectionId: string, recordId: string): WriteStep {
    return { sql: 'DELETE FROM "_totpFactors" WHERE "collectionId" = $1 AND "recordId" = $2', params: [collectionId, recordId] };
  }

  async recoveryCodes(collectionId: string, recordId: string): Promise<{ id: string; hash: string }[]> {
    return (await this.reader.all('SELECT "id","hash" FROM "_recoveryCodes" WHERE "collectionId" = $1 AND "recordId" = $2', [collectionId, recordId]))
      .map((r) => ({ id: String(r[0]), hash: String(r[1]) }));
  }

  replaceRecoveryStep(collectionId: string, recordId: string, codes: { id: string; hash: string }[], created: string): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_recoveryCodes" WHERE "collectionId" = $1 AND "recordId" = $2', params: [collectionId, recordId] },
      ...codes.map((c) => ({ sql: 'INSERT INTO "_recoveryCodes" ("id","collectionId","recordId","hash","created") VALUES ($1,$2,$3,$4,$5)', params: [c.id, collectionId, recordId, c.hash, created] })),
    ];
  }

  useRecoveryStep(id: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_recoveryCodes" WHERE "id" = $1', params: [id], expect: 'change', fail };
  }

  async attempt(id: string, collectionId: string): Promise<MfaAttemptRow | undefined> {
    const r = await this.reader.get('SELECT "id","hash","recordId","purpose","tries","data","expires" FROM "_mfaAttempts" WHERE "id" = $1 AND "collectionId" = $2', [id, collectionId]);
    return r
      ? { id: String(r[0]), hash: String(r[1]), collectionId, recordId: String(r[2]), purpose: String(r[3]) as MfaAttemptRow['purpose'], tries: Number(r[4]), data: String(r[5]), expires: Number(r[6]) }
      : undefined;
  }

  addAttemptSteps(row: MfaAttemptRow, created: string, nowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_mfaAttempts" WHERE "expires" <= $1', params: [nowMs] },
      {
        sql: 'INSERT INTO "_mfaAttempts" ("id","hash","collectionId","recordId","purpose","tries","data","expires","created") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)',
        params: [row.id, row.hash, row.collectionId, row.recordId, row.purpose, row.tries, row.data, row.expires, created],
      },
    ];
  }

  setAttemptDataStep(id: string, data: string): WriteStep {
    return { sql: 'UPDATE "_mfaAttempts" SET "data" = $1 WHERE "id" = $2', params: [data, id] };
  }

  failAttemptSteps(id: string, maxTries: number): WriteStep[] {
    return [
      { sql: 'UPDATE "_mfaAttempts" SET "tries" = "tries" + 1 WHERE "id" = $1', params: [id] },
      { sql: 'DELETE FROM "_mfaAttempts" WHERE "id" = $1 AND "tries" >= $2', params: [id, maxTries] },
    ];
  }

  consumeAttemptStep(id: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_mfaAttempts" WHERE "id" = $1', params: [id], expect: 'change', fail };
  }

  dropAttemptsStep(collectionId: string, recordId: string, purposes: readonly string[]): WriteStep {
    const among = purposes.length ? `"purpose" IN (${slotList(3, purposes.length)})` : 'false';
    return { sql: `DELETE FROM "_mfaAttempts" WHERE "collectionId" = $1 AND "recordId" = $2 AND ${among}`, params: [collectionId, recordId, ...purposes] };
  }

  async triesSince(collectionId: string, recordId: string, sinceMs: number): Promise<number> {
    const r = await this.reader.get('SELECT count(*) FROM "_mfaTries" WHERE "collectionId" = $1 AND "recordId" = $2 AND "at" > $3', [collectionId, recordId, sinceMs]);
    return r ? Number(r[0]) : 0;
  }

  reserveTrySteps(attemptId: string, maxTries: number, collectionId: string, recordId: string, nowMs: number, windowMs: number, limit: number, fail: { attempt: StepFail; account: StepFail }): WriteStep[] {
    const steps: WriteStep[] = [];
    if (this.accountLock) steps.push({ sql: this.accountLock, params: [`${collectionId}/${recordId}`] });
    steps.push(
      { sql: 'UPDATE "_mfaAttempts" SET "tries" = "tries" + 1 WHERE "id" = $1 AND "tries" < $2 AND "expires" > $3', params: [attemptId, maxTries, nowMs], expect: 'change', fail: fail.attempt },
      { sql: 'DELETE FROM "_mfaTries" WHERE "collectionId" = $1 AND "recordId" = $2 AND "at" <= $3', params: [collectionId, recordId, nowMs - windowMs] },
      {
        // the count and the insert are one statement of the job: no other proof of the account
        // is counted between them (one writer on SQLite, the account lock on PostgreSQL)
        sql: 'INSERT INTO "_mfaTries" ("collectionId","recordId","at") SELECT CAST($1 AS text), CAST($2 AS text), CAST($3 AS bigint) '
          + 'WHERE (SELECT count(*) FROM "_mfaTries" WHERE "collectionId" = $4 AND "recordId" = $5 AND "at" > $6) < $7',
        params: [collectionId, recordId, nowMs, collectionId, recordId, nowMs - windowMs, limit], expect: 'change', fail: fail.account,
      },
    );
    return steps;
  }

  dropSpentAttemptStep(id: string, maxTries: number): WriteStep {
    return { sql: 'DELETE FROM "_mfaAttempts" WHERE "id" = $1 AND "tries" >= $2', params: [id, maxTries] };
  }

  addTrySteps(collectionId: string, recordId: string, nowMs: number, windowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_mfaTries" WHERE "collectionId" = $1 AND "recordId" = $2 AND "at" <= $3', params: [collectionId, recordId, nowMs - windowMs] },
      { sql: 'INSERT INTO "_mfaTries" ("collectionId","recordId","at") VALUES ($1,$2,$3)', params: [collectionId, recordId, nowMs] },
    ];
  }
}
