/**
 * PostgreSQL's entry of the list dialect (src/store/sql/list-dialect.ts) and its list and keyset
 * builders (`store.sql.list`, `store.sql.keyset`), over the storage model of collection-sql.ts.
 * Where SQLite uses `r.rowid`, the tiebreak here is the identity column `r."_rowid"` (unique
 * index); sort terms are the PostgreSQL emitter's (rule-sql.ts, emitSort: `… ASC NULLS FIRST` /
 * `… DESC NULLS LAST`, text under `COLLATE "C"`), which order NULLs and text as SQLite does, and
 * every ORDER BY written from keys names its NULL placement (PostgreSQL's default puts NULLs last
 * ascending).
 *
 * Differences from SQLite, each where it matters:
 * - pages rendered in the database aggregate with `string_agg(… ORDER BY …)`, the bytes variant
 *   as `convert_to(…, 'UTF8')`, a bytea the `pg` driver hands over as a Buffer;
 * - a derived table needs an alias (PostgreSQL 15);
 * - parameters compared with text ids and `_rowid` carry their type (`::text`, `::bigint`); every
 *   parameter is a SLOT (src/store/slots.ts) that the list builders number `$1…$n`;
 * - full-text search has no joined FTS table: the query is a `tsquery` joined once as `f`
 *   ({@link searchJoin}, whose parameter comes in the FROM clause, after the select list's and before
 *   the WHERE's), matched against the record's `"_fts"` column ({@link SEARCH_MATCH}) and ranked
 *   by `ts_rank` ({@link SEARCH_RANK}, higher first, where FTS5's rank is lower first);
 * - the vector distance is a select-list alias (`"_vd"`), which PostgreSQL's ORDER BY accepts as a
 *   bare name only: the vector order is one `"_vd" ASC NULLS LAST` term (SQLite's two terms
 *   `"_vd" IS NULL, "_vd"`), and nearest rows come through pgvector's HNSW index (`<=>`, cosine)
 *   instead of libsql's `vector_top_k`;
 * - PostgreSQL plans by cost with per-column statistics: SQLite's `+term` (an ORDER BY term no
 *   index may answer) has no counterpart and `unindexedOrder` returns the term unchanged.
 */
import type { ListDialect } from '../sql/list-dialect.js';
import { listSql } from '../sql/list-sql.js';
import { keysetSql } from '../sql/keyset.js';
import { FTS_CONFIG, q } from './collection-sql.js';
import { SLOT } from '../slots.js';

/**
 * The full-text relevance term (after the sort), over the query joined by {@link searchJoin}.
 * `ts_rank` is higher for better matches.
 */
export const SEARCH_RANK = 'ts_rank(r."_fts", f."q") DESC';
/** The full-text match over the query joined by {@link searchJoin}. */
export const SEARCH_MATCH = 'r."_fts" @@ f."q"';

/**
 * The FROM-clause join of a search: the query as a tsquery of the search configuration, named
 * `f."q"`; params: the tsquery text that src/records/search.ts (lowerTsquery) lowered the search
 * to, every term quoted there, so the user's text never reaches `to_tsquery` as syntax
 * (docs/lists.md, "Full-text search": the same grammar as FTS5 on SQLite).
 */
export function searchJoin(): string {
  return ` CROSS JOIN to_tsquery('${FTS_CONFIG}'::regconfig, ${SLOT}::text) AS f("q")`;
}

/** PostgreSQL's spelling of the list statements. */
export const pgListDialect: ListDialect = {
  name: 'postgres',
  q,
  rowid: 'r."_rowid"',
  textParam: `${SLOT}::text`,
  rowidParam: `${SLOT}::bigint`,
  idOrder: 'r."id" COLLATE "C"',
  // compared without their collation (bareKey)
  notNullColumns: new Set(['r."id"', 'r."created"', 'r."updated"', 'r."_rowid"']),
  bareKey: (sql) => sql.replace(/ COLLATE "C"$/, ''),
  // the direction with SQLite's NULL placement, bare for a column never NULL (rule-sql.ts, sortDir)
  sortTerm: /^(.*) (ASC(?: NULLS FIRST)?|DESC(?: NULLS LAST)?)$/s,
  // `r."<column>"` (numbers, bools) or `r."<column>" COLLATE "C"` (text), then the direction
  walkTerm: /^(r\."(?:[A-Za-z_][A-Za-z0-9_]*)"(?: COLLATE "C")?) (ASC(?: NULLS FIRST)?|DESC(?: NULLS LAST)?)$/,
  asc: 'ASC NULLS FIRST',
  desc: 'DESC NULLS LAST',
  // a key reads as on SQLite: without the collation and NULL placement
  signatureTerm: (term) => term.replace(/ COLLATE "C"/g, '').replace(/ NULLS (FIRST|LAST)$/, ''),
  unindexedOrder: (term) => term,
  never: 'false',
  stringAgg: 'string_agg',
  asBytes: ['convert_to(', `, 'UTF8')`],
  derivedAlias: ' p',
  searchRank: SEARCH_RANK,
  searchJoin,
  searchMatch: () => SEARCH_MATCH,
  searchQuery: 'tsquery',
  searchParamIn: 'join',
  vectorOrder: ['"_vd" ASC NULLS LAST'],
  /**
   * From a pgvector HNSW index: `k` candidates (rows with an embedding, nearest first by cosine
   * distance); params: the query vector (select list), the query vector (index), LIMIT, OFFSET.
   * `index` names the vector shadow column (collection-sql.ts, vectorColumn) whose index answers
   * `ORDER BY … <=> … LIMIT k`.
   */
  nearestByIndexSql(select, index, k, table, order) {
    return `SELECT ${select}, COUNT(*) OVER () AS "_n" FROM (SELECT * FROM ${q(table)} c WHERE c.${q(index)} IS NOT NULL`
      + ` ORDER BY c.${q(index)} <=> ${SLOT}::vector LIMIT ${k}) r ORDER BY ${order.join(', ')} LIMIT ${SLOT} OFFSET ${SLOT}`;
  },
};

/** PostgreSQL's record list statements. */
export const pgList = listSql(pgListDialect);
/** PostgreSQL's cursor sort keys and keyset terms. */
export const pgKeyset = keysetSql(pgListDialect);
