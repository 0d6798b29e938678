/**
 * Record lists (docs/api.md, "List records"; docs/lists.md; docs/configuration.md, "Lists"): offset
 * pages and cursor (keyset) pages over one scope.
 *
 * The scope is the AND of the list rule, the filter, the expiry clause and the full-text match,
 * so search never widens what a caller may list. Mode: `cursor` or `limit` present (even empty)
 * selects cursor mode, as does a server with offset paging off. Offset mode orders by the vector
 * distance, then `sort`, then search relevance. Cursor mode orders by `sort` + `id` and resumes
 * from the boundary values a token carries (cursor.ts, keyset.ts). Searches and vector queries
 * run on the reader pool; other pages where the query plan says they are cheapest, within the
 * list time budget (SERVICE_LIST_TIME_BUDGET_MS: 503 `overloaded` past it).
 *
 * Relation filters and deep pages (ARCHITECTURE.md, "A read"): a filter's relation semi-joins are
 * counted to choose which side drives a sorted page (driverRows, driveOrder); counts are cached per
 * compiled scope until the next write; deep offset pages of a one-column sort seek from checkpoints
 * of an offset walk (walkFrom) instead of skipping every row before them.
 */
import { ApiError } from '../errors/api-error.js';
import type { SqlValue } from '../store/bind.js';
import type { Collection } from '../collections/types.js';
import type { Principal } from '../rules/access.js';
import type { Store } from '../store/store.js';
import type { RecordCodec } from './record-codec.js';
import { bindParams, compileExpression, compileSort, type CompiledExpr } from '../rules/compiler.js';
import { Where, hidePrivate } from './record-scope.js';
import { searchPlan, type SearchPlan } from './search.js';
import { malformedStored, parseVector, vectorFailure, type VectorPlan } from './vector.js';
import { bindingHash, type Boundary, type CursorCodec, type CursorState, type KeyValue } from './cursor.js';
import type { ListQuery } from './list-query.js';
import type { KeysetSql, ListSql } from '../store/store.js';
import { ReadBudgetExceeded } from '../store/sqlite/reader.js';
import type { OffsetWalk } from '../cache/caches.js';
import type { ReadShape } from './records-read.js';
import type { SortKey } from '../store/sql/keyset.js';
import type { SlowQueryLog } from '../ops/slow-queries.js';
import { boundedCache } from '../cache/bounded.js';

export const DEFAULT_PER_PAGE = 30;
export const MAX_PER_PAGE = 500;

/** Paging modes, feature switches and the cursor token codec. */
export interface ListConfig {
  offset: boolean;
  cursor: boolean;
  /** full-text search available (false with the `fts5-off` feature) */
  fts: boolean;
  /** the `vector` feature */
  vector: boolean;
  tokens: CursorCodec;
  /** the slow-query log (SERVICE_SLOW_QUERY_MS, src/ops/slow-queries.ts); absent when off */
  slowQueries?: SlowQueryLog | null;
  /**
   * SERVICE_LIST_TIME_BUDGET_MS: the longest one query of a list may run on the reader pool
   * (milliseconds; 0 or absent: no budget). Past it the list answers 503 `overloaded`.
   */
  timeBudgetMs?: number;
}

/** The last page query a list ran, kept for the slow-query log (only when the log is on). */
interface QueryTrace {
  sql: string;
  params: SqlValue[];
}

/** Expand and projection for a page of records (RecordReader.finish). */
export type Finish = (c: Collection, recs: Record<string, unknown>[], principal: Principal | null, shape: ReadShape) => Promise<Record<string, unknown>[]>;

/** What every query of one list request shares. */
interface Scope {
  c: Collection;
  codec: RecordCodec;
  principal: Principal | null;
  /** ` FROM "<col>" r` plus the full-text join */
  from: string;
  where: Where;
  filterText: string;
  search: SearchPlan | null;
  vector: VectorPlan | null;
  /** where the page query is noted for the slow-query log, or null when it is off */
  trace: QueryTrace | null;
  /** the filter's relation semi-joins, bound (CompiledExpr.drivers) */
  drivers: Array<{ sql: string; params: SqlValue[] }>;
  /** rows the most selective semi-join matches, when few enough to drive the plan (driverRows) */
  driverRows: number | null;
}

/**
 * Rows between two checkpoints of an offset walk (walkFrom): a page skips fewer than this many
 * index entries (bench/README.md, "List pages"); the walk keeps rows ÷ WALK_STEP checkpoints.
 */
export const WALK_STEP = 250;
/** Checkpoints found in one event-loop turn before the walk yields to other requests. */
const WALK_STEPS_PER_TURN = 64;
/** The least bound of a semi-join's row count that lets it drive a page (driverRows). */
const DRIVER_MIN_BOUND = 4096;
/**
 * Lists whose filter has a semi-join matching at most this many rows run all their queries on
 * the main thread: each reads at most that many rows (well under a millisecond), less than a
 * round trip to the reader pool and its queueing costs.
 */
const SMALL_SCOPE_ROWS = 2000;
/**
 * Small scopes from this many rows have their sorted ids found on a reader thread when one is free
 * (from this size, reading and sorting them costs about a round trip to the pool: bench/README.md,
 * "List pages").
 */
const BALANCED_SCOPE_ROWS = 100;

/** Id queries kept (RecordLister.idQueriesOf); past it they are dropped and built again. */
const ID_QUERIES_MAX = 500;
/** Deepest offset page end (page × perPage) answered from a vector index; deeper pages scan exactly. */
export const VECTOR_INDEX_MAX_K = 5000;
/** Candidates asked of a vector index per row up to the page's end. */
export const VECTOR_OVERFETCH = 4;

export class RecordLister {
  private filterCache = boundedCache<string, CompiledExpr>(2000);
  /**
   * The id queries of plain pages by FROM (the table), WHERE and ORDER BY, everything they are
   * built from, so a page reuses the same SQL strings: their hashes are kept, and the statement
   * and plan caches compare them by identity instead of hashing and comparing a new string of a
   * few hundred characters each time.
   */
  private idQueries = boundedCache<string, { pageIds: string; aggregate: string }>(ID_QUERIES_MAX);
  /** the backend's list statements and keyset terms (store.sql.list, store.sql.keyset) */
  private readonly L: ListSql;
  private readonly K: KeysetSql;

  constructor(private store: Store, private cfg: ListConfig, private finish: Finish) {
    this.L = store.sql.list;
    this.K = store.sql.keyset;
  }

  /**
   * One page as the serialized list body: a string, or its UTF-8 bytes (plain offset pages and
   * pages from the page cache, which HTTP sends without transcoding). With the slow-query log on,
   * the request costs two clock reads more; one at or over the threshold is handed to the log
   * (which does the rest off this path). @throws ApiError 400/403/410 (docs/api.md, "Errors")
   */
  async list(c: Collection, principal: Principal | null, qs: ListQuery): Promise<string | Buffer> {
    const slow = this.cfg.slowQueries;
    if (!slow) return this.listPage(c, principal, qs, null);
    const trace: QueryTrace = { sql: '', params: [] };
    const t0 = performance.now();
    const body = await this.listPage(c, principal, qs, trace);
    const ms = performance.now() - t0;
    if (ms >= slow.thresholdMs) {
      slow.record(ms, { collection: c.name, filter: qs.filter, sort: qs.sort, search: qs.search !== '', vector: qs.vector !== '', sql: trace.sql, params: trace.params, generation: this.store.registry.schemaGeneration() });
    }
    return body;
  }

  private async listPage(c: Collection, principal: Principal | null, qs: ListQuery, trace: QueryTrace | null): Promise<string | Buffer> {
    const check = this.store.rules.check(c, 'listRule', principal, null, 'GET');
    if (check.kind === 'deny') throw ApiError.forbidden('Only superusers can perform this request.');
    const cursorMode = this.cursorMode(qs);
    const where = new Where();
    where.addRule(check);
    const filterText = qs.filter;
    const drivers: Scope['drivers'] = [];
    if (filterText) {
      const compiled = this.compileFilter(c, filterText, principal);
      const ctx = { auth: principal?.record ?? null, data: null, method: 'GET', account: principal?.account };
      where.add(compiled.sql, bindParams(compiled, ctx));
      for (const d of compiled.drivers) drivers.push({ sql: d.sql, params: bindParams({ ...compiled, params: d.params }, ctx) });
    }
    where.addTtl(c);
    const search = searchPlan(c, qs.search, this.cfg.fts, this.store.sql.kind);
    let from = this.L.fromRecords(c.name);
    if (search?.match) {
      from += search.join;
      // a join's parameters precede the WHERE clause's in every statement over the scope
      where.params.unshift(...search.joinParams);
      where.add(search.where, search.whereParams);
    }
    const vsrc = qs.vector;
    if (vsrc && !this.cfg.vector) throw ApiError.badRequest('Vector search is not available on this server (feature vector).');
    const vector = vsrc ? parseVector(vsrc, c) : null;
    const scope: Scope = { c, codec: this.store.codec(c), principal, from, where, filterText, search, vector, trace, drivers, driverRows: null };
    scope.driverRows = this.driverRows(scope);
    if (cursorMode) return this.cursorPage(scope, qs);
    if (c.options.ttl_field || /@random/i.test(qs.sort ?? '')) return this.offsetPage(scope, qs);
    // rendered pages last until the next commit (page-cache.ts)
    const commit = this.store.writer.commits;
    const key = pageKey(c.id, this.store.registry.version(c.id), principal, where, qs);
    const hit = this.store.caches.pages.get(key, commit);
    if (hit !== undefined) return hit;
    const body = await this.offsetPage(scope, qs);
    this.store.caches.pages.set(key, commit, body);
    return body;
  }

  /** @throws ApiError 400 for parameters of a paging mode that is switched off */
  private cursorMode(qs: ListQuery): boolean {
    const wantsCursor = qs.cursor !== null || qs.limit !== null;
    if (wantsCursor && !this.cfg.cursor) throw ApiError.badRequest('Cursor paging is disabled on this server: use page and perPage.');
    if (!this.cfg.offset && (qs.page !== null || qs.perPage !== null)) throw ApiError.badRequest('Offset paging is disabled on this server: use cursor and limit.');
    return wantsCursor || !this.cfg.offset;
  }

  /**
   * The client filter compiled for this caller's kind (superusers' filters skip the relation
   * targets' view rules and email masking, paths.ts), cached per schema generation.
   * @throws ApiError 400 for a malformed filter, and for `@request.auth.<f>` naming a hidden
   *   field of the caller's own collection (the hidden system columns fail at compile time)
   */
  private compileFilter(c: Collection, src: string, principal: Principal | null): CompiledExpr {
    const superuser = !!principal?.superuser;
    const key = `${superuser ? 's' : 'u'}:${this.store.registry.schemaGeneration()}:${c.id}:${src}`;
    let hit = this.filterCache.get(key);
    if (!hit) {
      hit = compileExpression(src, c, this.store.registry, { mode: 'filter', alias: 'r', superuser, dialect: this.store.sql.kind });
      this.filterCache.set(key, hit);
    }
    if (principal && !superuser && hit.authPaths.length) {
      for (const path of hit.authPaths) {
        const head = path.split('.')[0];
        if (principal.collection.fields.some((f) => f.name === head && f.options.hidden)) {
          throw ApiError.badRequest(`Invalid filter: @request.auth.${head} is hidden and cannot be used here.`);
        }
      }
    }
    return hit;
  }

  /**
   * Runs a page query: searches and vector queries on the reader pool, others where cheapest;
   * on the pool within the time budget.
   * @throws ApiError 503 `overloaded` past the budget (overBudget)
   */
  private async run(s: Scope, sql: string, params: SqlValue[], visits = 0): Promise<unknown[][]> {
    const reader = this.store.reader;
    const budget = this.cfg.timeBudgetMs ?? 0;
    if (s.trace) { s.trace.sql = sql; s.trace.params = params; }
    try {
      if (!s.search && !s.vector) return await reader.allAuto(sql, params, visits, budget);
      return await reader.allOffThread(sql, params, budget);
    } catch (err) {
      const mapped = (s.vector && vectorFailure(err, s.vector)) || overBudget(err);
      throw mapped || err;
    }
  }

  /**
   * A one-row page query (a page aggregated into one value): where its plan says it is cheapest
   * (`auto`), on the reader pool (`pool`), or on the pool while a thread is free (`balanced`, for
   * reads of bounded cost); on the pool within the time budget.
   * @throws ApiError 503 `overloaded` past the budget
   */
  private async runOne(s: Scope, sql: string, params: SqlValue[], visits: number, where: 'auto' | 'pool' | 'balanced' = 'auto'): Promise<unknown[] | undefined> {
    const reader = this.store.reader;
    const budget = this.cfg.timeBudgetMs ?? 0;
    if (s.trace) { s.trace.sql = sql; s.trace.params = params; }
    try {
      if (where === 'balanced') return await reader.getBalanced(sql, params, budget);
      return await (where === 'pool' ? reader.getOffThread(sql, params, budget) : reader.getAuto(sql, params, visits, budget));
    } catch (err) {
      throw overBudget(err) || err;
    }
  }

  /**
   * How many rows the filter's most selective relation semi-join matches (`country.code = 'TV'`
   * matches the cities of one country), counted through the column's index up to a bound (an
   * eighth of the table, at least DRIVER_MIN_BOUND; the bound itself when there are more), or
   * null when the filter has no semi-join over an indexed column (an unindexed one cannot drive
   * a plan, and counting it could scan the table). Cached like counts, until the next commit.
   * Every query of the list can then read its rows through that index, so this many rows bounds
   * their cost (driveOrder; SMALL_SCOPE_ROWS).
   */
  private driverRows(s: Scope): number | null {
    if (!s.drivers.length || s.search || s.vector) return null;
    const reader = this.store.reader;
    const bound = Math.max(DRIVER_MIN_BOUND, Math.ceil(this.tableRows(s.c) / 8));
    let best: number | null = null;
    for (const d of s.drivers) {
      const sql = this.L.boundedCountSql(s.c.name, d.sql);
      const params = [...d.params, bound];
      if (!reader.plan(sql, params).some((row) => /^SEARCH r USING (COVERING )?INDEX/.test(row))) continue;
      const key = `drv\u0000${sql}\u0000${params.map(String).join('\u0001')}`;
      const gen = `${this.store.caches.generation(s.c.id, true)}:${this.store.writer.commits}`;
      let n = this.store.caches.counts.get(key, gen);
      if (n === undefined) {
        n = Number(reader.get(sql, params)?.[0] ?? 0);
        this.store.caches.counts.set(key, gen, n);
      }
      if (best === null || n < best) best = n;
    }
    return best === null || best >= bound ? null : best;
  }

  /**
   * The ORDER BY of a sorted page whose filter joins related rows, chosen by the data. SQLite's
   * statistics give the average number of rows per related id, not per value, so alone it plans
   * every such page the same way: with `sqlite_stat1`, by walking the sort index and testing each
   * row against the semi-join, which finds a page of a country with many large cities at once and
   * walks the whole index for a country with few. When a semi-join matches under the bound of
   * driverRows, the sort terms are made unindexable (`+term`), so the plan reads those rows through
   * the column's index and sorts them: its cost is bounded by their number, where the walk's
   * depends on where they lie in the sort order (measured over every country and population
   * threshold of the cities: close to choosing the cheaper plan of each pair in hindsight, cheaper
   * than walking past a fixed match count, far cheaper than always walking; bench/README.md, "Lists
   * over the cities", "List pages").
   */
  private driveOrder(s: Scope, order: string[]): string[] {
    return order.length && s.driverRows !== null ? order.map(this.L.unindexedOrder) : order;
  }

  /** Rows of a collection's table (an unfiltered COUNT(*), cached until a create or delete). */
  private tableRows(c: Collection): number {
    const sql = this.L.countSql(this.L.fromRecords(c.name), '');
    const gen = this.store.caches.generation(c.id, false);
    let n = this.store.caches.counts.get(sql, gen);
    if (n === undefined) {
      n = Number(this.store.reader.get(sql, [])?.[0] ?? 0);
      this.store.caches.counts.set(sql, gen, n);
    }
    return n;
  }

  private records(s: Scope, rows: unknown[][]): Record<string, unknown>[] {
    return rows.map((row) => {
      const rec = s.codec.fromRow(row);
      hidePrivate(s.c, rec, s.principal);
      return rec;
    });
  }

  private async offsetPage(s: Scope, qs: ListQuery): Promise<string | Buffer> {
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
      order.push(...this.driveOrder(s, [sort]));
    }
    if (s.search) order.push(this.L.SEARCH_RANK);
    if (s.vector) order.push(this.L.ID_ORDER);
    // Plain pages (no expand, projection or vector) are rendered to JSON inside SQLite, the whole
    // page as one string: one row crossing into JavaScript instead of one per record (measured
    // about twice as fast: bench/README.md, "List pages").
    const plain = !s.vector && !s.search && !qs.shaped && !this.L.hasRandomOrder(order);
    const rendered = plain ? s.codec.jsonSql : null;
    params.push(...s.where.params, perPage, (page - 1) * perPage);
    const countPromise = skipTotal ? null : this.count(s);
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
        items = chunks((await this.runOne(s, renderSql(), pageParams, visits, 'balanced'))?.[0]);
      } else if (small && s.c.type !== 'base') {
        items = chunks(this.store.reader.get(renderSql(), pageParams)?.[0]);
      } else if (s.c.type === 'base') {
        // A small scope's ids (a semi-join's rows read and sorted: up to SMALL_SCOPE_ROWS) are
        // found on a reader thread while one is free, else here (Reader.getBalanced).
        // On PostgreSQL every page's ids come from the pool: a main-thread read there blocks the
        // main thread for a round trip to the server (RecordReader.readsOffThread).
        const offThread = this.store.sql.kind === 'postgres';
        const balanced = offThread || (small && s.driverRows! >= BALANCED_SCOPE_ROWS && order.length > 0 && this.store.reader.workerFree());
        items = balanced ? null : this.pageFromRowCache(s, where, order, rendered, pageParams, visits, small);
        items ??= await this.pageFromPoolIds(s, where, order, rendered, pageParams);
      }
      if (items === null) items = chunks((await this.runOne(s, renderSql(), pageParams, visits))?.[0]);
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
      if (probe && this.store.reader.get(probe, [])) throw malformedStored(s.vector);
      rows = await this.nearestByIndex(s, select, order, page, perPage);
    }
    rows ??= await this.run(s, sql, params, page * perPage);
    const items = await this.finish(s.c, this.records(s, rows), s.principal, qs);
    if (!countPromise) return s.codec.stringifyList({ page, perPage, totalItems: -1, totalPages: -1, items });
    const totalItems = await countPromise;
    return s.codec.stringifyList({ page, perPage, totalItems, totalPages: Math.ceil(totalItems / perPage), items });
  }

  /**
   * The items of a plain page of a base collection (each record's JSON as UTF-8 bytes, in page
   * order), assembled from records rendered before (Caches.listRows), or null when the page's
   * query is expensive (it then runs on the reader pool as one rendering query). The page's ids
   * come from a cheap main-thread query with the page's WHERE, ORDER BY and LIMIT; records not in
   * the cache are rendered in one query and kept. A record's rendering never depends on the
   * caller in a base collection (rules choose rows, not what a row shows), so every caller shares
   * the entries; every write to a record drops its entry (the change feed, Caches). Everything runs synchronously in one event-loop turn, inside one read snapshot, so
   * the ids, the cache and the rendered rows agree.
   */
  private pageFromRowCache(s: Scope, where: Where, order: string[], rendered: string, params: SqlValue[], visits: number, bounded: boolean): Buffer[] | null {
    const reader = this.store.reader;
    const { pageIds: sql, aggregate: idsSql } = this.idQueriesOf(s, where, order);
    // `bounded`: a walk's page in an unfiltered scope reads at most WALK_STEP + perPage index entries
    if (!bounded && reader.isExpensive(sql, params, visits)) return null;
    if (s.trace) { s.trace.sql = idsSql; s.trace.params = params; }
    const text = reader.get(idsSql, params)?.[0] as string | null | undefined;
    return this.bodiesOf(s, text ? text.split('\u001f') : [], rendered);
  }

  /**
   * The page's id query (pageIdsSql, for its plan) and the same ids as one string (one row crossing
   * into JavaScript instead of one array per id, measured faster: bench/README.md, "The suite"),
   * built once per collection, WHERE and ORDER BY.
   */
  private idQueriesOf(s: Scope, where: Where, order: string[]): { pageIds: string; aggregate: string } {
    const whereSql = where.sql();
    // s.from names the table (s.c.name) the aggregate joins back to
    const key = `${s.from}\u0000${whereSql}\u0000${order.join('\u0001')}`;
    let q = this.idQueries.get(key);
    if (q === undefined) {
      q = { pageIds: this.L.pageIdsSql(s.from, whereSql, order), aggregate: this.L.pageAggregateSql(s.c.name, s.from, whereSql, order, this.L.ID_ORDER, this.L.ID_SEPARATOR) };
      this.idQueries.set(key, q);
    }
    return q;
  }

  /**
   * A plain page of a base collection whose id query is expensive: the ids found on the reader
   * pool, the bodies assembled here from the row cache (bodiesOf), unless a commit landed meanwhile
   * (the ids and the bodies would come from different snapshots): null then, and the page is
   * rendered on the pool. Measured faster than rendering every such page on the pool on the cities'
   * relation-filter pages, whose hot rows are cached (bench/README.md, "List pages").
   */
  private async pageFromPoolIds(s: Scope, where: Where, order: string[], rendered: string, params: SqlValue[]): Promise<Buffer[] | null> {
    const commits = this.store.writer.commits;
    const idsSql = this.L.pageAggregateSql(s.c.name, s.from, where.sql(), order, this.L.ID_ORDER, this.L.ID_SEPARATOR);
    const row = await this.runOne(s, idsSql, params, 0, 'pool');
    if (this.store.writer.commits !== commits) return null;
    const text = row?.[0] as string | null | undefined;
    const ids = text ? text.split('\u001f') : [];
    if (this.store.sql.kind !== 'postgres') return this.bodiesOf(s, ids, rendered);
    // PostgreSQL: the records not cached are rendered on the pool too
    const bodies = this.bodiesOf(s, ids, rendered, true);
    if (bodies === null || !bodies.includes(undefined as unknown as Buffer)) return bodies;
    const missing = ids.filter((_, i) => bodies[i] === undefined);
    const rows = await this.store.reader.allOffThread(this.L.renderByIdsSql(s.c.name, rendered, missing.length), missing, this.cfg.timeBudgetMs ?? 0).catch((err) => {
      throw overBudget(err) || err;
    });
    if (this.store.writer.commits !== commits) return null;
    return this.fillBodies(s, ids, bodies, rows[0]?.[0] as string | null | undefined);
  }

  /**
   * The bodies of a page's records in page order (Caches.listRows as UTF-8 bytes), those not
   * cached rendered by one main-thread query and kept; null when a record is gone meanwhile.
   */
  private bodiesOf(s: Scope, ids: string[], rendered: string, cachedOnly = false): Buffer[] | null {
    const cache = this.store.caches.listRows;
    const version = this.store.registry.version(s.c.id);
    const bodies: Buffer[] = new Array<Buffer>(ids.length);
    const missing: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      const body = cache.get(s.c.id, id, version);
      if (body === undefined) missing.push(id);
      else bodies[i] = body;
    }
    // `cachedOnly`: the caller renders the missing ones itself (off the main thread), fillBodies
    if (!missing.length || cachedOnly) return bodies;
    // one string for all of them: `id US json RS id US json …` (JSON escapes control characters)
    const rows = this.store.reader.all(this.L.renderByIdsSql(s.c.name, rendered, missing.length), missing);
    return this.fillBodies(s, ids, bodies, rows[0]?.[0] as string | null | undefined);
  }

  /**
   * Fills the holes of `bodies` (page order) from `text`, the rendering of the missing records
   * (`id US json RS …`), caching each; null when a record is gone meanwhile.
   */
  private fillBodies(s: Scope, ids: string[], bodies: Buffer[], text: string | null | undefined): Buffer[] | null {
    const cache = this.store.caches.listRows;
    const version = this.store.registry.version(s.c.id);
    const byId = new Map<string, string>();
    if (text) {
      for (const part of text.split('\u001e')) {
        const cut = part.indexOf('\u001f');
        byId.set(part.slice(0, cut), part.slice(cut + 1));
      }
    }
    for (let i = 0; i < ids.length; i++) {
      if (bodies[i] !== undefined) continue;
      const id = ids[i];
      const rendered = byId.get(id);
      if (rendered === undefined) return null;
      const body = ownBytes(rendered);
      bodies[i] = body;
      cache.set(s.c.id, id, version, body);
    }
    return bodies;
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
    const rows = await this.run(s, sql, [v.blob, v.blob, perPage, (page - 1) * perPage]);
    return rows.length > 0 && Number(rows[0][rows[0].length - 1]) === k ? rows : null;
  }

  private async cursorPage(s: Scope, qs: ListQuery): Promise<string> {
    if (s.vector) throw ApiError.badRequest('Invalid vector: vector search works with offset paging only, not with cursor or limit.');
    const n = Math.min(parsePositiveInt(qs.limit ?? qs.perPage, DEFAULT_PER_PAGE, 'limit'), MAX_PER_PAGE);
    const skipTotal = parseBool(qs.skipTotal, true);
    const keys = this.K.cursorSortKeys(qs.sort, s.c, this.store.registry, !!s.principal?.superuser);
    const binding = bindingHash([s.c.id, this.K.sortSignature(keys), s.filterText, s.search?.text ?? '']);
    const token = qs.cursor ?? '';
    const state = token === '' ? null : this.cfg.tokens.read(token);
    if (state && state.binding !== binding) throw ApiError.badRequest('Invalid cursor: it was issued for another collection, sort, filter or search.');
    const from = state ? await this.boundaryValues(s, keys, state) : null;
    const none = !!s.search && !s.search.match; // the search reduced to nothing: no rows
    const countPromise = skipTotal ? null : none ? Promise.resolve(0) : this.count(s);
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
    const items = await this.finish(s.c, this.records(s, rows), s.principal, qs);
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
    const [row] = await this.run(s, this.L.boundarySql(keys.map((k) => k.sql), s.from, w.sql()), w.params);
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
    if (!values) return this.run(s, this.L.keysetPageSql(s.codec.columns, keySqls, s.from, s.where.sql(), by), [...s.where.params, limit]);
    const out: unknown[][] = [];
    for (const seg of this.K.segments(keys, values, backward)) {
      const w = s.where.clone();
      w.add(seg.sql, seg.params);
      out.push(...(await this.run(s, this.L.keysetPageSql(s.codec.columns, keySqls, s.from, w.sql(), by), [...w.params, limit - out.length])));
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * COUNT(*) of the scope, cached per (collection, compiled WHERE, bound values) until the
   * collection's next write (any commit when the scope reads other collections); filtered counts
   * on the reader pool within the time budget.
   * @throws ApiError 503 `overloaded` past the budget
   */
  private async count(s: Scope): Promise<number> {
    const sql = this.L.countSql(s.from, s.where.sql());
    const params = s.where.params;
    if (s.trace && !s.trace.sql) { s.trace.sql = sql; s.trace.params = params; }
    const key = `${sql}\u0000${params.map(String).join('\u0001')}`;
    const filtered = s.where.parts.length > 0 || s.from.includes(' JOIN ');
    const gen = this.scopeGeneration(s);
    const hit = this.store.caches.counts.get(key, gen);
    if (hit !== undefined) return hit;
    // An unfiltered COUNT(*) is cheap for SQLite (it counts b-tree cells of the smallest index);
    // anything else may walk the table and goes to the reader pool.
    let row: unknown[] | undefined;
    try {
      row = filtered && !isSmall(s) ? await this.store.reader.getOffThread(sql, params, this.cfg.timeBudgetMs ?? 0) : this.store.reader.get(sql, params);
    } catch (err) {
      throw overBudget(err) || err;
    }
    const count = Number(row?.[0] ?? 0);
    // kept only when no write landed while it was counted; never for expiring rows
    if (!s.c.options.ttl_field && this.scopeGeneration(s) === gen) this.store.caches.counts.set(key, gen, count);
    return count;
  }

  /**
   * What a result over the scope stays valid for: the collection's write generation (rows added
   * or removed only, when unfiltered), and the commit count when the WHERE reads other
   * collections (relation semi-joins, EXISTS), whose writes the collection's generation misses.
   */
  private scopeGeneration(s: Scope): string {
    const filtered = s.where.parts.length > 0 || s.from.includes(' JOIN ');
    const sql = s.where.sql();
    const crosses = filtered && (sql.includes('EXISTS (') || sql.includes(' IN (SELECT '));
    return this.store.caches.generation(s.c.id, filtered) + (crosses ? `:${this.store.writer.commits}` : '');
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
    const gen = this.scopeGeneration(s);
    const walks = this.store.caches.walks;
    let walk = walks.get(key, gen);
    if (!walk) {
      // only along an index (a step that sorts would cost a sort of the scope), and descending
      // only without NULLs, which come last and which no row value can seek past
      const step = this.L.walkStepSql(by.column, s.from, s.where.sql(), order);
      const indexed = !this.store.reader.plan(step, [...s.where.params, 0]).some((d) => d.includes('TEMP B-TREE'));
      const usable = indexed && !(by.desc && this.store.reader.get(this.L.hasNullSql(by.column, s.from, s.where.sql()), s.where.params));
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
      if (this.scopeGeneration(s) !== gen) return null; // a write landed meanwhile: plain offset
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
        if (this.scopeGeneration(s) !== gen) return;
      }
      const last = walk.points[walk.points.length - 1];
      const where = s.where.clone();
      if (last) where.add(this.L.walkAfter(by.column, by.desc), [last.value, last.rowid]);
      const sql = this.L.walkStepSql(by.column, s.from, where.sql(), order);
      const params = [...where.params, WALK_STEP - 1];
      const unfiltered = s.where.parts.length === 0 && s.from === this.L.fromRecords(s.c.name);
      const rows = unfiltered ? this.store.reader.all(sql, params) : await this.run(s, sql, params, WALK_STEP);
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

const COMMA = 0x2c;

/**
 * `text` as UTF-8 bytes in memory of their own (never a slice of Node's 8 KiB Buffer pool, which
 * one cached row would keep alive whole), for Caches.listRows.
 */
function ownBytes(text: string): Buffer {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
  out.write(text, 0, 'utf8');
  return out;
}
const PAGE_TAIL = Buffer.from(']}');

/** Page bodies up to this size are cut from a shared slab (slabBytes); larger ones get their own memory. */
const SLAB_PIECE_MAX = 64 * 1024;
const SLAB_SIZE = 512 * 1024;
let slab = Buffer.allocUnsafeSlow(0);
let slabAt = 0;

/**
 * `size` bytes for a page body, cut from a shared slab: Node's own pool serves only requests under
 * 4 KiB, and a page of 20 records (about 5 KB of cities) otherwise costs a new ArrayBuffer each
 * time. A body lives until it is sent (the page cache keeps a copy of its own, PageCache.set), so
 * a slab is freed soon after its last piece is sent.
 */
function slabBytes(size: number): Buffer {
  if (size > SLAB_PIECE_MAX) return Buffer.allocUnsafe(size);
  if (slabAt + size > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabAt = 0;
  }
  const out = slab.subarray(slabAt, slabAt + size);
  slabAt += (size + 7) & ~7; // 8-byte aligned pieces
  return out;
}

/** A page's items rendered by SQLite as one BLOB (NULL: no rows), as pageBytes takes them. */
function chunks(blob: unknown): Uint8Array[] {
  return blob instanceof Uint8Array ? [blob] : [];
}

/**
 * A plain page's body as UTF-8 bytes: `head` (ASCII, ending in `"items":[`), the items joined by
 * commas, `]}`. The HTTP engines send a Buffer as it is, where a string body is transcoded to UTF-8
 * on every send (measured dearer than copying the cached bytes on the cities, whose names are
 * mostly non-ASCII), and SQLite's rendering read as a BLOB skips decoding it into a string
 * (bench/README.md, "Lists over the cities", "List pages").
 */
function pageBytes(head: string, items: Uint8Array[]): Buffer {
  let size = head.length + PAGE_TAIL.length + Math.max(0, items.length - 1);
  for (const b of items) size += b.length;
  const out = slabBytes(size);
  let at = out.write(head, 0, 'latin1');
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out.set(items[i], at);
    at += items[i].length;
  }
  out.set(PAGE_TAIL, at);
  return out;
}

/** Whether every query of the list reads at most SMALL_SCOPE_ROWS rows (through a semi-join's index). */
function isSmall(s: Scope): boolean {
  return s.driverRows !== null && s.driverRows <= SMALL_SCOPE_ROWS;
}

/** ApiError 503 `overloaded` for a read stopped by the list time budget, else null. */
function overBudget(err: unknown): ApiError | null {
  if (!(err instanceof ReadBudgetExceeded)) return null;
  return new ApiError(503, 'overloaded', `The list query ran longer than the server's time budget (${err.budgetMs} ms) and was stopped. Narrow the filter, sort by an indexed field, or page with a cursor.`);
}

/** Everything an offset page depends on besides the database: see page-cache.ts. */
function pageKey(cid: string, version: number, principal: Principal | null, where: Where, qs: ListQuery): string {
  const who = principal === null ? '' : `${principal.superuser ? 's' : 'u'}${principal.collection.id}/${String(principal.record.id)}`;
  let params = '';
  for (const p of where.params) params += `\u0001${typeof p === 'string' ? 's' : typeof p}${p instanceof Uint8Array ? Buffer.from(p).toString('base64') : String(p)}`;
  return `${cid}\u0000${version}\u0000${who}\u0000${where.sql()}\u0000${params}\u0000${qs.raw}`;
}

function parsePositiveInt(v: string | null, dflt: number, name: string): number {
  if (v === null || v === '') return dflt;
  if (!/^\d{1,9}$/.test(v)) throw ApiError.badRequest(`Invalid ${name}: must be a positive integer.`);
  const n = Number(v);
  return n < 1 ? dflt : n;
}

/** `true`/`1`, `false`/`0`; blank is `dflt`. @throws ApiError 400 otherwise */
export function parseBool(v: string | null, dflt: boolean): boolean {
  if (v === null || v === '') return dflt;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw ApiError.badRequest('Invalid boolean query parameter: use true or false.');
}
