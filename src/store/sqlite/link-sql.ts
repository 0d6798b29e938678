/**
 * SQLite statements of the two sign-in link tables (implements ExternalAuthRowStore and
 * PasskeyRowStore, src/store/auth-store.ts): `_externalAuths` (OAuth2 provider links, spec
 * 1-core-api.md "OAuth2") and `_passkeys` (WebAuthn credentials, "Passkey registration").
 */
import type { WriteStep } from '../write-job.js';
import type { ExternalAuthRowStore, PasskeyRow, PasskeyRowStore, StepFail } from '../auth-store.js';
import type { Reader } from './reader.js';

/** `_externalAuths` and `_passkeys` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const LINK_DDL = [
  `CREATE TABLE IF NOT EXISTS "_externalAuths" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "provider" TEXT NOT NULL, "providerId" TEXT NOT NULL, "created" TEXT NOT NULL,
    UNIQUE ("collectionId", "provider", "providerId"))`,
  `CREATE INDEX IF NOT EXISTS "_externalAuths_record" ON "_externalAuths" ("collectionId", "recordId")`,
  // credentialId: base64url of the raw credential id; publicKey: base64url COSE key; counter: the
  // authenticator's signature counter (0 when it keeps none); transports: JSON array
  `CREATE TABLE IF NOT EXISTS "_passkeys" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "publicKey" TEXT NOT NULL, "counter" INTEGER NOT NULL DEFAULT 0, "transports" TEXT NOT NULL DEFAULT '[]',
    "factor" INTEGER NOT NULL DEFAULT 0, "created" TEXT NOT NULL, "lastUsed" TEXT)`,
  `CREATE INDEX IF NOT EXISTS "_passkeys_record" ON "_passkeys" ("collectionId", "recordId")`,
];

export class SqliteExternalAuthSql implements ExternalAuthRowStore {
  constructor(private reader: Reader) {}

  recordFor(collectionId: string, provider: string, providerId: string): string | undefined {
    const row = this.reader.get('SELECT "recordId" FROM "_externalAuths" WHERE "collectionId" = ? AND "provider" = ? AND "providerId" = ?', [collectionId, provider, providerId]);
    return row ? String(row[0]) : undefined;
  }

  list(collectionId: string, recordIds: readonly string[]): { recordId: string; provider: string; providerId: string }[] {
    if (!recordIds.length) return [];
    const out: { recordId: string; provider: string; providerId: string }[] = [];
    // bounded IN lists: a page holds at most 500 records
    for (let i = 0; i < recordIds.length; i += 500) {
      const ids = recordIds.slice(i, i + 500);
      const rows = this.reader.all(`SELECT "recordId","provider","providerId" FROM "_externalAuths" WHERE "collectionId" = ? AND "recordId" IN (${ids.map(() => '?').join(',')}) ORDER BY "created", "provider"`, [collectionId, ...ids]);
      for (const r of rows) out.push({ recordId: String(r[0]), provider: String(r[1]), providerId: String(r[2]) });
    }
    return out;
  }

  linkStep(id: string, collectionId: string, recordId: string, provider: string, providerId: string, created: string): WriteStep {
    return {
      sql: 'INSERT INTO "_externalAuths" ("id","collectionId","recordId","provider","providerId","created") VALUES (?,?,?,?,?,?)',
      params: [id, collectionId, recordId, provider, providerId, created],
    };
  }

  unlinkStep(collectionId: string, recordId: string, provider: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_externalAuths" WHERE "collectionId" = ? AND "recordId" = ? AND "provider" = ?', params: [collectionId, recordId, provider], expect: 'change', fail };
  }
}

const COLS = '"id","recordId","publicKey","counter","transports","factor"';
const passkey = (r: unknown[]): PasskeyRow => ({ id: String(r[0]), recordId: String(r[1]), publicKey: String(r[2]), counter: Number(r[3]), transports: String(r[4]), factor: Number(r[5]) === 1 });

export class SqlitePasskeySql implements PasskeyRowStore {
  constructor(private reader: Reader) {}

  find(collectionId: string, credentialId: string): PasskeyRow | undefined {
    const r = this.reader.get(`SELECT ${COLS} FROM "_passkeys" WHERE "id" = ? AND "collectionId" = ?`, [credentialId, collectionId]);
    return r ? passkey(r) : undefined;
  }

  list(collectionId: string, recordId: string, factor?: boolean): PasskeyRow[] {
    const only = factor === undefined ? '' : ` AND "factor" = ${factor ? 1 : 0}`;
    return this.reader.all(`SELECT ${COLS} FROM "_passkeys" WHERE "collectionId" = ? AND "recordId" = ?${only} ORDER BY "created"`, [collectionId, recordId]).map(passkey);
  }

  removeStep(collectionId: string, recordId: string, id: string | null, fail: StepFail): WriteStep {
    if (id === null) return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = ? AND "recordId" = ? AND "factor" = 1', params: [collectionId, recordId] };
    return { sql: 'DELETE FROM "_passkeys" WHERE "collectionId" = ? AND "recordId" = ? AND "id" = ?', params: [collectionId, recordId, id], expect: 'change', fail };
  }

  addStep(collectionId: string, row: PasskeyRow, created: string): WriteStep {
    return {
      sql: 'INSERT INTO "_passkeys" ("id","collectionId","recordId","publicKey","counter","transports","factor","created") VALUES (?,?,?,?,?,?,?,?)',
      params: [row.id, collectionId, row.recordId, row.publicKey, row.counter, row.transports, row.factor ? 1 : 0, created],
    };
  }

  useStep(collectionId: string, credentialId: string, oldCounter: number, newCounter: number, now: string, fail: StepFail): WriteStep {
    return {
      sql: 'UPDATE "_passkeys" SET "counter" = ?, "lastUsed" = ? WHERE "id" = ? AND "collectionId" = ? AND "counter" = ?',
      params: [newCounter, now, credentialId, collectionId, oldCounter], expect: 'change', fail,
    };
  }
}
