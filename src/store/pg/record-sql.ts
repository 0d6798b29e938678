/**
 * The record statements (RecordSql, src/store/record-sql.ts) in PostgreSQL (docs/deployment.md),
 * over the storage model of collection-sql.ts, with SQLite's `?` orders. Differences from
 * src/store/sqlite/record-sql.ts:
 * - parameters PostgreSQL cannot type from their context are cast (`?::text`, `?::bigint`);
 * - `IS ?` (SQLite's null-safe equality) is `IS NOT DISTINCT FROM`;
 * - jsonb columns are read as the codecs read them (column-types.ts, storedTextSql) and written
 *   from their JSON text;
 * - rowHolds rebuilds the deleted row with typed values, so it needs the collection
 *   (a third argument; without it every value is text, and a rule comparing a number, bool or
 *   jsonb column with a typed value fails to plan).
 */
import type { Collection, Field } from '../../model/schema.js';
import type { RecordSql } from '../record-sql.js';
import { q } from './collection-sql.js';
import { pgColumnType, storedTextSql } from './column-types.js';

/** The PostgreSQL type of a column of `c`'s table (base and hidden auth columns included). */
function columnType(c: Collection | undefined, column: string): string {
  if (column === 'token_epoch') return 'bigint';
  const f = c?.fields.find((x) => x.name === column);
  return f ? pgColumnType(f) : 'text';
}

const fieldOf = (c: Collection, column: string): Field | undefined => c.fields.find((f) => f.name === column);

/** A slot typed as `column` of `c` stores it (jsonb from JSON text, bigint from digits, …). */
const slot = (c: Collection | undefined, column: string): string => `?::${columnType(c, column)}`;

/** Record statements in PostgreSQL; `rowHolds` takes the collection as a third argument. */
export interface PgRecordSql extends RecordSql {
  rowHolds(columns: string[], whereSql: string, c?: Collection): string;
}

export const pgRecordSql: PgRecordSql = {
  rowById: (c, columns) => `SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ?::text LIMIT 1`,
  view: (c, columns, ruleSql, ttl) =>
    `SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ?::text${ruleSql ? ` AND (${ruleSql})` : ''}${ttl ? ` AND (r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?::text)` : ''} LIMIT 1`,
  selectOne: (c, columns, whereSql) => `SELECT ${columns} FROM ${q(c.name)} r${whereSql} LIMIT 1`,
  selectAll: (c, columns, whereSql) => `SELECT ${columns} FROM ${q(c.name)} r${whereSql}`,
  rowHolds: (columns, whereSql, c) => `SELECT 1 FROM (SELECT ${columns.map((col) => `${slot(c, col)} AS ${q(col)}`).join(', ')}) r${whereSql} LIMIT 1`,
  holds: (ruleSql) => `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END`,
  insert: (c, cols) => `INSERT INTO ${q(c.name)} (${cols.map(q).join(', ')}) VALUES (${cols.map((col) => slot(c, col)).join(', ')})`,
  createRuleGuard: (c, ruleSql) => `SELECT 1 FROM ${q(c.name)} r WHERE r."id" = ?::text AND (${ruleSql})`,
  idFreeIn: (others) => `SELECT 1 WHERE ${others.map((o) => `NOT EXISTS (SELECT 1 FROM ${q(o.name)} WHERE "id" = ?::text)`).join(' AND ')}`,
  requestRuleHolds: (ruleSql) => `SELECT 1 WHERE (${ruleSql})`,
  // the type of a SET's slot comes from its column (no collection here)
  setTerm: (column) => `${q(column)} = ?`,
  update: (c, sets, ruleSql) => `UPDATE ${q(c.name)} AS r SET ${sets.join(', ')} WHERE r."id" = ?::text${ruleSql ? ` AND (${ruleSql})` : ''}`,
  delete: (c, ruleSql) => `DELETE FROM ${q(c.name)} AS r WHERE r."id" = ?::text${ruleSql ? ` AND (${ruleSql})` : ''}`,
  passwordAndRule: (c, ruleSql) => `SELECT r."passwordHash", ${ruleSql ? `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END` : '1'} FROM ${q(c.name)} r WHERE r."id" = ?::text`,
  relationTargetsExist: (target, count) =>
    `SELECT 1 WHERE (SELECT COUNT(*) FROM ${q(target)} WHERE "id" IN (${Array.from({ length: count }, () => '?::text').join(',')})) = ?::bigint`,
  deleteExpired: (c, ttl) => `DELETE FROM ${q(c.name)} WHERE ${q(ttl)} IS NOT NULL AND ${q(ttl)} <= ?::text`,
  nonNullColumn: (c, column) => {
    const f = fieldOf(c, column);
    return `SELECT "id", ${f ? storedTextSql(f, q(column)) : q(column)} FROM ${q(c.name)} WHERE ${q(column)} IS NOT NULL`;
  },
  // the old value is compared as nonNullColumn read it (a jsonb column by its text)
  replaceValue: (c, column) => {
    const f = fieldOf(c, column);
    const stored = f ? storedTextSql(f, q(column)) : q(column);
    return `UPDATE ${q(c.name)} SET ${q(column)} = ${slot(c, column)} WHERE "id" = ?::text AND ${stored} IS NOT DISTINCT FROM ?::text`;
  },
  ident: q,
};
