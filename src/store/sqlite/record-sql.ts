/**
 * The record statements (RecordSql, src/store/record-sql.ts) in SQLite, with `?` parameters; a
 * statement's fragments (a WHERE, a compiled rule) may hold the SQL core's SLOTs, which each
 * statement builder renders as `?` too (src/store/slots.ts).
 */
import type { RecordSql } from '../record-sql.js';
import { q } from './collection-sql.js';
import { renderSlots } from '../slots.js';

const done = renderSlots.sqlite;

export const sqliteRecordSql: RecordSql = {
  rowById: (c, columns) => done(`SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ? LIMIT 1`),
  view: (c, columns, ruleSql, ttl) =>
    done(`SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}${ttl ? ` AND (r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?)` : ''} LIMIT 1`),
  selectOne: (c, columns, whereSql) => done(`SELECT ${columns} FROM ${q(c.name)} r${whereSql} LIMIT 1`),
  selectAll: (c, columns, whereSql) => done(`SELECT ${columns} FROM ${q(c.name)} r${whereSql}`),
  rowHolds: (columns, whereSql) => done(`SELECT 1 FROM (SELECT ${columns.map((col) => `? AS ${q(col)}`).join(', ')}) r${whereSql} LIMIT 1`),
  holds: (ruleSql) => `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END`,
  insert: (c, cols) => done(`INSERT INTO ${q(c.name)} (${cols.map(q).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`),
  createRuleGuard: (c, ruleSql) => done(`SELECT 1 FROM ${q(c.name)} r WHERE r."id" = ? AND (${ruleSql})`),
  idFreeIn: (others) => done(`SELECT 1 WHERE ${others.map((o) => `NOT EXISTS (SELECT 1 FROM ${q(o.name)} WHERE "id" = ?)`).join(' AND ')}`),
  requestRuleHolds: (ruleSql) => done(`SELECT 1 WHERE (${ruleSql})`),
  setTerm: (column) => `${q(column)} = ?`,
  update: (c, sets, ruleSql) => done(`UPDATE ${q(c.name)} AS r SET ${sets.join(', ')} WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}`),
  delete: (c, ruleSql) => done(`DELETE FROM ${q(c.name)} AS r WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}`),
  passwordAndRule: (c, ruleSql) => done(`SELECT r."passwordHash", ${ruleSql ? `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END` : '1'} FROM ${q(c.name)} r WHERE r."id" = ?`),
  relationTargetsExist: (target, count) => done(`SELECT 1 WHERE (SELECT COUNT(*) FROM ${q(target)} WHERE "id" IN (${Array.from({ length: count }, () => '?').join(',')})) = ?`),
  deleteExpired: (c, ttl) => done(`DELETE FROM ${q(c.name)} WHERE ${q(ttl)} IS NOT NULL AND ${q(ttl)} <= ?`),
  nonNullColumn: (c, column) => `SELECT "id", ${q(column)} FROM ${q(c.name)} WHERE ${q(column)} IS NOT NULL`,
  replaceValue: (c, column) => `UPDATE ${q(c.name)} SET ${q(column)} = ? WHERE "id" = ? AND ${q(column)} IS ?`,
  ident: q,
};

