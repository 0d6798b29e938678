/**
 * Cursor (keyset) pages (docs/api.md, "List records"; docs/lists.md): ordered by `sort` + `id`,
 * resumed from the boundary values a token carries (../cursor.ts, src/store/sql/keyset.ts).
 */
import { ApiError } from '../../errors/api-error.js';
import type { KeysetSql, ListSql } from '../../store/store.js';
import type { ListRepository } from '../record-repositories.js';
import { bindingHash, type Boundary, type CursorState } from '../cursor.js';
import type { ListQuery } from '../list-query.js';
import type { KeyValue, SortKey } from '../../store/sql/keyset.js';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, parseBool, parsePositiveInt, type Finish, type ListConfig, type ListPlanner, type Scope } from './plan.js';
import type { ListCounts } from './count.js';
import type { PageRenderer } from './render.js';

/** Cursor pages over a planned scope. */
export class CursorPages {
  /** the backend's list statements and keyset terms (store.sql.list, store.sql.keyset) */
  private readonly L: ListSql;
  private readonly K: KeysetSql;

  constructor(private store: ListRepository, private cfg: ListConfig, private planner: ListPlanner, private counts: ListCounts, private render: PageRenderer, private finish: Finish) {
    this.L = store.sql.list;
    this.K = store.sql.keyset;
  }

  /**
   * One cursor page as the serialized list body. @throws ApiError 400 (a vector query, a bad
   * limit or cursor, a cursor of another binding), 503 `overloaded` past the time budget
   */
  async page(s: Scope, qs: ListQuery): Promise<string> {
    if (s.vector) throw ApiError.badRequest('Invalid vector: vector search works with offset paging only, not with cursor or limit.');
    const n = Math.min(parsePositiveInt(qs.limit ?? qs.perPage, DEFAULT_PER_PAGE, 'limit'), MAX_PER_PAGE);
    const skipTotal = parseBool(qs.skipTotal, true);
    const keys = this.K.cursorSortKeys(qs.sort, s.c, this.store.registry, !!s.principal?.superuser);
    const binding = bindingHash([s.c.id, this.K.sortSignature(keys), s.filterText, s.search?.text ?? '']);
    const token = qs.cursor ?? '';
    const state = token === '' ? null : await this.cfg.tokens.read(token);
    if (state && state.binding !== binding) throw ApiError.badRequest('Invalid cursor: it was issued for another collection, sort, filter or search.');
    const from = state ? await this.boundaryValues(s, keys, state) : null;
    const none = !!s.search && !s.search.match; // the search reduced to nothing: no rows
    const countPromise = skipTotal ? null : none ? Promise.resolve(0) : this.counts.count(s);
    countPromise?.catch(() => undefined);
    const idAt = keys.findIndex((k) => k.sql === this.L.ID_ORDER);
    const boundary = (row: unknown[]): Boundary => {
      const values = row.slice(s.codec.width, s.codec.width + keys.length) as KeyValue[];
      return { keys: values, id: String(values[idAt]) };
    };

    let rows: unknown[][] = [];
    let hasNext = false;
    let hasPrev = false;
    if (!none) {
      if (state?.dir === 'p') rows = await this.fetch(s, keys, from, true, n + 1);
      if (state?.dir === 'p' && rows.length > n) {
        rows = rows.slice(0, n).reverse();
        hasPrev = true;
        hasNext = (await this.fetch(s, keys, boundary(rows[n - 1]).keys, false, 1)).length > 0;
      } else {
        // forward, the first page, or a walk back that reached the start (refilled from the top)
        const after = state?.dir === 'n' ? from : null;
        rows = await this.fetch(s, keys, after, false, n + 1);
        hasNext = rows.length > n;
        rows = rows.slice(0, n);
        if (after) hasPrev = (await this.fetch(s, keys, rows.length ? boundary(rows[0]).keys : after, true, 1)).length > 0;
      }
    }
    const fallback: Boundary | null = from ? { keys: from, id: String(from[idAt]) } : null;
    const tokens = await this.cfg.tokens.issue(
      binding,
      hasNext ? boundary(rows[rows.length - 1]) : null,
      hasPrev ? (rows.length ? boundary(rows[0]) : fallback) : null,
      keys.some((k) => k.private),
    );
    const items = await this.finish(s.c, this.render.records(s, rows), s.principal, qs);
    const totalItems = countPromise ? await countPromise : undefined;
    return s.codec.stringifyList({
      page: 0,
      perPage: n,
      totalItems,
      totalPages: totalItems === undefined ? undefined : Math.ceil(totalItems / n),
      nextCursor: tokens.next,
      prevCursor: tokens.prev,
      hasNext,
      hasPrev,
      items,
    });
  }

  /**
   * The boundary's sort values: carried in the token, or looked up by record id within the same
   * scope (rule, filter, search), so a hand-made id cannot position a walk at a hidden record.
   * @throws ApiError 400 when the values do not fit the sort, or the record is gone or out of scope
   */
  private async boundaryValues(s: Scope, keys: SortKey[], state: CursorState): Promise<KeyValue[]> {
    if (state.keys) {
      if (state.keys.length !== keys.length) throw ApiError.badRequest('Invalid cursor: it does not match the sort.');
      return state.keys;
    }
    const w = s.where.clone();
    w.add(this.L.ID_EQUALS, [state.recordId!]);
    const [row] = await this.planner.run(s, this.L.boundarySql(keys.map((k) => k.sql), s.from, w.sql()), w.params);
    if (!row) throw ApiError.badRequest('Invalid cursor: the record it continues from no longer exists; start again from the first page.');
    return row as KeyValue[];
  }

  /**
   * Up to `limit` rows in walk order (forward, or backward with every direction flipped),
   * strictly beyond the boundary `values` when given; each row ends with the sort-key values.
   */
  private async fetch(s: Scope, keys: SortKey[], values: KeyValue[] | null, backward: boolean, limit: number): Promise<unknown[][]> {
    const keySqls = keys.map((k) => k.sql);
    const by = this.K.orderBy(keys, backward);
    if (!values) return this.planner.run(s, this.L.keysetPageSql(s.codec.columns, keySqls, s.from, s.where.sql(), by), [...s.where.params, limit]);
    const out: unknown[][] = [];
    for (const seg of this.K.segments(keys, values, backward)) {
      const w = s.where.clone();
      w.add(seg.sql, seg.params);
      out.push(...(await this.planner.run(s, this.L.keysetPageSql(s.codec.columns, keySqls, s.from, w.sql(), by), [...w.params, limit - out.length])));
      if (out.length >= limit) break;
    }
    return out;
  }
}
