/**
 * Statements of single-use verification and reset tokens on both backends (implements
 * AuthTokenRowStore, src/store/auth-store.ts): the `_authTokens` table and its reads and writes,
 * over the backend-neutral SqlReader (src/store/backend.ts). The table itself is created by each
 * backend's bootstrap: AUTH_TOKENS_DDL of src/store/sqlite/token-sql.ts, SYSTEM_DDL of
 * src/store/pg/bootstrap.ts.
 *
 * `expires` is epoch ms (SQLite INTEGER; PostgreSQL bigint, read as BigInt), answered as a
 * number on both. What the backends spell differently is in {@link TOKEN_TIE_BREAK}.
 */
import type { WriteStep } from '../write-job.js';
import type { AuthTokenRow, AuthTokenRowStore, StepFail } from '../auth-store.js';
import type { BackendKind, SqlReader } from '../backend.js';

/**
 * What breaks a tie of `created` in `latest` (`ORDER BY "created" DESC, <this> DESC`), per
 * backend. SQLite breaks it by rowid (insertion order); `_authTokens` has no such column on
 * PostgreSQL, so a tie (two tokens of one record in the same millisecond) is broken by the
 * selector (the token's id) instead.
 */
export const TOKEN_TIE_BREAK: Readonly<Record<BackendKind, string>> = { sqlite: '"rowid"', postgres: '"id"' };

/**
 * The token store over one backend's reader; `tieBreak`: that backend's {@link TOKEN_TIE_BREAK}.
 */
export class TokenSql implements AuthTokenRowStore {
  constructor(private reader: SqlReader, private tieBreak: string) {}

  issueSteps(row: AuthTokenRow, nowMs: number): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_authTokens" WHERE "expires" <= $1', params: [nowMs] }, // the table stays small: expired rows go (index _authTokens_expires)
      {
        sql: 'INSERT INTO "_authTokens" ("id","hash","kind","collectionId","recordId","email","created","expires") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)',
        params: [row.id, row.hash, row.kind, row.collectionId, row.recordId, row.email, row.created, row.expires],
      },
    ];
  }

  async find(selector: string, kind: string, collectionId: string): Promise<Pick<AuthTokenRow, 'hash' | 'recordId' | 'email' | 'expires'> | undefined> {
    const row = await this.reader.get('SELECT "hash","recordId","email","expires" FROM "_authTokens" WHERE "id" = $1 AND "kind" = $2 AND "collectionId" = $3', [selector, kind, collectionId]);
    return row ? { hash: String(row[0]), recordId: String(row[1]), email: String(row[2]), expires: Number(row[3]) } : undefined;
  }

  consumeStep(selector: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_authTokens" WHERE "id" = $1', params: [selector], expect: 'change', fail };
  }

  async latest(kind: string, collectionId: string, recordId: string): Promise<Pick<AuthTokenRow, 'id' | 'hash' | 'email' | 'expires'> | undefined> {
    const row = await this.reader.get(
      `SELECT "id","hash","email","expires" FROM "_authTokens" WHERE "collectionId" = $1 AND "recordId" = $2 AND "kind" = $3 ORDER BY "created" DESC, ${this.tieBreak} DESC LIMIT 1`,
      [collectionId, recordId, kind],
    );
    return row ? { id: String(row[0]), hash: String(row[1]), email: String(row[2]), expires: Number(row[3]) } : undefined;
  }

  dropAllSteps(kind: string, collectionId: string, recordId: string): WriteStep[] {
    return [{ sql: 'DELETE FROM "_authTokens" WHERE "collectionId" = $1 AND "recordId" = $2 AND "kind" = $3', params: [collectionId, recordId, kind] }];
  }
}
