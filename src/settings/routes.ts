/**
 * The settings capability's routes (docs/api.md, "Settings, flags and experiments" and "Probes":
 * `/api/state`): `/api/settings` and `/api/features` for superusers (401 anonymous, 403 other
 * callers), and the public state route at `/api/state` or where the app's `stateRoute` puts it
 * (absent when false). Bound from the route table of src/server.ts beside the service
 * (`FeatureService`, features.ts) they serve.
 */
import type { Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { jsonBody } from '../http/json-body.js';
import { ApiError } from '../errors/api-error.js';
import type { AuthService } from '../auth/auth-service.js';
import type { FeatureService } from './features.js';

/**
 * `auth`: who is a superuser; `statePath`: the public state route (null: none); `featurePrefix`:
 * where the feature registry route mounts (the app's `featureRoutes`, default `/api`).
 */
export function settingsRoutes(features: FeatureService, auth: AuthService, statePath: string | null, featurePrefix = '/api'): Route[] {
  const routes: Route[] = [
    {
      method: 'get', pattern: '/api/settings', handler: async (req) => {
        await auth.requireSuperuser(req);
        return json(200, JSON.stringify({ items: features.list() }));
      },
    },
    {
      method: 'get', pattern: '/api/settings/:key', handler: async (req) => {
        await auth.requireSuperuser(req);
        const s = features.get(req.params[0]);
        if (!s) throw ApiError.notFound();
        return json(200, JSON.stringify({ key: s.key, value: s.value }));
      },
    },
    {
      method: 'put', pattern: '/api/settings/:key', handler: async (req) => {
        await auth.requireSuperuser(req);
        const b = jsonBody(req);
        if (typeof b !== 'object' || b === null || Array.isArray(b)) throw ApiError.badRequest('The request body must be a JSON object: {"value": "<string>"}.');
        const s = await features.put(req.params[0], (b as Record<string, unknown>).value);
        return json(200, JSON.stringify({ key: s.key, value: s.value }));
      },
    },
    {
      method: 'del', pattern: '/api/settings/:key', handler: async (req) => {
        await auth.requireSuperuser(req);
        await features.delete(req.params[0]);
        return noContent();
      },
    },
    {
      method: 'get', pattern: `${featurePrefix}/features`, handler: async (req) => {
        await auth.requireSuperuser(req);
        return json(200, JSON.stringify(features.features()));
      },
    },
  ];
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
