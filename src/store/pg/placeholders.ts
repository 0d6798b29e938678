/**
 * The `?` slots of an app migration's statements on PostgreSQL (docs/framework.md, "Migrations":
 * a migration may write SQLite's positional `?` so that it runs on both backends), and the NUL
 * check of every bound text. svc's own statements never pass through here: they are written
 * with PostgreSQL's `$1…$n` (src/store/slots.ts). `toPgPlaceholders` numbers the `?` slots of one
 * statement (`$1`, `$2`, …) and leaves alone every `?` that is not a slot: inside a
 * single-quoted string ('', E'' with backslash escapes), a double-quoted identifier, a
 * dollar-quoted string ($$…$$, $tag$…$tag$), a `--` line comment or a (nested) block comment.
 *
 * A `?` outside those is always a slot: PostgreSQL's jsonb operators `?`, `?|` and `?&` cannot be
 * written in a statement that goes through here (spell them `jsonb_exists`, `jsonb_exists_any`,
 * `jsonb_exists_all`).
 *
 * Conversions are cached by statement text (a migration run may repeat a statement many times):
 * at most PLACEHOLDER_CACHE_MAX entries, the least recently used dropped first.
 */
import { InvalidValue } from '../errors/store-errors.js';
import { LRUCache } from 'lru-cache';

/** Most statements whose conversion is kept. */
export const PLACEHOLDER_CACHE_MAX = 1000;

/**
 * PostgreSQL text cannot hold U+0000 (SQLite's can): a bound string with one would fail the
 * statement with a server error (22021), so reads and writes refuse it first, as bad input.
 * @throws InvalidValue when a string parameter contains U+0000
 */
export function refuseNul(params: readonly unknown[]): void {
  for (const p of params) {
    if (typeof p === 'string' && p.includes('\u0000')) throw new InvalidValue('Text may not contain the NUL character (U+0000) on this server.');
  }
}

const cache = new LRUCache<string, string>({ max: PLACEHOLDER_CACHE_MAX });

const QUESTION = 63; // ?
const SQUOTE = 39; // '
const DQUOTE = 34; // "
const DOLLAR = 36; // $
const DASH = 45; // -
const SLASH = 47; // /
const STAR = 42; // *
const BACKSLASH = 92; // \

/** A character that may continue an identifier (letters, digits, `_`, `$`, and any non-ASCII). */
function isIdentChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === DOLLAR || c >= 128;
}

/** A character that may start a dollar-quote tag (no digits: `$1` is a parameter). */
function isTagStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c >= 128;
}

/**
 * `sql` with its `?` slots numbered `$1..$n` in order of appearance (see the module comment for
 * what is not a slot). Returns `sql` itself when it holds no `?`.
 */
export function toPgPlaceholders(sql: string): string {
  if (sql.indexOf('?') < 0) return sql;
  const hit = cache.get(sql);
  if (hit !== undefined) return hit;
  const out = convert(sql);
  cache.set(sql, out);
  return out;
}

/** Entries held by the conversion cache (for tests). */
export function placeholderCacheSize(): number {
  return cache.size;
}

function convert(sql: string): string {
  const n = sql.length;
  let out = '';
  let from = 0; // start of the text not yet copied to `out`
  let slot = 0;
  let i = 0;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === QUESTION) {
      out += sql.slice(from, i) + '$' + ++slot;
      from = ++i;
    } else if (c === SQUOTE) {
      // E'…' (either case) takes backslash escapes; a plain '…' does not (standard_conforming_strings)
      const prev = i > 0 ? sql.charCodeAt(i - 1) : 0;
      const escapes = (prev === 69 || prev === 101) && !(i > 1 && isIdentChar(sql.charCodeAt(i - 2)));
      i = skipQuoted(sql, i + 1, SQUOTE, escapes);
    } else if (c === DQUOTE) {
      i = skipQuoted(sql, i + 1, DQUOTE, false);
    } else if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      const end = sql.indexOf('\n', i + 2);
      i = end < 0 ? n : end + 1;
    } else if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      i = skipBlockComment(sql, i + 2);
    } else if (c === DOLLAR && !(i > 0 && isIdentChar(sql.charCodeAt(i - 1)))) {
      i = skipDollarQuoted(sql, i);
    } else {
      i++;
    }
  }
  return slot === 0 ? sql : out + sql.slice(from);
}

/** The index after the closing quote of a quoted run starting at `i` (a doubled quote stays inside). */
function skipQuoted(sql: string, i: number, quote: number, escapes: boolean): number {
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (escapes && c === BACKSLASH) i += 2;
    else if (c === quote) {
      if (sql.charCodeAt(i + 1) === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return n;
}

/** The index after the star-slash that closes a block comment whose body starts at `i` (they nest). */
function skipBlockComment(sql: string, i: number): number {
  const n = sql.length;
  let depth = 1;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      depth++;
      i += 2;
    } else if (c === STAR && sql.charCodeAt(i + 1) === SLASH) {
      i += 2;
      if (--depth === 0) return i;
    } else i++;
  }
  return n;
}

/**
 * At a `$` that may open a dollar-quoted string: the index after its closing tag, or the index
 * after the `$` when it opens none (a `$1` parameter, a lone `$`).
 */
function skipDollarQuoted(sql: string, i: number): number {
  const n = sql.length;
  let j = i + 1;
  if (j < n && sql.charCodeAt(j) !== DOLLAR) {
    if (!isTagStart(sql.charCodeAt(j))) return i + 1;
    while (j < n && isIdentChar(sql.charCodeAt(j)) && sql.charCodeAt(j) !== DOLLAR) j++;
    if (j >= n || sql.charCodeAt(j) !== DOLLAR) return i + 1;
  }
  const tag = sql.slice(i, j + 1); // `$$` or `$tag$`
  const end = sql.indexOf(tag, j + 1);
  return end < 0 ? n : end + tag.length;
}
