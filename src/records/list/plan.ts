/**
 * A list's plan (docs/lists.md; ARCHITECTURE.md, "A read"): the scope every query of one request
 * shares (the AND of the list rule, the filter, the expiry clause and the full-text match, so
 * search never widens what a caller may list), the paging mode, and where each query runs:
 * searches and vector queries on the reader pool, other pages where the query plan says they are
 * cheapest, within the list time budget (SERVICE_LIST_TIME_BUDGET_MS: 503 `overloaded` past it).
 * A filter's relation semi-joins are counted to choose which side drives a sorted page
 * (driverRows, driveOrder).
 */
import { ApiError } from '../../errors/api-error.js';
import type { SqlValue } from '../../store/bind.js';
import type { Collection } from '../../model/schema.js';
import type { Principal } from '../../rules/access.js';
import type { ListSql } from '../../store/store.js';
import type { ListRepository } from '../record-repositories.js';
import type { RecordCodec } from '../record-codec.js';
import { bindParams, compileFilter, filterCache, type BoundFilter, type FilterCache, type RuleRequest } from '../../rules/compiler.js';
import { Where } from '../record-scope.js';
import { searchPlan, type SearchPlan } from '../search.js';
import { parseVector, vectorFailure, type VectorPlan } from '../vector.js';
import type { CursorCodec } from '../cursor.js';
import type { ListQuery } from '../list-query.js';
import { ReadBudgetExceeded } from '../../store/read-budget.js';
import type { ReadShape } from '../records-read.js';
import type { SlowQueryLog } from '../../ops/slow-queries.js';
import type { ListCounts } from './count.js';

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
export interface QueryTrace {
  sql: string;
  params: SqlValue[];
}

/** Expand and projection for a page of records (RecordReader.finish). */
export type Finish = (c: Collection, recs: Record<string, unknown>[], principal: Principal | null, shape: ReadShape) => Promise<Record<string, unknown>[]>;

/** What every query of one list request shares. */
export interface Scope {
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
  /** a cursor (keyset) page, else an offset page (cursorMode) */
  cursor: boolean;
}

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
export const BALANCED_SCOPE_ROWS = 100;

/**
 * Plans the queries of list requests: the scope, the paging mode, the compiled filter (cached per
 * schema generation), the driving side of a sorted page, and where a page query runs.
 */
export class ListPlanner {
  private filterCache: FilterCache = filterCache(2000);
  /** the backend's list statements (store.sql.list) */
  private readonly L: ListSql;

  constructor(private store: ListRepository, private cfg: ListConfig, private counts: ListCounts) {
    this.L = store.sql.list;
  }

  /**
   * The scope of one list request, with its paging mode (Scope.cursor). `request`: the HTTP
   * request served, for `@request.query.*` / `.headers.*` in the list rule and the filter.
   * @throws ApiError 403 when the list rule denies the caller; 400 for a paging mode switched
   *   off, a malformed filter or vector, or vector search when the feature is off
   */
  scope(c: Collection, principal: Principal | null, qs: ListQuery, trace: QueryTrace | null, request?: RuleRequest): Scope | Promise<Scope> {
    const check = this.store.rules.check(c, 'listRule', principal, null, 'GET', request);
    if (check.kind === 'deny') throw ApiError.forbidden('Only superusers can perform this request.');
    const cursor = this.cursorMode(qs);
    const where = new Where();
    where.addRule(check);
    const filterText = qs.filter;
    const drivers: Scope['drivers'] = [];
    if (filterText) {
      const { expr: compiled, literals } = this.compileFilter(c, filterText, principal);
      const ctx = { auth: principal?.record ?? null, data: null, method: 'GET', account: principal?.account, request, context: 'default' as const };
      where.add(compiled.sql, bindParams(compiled, ctx, literals));
      for (const d of compiled.drivers) drivers.push({ sql: d.sql, params: bindParams({ ...compiled, params: d.params }, ctx, literals) });
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
    const scope: Scope = { c, codec: this.store.codec(c), principal, from, where, filterText, search, vector, trace, drivers, driverRows: null, cursor };
    // a filter without relation semi-joins reads nothing here: the scope is ready at once
    if (!drivers.length || search || vector) return scope;
    return this.driverRows(scope).then((n) => {
      scope.driverRows = n;
      return scope;
    });
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
   * targets' view rules and email masking, paths.ts), cached per schema generation and filter
   * shape (compileFilter: texts differing only in their string and number literals share it).
   * @throws ApiError 400 for a malformed filter, and for `@request.auth.<f>` naming a hidden
   *   field of the caller's own collection (the hidden system columns fail at compile time)
   */
  private compileFilter(c: Collection, src: string, principal: Principal | null): BoundFilter {
    const superuser = !!principal?.superuser;
    const scope = `${superuser ? 's' : 'u'}:${this.store.registry.schemaGeneration()}:${c.id}`;
    const hit = compileFilter(src, c, this.store.registry, { mode: 'filter', alias: 'r', superuser, dialect: this.store.sql.kind }, this.filterCache, scope);
    if (principal && !superuser && hit.expr.authPaths.length) {
      for (const path of hit.expr.authPaths) {
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
  async run(s: Scope, sql: string, params: SqlValue[], visits = 0): Promise<unknown[][]> {
    const reader = this.store.reader;
    const budget = this.cfg.timeBudgetMs ?? 0;
    if (s.trace) { s.trace.sql = sql; s.trace.params = params; }
    try {
      if (!s.search && !s.vector) return await reader.allAuto(sql, params, visits, budget);
      return await reader.all(sql, params, { pool: true, budgetMs: budget });
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
  async runOne(s: Scope, sql: string, params: SqlValue[], visits: number, where: 'auto' | 'pool' | 'balanced' = 'auto'): Promise<unknown[] | undefined> {
    const reader = this.store.reader;
    const budget = this.cfg.timeBudgetMs ?? 0;
    if (s.trace) { s.trace.sql = sql; s.trace.params = params; }
    try {
      if (where === 'balanced') return await reader.getBalanced(sql, params, budget);
      return await (where === 'pool' ? reader.get(sql, params, { pool: true, budgetMs: budget }) : reader.getAuto(sql, params, visits, budget));
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
  private async driverRows(s: Scope): Promise<number | null> {
    const reader = this.store.reader;
    const bound = Math.max(DRIVER_MIN_BOUND, Math.ceil((await this.counts.tableRows(s.c)) / 8));
    let best: number | null = null;
    for (const d of s.drivers) {
      const sql = this.L.boundedCountSql(s.c.name, d.sql);
      const params = [...d.params, bound];
      if (!(await reader.plan(sql, params)).some((row) => /^SEARCH r USING (COVERING )?INDEX/.test(row))) continue;
      const key = `drv\u0000${sql}\u0000${params.map(String).join('\u0001')}`;
      const gen = `${this.store.caches.generation(s.c.id, true)}:${this.store.writer.commits}`;
      let n = this.store.caches.counts.get(key, gen);
      if (n === undefined) {
        n = Number((await reader.get(sql, params))?.[0] ?? 0);
        // kept only when nothing committed during the read
        if (`${this.store.caches.generation(s.c.id, true)}:${this.store.writer.commits}` === gen) this.store.caches.counts.set(key, gen, n);
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
  driveOrder(s: Scope, order: string[]): string[] {
    return order.length && s.driverRows !== null ? order.map(this.L.unindexedOrder) : order;
  }
}

/** Whether every query of the list reads at most SMALL_SCOPE_ROWS rows (through a semi-join's index). */
export function isSmall(s: Scope): boolean {
  return s.driverRows !== null && s.driverRows <= SMALL_SCOPE_ROWS;
}

/** ApiError 503 `overloaded` for a read stopped by the list time budget, else null. */
export function overBudget(err: unknown): ApiError | null {
  if (!(err instanceof ReadBudgetExceeded)) return null;
  return new ApiError(503, 'overloaded', `The list query ran longer than the server's time budget (${err.budgetMs} ms) and was stopped. Narrow the filter, sort by an indexed field, or page with a cursor.`);
}

/** A positive integer query parameter (`page`, `perPage`, `limit`); blank or 0 is `dflt`. @throws ApiError 400 for anything but up to 9 digits */
export function parsePositiveInt(v: string | null, dflt: number, name: string): number {
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
