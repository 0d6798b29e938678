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
import type { Collection } from '../model/schema.js';

/**
 * A collection as the API answers it: the spec's shape (`schema` holds the fields) with the same
 * list under `fields` beside it, PocketBase's name, which its JS SDK reads (docs/pocketbase.md).
 */
function answer(c: Collection): string {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(collectionToJson(c))) {
    out[k] = v;
    if (k === 'schema') out.fields = v;
  }
  return JSON.stringify(out);
}

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
        return json(200, `{"items":[${items.map(answer).join(',')}]}`);
      },
    },
    {
      method: 'post', pattern: '/api/collections', handler: async (req) => {
        await changing(req);
        const c = await ctx.collections.create(jsonBody(req));
        return json(201, answer(c));
      },
    },
    {
      method: 'get', pattern: '/api/collections/:idOrName', handler: async (req) => {
        await superuser(req);
        return json(200, answer(ctx.store.collection(req.params[0])));
      },
    },
    {
      method: 'patch', pattern: '/api/collections/:idOrName', handler: async (req) => {
        await changing(req);
        const c = await ctx.collections.update(req.params[0], jsonBody(req));
        return json(200, answer(c));
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
