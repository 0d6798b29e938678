/**
 * Statements of auth records on both backends (implements AuthRecordStore,
 * src/store/auth-store.ts), over the backend-neutral SqlReader (src/store/backend.ts): the
 * whole-record select used on every authenticated request, identity and email look-ups, the
 * verification / reset updates, the token-epoch bump, the side-table deletes of a deleted record or
 * collection, and the superuser count.
 *
 * The hidden auth columns (`passwordHash`, `tokenKey`, `token_epoch`) are part of the record
 * table: AUTH_HIDDEN_COLUMNS_SQL of src/store/sqlite/auth-sql.ts and of
 * src/store/pg/collection-sql.ts. Values come back in one shape on both backends: `verified`
 * (SQLite INTEGER read as BigInt, PostgreSQL smallint 0/1 read as a number) as a boolean, counts as numbers. How
 * the backends compare `email` case-insensitively is in {@link AuthSqlDialect}.
 */
import type { Collection } from '../../model/schema.js';
import type { WriteStep } from '../write-job.js';
import { AUTH_SIDE_TABLES, type AuthRecordStore, type StepFail } from '../auth-store.js';
import type { BackendKind, SqlReader } from '../backend.js';
// both backends quote identifiers alike (src/store/pg/collection-sql.ts has the same q)
import { q } from '../sqlite/sql-ident.js';

/** What the auth-record statements spell differently per backend. */
export interface AuthSqlDialect {
  /**
   * `email` equal to parameter `$n`, case-insensitively. SQLite compares with `COLLATE NOCASE`; on
   * PostgreSQL the email's unique index is on `lower("email")` (collection-sql.ts, bootstrap.ts
   * for `_superusers`), so the statements compare `lower("email") = lower($n)` and that index
   * serves the look-up.
   */
  emailMatch(n: number): string;
  /**
   * Identity field `column` (quoted) equal to parameter `$n`. Identity fields are `email` or unique text
   * fields (collection-input.ts): text columns; PostgreSQL is told the parameter is text.
   */
  fieldMatch(column: string, n: number): string;
  /**
   * Whether `idByIdentity` over no identity fields answers undefined without a statement
   * (PostgreSQL). SQLite runs the statement, whose empty WHERE fails.
   */
  readonly skipEmptyIdentity: boolean;
}

/**
 * Each backend's spelling (on PostgreSQL, `emailMatch` is the expression of the email's unique
 * index).
 */
export const AUTH_DIALECTS: Readonly<Record<BackendKind, AuthSqlDialect>> = {
  sqlite: {
    emailMatch: (n) => `"email" = $${n} COLLATE NOCASE`,
    fieldMatch: (column, n) => `${column} = $${n}`,
    skipEmptyIdentity: false,
  },
  postgres: {
    emailMatch: (n) => `lower("email") = lower($${n}::text)`,
    fieldMatch: (column, n) => `${column} = $${n}::text`,
    skipEmptyIdentity: true,
  },
};

/** Steps deleting a record's rows in every auth side table. */
export function recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM ${q(table)} WHERE "collectionId" = $1 AND "recordId" = $2`, params: [collectionId, recordId] }));
}

/** Steps deleting a collection's rows in every auth side table. */
export function collectionSideRowsDeleteSteps(collectionId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM ${q(table)} WHERE "collectionId" = $1`, params: [collectionId] }));
}

/**
 * The auth-record store over one backend's reader; `dialect`: that backend's entry of
 * {@link AUTH_DIALECTS}.
 */
export class AuthSql implements AuthRecordStore {
  /** whole-record SELECT texts by `${collection id}:${registry version}` */
  private recordSelect = new Map<string, string>();

  constructor(private reader: SqlReader, private dialect: AuthSqlDialect) {}

  recordRow(c: Collection, version: number, columns: string, id: string): Promise<unknown[] | undefined> {
    const key = `${c.id}:${version}`;
    let sql = this.recordSelect.get(key);
    if (!sql) {
      sql = `SELECT ${columns}, r."passwordHash", r."tokenKey", r."token_epoch" FROM ${q(c.name)} r WHERE r."id" = $1`;
      this.recordSelect.set(key, sql);
    }
    return this.reader.get(sql, [id]);
  }

  async idByIdentity(c: Collection, fields: readonly string[], identity: string): Promise<string | undefined> {
    if (!fields.length && this.dialect.skipEmptyIdentity) return undefined;
    // every field compared with the one parameter
    const where = fields.map((f) => (f === 'email' ? this.dialect.emailMatch(1) : this.dialect.fieldMatch(q(f), 1))).join(' OR ');
    const row = await this.reader.get(`SELECT "id" FROM ${q(c.name)} WHERE ${where} LIMIT 1`, fields.length ? [identity] : []);
    return row ? String(row[0]) : undefined;
  }

  async byEmail(c: Collection, email: string): Promise<{ id: string; email: string; verified: boolean } | undefined> {
    const row = await this.reader.get(`SELECT "id", "email", "verified" FROM ${q(c.name)} WHERE ${this.dialect.emailMatch(1)} LIMIT 1`, [email]);
    return row ? { id: String(row[0]), email: String(row[1]), verified: Number(row[2]) === 1 } : undefined;
  }

  markVerifiedStep(c: Collection, recordId: string, email: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "verified" = 1, "updated" = $1 WHERE "id" = $2 AND ${this.dialect.emailMatch(3)}`,
      params: [now, recordId, email], expect: 'change', fail,
    };
  }

  setPasswordStep(c: Collection, recordId: string, email: string, hash: string, tokenKey: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "passwordHash" = $1, "tokenKey" = $2, "updated" = $3 WHERE "id" = $4 AND ${this.dialect.emailMatch(5)}`,
      params: [hash, tokenKey, now, recordId, email], expect: 'change', fail,
    };
  }

  bumpEpochStep(c: Collection, recordId: string): WriteStep {
    return { sql: `UPDATE ${q(c.name)} SET "token_epoch" = "token_epoch" + 1 WHERE "id" = $1`, params: [recordId] };
  }

  recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[] {
    return recordSideRowsDeleteSteps(collectionId, recordId);
  }

  collectionSideRowsDeleteSteps(collectionId: string): WriteStep[] {
    return collectionSideRowsDeleteSteps(collectionId);
  }

  async superuserCount(): Promise<number> {
    const row = await this.reader.get('SELECT count(*) FROM "_superusers"', []);
    return Number(row?.[0] ?? 0);
  }
}
