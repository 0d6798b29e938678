/**
 * PostgreSQL statements of auth records (implements AuthRecordStore, src/store/auth-store.ts;
 * issue 24): the counterpart of src/store/sqlite/auth-sql.ts over the PostgreSQL reader.
 *
 * The hidden auth columns are part of the record table (collection-sql.ts,
 * AUTH_HIDDEN_COLUMNS_SQL). SQLite compares `email` with `COLLATE NOCASE`; here the email's
 * unique index is on `lower("email")` (collection-sql.ts, bootstrap.ts for `_superusers`), so
 * the statements compare `lower("email") = lower(?)` and that index serves the look-up. Values
 * come back in the SQLite store's shapes: `verified` (smallint 0/1, read as BigInt) as a
 * boolean, counts as numbers.
 */
import type { Collection } from '../../collections/types.js';
import type { WriteStep } from '../write-job.js';
import { AUTH_SIDE_TABLES, type AuthRecordStore, type StepFail } from '../auth-store.js';
import type { PgReader } from './reader.js';
import { q } from './collection-sql.js';

export { AUTH_HIDDEN_COLUMNS_SQL } from './collection-sql.js';

/** The case-insensitive email match (the expression of the email's unique index). */
const EMAIL_MATCH = 'lower("email") = lower(?::text)';

/** Steps deleting a record's rows in every auth side table. */
export function recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM ${q(table)} WHERE "collectionId" = ? AND "recordId" = ?`, params: [collectionId, recordId] }));
}

/** Steps deleting a collection's rows in every auth side table. */
export function collectionSideRowsDeleteSteps(collectionId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM ${q(table)} WHERE "collectionId" = ?`, params: [collectionId] }));
}

export class PgAuthSql implements AuthRecordStore {
  /** whole-record SELECT texts by `${collection id}:${registry version}` */
  private recordSelect = new Map<string, string>();

  constructor(private reader: PgReader) {}

  recordRow(c: Collection, version: number, columns: string, id: string): unknown[] | undefined {
    const key = `${c.id}:${version}`;
    let sql = this.recordSelect.get(key);
    if (!sql) {
      sql = `SELECT ${columns}, r."passwordHash", r."tokenKey", r."token_epoch" FROM ${q(c.name)} r WHERE r."id" = ?`;
      this.recordSelect.set(key, sql);
    }
    return this.reader.get(sql, [id]);
  }

  idByIdentity(c: Collection, fields: readonly string[], identity: string): string | undefined {
    if (!fields.length) return undefined;
    // identity fields are `email` or unique text fields (collection-input.ts): text columns
    const where = fields.map((f) => (f === 'email' ? EMAIL_MATCH : `${q(f)} = ?::text`)).join(' OR ');
    const row = this.reader.get(`SELECT "id" FROM ${q(c.name)} WHERE ${where} LIMIT 1`, fields.map(() => identity));
    return row ? String(row[0]) : undefined;
  }

  byEmail(c: Collection, email: string): { id: string; email: string; verified: boolean } | undefined {
    const row = this.reader.get(`SELECT "id", "email", "verified" FROM ${q(c.name)} WHERE ${EMAIL_MATCH} LIMIT 1`, [email]);
    return row ? { id: String(row[0]), email: String(row[1]), verified: Number(row[2]) === 1 } : undefined;
  }

  markVerifiedStep(c: Collection, recordId: string, email: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "verified" = 1, "updated" = ? WHERE "id" = ? AND ${EMAIL_MATCH}`,
      params: [now, recordId, email], expect: 'change', fail,
    };
  }

  setPasswordStep(c: Collection, recordId: string, email: string, hash: string, tokenKey: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "passwordHash" = ?, "tokenKey" = ?, "updated" = ? WHERE "id" = ? AND ${EMAIL_MATCH}`,
      params: [hash, tokenKey, now, recordId, email], expect: 'change', fail,
    };
  }

  bumpEpochStep(c: Collection, recordId: string): WriteStep {
    return { sql: `UPDATE ${q(c.name)} SET "token_epoch" = "token_epoch" + 1 WHERE "id" = ?`, params: [recordId] };
  }

  recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[] {
    return recordSideRowsDeleteSteps(collectionId, recordId);
  }

  collectionSideRowsDeleteSteps(collectionId: string): WriteStep[] {
    return collectionSideRowsDeleteSteps(collectionId);
  }

  superuserCount(): number {
    const row = this.reader.get('SELECT count(*) FROM "_superusers"', []);
    return Number(row?.[0] ?? 0);
  }
}
