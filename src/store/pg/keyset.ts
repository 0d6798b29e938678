/**
 * Keyset predicates for cursor paging in PostgreSQL (issue 24): src/store/sqlite/keyset.ts over
 * the sort terms of the PostgreSQL emitter (rule-sql.ts, emitSort), with the same exports, shapes
 * and semantics (spec 1-core-api.md, "List query parameters": in cursor mode `id` is appended to
 * the sort as the tiebreaker).
 *
 * The emitter's terms end in `ASC NULLS FIRST` / `DESC NULLS LAST` and compare text under
 * `COLLATE "C"`: SQLite's order, NULL below every other value and text bytewise. A key's SQL is
 * the term without its direction (`r."title" COLLATE "C"`), so the key values read back, the
 * ORDER BY and the predicates all use the same expression and collation. Every ORDER BY written
 * here names its NULL placement (PostgreSQL's default puts NULLs last ascending); the predicates
 * are SQLite's:
 *   beyond(B) = OR over i of (k1 = v1 AND … AND k(i-1) = v(i-1) AND k(i) beyond v(i))
 * (`k IS NULL` for a NULL value), where "k beyond v" walking up is `k > v` (or `k IS NOT NULL`
 * when v is NULL), and walking down is `k < v OR k IS NULL` (nothing when v is NULL). Pages are
 * read as disjoint segments on the leading key, in walk order (`segments`).
 */
import { ApiError } from '../../errors/api-error.js';
import type { SqlValue } from '../bind.js';
import type { Collection } from '../../collections/types.js';
import { isPrivateEmail, type SchemaLookup } from '../../rules/compiler.js';
import type { KeyValue } from '../../records/cursor.js';
import type { SortKey, SqlPart } from '../sqlite/keyset.js';
import { emitSort } from './rule-sql.js';
import { ID_ORDER } from './list-sql.js';

export type { SortKey, SqlPart } from '../sqlite/keyset.js';

/** Columns that are never NULL (compared without their collation). */
const NOT_NULL_COLUMNS = new Set(['r."id"', 'r."created"', 'r."updated"', 'r."_rowid"']);

/** One emitted sort term: the key expression and its direction. */
const TERM = /^(.*) (ASC NULLS FIRST|DESC NULLS LAST)$/s;

/**
 * The key of one sort term of the PostgreSQL emitter (`<expr> ASC NULLS FIRST`,
 * `<expr> DESC NULLS LAST`). @throws Error for a term of another shape (a programming error)
 */
export function sortKeyOf(term: string): SortKey {
  const m = TERM.exec(term);
  if (!m) throw new Error(`keyset: unexpected sort term ${JSON.stringify(term)}`);
  const sql = m[1];
  const desc = m[2].startsWith('DESC');
  return { sql, desc, notNull: NOT_NULL_COLUMNS.has(sql.replace(/ COLLATE "C"$/, '')), term: `${desc ? '-' : ''}${sql}` };
}

/**
 * The cursor-mode sort keys of `src` (validated like `sort` in offset mode), with `id` appended
 * unless the sort already names it.
 * @throws ApiError 400 for an invalid sort, and for `@random` (no stable order to resume)
 */
export function cursorSortKeys(src: string | null, c: Collection, schema: SchemaLookup, superuser = false): SortKey[] {
  const keys: SortKey[] = [];
  if (src && src.length > 8192) throw ApiError.badRequest('Invalid sort: the sort parameter is too long.');
  for (const raw of (src ?? '').split(',')) {
    const seg = raw.trim();
    if (seg === '') continue;
    if (keys.length === 16) throw ApiError.badRequest('Invalid sort: at most 16 sort fields are allowed.');
    const name = seg.replace(/^[-+]\s*/, '');
    if (name === '@random') throw ApiError.badRequest('Invalid sort: @random cannot be used with cursor paging.');
    const key = sortKeyOf(emitSort(seg, c, schema, 'r', superuser));
    if (isPrivateEmail(c, name)) key.private = true;
    keys.push(key);
  }
  if (keys.length === 0 && src && src.trim() !== '') throw ApiError.badRequest('Invalid sort: no field given.');
  if (!keys.some((k) => k.sql === ID_ORDER)) keys.push({ sql: ID_ORDER, desc: false, notNull: true, term: ID_ORDER });
  return keys;
}

/** `ORDER BY` body for walking forward, or backward (every direction flipped); NULLs always lowest. */
export function orderBy(keys: SortKey[], backward: boolean): string {
  return keys.map((k) => `${k.sql} ${k.desc !== backward ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`).join(', ');
}

/** `k beyond v` for one key walking up (`down` false) or down; null when nothing is beyond. */
function beyond(k: SortKey, v: KeyValue, down: boolean): SqlPart | null {
  if (!down) return v === null ? { sql: `${k.sql} IS NOT NULL`, params: [] } : { sql: `${k.sql} > ?`, params: [v] };
  if (v === null) return null;
  return { sql: k.notNull ? `${k.sql} < ?` : `(${k.sql} < ? OR ${k.sql} IS NULL)`, params: [v] };
}

/** The exact "strictly beyond the boundary in walk order" predicate (`false` when nothing is). */
export function beyondBoundary(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart {
  const ors: string[] = [];
  const params: SqlValue[] = [];
  const eqSql: string[] = [];
  const eqParams: SqlValue[] = [];
  for (let i = 0; i < keys.length; i++) {
    const b = beyond(keys[i], values[i], keys[i].desc !== backward);
    if (b) {
      ors.push(eqSql.length ? `(${[...eqSql, b.sql].join(' AND ')})` : b.sql);
      params.push(...eqParams, ...b.params);
    }
    if (values[i] === null) eqSql.push(`${keys[i].sql} IS NULL`);
    else {
      eqSql.push(`${keys[i].sql} = ?`);
      eqParams.push(values[i]);
    }
  }
  return ors.length ? { sql: ors.length === 1 ? ors[0] : `(${ors.join(' OR ')})`, params } : { sql: 'false', params: [] };
}

/**
 * The rows beyond the boundary as disjoint segments in walk order, each a complete predicate that
 * bounds an index range on the leading key k1 (ORed together they equal `beyondBoundary`): first
 * the tie group (`k1 = v` and the remaining keys beyond theirs), then the rows strictly beyond v
 * (`k1 > v` walking up; `k1 < v` then `k1 IS NULL` walking down, NULLs sorting last).
 */
export function segments(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart[] {
  const [k, ...restKeys] = keys;
  const v = values[0];
  const down = k.desc !== backward;
  const out: SqlPart[] = [];
  if (restKeys.length) {
    const rest = beyondBoundary(restKeys, values.slice(1), backward);
    if (rest.sql !== 'false') {
      out.push(v === null
        ? { sql: `${k.sql} IS NULL AND ${rest.sql}`, params: rest.params }
        : { sql: `${k.sql} = ? AND ${rest.sql}`, params: [v, ...rest.params] });
    }
  }
  if (!down) out.push(v === null ? { sql: `${k.sql} IS NOT NULL`, params: [] } : { sql: `${k.sql} > ?`, params: [v] });
  else if (v !== null) {
    out.push({ sql: `${k.sql} < ?`, params: [v] });
    if (!k.notNull) out.push({ sql: `${k.sql} IS NULL`, params: [] });
  }
  return out;
}

/**
 * Normalized description of the keys, for the cursor binding: the terms without the collation
 * and NULL placement PostgreSQL needs to order as SQLite does, so a key reads as on SQLite
 * (`r."id"`, src/store/sqlite/keyset.ts).
 */
export function sortSignature(keys: SortKey[]): string {
  return keys.map((k) => k.term.replace(/ COLLATE "C"/g, '').replace(/ NULLS (FIRST|LAST)$/, '')).join(',');
}
