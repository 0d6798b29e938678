/** The record statements (RecordSql, src/store/record-sql.ts) in SQLite. */
import type { RecordSql } from '../record-sql.js';
import { q } from './collection-sql.js';


export const sqliteRecordSql: RecordSql = {
  rowById: (c, columns) => `SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ? LIMIT 1`,
  view: (c, columns, ruleSql, ttl) =>
    `SELECT ${columns} FROM ${q(c.name)} r WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}${ttl ? ` AND (r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?)` : ''} LIMIT 1`,
  selectOne: (c, columns, whereSql) => `SELECT ${columns} FROM ${q(c.name)} r${whereSql} LIMIT 1`,
  selectAll: (c, columns, whereSql) => `SELECT ${columns} FROM ${q(c.name)} r${whereSql}`,
  rowHolds: (columns, whereSql) => `SELECT 1 FROM (SELECT ${columns.map((col) => `? AS ${q(col)}`).join(', ')}) r${whereSql} LIMIT 1`,
  holds: (ruleSql) => `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END`,
  insert: (c, cols) => `INSERT INTO ${q(c.name)} (${cols.map(q).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
  createRuleGuard: (c, ruleSql) => `SELECT 1 FROM ${q(c.name)} r WHERE r."id" = ? AND (${ruleSql})`,
  idFreeIn: (others) => `SELECT 1 WHERE ${others.map((o) => `NOT EXISTS (SELECT 1 FROM ${q(o.name)} WHERE "id" = ?)`).join(' AND ')}`,
  requestRuleHolds: (ruleSql) => `SELECT 1 WHERE (${ruleSql})`,
  setTerm: (column) => `${q(column)} = ?`,
  update: (c, sets, ruleSql) => `UPDATE ${q(c.name)} AS r SET ${sets.join(', ')} WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}`,
  delete: (c, ruleSql) => `DELETE FROM ${q(c.name)} AS r WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}`,
  passwordAndRule: (c, ruleSql) => `SELECT r."passwordHash", ${ruleSql ? `CASE WHEN (${ruleSql}) THEN 1 ELSE 0 END` : '1'} FROM ${q(c.name)} r WHERE r."id" = ?`,
  relationTargetsExist: (target, count) => `SELECT 1 WHERE (SELECT COUNT(*) FROM ${q(target)} WHERE "id" IN (${Array.from({ length: count }, () => '?').join(',')})) = ?`,
  deleteExpired: (c, ttl) => `DELETE FROM ${q(c.name)} WHERE ${q(ttl)} IS NOT NULL AND ${q(ttl)} <= ?`,
  nonNullColumn: (c, column) => `SELECT "id", ${q(column)} FROM ${q(c.name)} WHERE ${q(column)} IS NOT NULL`,
  replaceValue: (c, column) => `UPDATE ${q(c.name)} SET ${q(column)} = ? WHERE "id" = ? AND ${q(column)} IS ?`,
  ident: q,
};

