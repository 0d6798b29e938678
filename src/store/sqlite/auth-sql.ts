/**
 * SQLite statements of auth records (implements AuthRecordStore, src/store/auth-store.ts): the
 * hidden auth columns, the whole-record select used on every authenticated request, identity and
 * email look-ups, the verification / reset updates, the token-epoch bump, the side-table deletes
 * of a deleted record or collection, and the superuser count.
 */
import type { Collection } from '../../collections/types.js';
import type { WriteStep } from '../write-job.js';
import { AUTH_SIDE_TABLES, type AuthRecordStore, type StepFail } from '../auth-store.js';
import type { Reader } from './reader.js';
import { q } from './sql-ident.js';

/** Column definitions of the hidden auth columns, appended to auth tables. */
export const AUTH_HIDDEN_COLUMNS_SQL = `"passwordHash" TEXT, "tokenKey" TEXT NOT NULL DEFAULT '', "token_epoch" INTEGER NOT NULL DEFAULT 0`;

/** Steps deleting a record's rows in every auth side table. */
export function recordSideRowsDeleteSteps(collectionId: string, recordId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM "${table}" WHERE "collectionId" = ? AND "recordId" = ?`, params: [collectionId, recordId] }));
}

/** Steps deleting a collection's rows in every auth side table. */
export function collectionSideRowsDeleteSteps(collectionId: string): WriteStep[] {
  return AUTH_SIDE_TABLES.map((table) => ({ sql: `DELETE FROM "${table}" WHERE "collectionId" = ?`, params: [collectionId] }));
}

export class SqliteAuthSql implements AuthRecordStore {
  /** whole-record SELECT texts by `${collection id}:${registry version}` */
  private recordSelect = new Map<string, string>();

  constructor(private reader: Reader) {}

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
    const where = fields.map((f) => (f === 'email' ? `"email" = ? COLLATE NOCASE` : `${q(f)} = ?`)).join(' OR ');
    const row = this.reader.get(`SELECT "id" FROM ${q(c.name)} WHERE ${where} LIMIT 1`, fields.map(() => identity));
    return row ? String(row[0]) : undefined;
  }

  byEmail(c: Collection, email: string): { id: string; email: string; verified: boolean } | undefined {
    const row = this.reader.get(`SELECT "id", "email", "verified" FROM ${q(c.name)} WHERE "email" = ? COLLATE NOCASE LIMIT 1`, [email]);
    return row ? { id: String(row[0]), email: String(row[1]), verified: Number(row[2]) === 1 } : undefined;
  }

  markVerifiedStep(c: Collection, recordId: string, email: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "verified" = 1, "updated" = ? WHERE "id" = ? AND "email" = ? COLLATE NOCASE`,
      params: [now, recordId, email], expect: 'change', fail,
    };
  }

  setPasswordStep(c: Collection, recordId: string, email: string, hash: string, tokenKey: string, now: string, fail: StepFail): WriteStep {
    return {
      sql: `UPDATE ${q(c.name)} SET "passwordHash" = ?, "tokenKey" = ?, "updated" = ? WHERE "id" = ? AND "email" = ? COLLATE NOCASE`,
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
    const row = this.reader.get('SELECT COUNT(*) FROM "_superusers"', []);
    return Number(row?.[0] ?? 0);
  }
}
