/**
 * SQLite's entry of the list dialect (src/store/sql/list-dialect.ts) and its list and keyset
 * builders (`store.sql.list`, `store.sql.keyset`): plain `ASC`/`DESC` terms (SQLite already
 * orders NULL lowest and text bytewise), `rowid` as the tiebreak, FTS5 for search (the joined
 * `<col>_fts` table, collection-sql.ts) and libsql's `vector_top_k` for nearest rows.
 */
import type { ListDialect } from '../sql/list-dialect.js';
import { listSql } from '../sql/list-sql.js';
import { keysetSql } from '../sql/keyset.js';
import { ftsJoinSql, ftsMatchSql, q } from './collection-sql.js';

/** SQLite's spelling of the list statements. */
export const sqliteListDialect: ListDialect = {
  name: 'sqlite',
  q,
  rowid: 'r.rowid',
  textParam: '?',
  rowidParam: '?',
  idOrder: 'r."id"',
  notNullColumns: new Set(['r."id"', 'r."created"', 'r."updated"', 'r.rowid']),
  bareKey: (sql) => sql,
  sortTerm: /^(.*) (ASC|DESC)$/s,
  // `r."<column>" ASC|DESC`: the one-column sorts an offset walk can seek in (list-sql.ts, walkAfter)
  walkTerm: /^(r\."(?:[A-Za-z_][A-Za-z0-9_]*)") (ASC|DESC)$/,
  asc: 'ASC',
  desc: 'DESC',
  signatureTerm: (term) => term,
  unindexedOrder: (term) => `+${term}`,
  never: '0',
  stringAgg: 'group_concat',
  // a BLOB of the UTF-8 text, which libsql hands over as a Buffer without decoding it
  asBytes: ['CAST(', ' AS BLOB)'],
  derivedAlias: '',
  // FTS5's rank: lower is better
  searchRank: 'f.rank',
  // ` JOIN "<col>_fts" f ON f.rowid = r.rowid`, no params
  searchJoin: ftsJoinSql,
  // `f."<col>_fts" MATCH ?`; params: the FTS5 expression (src/records/search.ts, lowerSearch)
  searchMatch: ftsMatchSql,
  searchQuery: 'fts5',
  searchParamIn: 'where',
  vectorOrder: ['"_vd" IS NULL', '"_vd"'],
  /** From a DiskANN index (`vector_top_k`); params: the query blob (select list), the query blob (index), LIMIT, OFFSET. */
  nearestByIndexSql(select, index, k, table, order) {
    return `SELECT ${select}, COUNT(*) OVER () AS "_n" FROM vector_top_k('${index}', ?, ${k}) v JOIN ${q(table)} r ON r.rowid = v.id` +
      ` WHERE "_vd" IS NOT NULL ORDER BY ${order.join(', ')} LIMIT ? OFFSET ?`;
  },
};

/** SQLite's record list statements. */
export const sqliteList = listSql(sqliteListDialect);
/** SQLite's cursor sort keys and keyset terms. */
export const sqliteKeyset = keysetSql(sqliteListDialect);
