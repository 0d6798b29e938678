/**
 * Probes (docs/api.md, "Probes"): GET /api/health (liveness, no database
 * access) and GET /api/meta (public discovery; never config values, paths, hosts or secrets).
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { ApiContext } from './context.js';
import { versionInfo } from '../meta/version-info.js';

/** `statePath`: where the public state route is mounted (null: off), published as `endpoints.state`. */
export function probeRoutes(ctx: ApiContext, statePath: string | null = '/api/state'): Route[] {
  const v = versionInfo();
  const http = v.http.engine === 'uws' ? { engine: v.http.engine, package: v.http.package, version: v.http.version } : { engine: v.http.engine };
  const serverSql = ctx.store.sql.kind === 'postgres';
  const health = JSON.stringify({ status: 'ok', backend: serverSql ? 'postgres' : 'libsql', svc: v.svc, commit: v.commit, components: v.components, http });
  const meta = JSON.stringify({
    svc: v.svc,
    commit: v.commit,
    api: 1,
    capabilities: {
      admin: true,
      oauth2: true,
      webauthn: true,
      realtime: true,
      files: true,
      fts: !ctx.config.features.has('fts5-off'),
      vector: ctx.config.features.has('vector'),
      resumableUploads: ctx.config.features.has('resumable-uploads'),
      durableUploads: ctx.config.features.has('durable-resumable-uploads'),
      offsetPaging: ctx.config.pagination.offset,
      cursorPaging: ctx.config.pagination.cursor,
      serverSql,
      objectStore: ctx.config.storage !== undefined,
      devMode: ctx.config.features.has('dev-tools'),
      mail: ctx.mailGroup !== null,
      collectionsFrozen: ctx.config.collectionsFrozen,
    },
    endpoints: { state: statePath },
    limits: { maxUploadSize: ctx.maxBodyBytes, maxPerPage: 500 },
  });
  return [
    { method: 'get', pattern: '/api/health', handler: () => json(200, health) },
    { method: 'get', pattern: '/api/meta', handler: () => json(200, meta) },
  ];
}
