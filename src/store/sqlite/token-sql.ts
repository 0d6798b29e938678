/**
 * SQLite statements of single-use verification and reset tokens (implements AuthTokenRowStore,
 * src/store/auth-store.ts): the `_authTokens` table and its reads and writes.
 */
import type { WriteStep } from '../write-job.js';
import type { AuthTokenRow, AuthTokenRowStore, StepFail } from '../auth-store.js';
import type { Reader } from './reader.js';

/** `_authTokens` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const AUTH_TOKENS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_authTokens" (
    "id" TEXT PRIMARY KEY NOT NULL, "hash" TEXT NOT NULL, "kind" TEXT NOT NULL, "collectionId" TEXT NOT NULL,
    "recordId" TEXT NOT NULL, "email" TEXT NOT NULL, "created" TEXT NOT NULL, "expires" INTEGER NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_authTokens_record" ON "_authTokens" ("collectionId", "recordId", "kind")`,
  // every issue deletes the expired rows first: without this index that is a scan of the table
  // (measured: issuing slowed to a few hundred tokens a second past 100,000 outstanding tokens)
  `CREATE INDEX IF NOT EXISTS "_authTokens_expires" ON "_authTokens" ("expires")`,
];

export class SqliteTokenSql implements AuthTokenRowStore {
  constructor(private reader: Reader) {}

  issueSteps(row: AuthTokenRow, nowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_authTokens" WHERE "expires" <= ?', params: [nowMs] }, // the table stays small: expired rows go
      {
        sql: 'INSERT INTO "_authTokens" ("id","hash","kind","collectionId","recordId","email","created","expires") VALUES (?,?,?,?,?,?,?,?)',
        params: [row.id, row.hash, row.kind, row.collectionId, row.recordId, row.email, row.created, row.expires],
      },
    ];
  }

  find(selector: string, kind: string, collectionId: string): Pick<AuthTokenRow, 'hash' | 'recordId' | 'email' | 'expires'> | undefined {
    const row = this.reader.get('SELECT "hash","recordId","email","expires" FROM "_authTokens" WHERE "id" = ? AND "kind" = ? AND "collectionId" = ?', [selector, kind, collectionId]);
    return row ? { hash: String(row[0]), recordId: String(row[1]), email: String(row[2]), expires: Number(row[3]) } : undefined;
  }

  consumeStep(selector: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_authTokens" WHERE "id" = ?', params: [selector], expect: 'change', fail };
  }

  latest(kind: string, collectionId: string, recordId: string): Pick<AuthTokenRow, 'id' | 'hash' | 'email' | 'expires'> | undefined {
    const row = this.reader.get('SELECT "id","hash","email","expires" FROM "_authTokens" WHERE "collectionId" = ? AND "recordId" = ? AND "kind" = ? ORDER BY "created" DESC, "rowid" DESC LIMIT 1', [collectionId, recordId, kind]);
    return row ? { id: String(row[0]), hash: String(row[1]), email: String(row[2]), expires: Number(row[3]) } : undefined;
  }

  dropAllSteps(kind: string, collectionId: string, recordId: string): WriteStep[] {
    return [{ sql: 'DELETE FROM "_authTokens" WHERE "collectionId" = ? AND "recordId" = ? AND "kind" = ?', params: [collectionId, recordId, kind] }];
  }
}
