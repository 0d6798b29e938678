/**
 * The statements of record lists (src/records/records-list.ts) for both backends: offset pages,
 * pages rendered inside the database, pages from cached renderings, nearest-first vector pages,
 * keyset (cursor) pages, counts and offset walks. The lister decides what a page needs (its
 * WHERE with parameters, its ORDER BY terms, the select list); these builders only spell it, in
 * the spelling of a {@link ListDialect} (ARCHITECTURE.md, src/store/sql/). Parameter order is
 * documented per builder (a search's FROM has one on PostgreSQL, after the select list's and
 * before the WHERE's). Fragments (conditions, select-list items) carry {@link SLOT}s; a builder
 * that answers a whole statement renders them in the backend's syntax (`?` on SQLite, `$1…$n`
 * on PostgreSQL: src/store/slots.ts). Every builder is pure, and `listSql` runs once per backend
 * (sql-stores.ts).
 *
 * Page orders end in the row's insertion-order column (`rowid`; `_rowid` on PostgreSQL) as the
 * tiebreak, and the sort terms are the rule compiler's, which order NULLs and text as SQLite does
 * on both backends.
 */
import type { ListDialect } from './list-dialect.js';
import { SLOT, renderSlots } from '../slots.js';

/** Whether an ORDER BY term (or list) ends descending (`… DESC`, `… DESC NULLS LAST`). */
const ENDS_DESC = / DESC(?: NULLS (?:FIRST|LAST))?$/i;
/** A random order term (`RANDOM() ASC`, `random() DESC`). */
const RANDOM = /RANDOM\(\)/i;

/** `count` comma-separated copies of parameter `p`. */
function params(p: string, count: number): string {
  return Array.from({ length: count }, () => p).join(',');
}

/** The list statements of one dialect (`store.sql.list`); built once per backend. */
export function listSql(d: ListDialect) {
  const { q, rowid, textParam, stringAgg, derivedAlias } = d;
  /** a whole statement's slots in the backend's syntax */
  const done = renderSlots[d.name];
  const [bytesOpen, bytesClose] = d.asBytes;

  /**
   * The ORDER BY list of an offset page: the sort, then the rowid as the tiebreak that makes the
   * order total (pages never overlap), in the direction of the sort's last term, so a sort on one
   * indexed column walks that index (its entries are ordered by column, then rowid) either way
   * instead of sorting every row again for a tiebreak in the other direction.
   */
  function pageOrderBy(order: string[]): string {
    const by = order.join(', ');
    return `${by}, ${rowid}${ENDS_DESC.test(by) ? ' DESC' : ''}`;
  }

  return {
    /** ORDER BY terms of a vector page before the sort: rows without an embedding last, then nearest. */
    VECTOR_ORDER: d.vectorOrder,
    /** The full-text relevance term (after the sort). */
    SEARCH_RANK: d.searchRank,
    /** The id term ending a vector page's order (and the aggregated term of a page's ids), in byte order. */
    ID_ORDER: d.idOrder,
    /** The condition "this record"; params: the id. */
    ID_EQUALS: `r."id" = ${textParam}`,
    /**
     * Separators of a page rendered as one string: between records, and between ids (record ids are
     * [a-z0-9]): U+001F as a literal (a `char(31)` call per row measured dearer: bench/README.md,
     * "List pages").
     */
    ITEM_SEPARATOR: "','",
    ID_SEPARATOR: "'\u001f'",

    /** The condition "one of these `count` records"; params: the ids. */
    idIn(count: number): string {
      return `r."id" IN (${params(textParam, count)})`;
    },

    /** ` FROM "<col>" r`, plus a join (full-text search) when given. */
    fromRecords(table: string, join = ''): string {
      return ` FROM ${q(table)} r${join}`;
    },

    /** The select-list item of a vector page's distance (`expr` has one `?`: the query). */
    vectorDistanceColumn(expr: string): string {
      return `, ${expr} AS "_vd"`;
    },

    /** Whether the ORDER BY terms include a random order (such pages are never cached or rendered in SQL). */
    hasRandomOrder(order: string[]): boolean {
      return order.some((o) => RANDOM.test(o));
    },

    /** One offset page; params: the select list's, the FROM's, the WHERE's, LIMIT, OFFSET. */
    offsetPageSql(select: string, from: string, where: string, order: string[]): string {
      return done(`SELECT ${select}${from}${where}${order.length ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT ${SLOT} OFFSET ${SLOT}`);
    },

    /** A page's ids in page order (the plan check of cached pages); params: the FROM's, the WHERE's, LIMIT, OFFSET. */
    pageIdsSql(from: string, where: string, order: string[]): string {
      return done(`SELECT r."id"${from}${where}${order.length ? ` ORDER BY ${pageOrderBy(order)}` : ''} LIMIT ${SLOT} OFFSET ${SLOT}`);
    },

    /** `id US rendering RS …` for the records of `table` whose ids are bound, `count` of them. */
    renderByIdsSql(table: string, rendered: string, count: number): string {
      return done(`SELECT ${stringAgg}(r."id" || '\u001f' || ${rendered}, '\u001e') FROM ${q(table)} r WHERE r."id" IN (${params(textParam, count)})`);
    },

    /**
     * The query aggregating SQL text expression `expr` over a page's rows into one string, the
     * values joined by `separator` (an SQL expression; NULL for no rows); its parameters are the FROM's
     * and the WHERE's values, LIMIT and OFFSET. Plain pages render their items this way (`expr`
     * the record's JSON, ITEM_SEPARATOR), and pages from cached records get their ids (ID_ORDER,
     * ID_SEPARATOR). With a sort, late materialization: ORDER BY … LIMIT makes SQLite compute the
     * select list of every matching row before it sorts, so the page's rowids are chosen first
     * (an index walk when the sort has one) and only those rows are read and rendered; the
     * aggregate orders the page's few rows again (an aggregate's input order is not guaranteed).
     * Without a sort the page has no defined order. `bytes`: the aggregate as the bytes of its
     * UTF-8 text, which the driver hands over as a Buffer without decoding it into a string.
     */
    pageAggregateSql(table: string, from: string, where: string, order: string[], expr: string, separator: string, bytes = false): string {
      const open = bytes ? bytesOpen : '';
      const close = bytes ? bytesClose : '';
      if (!order.length) return done(`SELECT ${open}${stringAgg}("_v", ${separator})${close} FROM (SELECT ${expr} AS "_v"${from}${where} LIMIT ${SLOT} OFFSET ${SLOT})${derivedAlias}`);
      const by = pageOrderBy(order);
      return done(`SELECT ${open}${stringAgg}(${expr}, ${separator} ORDER BY ${by})${close} FROM (SELECT ${rowid} AS "_rid"${from}${where} ORDER BY ${by} LIMIT ${SLOT} OFFSET ${SLOT}) p JOIN ${q(table)} r ON ${rowid} = p."_rid"`);
    },

    pageOrderBy,

    /**
     * A page of nearest rows from a vector index (libsql's DiskANN, pgvector's HNSW): `k`
     * candidates, ordered exactly; params: the query (select list), the query (index), LIMIT,
     * OFFSET. The last column counts the candidates.
     */
    nearestByIndexSql: (select: string, index: string, k: number, table: string, order: string[]): string => done(d.nearestByIndexSql(select, index, k, table, order)),

    /** The sort-key values of one row of a scope (a cursor's boundary looked up by id); params: the FROM's, the WHERE's. */
    boundarySql(keys: string[], from: string, where: string): string {
      return done(`SELECT ${keys.join(', ')}${from}${where} LIMIT 1`);
    },

    /** A keyset page: the codec columns and the sort keys, in walk order; params: the FROM's, the WHERE's, LIMIT. */
    keysetPageSql(columns: string, keys: string[], from: string, where: string, orderBy: string): string {
      return done(`SELECT ${columns}, ${keys.join(', ')}${from}${where} ORDER BY ${orderBy} LIMIT ${SLOT}`);
    },

    /** COUNT(*) of a scope (a bigint on PostgreSQL); params: the FROM's, the WHERE's. */
    countSql(from: string, where: string): string {
      return done(`SELECT COUNT(*)${from}${where}`);
    },

    /**
     * At most so many rows (a parameter) of a table matching one term (CompiledExpr.drivers), counted without
     * reading more than that; params: the term's, the bound. The plan of a term over an indexed
     * column reads index entries only.
     */
    boundedCountSql(table: string, term: string): string {
      return done(`SELECT COUNT(*) FROM (SELECT 1 FROM ${q(table)} r WHERE ${term} LIMIT ${SLOT})${derivedAlias}`);
    },

    /**
     * An ORDER BY term the planner cannot answer from an index (SQLite `+expr`): the page's rows
     * are then found through the WHERE's most selective index and sorted, instead of by walking
     * the sort index and testing every row against the filter. PostgreSQL plans by cost with
     * per-column statistics and gets the term unchanged.
     */
    unindexedOrder: d.unindexedOrder,

    /** The column (PostgreSQL: with its collation) and direction of a one-column sort an offset walk supports, or null. */
    walkOrder(order: string[]): { column: string; desc: boolean } | null {
      if (order.length !== 1) return null;
      const m = d.walkTerm.exec(order[0]);
      return m ? { column: m[1], desc: m[2].startsWith('DESC') } : null;
    },

    /**
     * The condition "strictly after the row whose sort key is (value, rowid)", both parameters, in the page
     * order of a one-column sort (pageOrderBy: the column, then the rowid, same direction): a row
     * value comparison the database answers as a range of a (column, rowid) index. It never holds
     * for a row whose value is NULL: NULLs sort first ascending (before any checkpoint, which is
     * never NULL), and a descending walk is only used over scopes without NULLs
     * (src/records/list/offset.ts, walkFrom). Params: the value, the rowid.
     */
    walkAfter(column: string, desc: boolean): string {
      return `(${column}, ${rowid}) ${desc ? '<' : '>'} (${SLOT}, ${d.rowidParam})`;
    },

    /** Whether a scope has a row whose sort value is NULL; params: the FROM's, the WHERE's. */
    hasNullSql(column: string, from: string, where: string): string {
      return done(`SELECT 1${from}${where ? `${where} AND` : ' WHERE'} ${column} IS NULL LIMIT 1`);
    },

    /** The sort key and rowid of the row so many rows (the offset) into a scope's page order; params: the FROM's, the WHERE's, the offset. */
    walkStepSql(column: string, from: string, where: string, order: string[]): string {
      return done(`SELECT ${column}, ${rowid}${from}${where} ORDER BY ${pageOrderBy(order)} LIMIT 1 OFFSET ${SLOT}`);
    },
  };
}

/** The record list statements of one backend (`store.sql.list`). */
export type ListSql = ReturnType<typeof listSql>;
