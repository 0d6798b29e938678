/**
 * The statements of the record services (src/records/), dialect-neutral in shape: each builder
 * takes the pieces the domain has decided (columns, a compiled rule's SQL, counts) and returns
 * statement text whose parameters, in the backend's own syntax (`?` on SQLite, `$1…$n` on
 * PostgreSQL), the caller binds in the documented order. `holds` and `setTerm` answer fragments
 * whose parameters are SLOTs, rendered by the statement they go into (src/store/slots.ts). The
 * implementations are src/store/sqlite/record-sql.ts and src/store/pg/record-sql.ts.
 * Builders are pure and cheap; the services cache the texts they reuse per collection version.
 */
import type { Collection } from '../model/schema.js';

export interface RecordSql {
  /** One record's codec columns by id; params: id. */
  rowById(c: Collection, columns: string): string;
  /**
   * One record by id under a rule and the expiry clause; params: id, the rule's params, now (when
   * `ttl` is set).
   */
  view(c: Collection, columns: string, ruleSql: string, ttl: string | null | undefined): string;
  /** `columns` of the rows of `c` matching `whereSql` (a WHERE clause with its keyword, or ''), first row. */
  selectOne(c: Collection, columns: string, whereSql: string): string;
  /** `columns` of every row of `c` matching `whereSql`. */
  selectAll(c: Collection, columns: string, whereSql: string): string;
  /**
   * Whether `whereSql` holds for a row that is no longer stored (a deleted record, realtime):
   * the row is rebuilt from bound values as a one-row table aliased r; params: the values of
   * `columns` in order, then the WHERE clause's. `c`: the row's collection (PostgreSQL types
   * the rebuilt columns by it).
   */
  rowHolds(columns: string[], whereSql: string, c?: Collection): string;
  /** A 0/1 column: whether a rule holds for the row. */
  holds(ruleSql: string): string;
  /** The INSERT of a create; params: the values of `cols` in order. */
  insert(c: Collection, cols: string[]): string;
  /** A guard answering a row when the new record `id` satisfies the create rule; params: id, rule params. */
  createRuleGuard(c: Collection, ruleSql: string): string;
  /** A guard answering a row when the id is in none of `others`; params: the id once per collection. */
  idFreeIn(others: Collection[]): string;
  /** A row when a rule that reads no record holds; params: the rule's. */
  requestRuleHolds(ruleSql: string): string;
  /** One SET term of an update: the column takes a bound value. */
  setTerm(column: string): string;
  /** The UPDATE of a record; `sets` are setTerm()s; params: their values, id, rule params. */
  update(c: Collection, sets: string[], ruleSql: string): string;
  /** The DELETE of a record; params: id, rule params. */
  delete(c: Collection, ruleSql: string): string;
  /** The stored password hash and whether the update rule holds; params: rule params, id. */
  passwordAndRule(c: Collection, ruleSql: string): string;
  /** A guard answering a row when `count` ids all exist in table `target`; params: the ids, then count. */
  relationTargetsExist(target: string, count: number): string;
  /** The DELETE of expired rows; params: now. */
  deleteExpired(c: Collection, ttl: string): string;
  /** Ids and values of a column that holds something (encryption migration). */
  nonNullColumn(c: Collection, column: string): string;
  /** Rewrites one value if it is still the one read; params: new value, id, old value. */
  replaceValue(c: Collection, column: string): string;
  /** A `"name"` identifier of the dialect. */
  ident(name: string): string;
}
