/**
 * Keyset predicates for cursor paging on both backends (docs/lists.md, "Cursor paging": in cursor
 * mode `id` is appended to the sort as the tiebreaker), in the spelling of a {@link ListDialect}
 * (ARCHITECTURE.md, src/store/sql/).
 *
 * Both backends order NULL below every other value: NULLs come first ascending and last
 * descending (PostgreSQL's sort terms and every ORDER BY written here name that placement; text
 * compares bytewise there under `COLLATE "C"`). A key's SQL is its sort term without the
 * direction (`r."title"`; `r."title" COLLATE "C"`), so the key values read back, the ORDER BY and
 * the predicates all use the same expression and collation. The predicates follow that order
 * exactly, key by key, with mixed directions:
 *   beyond(B) = OR over i of (k1 = v1 AND … AND k(i-1) = v(i-1) AND k(i) beyond v(i))
 * (`k IS NULL` for a NULL value), where "k beyond v" walking up is `k > v` (or `k IS NOT NULL`
 * when v is NULL), and walking down is `k < v OR k IS NULL` (nothing when v is NULL). Because the
 * boundary is a tuple of values, not a row position, rows inserted or deleted between pages never
 * shift the walk: each row that exists throughout is returned exactly once.
 *
 * That OR does not bound an index range, so pages are read as disjoint segments on the leading
 * key, in walk order (`segments`); the caller stops as soon as it has enough rows.
 */
import { InvalidQuery } from '../errors/store-errors.js';
import type { SqlValue } from '../bind.js';
import { isPrivateEmail, type Collection } from '../../model/schema.js';
import type { SchemaLookup } from '../rule-types.js';
import { ruleEmitter } from '../rule-emitters.js';
import type { ListDialect } from './list-dialect.js';
import { SLOT } from '../slots.js';

/** A raw sort-key value as the database returns it (integers as BigInt, or on PostgreSQL smallint and integer as numbers), a cursor's boundary values (src/records/cursor.ts). */
export type KeyValue = string | number | bigint | null | Uint8Array;

/** One ORDER BY key: its SQL (`r."name"`), its direction, and whether it can hold NULL. */
export interface SortKey {
  sql: string;
  desc: boolean;
  notNull: boolean;
  /** the sort term as written, normalized (`-name`) */
  term: string;
  /** the key reads a private column (an auth collection's email): tokens never carry its values */
  private?: boolean;
}

/** A WHERE fragment with its parameters. */
export interface SqlPart {
  sql: string;
  params: SqlValue[];
}

/** Cursor sort keys and keyset terms of one backend (`store.sql.keyset`). */
export interface KeysetSql {
  /**
   * The key of one sort term of the backend's sort emitter (`<expr> ASC`, `<expr> DESC NULLS LAST`, …).
   * @throws Error for a term of another shape (a programming error)
   */
  sortKeyOf(term: string): SortKey;
  /**
   * The cursor-mode sort keys of `src` (validated like `sort` in offset mode), with `id` appended
   * unless the sort already names it.
   * @throws InvalidQuery for an invalid sort, and for `@random` (no stable order to resume)
   */
  cursorSortKeys(src: string | null, c: Collection, schema: SchemaLookup, superuser?: boolean): SortKey[];
  /** `ORDER BY` body for walking forward, or backward (every direction flipped); NULLs always lowest. */
  orderBy(keys: SortKey[], backward: boolean): string;
  /** The exact "strictly beyond the boundary in walk order" predicate (the dialect's `never` when nothing is). */
  beyondBoundary(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart;
  /**
   * The rows beyond the boundary as disjoint segments in walk order, each a complete predicate
   * that bounds an index range on the leading key k1 (ORed together they equal `beyondBoundary`):
   * first the tie group (`k1 = v` and the remaining keys beyond theirs), then the rows strictly
   * beyond v (`k1 > v` walking up; `k1 < v` then `k1 IS NULL` walking down, NULLs sorting last).
   * With an index on (k1, …, id) every page reads about one page of rows, even inside a large
   * group of equal values.
   */
  segments(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart[];
  /**
   * Normalized description of the keys, for the cursor binding: the terms without what
   * PostgreSQL needs to order as SQLite does, so a key reads the same on both (`r."id"`).
   */
  sortSignature(keys: SortKey[]): string;
}

/** The keyset builders of one dialect; built once per backend (sql-stores.ts). */
export function keysetSql(d: ListDialect): KeysetSql {
  const { never } = d;

  function sortKeyOf(term: string): SortKey {
    const m = d.sortTerm.exec(term);
    if (!m) throw new Error(`keyset: unexpected sort term ${JSON.stringify(term)}`);
    const sql = m[1];
    const desc = m[2].startsWith('DESC');
    return { sql, desc, notNull: d.notNullColumns.has(d.bareKey(sql)), term: `${desc ? '-' : ''}${sql}` };
  }

  /** `k beyond v` for one key walking up (`down` false) or down; null when nothing is beyond. */
  function beyond(k: SortKey, v: KeyValue, down: boolean): SqlPart | null {
    if (!down) return v === null ? { sql: `${k.sql} IS NOT NULL`, params: [] } : { sql: `${k.sql} > ${SLOT}`, params: [v] };
    if (v === null) return null;
    return { sql: k.notNull ? `${k.sql} < ${SLOT}` : `(${k.sql} < ${SLOT} OR ${k.sql} IS NULL)`, params: [v] };
  }

  function beyondBoundary(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart {
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
        eqSql.push(`${keys[i].sql} = ${SLOT}`);
        eqParams.push(values[i]);
      }
    }
    return ors.length ? { sql: ors.length === 1 ? ors[0] : `(${ors.join(' OR ')})`, params } : { sql: never, params: [] };
  }

  return {
    sortKeyOf,

    cursorSortKeys(src: string | null, c: Collection, schema: SchemaLookup, superuser = false): SortKey[] {
      const keys: SortKey[] = [];
      if (src && src.length > 8192) throw new InvalidQuery('sort', 'Invalid sort: the sort parameter is too long.');
      for (const raw of (src ?? '').split(',')) {
        const seg = raw.trim();
        if (seg === '') continue;
        if (keys.length === 16) throw new InvalidQuery('sort', 'Invalid sort: at most 16 sort fields are allowed.');
        const name = seg.replace(/^[-+]\s*/, '');
        if (name === '@random') throw new InvalidQuery('sort', 'Invalid sort: @random cannot be used with cursor paging.');
        const key = sortKeyOf(ruleEmitter(d.name).emitSort(seg, c, schema, 'r', superuser));
        if (isPrivateEmail(c, name)) key.private = true;
        keys.push(key);
      }
      if (keys.length === 0 && src && src.trim() !== '') throw new InvalidQuery('sort', 'Invalid sort: no field given.');
      if (!keys.some((k) => k.sql === d.idOrder)) keys.push({ sql: d.idOrder, desc: false, notNull: true, term: d.idOrder });
      return keys;
    },

    orderBy(keys: SortKey[], backward: boolean): string {
      // a key never NULL takes the bare direction, as the sort emitters write it (an index's order)
      return keys.map((k) => `${k.sql} ${k.desc !== backward ? (k.notNull ? 'DESC' : d.desc) : k.notNull ? 'ASC' : d.asc}`).join(', ');
    },

    beyondBoundary,

    segments(keys: SortKey[], values: KeyValue[], backward: boolean): SqlPart[] {
      const [k, ...restKeys] = keys;
      const v = values[0];
      const down = k.desc !== backward;
      const out: SqlPart[] = [];
      if (restKeys.length) {
        const rest = beyondBoundary(restKeys, values.slice(1), backward);
        if (rest.sql !== never) {
          out.push(v === null
            ? { sql: `${k.sql} IS NULL AND ${rest.sql}`, params: rest.params }
            : { sql: `${k.sql} = ${SLOT} AND ${rest.sql}`, params: [v, ...rest.params] });
        }
      }
      if (!down) out.push(v === null ? { sql: `${k.sql} IS NOT NULL`, params: [] } : { sql: `${k.sql} > ${SLOT}`, params: [v] });
      else if (v !== null) {
        out.push({ sql: `${k.sql} < ${SLOT}`, params: [v] });
        if (!k.notNull) out.push({ sql: `${k.sql} IS NULL`, params: [] });
      }
      return out;
    },

    sortSignature(keys: SortKey[]): string {
      return keys.map((k) => d.signatureTerm(k.term)).join(',');
    },
  };
}
