/**
 * The record statements (RecordSql, src/store/record-sql.ts) in PostgreSQL (docs/deployment.md),
 * over the storage model of collection-sql.ts, with the same parameter orders. A statement's
 * parameters are numbered `$1…$n` in order of appearance, its fragments' SLOTs (a compiled rule,
 * a WHERE) with them (src/store/slots.ts); `holds` and `setTerm` answer fragments, left to the
 * statement they go into. Differences from src/store/sqlite/record-sql.ts:
 * - parameters PostgreSQL cannot type from their context are cast (`::text`, `::bigint`);
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
import { SLOT, renderSlots } from '../slots.js';

/** The PostgreSQL type of a column of `c`'s table (base and hidden auth columns included). */
function columnType(c: Collection | undefined, column: string): string {
  if (column === 'token_epoch') return 'bigint';
  const f = c?.fields.find((x) => x.name === column);
  return f ? pgColumnType(f) : 'text';
}

const fieldOf = (c: Collection, column: string): Field | undefined => c.fields.find((f) => f.name === column);

/** A slot typed as `column` of `c` stores it (jsonb from JSON text, bigint from digits, …). */
const slot = (c: Collection | undefined, column: string): string => `${SLOT}::${columnType(c, column)}`;
const done = renderSlots.postgres;
/** the parameter compared with a record id */
const ID = `${SLOT}::text`;

/** Record statements in PostgreSQL; `rowHolds` takes the collection as a third argument. */
export interface PgRecordSql extends RecordSql {
  rowHolds(columns: string[], whereSql: string, c?: Collection): string;
}

export const pgRecordSql: PgRecordSql = {
  rowById: (c, columns) => done(`SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ${ID} LIMIT 1`),
  view: (c, columns, ruleSql, ttl) =>
    done(`SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ${ID}${ruleSql ? ` AND (${ruleSql})` : ''}${ttl ? ` AND (r.${q(ttl)} IS NULL OR r.${q(ttl)} > ${ID})` : ''} LIMIT 1`),
  selectOne: (c, columns, whereSql) => done(`SELECT ${columns} FROM ${q(c.name)} r${whereSql} LIMIT 1`),
  selectAll: (c, columns, whereSql) => done(`SELECT ${columns} FROM ${q(c.name)} r${whereSql}`),
  rowHolds: (columns, whereSql, c) => done(`SELECT 1 FROM (SELECT ${columns.map((col) => `${slot(c, col)} AS ${q(col)}`).join(', ')}) r${whereSql} LIMIT 1`),
  holds: (ruleSql) => `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END`,
  insert: (c, cols) => done(`INSERT INTO ${q(c.name)} (${cols.map(q).join(', ')}) VALUES (${cols.map((col) => slot(c, col)).join(', ')})`),
  createRuleGuard: (c, ruleSql) => done(`SELECT 1 FROM ${q(c.name)} r WHERE r."id" = ${ID} AND (${ruleSql})`),
  idFreeIn: (others) => done(`SELECT 1 WHERE ${others.map((o) => `NOT EXISTS (SELECT 1 FROM ${q(o.name)} WHERE "id" = ${ID})`).join(' AND ')}`),
  requestRuleHolds: (ruleSql) => done(`SELECT 1 WHERE (${ruleSql})`),
  // the type of a SET's slot comes from its column (no collection here)
  setTerm: (column) => `${q(column)} = ${SLOT}`,
  update: (c, sets, ruleSql) => done(`UPDATE ${q(c.name)} AS r SET ${sets.join(', ')} WHERE r."id" = ${ID}${ruleSql ? ` AND (${ruleSql})` : ''}`),
  delete: (c, ruleSql) => done(`DELETE FROM ${q(c.name)} AS r WHERE r."id" = ${ID}${ruleSql ? ` AND (${ruleSql})` : ''}`),
  passwordAndRule: (c, ruleSql) => done(`SELECT r."passwordHash", ${ruleSql ? `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END` : '1'} FROM ${q(c.name)} r WHERE r."id" = ${ID}`),
  relationTargetsExist: (target, count) =>
    done(`SELECT 1 WHERE (SELECT COUNT(*) FROM ${q(target)} WHERE "id" IN (${Array.from({ length: count }, () => ID).join(',')})) = ${SLOT}::bigint`),
  deleteExpired: (c, ttl) => done(`DELETE FROM ${q(c.name)} WHERE ${q(ttl)} IS NOT NULL AND ${q(ttl)} <= ${ID}`),
  nonNullColumn: (c, column) => {
    const f = fieldOf(c, column);
    return `SELECT "id", ${f ? storedTextSql(f, q(column)) : q(column)} FROM ${q(c.name)} WHERE ${q(column)} IS NOT NULL`;
  },
  // the old value is compared as nonNullColumn read it (a jsonb column by its text)
  replaceValue: (c, column) => {
    const f = fieldOf(c, column);
    const stored = f ? storedTextSql(f, q(column)) : q(column);
    return done(`UPDATE ${q(c.name)} SET ${q(column)} = ${slot(c, column)} WHERE "id" = ${ID} AND ${stored} IS NOT DISTINCT FROM ${ID}`);
  },
  ident: q,
};
