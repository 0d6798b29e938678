/**
 * Offset pages (docs/api.md, "List records"; docs/lists.md): `page` and `perPage`, ordered by the
 * vector distance, then `sort`, then search relevance. Deep pages of a one-column sort seek from
 * checkpoints of an offset walk (walkFrom) instead of skipping every row before them
 * (ARCHITECTURE.md, "A read"); vector pages may come from the field's index (nearestByIndex).
 */
import type { SqlValue } from '../../store/bind.js';
import type { ListSql } from '../../store/store.js';
import type { ListRepository } from '../record-repositories.js';
import { compileSort } from '../../rules/compiler.js';
import type { Where } from '../record-scope.js';
import { malformedStored } from '../vector.js';
import type { ListQuery } from '../list-query.js';
import type { OffsetWalk } from '../../cache/caches.js';
import { BALANCED_SCOPE_ROWS, DEFAULT_PER_PAGE, MAX_PER_PAGE, isSmall, parseBool, parsePositiveInt, type Finish, type ListPlanner, type Scope } from './plan.js';
import type { ListCounts } from './count.js';
import { chunks, pageBytes, type PageRenderer } from './render.js';

/**
 * Rows between two checkpoints of an offset walk (walkFrom): a page skips fewer than this many
 * index entries (bench/README.md, "List pages"); the walk keeps rows ÷ WALK_STEP checkpoints.
 */
export const WALK_STEP = 250;

/** Checkpoints found in one event-loop turn before the walk yields to other requests. */
const WALK_STEPS_PER_TURN = 64;

/** Deepest offset page end (page × perPage) answered from a vector index; deeper pages scan exactly. */
export const VECTOR_INDEX_MAX_K = 5000;

/** Candidates asked of a vector index per row up to the page's end. */
export const VECTOR_OVERFETCH = 4;

/** Offset pages over a planned scope. */
export class OffsetPages {
  /** the backend's list statements (store.sql.list) */
  private readonly L: ListSql;

  constructor(private store: ListRepository, private planner: ListPlanner, private counts: ListCounts, private render: PageRenderer, private finish: Finish) {
    this.L = store.sql.list;
  }

  /**
   * One offset page as the serialized list body: UTF-8 bytes for a plain page (rendered in SQL or
   * assembled from cached rows), else a string. @throws ApiError 400 (bad paging parameters, a
   * malformed stored vector), 503 `overloaded` past the time budget
   */
  async page(s: Scope, qs: ListQuery): Promise<string | Buffer> {
    const page = parsePositiveInt(qs.page, 1, 'page');
    const perPage = Math.min(parsePositiveInt(qs.perPage, DEFAULT_PER_PAGE, 'perPage'), MAX_PER_PAGE);
    const skipTotal = parseBool(qs.skipTotal, false);
    if (s.search && !s.search.match) return s.codec.stringifyList({ page, perPage, totalItems: skipTotal ? -1 : 0, totalPages: skipTotal ? -1 : 0, items: [] });
    let select = s.codec.columns;
    const params: SqlValue[] = [];
    const order: string[] = [];
    if (s.vector) {
      select += this.L.vectorDistanceColumn(s.vector.sql);
      params.push(s.vector.blob);
      order.push(...this.L.VECTOR_ORDER);
    }
    const sortSrc = qs.sort;
    if (sortSrc && sortSrc.trim()) {
      const sort = compileSort(sortSrc, s.c, this.store.registry, 'r', !!s.principal?.superuser, this.store.sql.kind);
      order.push(...this.planner.driveOrder(s, [sort]));
    }
    if (s.search) order.push(this.L.SEARCH_RANK);
    if (s.vector) order.push(this.L.ID_ORDER);
    // Plain pages (no expand, projection or vector) are rendered to JSON inside SQLite, the whole
    // page as one string: one row crossing into JavaScript instead of one per record (measured
    // about twice as fast: bench/README.md, "List pages").
    const plain = !s.vector && !s.search && !qs.shaped && !this.L.hasRandomOrder(order);
    const rendered = plain ? s.codec.jsonSql : null;
    params.push(...s.where.params, perPage, (page - 1) * perPage);
    const countPromise = skipTotal ? null : this.counts.count(s);
    // the page may fail first (e.g. over the time budget); its count's failure is then not reported twice
    countPromise?.catch(() => undefined);
    if (rendered) {
      // (no vector in a plain page, so `params` are the WHERE values, LIMIT and OFFSET)
      const walk = (page - 1) * perPage >= WALK_STEP ? await this.walkFrom(s, order, (page - 1) * perPage) : null;
      const where = walk?.where ?? s.where;
      const pageParams = walk ? [...walk.where.params, perPage, walk.offset] : params;
      const visits = walk ? walk.offset + perPage : page * perPage;
      const small = isSmall(s);
      let items: Uint8Array[] | null = null;
      // a page rendered in SQLite arrives as UTF-8 bytes (a BLOB), never decoded into a string
      const renderSql = (): string => this.L.pageAggregateSql(s.c.name, s.from, where.sql(), order, rendered, this.L.ITEM_SEPARATOR, true);
      if (walk?.bounded) {
        // A deep page's rows are seldom cached: rendered by one query over the page's rowids (its
        // cost: bench/README.md, "Lists over the cities"), on a reader thread while one is free,
        // else here.
        items = chunks((await this.planner.runOne(s, renderSql(), pageParams, visits, 'balanced'))?.[0]);
      } else if (small && s.c.type !== 'base') {
        items = chunks((await this.store.reader.get(renderSql(), pageParams))?.[0]);
      } else if (s.c.type === 'base') {
        // A small scope's ids (a semi-join's rows read and sorted: up to SMALL_SCOPE_ROWS) are
        // found on a reader thread while one is free, else here (Reader.getBalanced).
        // On PostgreSQL every page's ids come from the pool (pageFromPoolIds): it has no
        // synchronous reads to assemble a page from the row cache in one turn (SqlReader.sync).
        const offThread = this.store.sql.kind === 'postgres';
        const balanced = offThread || (small && s.driverRows! >= BALANCED_SCOPE_ROWS && order.length > 0 && this.store.reader.workerFree());
        items = balanced ? null : this.render.pageFromRowCache(s, where, order, rendered, pageParams, visits, small);
        items ??= await this.render.pageFromPoolIds(s, where, order, rendered, pageParams);
      }
      if (items === null) items = chunks((await this.planner.runOne(s, renderSql(), pageParams, visits))?.[0]);
      let head = `{"page":${page},"perPage":${perPage}`;
      if (!countPromise) head += ',"totalItems":-1,"totalPages":-1,"items":[';
      else {
        const totalItems = await countPromise;
        head += `,"totalItems":${totalItems},"totalPages":${Math.ceil(totalItems / perPage)},"items":[`;
      }
      return pageBytes(head, items);
    }
    const sql = this.L.offsetPageSql(select, s.from, s.where.sql(), order);
    let rows: unknown[][] | null = null;
    if (s.vector) {
      const probe = s.vector.malformedProbe;
      if (probe && (await this.store.reader.get(probe, []))) throw malformedStored(s.vector);
      rows = await this.nearestByIndex(s, select, order, page, perPage);
    }
    rows ??= await this.planner.run(s, sql, params, page * perPage);
    const items = await this.finish(s.c, this.render.records(s, rows), s.principal, qs);
    if (!countPromise) return s.codec.stringifyList({ page, perPage, totalItems: -1, totalPages: -1, items });
    const totalItems = await countPromise;
    return s.codec.stringifyList({ page, perPage, totalItems, totalPages: Math.ceil(totalItems / perPage), items });
  }

  /**
   * A vector page from the field's DiskANN index, or null when the index cannot answer it: no
   * index for this query, a rule, filter, search or expiry narrows the rows (the index knows
   * nothing of them), or the page lies deeper than VECTOR_INDEX_MAX_K. The index is asked for
   * VECTOR_OVERFETCH times the rows up to the page's end (at least 40), which are ordered by
   * their exact distance: libsql's graph loses recall as rows are updated and deleted, and the
   * wider candidate set wins most of it back (bench/README.md, "Vector search"). When it yields
   * fewer candidates than asked (a small table, rows without an embedding, or a part of the
   * graph no longer reachable), the exact scan answers instead.
   */
  private async nearestByIndex(s: Scope, select: string, order: string[], page: number, perPage: number): Promise<unknown[][] | null> {
    const v = s.vector!;
    const end = page * perPage;
    if (!v.index || s.where.parts.length || s.search || end > VECTOR_INDEX_MAX_K) return null;
    const k = Math.max(40, end * VECTOR_OVERFETCH);
    const sql = this.L.nearestByIndexSql(select, v.index, k, s.c.name, order);
    const rows = await this.planner.run(s, sql, [v.blob, v.blob, perPage, (page - 1) * perPage]);
    return rows.length > 0 && Number(rows[0][rows[0].length - 1]) === k ? rows : null;
  }

  /**
   * An offset walk (ARCHITECTURE.md, "A read"): deep offset pages of a one-column sort without
   * reading every skipped row. Checkpoints — the sort key and rowid of every WALK_STEP-th row of
   * the scope in page order — are found once, each by a query that skips WALK_STEP rows from the
   * one before (an index range when the sort column is indexed), and kept with the scope's count
   * until the next write to the collection (Caches.walks); a page at `offset` then starts after the
   * nearest checkpoint before it and skips fewer than WALK_STEP rows. Returns the page's WHERE (the
   * scope's plus "after the checkpoint") and offset, or null when the sort is not one column, the
   * page lies before the first checkpoint, or the rows there have no sort value. `bounded`: the
   * scope has no other condition, so the page reads at most WALK_STEP + perPage index entries and
   * may run on the main thread whatever its plan says.
   */
  private async walkFrom(s: Scope, order: string[], offset: number): Promise<{ where: Where; offset: number; bounded: boolean } | null> {
    const by = this.L.walkOrder(order);
    if (!by || s.c.options.ttl_field) return null;
    const key = `${s.c.id}\u0000${s.from}\u0000${s.where.sql()}\u0000${s.where.params.map(String).join('\u0001')}\u0000${order[0]}`;
    const gen = this.counts.scopeGeneration(s);
    const walks = this.store.caches.walks;
    let walk = walks.get(key, gen);
    if (!walk) {
      // only along an index (a step that sorts would cost a sort of the scope), and descending
      // only without NULLs, which come last and which no row value can seek past
      const step = this.L.walkStepSql(by.column, s.from, s.where.sql(), order);
      const indexed = !(await this.store.reader.plan(step, [...s.where.params, 0])).some((d) => d.includes('TEMP B-TREE'));
      const usable = indexed && !(by.desc && (await this.store.reader.get(this.L.hasNullSql(by.column, s.from, s.where.sql()), s.where.params)));
      walk = { points: [], end: !usable, pending: null };
      walks.set(key, gen, walk);
    }
    // checkpoint i is the row at position (i + 1) × WALK_STEP - 1
    const want = Math.floor(offset / WALK_STEP) - 1;
    while (walk.points.length <= want && !walk.end) {
      if (walk.pending) await walk.pending;
      else {
        walk.pending = this.extendWalk(s, walk, by, order, want, gen).finally(() => { walk!.pending = null; });
        await walk.pending;
      }
      if (this.counts.scopeGeneration(s) !== gen) return null; // a write landed meanwhile: plain offset
    }
    const i = Math.min(want, walk.points.length - 1);
    if (i < 0) return null;
    const point = walk.points[i];
    const where = s.where.clone();
    where.add(this.L.walkAfter(by.column, by.desc), [point.value, point.rowid]);
    const rest = offset - (i + 1) * WALK_STEP;
    return { where, offset: rest, bounded: rest < WALK_STEP && s.where.parts.length === 0 && s.from === this.L.fromRecords(s.c.name) };
  }

  /**
   * Finds checkpoints of `walk` up to index `want` (see walkFrom), yielding to other requests
   * every WALK_STEPS_PER_TURN steps; stops when a write to the scope landed meanwhile (`gen`).
   */
  private async extendWalk(s: Scope, walk: OffsetWalk, by: { column: string; desc: boolean }, order: string[], want: number, gen: string): Promise<void> {
    let steps = 0;
    while (walk.points.length <= want) {
      if (++steps % WALK_STEPS_PER_TURN === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.counts.scopeGeneration(s) !== gen) return;
      }
      const last = walk.points[walk.points.length - 1];
      const where = s.where.clone();
      if (last) where.add(this.L.walkAfter(by.column, by.desc), [last.value, last.rowid]);
      const sql = this.L.walkStepSql(by.column, s.from, where.sql(), order);
      const params = [...where.params, WALK_STEP - 1];
      const unfiltered = s.where.parts.length === 0 && s.from === this.L.fromRecords(s.c.name);
      const rows = unfiltered ? await this.store.reader.all(sql, params) : await this.planner.run(s, sql, params, WALK_STEP);
      const row = rows[0];
      // the end of the scope, or rows without a sort value (a row value cannot seek past them)
      if (!row || row[0] === null) {
        walk.end = true;
        return;
      }
      walk.points.push({ value: row[0] as SqlValue, rowid: row[1] as SqlValue });
    }
  }
}
