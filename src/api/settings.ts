/**
 * Settings and feature state (docs/api.md, "Settings, flags and experiments" and "Probes":
 * `/api/state`): `/api/settings` and `/api/features` for superusers (401 anonymous, 403 other
 * callers), and the public state route at `/api/state` or where the app's `stateRoute` puts it
 * (absent when false); with the app's mail group, `GET /api/mail/config` (superusers;
 * docs/framework.md, "Mail").
 */
import type { Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';

/**
 * `statePath`: the public state route (null: none); `featurePrefix`: where the feature registry
 * route mounts (the app's `featureRoutes`, default `/api`).
 */
export function settingsRoutes(ctx: ApiContext, statePath: string | null, featurePrefix = '/api'): Route[] {
  const { auth } = ctx;
  const features = ctx.features;
  const superuser = async (req: Req): Promise<void> => {
    const p = await auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    if (!p.superuser) throw ApiError.forbidden('Only superusers can perform this request.');
  };
  const routes: Route[] = [
    {
      method: 'get', pattern: '/api/settings', handler: async (req) => {
        await superuser(req);
        return json(200, JSON.stringify({ items: features.list() }));
      },
    },
    {
      method: 'get', pattern: '/api/settings/:key', handler: async (req) => {
        await superuser(req);
        const s = features.get(req.params[0]);
        if (!s) throw ApiError.notFound();
        return json(200, JSON.stringify({ key: s.key, value: s.value }));
      },
    },
    {
      method: 'put', pattern: '/api/settings/:key', handler: async (req) => {
        await superuser(req);
        const b = jsonBody(req);
        if (typeof b !== 'object' || b === null || Array.isArray(b)) throw ApiError.badRequest('The request body must be a JSON object: {"value": "<string>"}.');
        const s = await features.put(req.params[0], (b as Record<string, unknown>).value);
        return json(200, JSON.stringify({ key: s.key, value: s.value }));
      },
    },
    {
      method: 'del', pattern: '/api/settings/:key', handler: async (req) => {
        await superuser(req);
        await features.delete(req.params[0]);
        return noContent();
      },
    },
    {
      method: 'get', pattern: `${featurePrefix}/features`, handler: async (req) => {
        await superuser(req);
        return json(200, JSON.stringify(features.features()));
      },
    },
  ];
  if (ctx.mailGroup) {
    const group = ctx.mailGroup;
    const config = JSON.stringify({
      require_verified_sender: group.require_verified_sender === true,
      check_suppression: group.check_suppression === true,
      webhook_configured: typeof group.webhook_secret === 'string',
      unsubscribe_configured: false,
    });
    routes.push({
      method: 'get', pattern: '/api/mail/config', handler: async (req) => {
        await superuser(req);
        return json(200, config);
      },
    });
  }
  if (statePath) {
    routes.push({
      // synchronous when the subject's state is cached or needs no write (the common case)
      method: 'get', pattern: statePath, handler: (req) => {
        const subject = req.query === '' ? '' : (new URLSearchParams(req.query).get('subject') ?? '');
        if (subject.length > 500) throw ApiError.validation({ subject: { code: 'validation_max', message: 'Must be at most 500 characters.' } });
        const body = features.stateJson(subject);
        return typeof body === 'string' ? json(200, body) : body.then((b) => json(200, b));
      },
    });
  }
  return routes;
}
