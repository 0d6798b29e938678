/**
 * PostgreSQL statements of single-use verification and reset tokens (implements
 * AuthTokenRowStore, src/store/auth-store.ts; issue 24): the counterpart of
 * src/store/sqlite/token-sql.ts over the `_authTokens` table of bootstrap.ts.
 *
 * `expires` is bigint (epoch ms), read as BigInt and answered as a number as on SQLite. SQLite
 * breaks a tie of `created` in `latest` by rowid (insertion order); `_authTokens` has no such
 * column on PostgreSQL, so a tie (two tokens of one record in the same millisecond) is broken by
 * the selector instead.
 */
import type { WriteStep } from '../write-job.js';
import type { AuthTokenRow, AuthTokenRowStore, StepFail } from '../auth-store.js';
import type { PgReader } from './reader.js';

export class PgTokenSql implements AuthTokenRowStore {
  constructor(private reader: PgReader) {}

  issueSteps(row: AuthTokenRow, nowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_authTokens" WHERE "expires" <= ?', params: [nowMs] }, // the table stays small: expired rows go (index _authTokens_expires)
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
    const row = this.reader.get(
      'SELECT "id","hash","email","expires" FROM "_authTokens" WHERE "collectionId" = ? AND "recordId" = ? AND "kind" = ? ORDER BY "created" DESC, "id" DESC LIMIT 1',
      [collectionId, recordId, kind],
    );
    return row ? { id: String(row[0]), hash: String(row[1]), email: String(row[2]), expires: Number(row[3]) } : undefined;
  }

  dropAllSteps(kind: string, collectionId: string, recordId: string): WriteStep[] {
    return [{ sql: 'DELETE FROM "_authTokens" WHERE "collectionId" = ? AND "recordId" = ? AND "kind" = ?', params: [collectionId, recordId, kind] }];
  }
}
