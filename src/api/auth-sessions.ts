/**
 * Session routes (docs/api.md, "Auth"):
 * - GET /api/collections/:col/auth/sessions: the caller's sessions, newest first (table store; 404 in epoch mode);
 * - DELETE /api/collections/:col/auth/sessions/:sid: ends one (unknown or not owned: 404; 404 in epoch mode);
 * - DELETE /api/collections/:col/auth/sessions: logout everywhere in both modes (bumps the token
 *   epoch, wipes the session rows, clears the caller's cookies).
 * `:col` must be the caller's own collection, else 401.
 */
import type { Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { requireAuthCollection } from './records.js';
import { requireOwnCollection } from '../auth/auth-service.js';
import { requireTableStore } from '../auth/sessions.js';
import type { Collection } from '../model/schema.js';
import { clearCookies } from './cookies.js';

const BASE = '/api/collections/:col/auth/sessions';

export function authSessionRoutes(ctx: ApiContext): Route[] {
  const { store, auth } = ctx;
  const insecure = ctx.config.insecureCookies;
  const authCollection = (req: Req): Collection => {
    const c = store.collection(req.params[0]);
    requireAuthCollection(c);
    return c;
  };
  return [
    {
      method: 'get', pattern: BASE, handler: async (req) => {
        const c = authCollection(req);
        requireTableStore(c);
        const p = requireOwnCollection(c, await auth.resolve(req));
        return json(200, JSON.stringify({ items: await auth.sessions.list(c, String(p.record.id), p.sid) }));
      },
    },
    {
      method: 'del', pattern: `${BASE}/:sid`, handler: async (req) => {
        const c = authCollection(req);
        requireTableStore(c);
        const p = requireOwnCollection(c, await auth.resolve(req));
        await auth.sessions.revoke(c, String(p.record.id), req.params[1]);
        return noContent(p.sid === req.params[1] ? clearCookies(insecure) : undefined);
      },
    },
    {
      method: 'del', pattern: BASE, handler: async (req) => {
        const c = authCollection(req);
        const p = requireOwnCollection(c, await auth.resolve(req));
        await auth.sessions.endAll(c, String(p.record.id));
        return noContent(clearCookies(insecure));
      },
    },
  ];
}
