/**
 * What SQLite and PostgreSQL spell differently in the statements of record lists and cursor
 * paging (ARCHITECTURE.md, src/store/sql/): the one list statement builder (list-sql.ts) and the
 * one keyset builder (keyset.ts) here take a `ListDialect`; each backend provides its entry
 * next to its executor (src/store/sqlite/list-dialect.ts, src/store/pg/list-dialect.ts).
 *
 * Both backends order lists as SQLite does (NULL below every other value, text bytewise);
 * PostgreSQL says so in every term (`NULLS FIRST`/`LAST`, `COLLATE "C"`), which is most of what
 * differs. Entries are plain strings where a spelling is all that differs, and functions where a
 * clause is built differently (the search clause, nearest rows by vector).
 */
import type { Collection } from '../../model/schema.js';
import type { SqlDialectName } from '../rule-types.js';

export interface ListDialect {
  /** the rule compiler's dialect, whose sort emitter writes the sort terms (rules/compiler.ts, compileSort) */
  name: SqlDialectName;
  /** Quotes an identifier (`"name"`, inner `"` doubled). */
  q(name: string): string;

  // ---- rows and parameters ----
  /** the row's unique insertion-order column, the tiebreak ending every offset page order (`r.rowid`, `r."_rowid"`) */
  rowid: string;
  /** a text parameter compared with record ids (`?`; a SLOT typed `::text`: src/store/slots.ts) */
  textParam: string;
  /** a parameter compared with {@link rowid} (`?`; a SLOT typed `::bigint`) */
  rowidParam: string;
  /** the id as a sort key, ending a vector page's and a cursor's order, in byte order (`r."id"`, `r."id" COLLATE "C"`) */
  idOrder: string;
  /** columns never NULL, as {@link bareKey} writes them (compared without a NULL branch in keyset predicates) */
  notNullColumns: ReadonlySet<string>;
  /** a sort key's expression without its collation, to look up in {@link notNullColumns} */
  bareKey(sql: string): string;

  // ---- ordering ----
  /** an emitted sort term: group 1 the key expression, group 2 its direction (`ASC`…, `DESC`…) */
  sortTerm: RegExp;
  /** the one-column sorts an offset walk can seek in: group 1 the column, group 2 the direction */
  walkTerm: RegExp;
  /** direction words of an ORDER BY term with NULLs lowest (`ASC`, `ASC NULLS FIRST`) */
  asc: string;
  /** (`DESC`, `DESC NULLS LAST`) */
  desc: string;
  /** a cursor signature's form of a key term: the term without what only this database needs to order as SQLite does */
  signatureTerm(term: string): string;
  /** A term no index may answer (SQLite `+expr`; PostgreSQL plans by cost: the term as it is). */
  unindexedOrder(term: string): string;
  /** the predicate that holds for no row (`0`, `false`) */
  never: string;

  // ---- pages rendered in the database ----
  /** the ordered string aggregate, called as `agg(expr, separator ORDER BY …)` (`group_concat`, `string_agg`) */
  stringAgg: string;
  /** what wraps an aggregate to hand its UTF-8 text over as bytes (a Buffer): [before, after] */
  asBytes: readonly [string, string];
  /** the alias a derived table needs after its `)` (`''` on SQLite, ` p` on PostgreSQL) */
  derivedAlias: string;

  // ---- search and vectors ----
  /** the full-text relevance ORDER BY term (after the sort), over {@link searchJoin}'s `f` */
  searchRank: string;
  /** The FROM-clause join of a search of `c` (`f`); see each backend's entry for its parameters. */
  searchJoin(c: Collection): string;
  /** The WHERE term of a search of `c` over {@link searchJoin}'s `f`; see each backend's entry for its parameters. */
  searchMatch(c: Collection): string;
  /**
   * What a search's text is lowered to (src/records/search.ts): an FTS5 expression (`fts5`,
   * lowerSearch) or the text of a tsquery (`tsquery`, lowerTsquery)
   */
  searchQuery: 'fts5' | 'tsquery';
  /** Which clause binds the lowered search as its one parameter: {@link searchJoin}'s or {@link searchMatch}'s */
  searchParamIn: 'join' | 'where';
  /** ORDER BY terms of a vector page before the sort: rows without an embedding last, then nearest */
  vectorOrder: readonly string[];
  /**
   * A page of nearest rows from the vector index `index` of `table`: `k` candidates ordered by
   * `order`; params: the query (select list), the query (index), LIMIT, OFFSET. The last column
   * (`_n`) counts the candidates.
   */
  nearestByIndexSql(select: string, index: string, k: number, table: string, order: string[]): string;
}
