/**
 * The statements of record lists (src/records/records-list.ts) in SQLite: offset pages, pages
 * rendered inside SQLite, pages from cached renderings, nearest-first vector pages, keyset
 * (cursor) pages and counts. The lister decides what a page needs (its WHERE with parameters,
 * its ORDER BY terms, the select list); these builders only spell it. `?` order is documented
 * per builder; every builder is pure.
 */
import { q } from './collection-sql.js';

/** ORDER BY terms of a vector page before the sort: rows without an embedding last, then nearest. */
export const VECTOR_ORDER = ['"_vd" IS NULL', '"_vd"'];
/** The full-text relevance term (after the sort). */
export const SEARCH_RANK = 'f.rank';
/** The id term ending a vector page's order. */
export const ID_ORDER = 'r."id"';
/** The condition "this record"; params: the id. */
export const ID_EQUALS = 'r."id" = ?';

/** The condition "one of these `count` records"; params: the ids. */
export function idIn(count: number): string {
  return `r."id" IN (${Array.from({ length: count }, () => '?').join(',')})`;
}

/**
 * Separators of a page rendered as one string: between records, and between ids (record ids are
 * [a-z0-9]): U+001F as a literal (a `char(31)` call per row cost about 1 µs a page of 20).
 */
export const ITEM_SEPARATOR = "','";
export const ID_SEPARATOR = "'\u001f'";

/** ` FROM "<col>" r`, plus a join (full-text search) when given. */
export function fromRecords(table: string, join = ''): string {
  return ` FROM ${q(table)} r${join}`;
}

/** The select-list item of a vector page's distance (`expr` has one `?`: the query blob). */
export function vectorDistanceColumn(expr: string): string {
  return `, ${expr} AS "_vd"`;
}

/** Whether the ORDER BY terms include a random order (such pages are never cached or rendered in SQL). */
export function hasRandomOrder(order: string[]): boolean {
  return order.some((o) => /RANDOM\(\)/i.test(o));
}

/** One offset page; params: the select list's, the WHERE's, LIMIT, OFFSET. */
export function offsetPageSql(select: string, from: string, where: string, order: string[]): string {
  return `SELECT ${select}${from}${where}${order.length ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT ? OFFSET ?`;
}

/** A page's ids in page order (the plan check of cached pages); params: the WHERE's, LIMIT, OFFSET. */
export function pageIdsSql(from: string, where: string, order: string[]): string {
  return `SELECT r."id"${from}${where}${order.length ? ` ORDER BY ${pageOrderBy(order)}` : ''} LIMIT ? OFFSET ?`;
}

/** `id US rendering RS …` for the records of `table` whose ids are bound, `count` of them. */
export function renderByIdsSql(table: string, rendered: string, count: number): string {
  return `SELECT group_concat(r."id" || '\u001f' || ${rendered}, '\u001e') FROM ${q(table)} r WHERE r."id" IN (${Array.from({ length: count }, () => '?').join(',')})`;
}

/**
 * The query aggregating SQL expression `expr` over a page's rows into one string, the values
 * joined by `separator` (an SQL expression; NULL for no rows); its `?`s are the WHERE values,
 * LIMIT and OFFSET. Plain pages render their items this way (`expr` the record's JSON,
 * ITEM_SEPARATOR), and pages from cached records get their ids (`r."id"`, ID_SEPARATOR). With a
 * sort, late materialization: ORDER BY … LIMIT makes SQLite compute the select list of every
 * matching row before it sorts, so the page's rowids are chosen first and only those rows are
 * read; the aggregate orders the page's few rows again (an aggregate's input order is not
 * guaranteed). Without a sort the page has no defined order. `bytes`: the aggregate as a BLOB of
 * its UTF-8 text, which libsql hands over as a Buffer without decoding it into a string.
 */
export function pageAggregateSql(table: string, from: string, where: string, order: string[], expr: string, separator: string, bytes = false): string {
  const [open, close] = bytes ? ['CAST(', ' AS BLOB)'] : ['', ''];
  if (!order.length) return `SELECT ${open}group_concat("_v", ${separator})${close} FROM (SELECT ${expr} AS "_v"${from}${where} LIMIT ? OFFSET ?)`;
  const by = pageOrderBy(order);
  return `SELECT ${open}group_concat(${expr}, ${separator} ORDER BY ${by})${close} FROM (SELECT r.rowid AS "_rid"${from}${where} ORDER BY ${by} LIMIT ? OFFSET ?) p JOIN ${q(table)} r ON r.rowid = p."_rid"`;
}

/**
 * The ORDER BY list of an offset page: the sort, then the rowid as the tiebreak that makes the
 * order total (pages never overlap), in the direction of the sort's last term, so a sort on one
 * indexed column walks that index (its entries are ordered by column, then rowid) either way
 * instead of sorting every row again for a tiebreak in the other direction.
 */
export function pageOrderBy(order: string[]): string {
  const by = order.join(', ');
  return `${by}, r.rowid${/ DESC$/i.test(by) ? ' DESC' : ''}`;
}

/**
 * A page of nearest rows from a DiskANN index: `k` candidates, ordered exactly; params: the query
 * blob (select list), the query blob (index), LIMIT, OFFSET. The last column counts the candidates.
 */
export function nearestByIndexSql(select: string, index: string, k: number, table: string, order: string[]): string {
  return `SELECT ${select}, COUNT(*) OVER () AS "_n" FROM vector_top_k('${index}', ?, ${k}) v JOIN ${q(table)} r ON r.rowid = v.id` +
    ` WHERE "_vd" IS NOT NULL ORDER BY ${order.join(', ')} LIMIT ? OFFSET ?`;
}

/** The sort-key values of one row of a scope (a cursor's boundary looked up by id); params: the WHERE's. */
export function boundarySql(keys: string[], from: string, where: string): string {
  return `SELECT ${keys.join(', ')}${from}${where} LIMIT 1`;
}

/** A keyset page: the codec columns and the sort keys, in walk order; params: the WHERE's, LIMIT. */
export function keysetPageSql(columns: string, keys: string[], from: string, where: string, orderBy: string): string {
  return `SELECT ${columns}, ${keys.join(', ')}${from}${where} ORDER BY ${orderBy} LIMIT ?`;
}

/** COUNT(*) of a scope; params: the WHERE's. */
export function countSql(from: string, where: string): string {
  return `SELECT COUNT(*)${from}${where}`;
}

/**
 * At most `?` rows of a table matching one term (CompiledExpr.drivers), counted without reading
 * more than that; params: the term's, the bound. The plan of a term over an indexed column reads
 * index entries only.
 */
export function boundedCountSql(table: string, term: string): string {
  return `SELECT COUNT(*) FROM (SELECT 1 FROM ${q(table)} r WHERE ${term} LIMIT ?)`;
}

/**
 * An ORDER BY term the planner cannot answer from an index (`+expr`): the page's rows are then
 * found through the WHERE's most selective index and sorted, instead of by walking the sort
 * index and testing every row against the filter.
 */
export function unindexedOrder(term: string): string {
  return `+${term}`;
}

/** `r."<column>" ASC|DESC`: the one-column sorts an offset walk can seek in (see walkAfter). */
const WALK_ORDER = /^(r\."(?:[A-Za-z_][A-Za-z0-9_]*)") (ASC|DESC)$/;

/** The column and direction of a one-column sort an offset walk supports, or null. */
export function walkOrder(order: string[]): { column: string; desc: boolean } | null {
  if (order.length !== 1) return null;
  const m = WALK_ORDER.exec(order[0]);
  return m ? { column: m[1], desc: m[2] === 'DESC' } : null;
}

/**
 * The condition "strictly after the row whose sort key is `(?, ?)`" (value, rowid) in the page
 * order of a one-column sort (pageOrderBy: the column, then the rowid, same direction). A row
 * value comparison SQLite answers as a range of the column's index. It never holds for a row
 * whose value is NULL: NULLs sort first ascending (before any checkpoint, which is never NULL),
 * and a descending walk is only used over scopes without NULLs (records-list.ts, walkFrom).
 * Params: the value, the rowid.
 */
export function walkAfter(column: string, desc: boolean): string {
  return `(${column}, r.rowid) ${desc ? '<' : '>'} (?, ?)`;
}

/** Whether a scope has a row whose sort value is NULL; params: the WHERE's. */
export function hasNullSql(column: string, from: string, where: string): string {
  return `SELECT 1${from}${where ? `${where} AND` : ' WHERE'} ${column} IS NULL LIMIT 1`;
}

/** The sort key and rowid of the row `?` rows into a scope's page order; params: the WHERE's, the offset. */
export function walkStepSql(column: string, from: string, where: string, order: string[]): string {
  return `SELECT ${column}, r.rowid${from}${where} ORDER BY ${pageOrderBy(order)} LIMIT 1 OFFSET ?`;
}
