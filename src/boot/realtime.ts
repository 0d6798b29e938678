/**
 * The realtime stage of `svc serve` (after the services, before HTTP): the hub over the store and
 * the auth service, told by the services when sessions end and when a flag or experiment override
 * changes, and its two transports (src/realtime/routes.ts) and PocketBase's OAuth2 redirect
 * (src/realtime/oauth2-redirect.ts) for the route table.
 */
import type { Store } from '../context/store.js';
import type { ApiContext } from '../api/context.js';
import type { Route, WsRoute } from '../http/types.js';
import type { ClusterRelay } from '../store/backend.js';
import { RealtimeHub, DEFAULT_REALTIME_LIMITS } from '../realtime/hub.js';
import { realtimeRoutes, realtimeSocket } from '../realtime/routes.js';
import { oauth2RedirectRoutes } from '../realtime/oauth2-redirect.js';
import { realtimeRepository } from './repositories.js';

/** What buildRealtime answers. */
export interface Realtime {
  hub: RealtimeHub;
  /** the SSE routes, the subscription POST, the metrics route and `/api/oauth2-redirect` (the `@oauth2` topic's deliveries) */
  routes: Route[];
  /** the WebSocket endpoint */
  socket: WsRoute;
  /** Closes every client and stops following the services (the server's stop). */
  close(): void;
}

/**
 * Builds the hub with the configured limits (`SERVICE_REALTIME_*`, docs/realtime.md) and its
 * transports. `relay`: the cluster's request relay (PostgreSQL), for subscription POSTs that
 * reach another instance than the stream's; null on SQLite. `store`: the data context the hub's
 * repository is built over.
 */
export function buildRealtime(ctx: ApiContext, store: Store, relay: ClusterRelay | null): Realtime {
  const { limits } = ctx.config;
  const hub = new RealtimeHub(realtimeRepository(store), ctx.auth, ctx.logger, {
    ...DEFAULT_REALTIME_LIMITS,
    maxConnections: limits.realtimeMaxConnections,
    maxFilters: limits.realtimeMaxFilters,
    maxFilterBytes: limits.realtimeMaxFilterBytes,
    maxAddressFilterBytes: limits.realtimeMaxAddressFilterBytes,
    filterBudgetMs: limits.realtimeFilterBudgetMs,
  });
  const unsubscribe = [
    // clients signed in as a record whose sessions ended are re-checked, on every instance
    ctx.auth.sessions.subscribeEnded((collectionId, recordId) => hub.sessionEnded(collectionId, recordId)),
    ctx.features.subscribeOverrideChanges(() => hub.signal('__features')),
  ];
  return {
    hub,
    routes: [...realtimeRoutes(ctx.auth, hub, relay), ...oauth2RedirectRoutes(hub, relay)],
    socket: realtimeSocket(hub, ctx.logger),
    close() {
      for (const stop of unsubscribe) stop();
      hub.closeAll();
    },
  };
}
