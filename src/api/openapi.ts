/**
 * `GET /api/openapi.json` (docs/api.md, "OpenAPI document"): the OpenAPI 3.1 document of this
 * server, built by `buildOpenApi` (openapi-doc.ts). It exposes the schema, so by default only
 * superusers get it (401 anonymous, 403 others, like `/api/collections`). With
 * `SERVICE_OPENAPI_PUBLIC=1` anyone gets it, listing only the collections a client may read
 * (a list or view rule that is not locked), without the rules' text.
 *
 * The answer is cached per kind (superuser, public) and rebuilt after any schema change: the
 * cache keys on the registry's schema generation, bumped by every collection change on this
 * instance and by the reload that follows another instance's (PostgreSQL).
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { Collection } from '../model/schema.js';
import { versionInfo } from '../meta/version-info.js';
import type { ApiContext } from './context.js';
import { buildOpenApi } from './openapi-doc.js';

/** Options of the OpenAPI route. */
export interface OpenApiOptions {
  /** SERVICE_OPENAPI_PUBLIC: anyone may read the document (readable collections only) */
  public: boolean;
  /** the server's route table (read at request time, after it is built), to list every route */
  routes: () => ReadonlyArray<{ method: string; pattern: string }>;
}

/** Locked: null or blank, superusers only (docs/api.md, "Rules"). */
const locked = (rule: string | null): boolean => rule === null || rule.trim() === '';

/** The collections the public document lists: a list or view rule that is not superuser-only. */
export function publicCollections(all: readonly Collection[]): Collection[] {
  return all.filter((c) => !locked(c.listRule) || !locked(c.viewRule));
}

/** The route; `opts.public` from SERVICE_OPENAPI_PUBLIC (src/server.ts). */
export function openApiRoutes(ctx: ApiContext, opts: OpenApiOptions): Route[] {
  const cache = new Map<'superuser' | 'public', { generation: number; body: string }>();
  const documentFor = (kind: 'superuser' | 'public'): string => {
    const registry = ctx.store.registry;
    const generation = registry.schemaGeneration();
    const hit = cache.get(kind);
    if (hit && hit.generation === generation) return hit.body;
    const all = registry.all();
    const body = JSON.stringify(buildOpenApi({
      collections: kind === 'public' ? publicCollections(all) : all,
      version: versionInfo().svc,
      routes: opts.routes(),
      showRules: kind === 'superuser',
    }));
    cache.set(kind, { generation, body });
    return body;
  };
  return [{
    method: 'get', pattern: '/api/openapi.json', handler: async (req) => {
      if (opts.public) {
        // a superuser still gets the whole document
        const p = await ctx.auth.resolve(req);
        return json(200, documentFor(p?.superuser ? 'superuser' : 'public'));
      }
      await ctx.auth.requireSuperuser(req);
      return json(200, documentFor('superuser'));
    },
  }];
}
