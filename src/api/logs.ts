/**
 * The request-log routes (docs/operations.md, "Request logs"; docs/api.md), PocketBase's
 * `pb.logs.*` shape, superusers only (401 anonymous, 403 any other caller):
 *
 * - `GET /api/logs?page=&perPage=&filter=&sort=&skipTotal=`: `{page, perPage, totalItems,
 *   totalPages, items: [{id, created, level, message, data}]}`, newest first by default;
 * - `GET /api/logs/stats?filter=`: `[{total, date}]`, entries per hour, oldest first;
 * - `GET /api/logs/:id`: one entry, 404 when there is none.
 *
 * With the store turned off (`SERVICE_LOGS_MAX_DAYS=0`) the list and the stats are empty and
 * every id is unknown. A filter or sort the log fields refuse answers 400 (src/logs/log-query.ts).
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { query } from './request.js';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, parseBool, parsePositiveInt } from '../records/list/plan.js';
import type { RequestLogs } from '../logs/request-logs.js';

/** The routes over `logs` (null: the store is off). */
export function logRoutes(ctx: ApiContext, logs: RequestLogs | null): Route[] {
  return [{
    method: 'get', pattern: '/api/logs', handler: async (req) => {
      await ctx.auth.requireSuperuser(req);
      const q = query(req);
      const page = parsePositiveInt(q.get('page'), 1, 'page');
      const perPage = Math.min(parsePositiveInt(q.get('perPage'), DEFAULT_PER_PAGE, 'perPage'), MAX_PER_PAGE);
      const skipTotal = parseBool(q.get('skipTotal'), false);
      if (!logs) return json(200, JSON.stringify({ page, perPage, totalItems: skipTotal ? -1 : 0, totalPages: skipTotal ? -1 : 0, items: [] }));
      const p = await logs.list({ page, perPage, filter: q.get('filter'), sort: q.get('sort'), skipTotal });
      return json(200, `{"page":${p.page},"perPage":${p.perPage},"totalItems":${p.totalItems},"totalPages":${p.totalPages},"items":${p.items}}`);
    },
  }, {
    method: 'get', pattern: '/api/logs/stats', handler: async (req) => {
      await ctx.auth.requireSuperuser(req);
      return json(200, JSON.stringify(logs ? await logs.stats(query(req).get('filter')) : []));
    },
  }, {
    method: 'get', pattern: '/api/logs/:id', handler: async (req) => {
      await ctx.auth.requireSuperuser(req);
      const entry = logs ? await logs.get(req.params[0]) : null;
      if (entry === null) throw ApiError.notFound();
      return json(200, entry);
    },
  }];
}
