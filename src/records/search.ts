/**
 * Full-text search (docs/lists.md, "Full-text search": `searchable` fields; docs/api.md, "Full-text
 * search").
 *
 * `search` / `q` text is parsed once ({@link parseSearch}) and lowered to the backend's query
 * language: an FTS5 query on SQLite ({@link lowerSearch}), a `tsquery` on PostgreSQL
 * ({@link lowerTsquery}). Either is bound as ONE parameter, never spliced into SQL. Grammar:
 * terms separated by whitespace (control characters count as whitespace); `AND` (also implied
 * between terms), `OR` and `NOT` (upper case, as in FTS5) are operators; a term ending in `*` is a
 * prefix. Each term is quoted in the target language, so punctuation and operator syntax in it
 * (FTS5's `"`, `NEAR(`, `:`; tsquery's `&`, `|`, `!`, `<->`, `:*`) are inert: a term is its words
 * in order, adjacent (`são-paulo`), and the prefix mark applies to its last word.
 * `a b OR c NOT d` means (a AND b) OR (c AND NOT d): NOT applies to the next term and binds
 * within its OR group. Terms without a letter or digit are dropped; a group with no positive term
 * matches nothing; a query left with no group matches no rows.
 *
 * Startup (`prepareFullText`): with the `fts5-off` feature the server refuses a schema that
 * declares searchable fields; otherwise every searchable collection's index and triggers are
 * checked against what collection-sql.ts would create and rebuilt when missing or different.
 */
import { ApiError } from '../errors/api-error.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { Collection } from '../model/schema.js';
import type { SqlValue } from '../store/bind.js';
import type { BackendKind, SqlWriter } from '../store/backend.js';
import { backendSql } from '../store/dialects.js';
import { searchableFields, type FullTextSql } from '../store/full-text.js';

const MAX_SEARCH_CHARS = 1000;
const MAX_TERMS = 64;
const WORD = /[\p{L}\p{N}]/u;
/** Separators between terms: whitespace and control characters (a NUL would end FTS5's string). */
const TERM_SEPARATOR = /[\s\p{Cc}]+/u;
/** The words of a term, as FTS5's unicode61 tokenizer splits them (marks stay with their letters). */
const TERM_WORDS = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;

/** One term of a search: its text (without the prefix mark) and whether it ended in `*`. */
export interface SearchTerm {
  text: string;
  prefix: boolean;
}

/** One OR group: terms that must all match, and terms that must not. */
export interface SearchGroup {
  must: SearchTerm[];
  not: SearchTerm[];
}

/**
 * Parses `search` text into OR groups, each with at least one positive term (empty: the search
 * matches no rows). The grammar is in this module's header and docs/lists.md, "Full-text search".
 * @throws ApiError 400 when the text is longer than 1,000 characters or has more than 64 terms
 */
export function parseSearch(src: string): SearchGroup[] {
  if (src.length > MAX_SEARCH_CHARS) throw ApiError.badRequest(`Invalid search: at most ${MAX_SEARCH_CHARS} characters.`);
  const words = src.split(TERM_SEPARATOR).filter(Boolean);
  if (words.length > MAX_TERMS) throw ApiError.badRequest(`Invalid search: at most ${MAX_TERMS} terms.`);
  const groups: SearchGroup[] = [{ must: [], not: [] }];
  let negate = false;
  for (const w of words) {
    if (w === 'AND') continue;
    if (w === 'OR') {
      groups.push({ must: [], not: [] });
      negate = false;
      continue;
    }
    if (w === 'NOT') {
      negate = true;
      continue;
    }
    const text = w.replace(/\*+$/, '');
    if (WORD.test(text)) {
      const g = groups[groups.length - 1];
      (negate ? g.not : g.must).push({ text, prefix: text !== w });
    }
    negate = false;
  }
  return groups.filter((g) => g.must.length > 0);
}

/** An FTS5 string for one term (`"term"`, or `"term" *` for a prefix). */
function ftsTerm(t: SearchTerm): string {
  return `"${t.text.replace(/"/g, '""')}"${t.prefix ? ' *' : ''}`;
}

/**
 * Lowers `search` text to an FTS5 MATCH expression, or null when it reduces to nothing.
 * @throws ApiError 400 as {@link parseSearch}
 */
export function lowerSearch(src: string): string | null {
  const parts = parseSearch(src).map((g) => `(${g.must.map(ftsTerm).join(' AND ')}${g.not.length ? ` NOT (${g.not.map(ftsTerm).join(' OR ')})` : ''})`);
  return parts.length ? parts.join(' OR ') : null;
}

/** A quoted tsquery operand: inside `'…'` only the quote and the backslash are special. */
function tsQuoted(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * The tsquery of one term. Its words (split as FTS5 splits them) follow each other (`<->`), the
 * last one a prefix (`:*`) when the term is; like FTS5's `"são-pau" *`. A term with punctuation
 * is also tried whole, through PostgreSQL's own parser, which keeps e-mail addresses, host names
 * and decimal numbers as one word in the tsvector (`'ann@example.com'`), where FTS5 splits them.
 */
function tsTerm(t: SearchTerm): string {
  const words = t.text.match(TERM_WORDS) ?? [];
  const mark = t.prefix ? ':*' : '';
  const split = words.map((w, i) => `${tsQuoted(w)}${i === words.length - 1 ? mark : ''}`).join(' <-> ');
  if (words.length === 1 && words[0] === t.text) return split;
  return `(${split} | ${tsQuoted(t.text)}${mark})`;
}

/**
 * Lowers `search` text to the text of a PostgreSQL `tsquery` (for `to_tsquery` of the search
 * configuration, bound as a parameter: src/store/pg/list-dialect.ts, searchJoin), with the meaning
 * {@link lowerSearch} gives it on SQLite: `(a & b & !(c | d)) | (…)`; null when it reduces to
 * nothing. Every term is quoted ({@link tsTerm}), so the text never carries the user's operators.
 * @throws ApiError 400 as {@link parseSearch}
 */
export function lowerTsquery(src: string): string | null {
  const parts = parseSearch(src).map((g) => `(${g.must.map(tsTerm).join(' & ')}${g.not.length ? ` & !(${g.not.map(tsTerm).join(' | ')})` : ''})`);
  return parts.length ? parts.join(' | ') : null;
}

/** A search to apply to a list query. */
export interface SearchPlan {
  /** the raw text, for cursor binding */
  text: string;
  /** the FTS5 expression (PostgreSQL: the tsquery text), or null: match no rows */
  match: string | null;
  /** SQLite: `JOIN "<col>_fts" f ON f.rowid = r.rowid`; PostgreSQL: the tsquery joined as `f."q"` */
  join: string;
  /** the join's parameters (they come before the WHERE clause's) */
  joinParams: SqlValue[];
  /** SQLite: `f."<col>_fts" MATCH ?`; PostgreSQL: `r."_fts" @@ f."q"` */
  where: string;
  /** the match's parameters */
  whereParams: SqlValue[];
}

/**
 * The search of a list request (`text`: ListQuery.search, the trimmed `search` or `q`; blank means none), or null.
 * @throws ApiError 400 when full-text search is disabled, or the collection has no searchable field
 */
export function searchPlan(c: Collection, text: string, enabled: boolean, kind: BackendKind = 'sqlite'): SearchPlan | null {
  if (text === '') return null;
  if (!enabled) throw ApiError.badRequest('Full-text search is not available on this server (feature fts5-off).');
  if (searchableFields(c).length === 0) throw ApiError.badRequest(`The collection "${c.name}" has no searchable field.`);
  // SQLite: the FTS5 table, matched in the WHERE clause; PostgreSQL: the generated tsvector column,
  // matched by the same grammar lowered to a tsquery joined in the FROM clause (src/store/pg/list-dialect.ts, searchJoin)
  const d = backendSql(kind).list;
  const match = d.searchQuery === 'tsquery' ? lowerTsquery(text) : lowerSearch(text);
  const params = match === null ? [] : [match];
  return { text, match, join: d.searchJoin(c), joinParams: d.searchParamIn === 'join' ? params : [], where: d.searchMatch(c), whereParams: d.searchParamIn === 'where' ? params : [] };
}

/**
 * What prepareFullText uses: every collection, the full-text indexes' upkeep, the writer, and the
 * reader's invalidation after a rebuild (Store.schemaChanged). A Store is one.
 */
export interface FullTextRepository {
  registry: Pick<CollectionRegistry, 'all'>;
  writer: Pick<SqlWriter, 'write'>;
  sql: { fullText: FullTextSql };
  /** drops cached statements and plans after a schema change */
  schemaChanged(): void;
}

/**
 * Startup: refuses (throws) a schema with searchable fields when full-text search is off;
 * otherwise creates or rebuilds every searchable collection's index that is missing or stale.
 * @returns the names of the collections whose index was (re)built
 */
export async function prepareFullText(store: FullTextRepository, enabled: boolean): Promise<string[]> {
  store.sql.fullText.enable(enabled);
  const searchable = store.registry.all().filter((c) => searchableFields(c).length > 0);
  if (!enabled) {
    if (searchable.length === 0) return [];
    const list = searchable.map((c) => `"${c.name}" (${searchableFields(c).map((f) => f.name).join(', ')})`).join(', ');
    throw new Error(`full-text search is disabled (feature fts5-off) but these collections declare searchable fields: ${list}; remove the feature or the fields' searchable option`);
  }
  // none on PostgreSQL: its tsvector column is generated by the table itself (src/store/full-text.ts)
  const { stale, steps } = store.sql.fullText.staleIndexes(searchable);
  if (stale.length === 0) return [];
  await store.writer.write(steps);
  store.schemaChanged();
  return stale.map((c) => c.name);
}
