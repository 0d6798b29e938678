/**
 * The statements of record lists (src/records/records-list.ts) in PostgreSQL (issue 24): the
 * builders of src/store/sqlite/list-sql.ts with the same names, arguments and `?` orders, over
 * the storage model of collection-sql.ts. Where SQLite uses `r.rowid`, the tiebreak here is the
 * identity column `r."_rowid"` (unique index); sort terms are the PostgreSQL emitter's
 * (rule-sql.ts, emitSort: `… ASC NULLS FIRST` / `… DESC NULLS LAST`, text under `COLLATE "C"`),
 * which order NULLs and text as SQLite does.
 *
 * Differences from SQLite, each where it matters:
 * - pages rendered in the database aggregate with `string_agg(… ORDER BY …)`, the bytes variant
 *   as `convert_to(…, 'UTF8')`, a bytea the `pg` driver hands over as a Buffer;
 * - a derived table needs an alias (PostgreSQL 15);
 * - full-text search has no joined FTS table: the query is a `tsquery` joined once as `f`
 *   ({@link searchJoin}, whose `?` comes in the FROM clause, after the select list's and before
 *   the WHERE's), matched against the record's `"_fts"` column ({@link SEARCH_MATCH}) and ranked
 *   by `ts_rank` ({@link SEARCH_RANK}, higher first, where FTS5's rank is lower first);
 * - the vector distance is a select-list alias (`"_vd"`), which PostgreSQL's ORDER BY accepts as a
 *   bare name only: {@link VECTOR_ORDER} is one `"_vd" ASC NULLS LAST` term (SQLite's two terms
 *   `"_vd" IS NULL, "_vd"`), and {@link nearestByIndexSql} reads candidates through pgvector's
 *   HNSW index (`<=>`, cosine) instead of libsql's `vector_top_k`;
 * - PostgreSQL plans by cost with per-column statistics: SQLite's `+term` (an ORDER BY term no
 *   index may answer) has no counterpart and {@link unindexedOrder} returns the term unchanged.
 */
import { FTS_CONFIG, q } from './collection-sql.js';

/** The identity column ending every page order (SQLite's rowid). */
const ROWID = 'r."_rowid"';

/** ORDER BY terms of a vector page before the sort: rows without an embedding last, then nearest. */
export const VECTOR_ORDER = ['"_vd" ASC NULLS LAST'];
/**
 * The full-text relevance term (after the sort), over the query joined by {@link searchJoin}.
 * `ts_rank` is higher for better matches.
 */
export const SEARCH_RANK = 'ts_rank(r."_fts", f."q") DESC';
/** The full-text match over the query joined by {@link searchJoin}. */
export const SEARCH_MATCH = 'r."_fts" @@ f."q"';
/** The id term ending a vector page's order (and the aggregated term of a page's ids), in byte order. */
export const ID_ORDER = 'r."id" COLLATE "C"';
/** The condition "this record"; params: the id. */
export const ID_EQUALS = 'r."id" = ?::text';

/**
 * The FROM-clause join of a search: the query as a tsquery of the search configuration, named
 * `f."q"`; params: the tsquery text that src/records/search.ts (lowerTsquery) lowered the search
 * to, every term quoted there, so the user's text never reaches `to_tsquery` as syntax
 * (docs/api.md, "Full-text search": the same grammar as FTS5 on SQLite).
 */
export function searchJoin(): string {
  return ` CROSS JOIN to_tsquery('${FTS_CONFIG}'::regconfig, ?::text) AS f("q")`;
}

/** The condition "one of these `count` records"; params: the ids. */
export function idIn(count: number): string {
  return `r."id" IN (${Array.from({ length: count }, () => '?::text').join(',')})`;
}

/**
 * Separators of a page rendered as one string: between records, and between ids (record ids are
 * [a-z0-9]): U+001F as a literal character.
 */
export const ITEM_SEPARATOR = "','";
export const ID_SEPARATOR = "'\u001f'";

/** ` FROM "<col>" r`, plus a join (full-text search) when given. */
export function fromRecords(table: string, join = ''): string {
  return ` FROM ${q(table)} r${join}`;
}

/** The select-list item of a vector page's distance (`expr` has one `?`: the query vector). */
export function vectorDistanceColumn(expr: string): string {
  return `, ${expr} AS "_vd"`;
}

/** Whether the ORDER BY terms include a random order (such pages are never cached or rendered in SQL). */
export function hasRandomOrder(order: string[]): boolean {
  return order.some((o) => /RANDOM\(\)/i.test(o));
}

/** One offset page; params: the select list's, the FROM's (a search), the WHERE's, LIMIT, OFFSET. */
export function offsetPageSql(select: string, from: string, where: string, order: string[]): string {
  return `SELECT ${select}${from}${where}${order.length ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT ? OFFSET ?`;
}

/** A page's ids in page order (the plan check of cached pages); params: the FROM's, the WHERE's, LIMIT, OFFSET. */
export function pageIdsSql(from: string, where: string, order: string[]): string {
  return `SELECT r."id"${from}${where}${order.length ? ` ORDER BY ${pageOrderBy(order)}` : ''} LIMIT ? OFFSET ?`;
}

/** `id US rendering RS …` for the records of `table` whose ids are bound, `count` of them. */
export function renderByIdsSql(table: string, rendered: string, count: number): string {
  return `SELECT string_agg(r."id" || '\u001f' || ${rendered}, '\u001e') FROM ${q(table)} r WHERE r."id" IN (${Array.from({ length: count }, () => '?::text').join(',')})`;
}

/**
 * The query aggregating SQL text expression `expr` over a page's rows into one string, the values
 * joined by `separator` (an SQL expression; NULL for no rows); its `?`s are the FROM's and the
 * WHERE's values, LIMIT and OFFSET. With a sort, late materialization as on SQLite: the page's
 * `_rowid`s are chosen first (an index walk when the sort has one) and only those rows are read
 * and rendered; the aggregate orders the page's few rows again (`string_agg … ORDER BY`: an
 * aggregate's input order is not guaranteed). Without a sort the page has no defined order.
 * `bytes`: the aggregate as a bytea of its UTF-8 text (`convert_to`), a Buffer in JavaScript.
 */
export function pageAggregateSql(table: string, from: string, where: string, order: string[], expr: string, separator: string, bytes = false): string {
  const [open, close] = bytes ? ['convert_to(', `, 'UTF8')`] : ['', ''];
  if (!order.length) return `SELECT ${open}string_agg("_v", ${separator})${close} FROM (SELECT ${expr} AS "_v"${from}${where} LIMIT ? OFFSET ?) p`;
  const by = pageOrderBy(order);
  return `SELECT ${open}string_agg(${expr}, ${separator} ORDER BY ${by})${close} FROM (SELECT ${ROWID} AS "_rid"${from}${where} ORDER BY ${by} LIMIT ? OFFSET ?) p JOIN ${q(table)} r ON ${ROWID} = p."_rid"`;
}

/** Whether an ORDER BY term (or list) ends descending (`… DESC`, `… DESC NULLS LAST`). */
const ENDS_DESC = / DESC(?: NULLS (?:FIRST|LAST))?$/i;

/**
 * The ORDER BY list of an offset page: the sort, then `_rowid` as the tiebreak that makes the
 * order total (pages never overlap), in the direction of the sort's last term, so a sort on one
 * indexed column can walk a (column, _rowid) index either way.
 */
export function pageOrderBy(order: string[]): string {
  const by = order.join(', ');
  return `${by}, ${ROWID}${ENDS_DESC.test(by) ? ' DESC' : ''}`;
}

/**
 * A page of nearest rows from a pgvector HNSW index: `k` candidates (rows with an embedding,
 * nearest first by cosine distance), ordered exactly; params: the query vector (select list),
 * the query vector (index), LIMIT, OFFSET. `index` names the vector shadow column
 * (collection-sql.ts, vectorColumn) whose index answers `ORDER BY … <=> … LIMIT k`. The last
 * column counts the candidates.
 */
export function nearestByIndexSql(select: string, index: string, k: number, table: string, order: string[]): string {
  return `SELECT ${select}, COUNT(*) OVER () AS "_n" FROM (SELECT * FROM ${q(table)} c WHERE c.${q(index)} IS NOT NULL`
    + ` ORDER BY c.${q(index)} <=> ?::vector LIMIT ${k}) r ORDER BY ${order.join(', ')} LIMIT ? OFFSET ?`;
}

/** The sort-key values of one row of a scope (a cursor's boundary looked up by id); params: the FROM's, the WHERE's. */
export function boundarySql(keys: string[], from: string, where: string): string {
  return `SELECT ${keys.join(', ')}${from}${where} LIMIT 1`;
}

/** A keyset page: the codec columns and the sort keys, in walk order; params: the FROM's, the WHERE's, LIMIT. */
export function keysetPageSql(columns: string, keys: string[], from: string, where: string, orderBy: string): string {
  return `SELECT ${columns}, ${keys.join(', ')}${from}${where} ORDER BY ${orderBy} LIMIT ?`;
}

/** COUNT(*) of a scope (a bigint); params: the FROM's, the WHERE's. */
export function countSql(from: string, where: string): string {
  return `SELECT COUNT(*)${from}${where}`;
}

/**
 * At most `?` rows of a table matching one term (CompiledExpr.drivers), counted without reading
 * more than that; params: the term's, the bound.
 */
export function boundedCountSql(table: string, term: string): string {
  return `SELECT COUNT(*) FROM (SELECT 1 FROM ${q(table)} r WHERE ${term} LIMIT ?) p`;
}

/** SQLite's unindexable ORDER BY term (`+expr`) has no PostgreSQL counterpart: the term as it is. */
export function unindexedOrder(term: string): string {
  return term;
}

/**
 * The one-column sorts an offset walk can seek in, as the PostgreSQL emitter writes them:
 * `r."<column>"` (numbers, bools) or `r."<column>" COLLATE "C"` (text), then the direction with
 * SQLite's NULL placement.
 */
const WALK_ORDER = /^(r\."(?:[A-Za-z_][A-Za-z0-9_]*)"(?: COLLATE "C")?) (ASC NULLS FIRST|DESC NULLS LAST)$/;

/** The column (with its collation) and direction of a one-column sort an offset walk supports, or null. */
export function walkOrder(order: string[]): { column: string; desc: boolean } | null {
  if (order.length !== 1) return null;
  const m = WALK_ORDER.exec(order[0]);
  return m ? { column: m[1], desc: m[2].startsWith('DESC') } : null;
}

/**
 * The condition "strictly after the row whose sort key is `(?, ?)`" (value, _rowid) in the page
 * order of a one-column sort (pageOrderBy: the column, then `_rowid`, same direction): a row
 * comparison, which PostgreSQL answers as a range of a (column, _rowid) btree index. It never
 * holds for a row whose value is NULL (the comparison is NULL): NULLs sort first ascending
 * (before any checkpoint, which is never NULL), and a descending walk is only used over scopes
 * without NULLs (records-list.ts, walkFrom). Params: the value, the _rowid.
 */
export function walkAfter(column: string, desc: boolean): string {
  return `(${column}, ${ROWID}) ${desc ? '<' : '>'} (?, ?::bigint)`;
}

/** Whether a scope has a row whose sort value is NULL; params: the FROM's, the WHERE's. */
export function hasNullSql(column: string, from: string, where: string): string {
  return `SELECT 1${from}${where ? `${where} AND` : ' WHERE'} ${column} IS NULL LIMIT 1`;
}

/** The sort key and _rowid of the row `?` rows into a scope's page order; params: the FROM's, the WHERE's, the offset. */
export function walkStepSql(column: string, from: string, where: string, order: string[]): string {
  return `SELECT ${column}, ${ROWID}${from}${where} ORDER BY ${pageOrderBy(order)} LIMIT 1 OFFSET ?`;
}
