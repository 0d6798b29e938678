/**
 * Collections API (superuser only): 401 without auth, 403 for a non-superuser; with frozen
 * collections (docs/configuration.md, "Server": `SERVICE_COLLECTIONS_FROZEN`) create, update and
 * delete answer 403.
 */
import { ApiError } from '../errors/api-error.js';
import type { Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { collectionToJson } from '../collections/collection-registry.js';
import type { Principal } from '../rules/access.js';

export function collectionRoutes(ctx: ApiContext): Route[] {
  const superuser = async (req: Req): Promise<Principal> => {
    const p = await ctx.auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    if (!p.superuser) throw ApiError.forbidden('Only superusers can perform this request.');
    return p;
  };
  const changing = async (req: Req): Promise<void> => {
    await superuser(req);
    if (ctx.config.collectionsFrozen) throw new ApiError(403, 'collections_frozen', 'Collection definitions are frozen on this server; change them with `svc schema apply`.');
  };
  return [
    {
      method: 'get', pattern: '/api/collections', handler: async (req) => {
        await superuser(req);
        const items = ctx.store.registry.all().sort((a, b) => a.created.localeCompare(b.created) || a.name.localeCompare(b.name));
        return json(200, JSON.stringify({ items: items.map(collectionToJson) }));
      },
    },
    {
      method: 'post', pattern: '/api/collections', handler: async (req) => {
        await changing(req);
        const c = await ctx.collections.create(jsonBody(req));
        return json(201, JSON.stringify(collectionToJson(c)));
      },
    },
    {
      method: 'get', pattern: '/api/collections/:idOrName', handler: async (req) => {
        await superuser(req);
        return json(200, JSON.stringify(collectionToJson(ctx.store.collection(req.params[0]))));
      },
    },
    {
      method: 'patch', pattern: '/api/collections/:idOrName', handler: async (req) => {
        await changing(req);
        const c = await ctx.collections.update(req.params[0], jsonBody(req));
        return json(200, JSON.stringify(collectionToJson(c)));
      },
    },
    {
      method: 'del', pattern: '/api/collections/:idOrName', handler: async (req) => {
        await changing(req);
        await ctx.collections.delete(req.params[0]);
        return noContent();
      },
    },
  ];
}
