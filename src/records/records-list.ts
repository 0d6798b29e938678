/**
 * Record lists (docs/api.md, "List records"; docs/lists.md; docs/configuration.md, "Lists"): offset
 * pages and cursor (keyset) pages over one scope. `RecordLister` composes the parts of ./list/:
 * the plan (plan.ts: the scope, the paging mode, where each query runs), offset pages and offset
 * walks (offset.ts), cursor pages (cursor.ts), counts and their caches (count.ts), and page bodies
 * assembled from cached rows (render.ts); here, the page cache and the slow-query log.
 *
 * Mode: `cursor` or `limit` present (even empty) selects cursor mode, as does a server with
 * offset paging off. Rendered offset pages are kept until the next commit (Caches.pages).
 */
import type { Collection } from '../model/schema.js';
import type { Principal } from '../rules/access.js';
import type { RuleRequest } from '../rules/compiler.js';
import type { ListRepository } from './record-repositories.js';
import type { Where } from './record-scope.js';
import type { ListQuery } from './list-query.js';
import { ListPlanner, type Finish, type ListConfig, type QueryTrace } from './list/plan.js';
import { ListCounts } from './list/count.js';
import { OffsetPages } from './list/offset.js';
import { CursorPages } from './list/cursor.js';
import { PageRenderer } from './list/render.js';

export { DEFAULT_PER_PAGE, MAX_PER_PAGE, parseBool, type Finish, type ListConfig } from './list/plan.js';
export { WALK_STEP, VECTOR_INDEX_MAX_K, VECTOR_OVERFETCH } from './list/offset.js';

/** Lists a collection's records for a caller: one page per request (list). */
export class RecordLister {
  private readonly planner: ListPlanner;
  private readonly offset: OffsetPages;
  private readonly cursor: CursorPages;

  /** `store`: what the lister and its parts read (ListRepository); `finish`: expand and projection of a page's records. */
  constructor(private store: ListRepository, private cfg: ListConfig, finish: Finish) {
    const counts = new ListCounts(store, cfg);
    const planner = new ListPlanner(store, cfg, counts);
    const render = new PageRenderer(store, cfg, planner);
    this.planner = planner;
    this.offset = new OffsetPages(store, planner, counts, render, finish);
    this.cursor = new CursorPages(store, cfg, planner, counts, render, finish);
  }

  /**
   * One page as the serialized list body: a string, or its UTF-8 bytes (plain offset pages and
   * pages from the page cache, which HTTP sends without transcoding). With the slow-query log on,
   * the request costs two clock reads more; one at or over the threshold is handed to the log
   * (which does the rest off this path). `request`: the HTTP request served (ListPlanner.scope).
   * @throws ApiError 400/403/410 (docs/api.md, "Errors")
   */
  async list(c: Collection, principal: Principal | null, qs: ListQuery, request?: RuleRequest): Promise<string | Buffer> {
    const slow = this.cfg.slowQueries;
    if (!slow) return this.listPage(c, principal, qs, null, request);
    const trace: QueryTrace = { sql: '', params: [] };
    const t0 = performance.now();
    const body = await this.listPage(c, principal, qs, trace, request);
    const ms = performance.now() - t0;
    if (ms >= slow.thresholdMs) {
      slow.record(ms, { collection: c.name, filter: qs.filter, sort: qs.sort, search: qs.search !== '', vector: qs.vector !== '', sql: trace.sql, params: trace.params, generation: this.store.registry.schemaGeneration() });
    }
    return body;
  }

  private async listPage(c: Collection, principal: Principal | null, qs: ListQuery, trace: QueryTrace | null, request?: RuleRequest): Promise<string | Buffer> {
    const planned = this.planner.scope(c, principal, qs, trace, request);
    // a scope without reads to plan it is ready at once: a cached page costs no extra turn
    const scope = planned instanceof Promise ? await planned : planned;
    if (scope.cursor) return this.cursor.page(scope, qs);
    if (c.options.ttl_field || /@random/i.test(qs.sort ?? '')) return this.offset.page(scope, qs);
    // rendered pages last until the next commit (page-cache.ts)
    const commit = this.store.writer.commits;
    const key = pageKey(c.id, this.store.registry.version(c.id), principal, scope.where, qs);
    const hit = this.store.caches.pages.get(key, commit);
    if (hit !== undefined) return hit;
    const body = await this.offset.page(scope, qs);
    this.store.caches.pages.set(key, commit, body);
    return body;
  }
}

/** Everything an offset page depends on besides the database: see page-cache.ts. */
function pageKey(cid: string, version: number, principal: Principal | null, where: Where, qs: ListQuery): string {
  const who = principal === null ? '' : `${principal.superuser ? 's' : 'u'}${principal.collection.id}/${String(principal.record.id)}`;
  let params = '';
  for (const p of where.params) params += `\u0001${typeof p === 'string' ? 's' : typeof p}${p instanceof Uint8Array ? Buffer.from(p).toString('base64') : String(p)}`;
  return `${cid}\u0000${version}\u0000${who}\u0000${where.sql()}\u0000${params}\u0000${qs.raw}`;
}
