/**
 * The realtime hub (protocol in docs/realtime.md, "Protocol"; the PocketBase client
 * in docs/pocketbase.md): the connected clients, their subscriptions, and the fan-out of every
 * committed change from the change feed (src/store/change-feed.ts) to the clients allowed to see
 * it. Transports (WebSocket frames, PocketBase-shaped Server-Sent Events) live in
 * src/realtime/routes.ts; here a client is anything that can take a text frame.
 *
 * `RealtimeHub` composes its parts: clients.ts (connections, auth frames, revocation), topics.ts
 * (subscriptions, filters and their caps, native topics), fanout.ts (change feed → groups →
 * frames) and visibility.ts (rule and filter verdicts, off the main thread under the filter
 * budget for costly batches). Every delivery is checked as REST checks a read.
 */
import type { ChangeFeed } from '../store/change-feed.js';
import type { AuthPrincipal, AuthService } from '../auth/auth-service.js';
import type { ClientInfo } from '../auth/client.js';
import type { Logger } from '../log/logger.js';
import { Clients, type HubStats, type RealtimeClient, type RealtimeTransport } from './clients.js';
import { DEFAULT_REALTIME_LIMITS, Topics, type RealtimeLimits, type Subscription, type Topic, type TopicsRepository } from './topics.js';
import { Visibility, type VisibilityRepository } from './visibility.js';
import { Fanout, type FanoutRepository } from './fanout.js';

export { ACCOUNT_RECHECK_MS, RealtimeClient, type RealtimeTransport } from './clients.js';
export { DEFAULT_REALTIME_LIMITS, type RealtimeLimits, type Subscription, type Topic } from './topics.js';

/** Counters for operators (GET /api/realtime/metrics). */
export interface RealtimeMetrics {
  connections: number;
  websocket: number;
  sse: number;
  subscriptions: number;
  /** events sent since start */
  delivered: number;
  /** clients dropped for falling behind their send queue */
  droppedConsumers: number;
  /** connections refused at the cap */
  refusedConnections: number;
  /** SSE subscription POSTs for a stream held by another instance, relayed there (several instances on PostgreSQL) */
  relayedPosts: number;
  /**
   * Server-side delivery time of the last (up to) 1,000 committed batches that had subscribers:
   * milliseconds from the commit reaching the main thread to the last frame of the batch handed
   * to the sockets (the kernel and the clients' reading come after). Null before the first.
   */
  deliveryMs: { p50: number; p99: number; max: number; batches: number } | null;
}

/**
 * What the hub needs instead of the whole Store (src/context/store.ts; ARCHITECTURE.md,
 * "Folders"): what its parts need (Topics, Fanout, Visibility) and the writer's change feed it
 * follows. Built by the composition root (realtimeRepository, src/boot/repositories.ts).
 */
export type RealtimeRepository = TopicsRepository & FanoutRepository & VisibilityRepository & {
  /** the committed changes (SqlWriter.changes), fanned out to the subscribers */
  changes: Pick<ChangeFeed, 'subscribe'>;
};

/** The realtime hub of one server: its public surface, over the parts it composes. */
export class RealtimeHub {
  private readonly stats: HubStats = { delivered: 0, droppedConsumers: 0, refusedConnections: 0, ws: 0, sse: 0, subscriptions: 0, relayedPosts: 0 };
  private readonly clients: Clients;
  private readonly topics: Topics;
  private readonly fanout: Fanout;
  private unsubscribe: () => void;

  constructor(
    repo: RealtimeRepository,
    auth: AuthService,
    logger: Logger,
    readonly limits: RealtimeLimits = DEFAULT_REALTIME_LIMITS,
  ) {
    this.topics = new Topics(repo, limits, this.stats);
    this.clients = new Clients(auth, logger, this.topics, this.stats);
    this.fanout = new Fanout(repo, logger, this.clients, this.topics, new Visibility(repo, logger, limits), this.stats);
    this.unsubscribe = repo.changes.subscribe((batch) => this.fanout.onBatch(batch));
  }

  /** Connections open now (WebSocket and SSE). */
  get size(): number {
    return this.clients.size;
  }

  /** True (and counted) when a new connection would pass the cap. */
  refuse(): boolean {
    if (this.clients.size < this.limits.maxConnections) return false;
    this.stats.refusedConnections++;
    return true;
  }

  /** Counters for operators (GET /api/realtime/metrics). */
  metrics(): RealtimeMetrics {
    return {
      connections: this.clients.size,
      websocket: this.stats.ws,
      sse: this.stats.sse,
      subscriptions: this.stats.subscriptions,
      delivered: this.stats.delivered,
      droppedConsumers: this.stats.droppedConsumers,
      refusedConnections: this.stats.refusedConnections,
      relayedPosts: this.stats.relayedPosts,
      deliveryMs: this.fanout.deliveryTimes(),
    };
  }

  /** Registers a connected client. */
  connect(transport: RealtimeTransport, info: ClientInfo): RealtimeClient {
    return this.clients.connect(transport, info);
  }

  /** Forgets a client (its transport closed). */
  disconnect(client: RealtimeClient): void {
    this.clients.disconnect(client);
  }

  /** Counts an SSE subscription POST relayed to the instance holding its stream (metrics `relayedPosts`). */
  relayed(): void {
    this.stats.relayedPosts++;
  }

  /** A client by id (SSE: the POST that sets its subscriptions). */
  find(id: string): RealtimeClient | undefined {
    return this.clients.find(id);
  }

  /**
   * Sends every client `{"type":"signal","topic":<topic>}` (SSE: an event named `topic` with that
   * JSON): `__features` after a flag or experiment override changes (docs/realtime.md,
   * "Protocol"). Counts as delivered.
   */
  signal(topic: string): void {
    this.clients.signal(topic);
  }

  /** Delivers a `@oauth2` message to the SSE client `id` (Clients.deliverOAuth2); false when none takes it. */
  deliverOAuth2(id: string, message: string): boolean {
    return this.clients.deliverOAuth2(id, message);
  }

  /** Closes every client (shutdown). */
  closeAll(): void {
    this.unsubscribe();
    for (const c of [...this.clients.values()]) {
      c.transport.close(1001);
      this.clients.disconnect(c);
    }
  }

  /**
   * Authenticates a client with a bearer token (and, for an app with tenancy, its active
   * `account`, as X-Account-Id names it on REST). Resolves true when the token is valid (the
   * client is then that caller), false otherwise (the client is anonymous).
   */
  authenticate(client: RealtimeClient, token: string, account = ''): Promise<boolean> {
    return this.clients.authenticate(client, token, account);
  }

  /** Sets the caller of a client (from an SSE POST already authenticated by the route). */
  setPrincipal(client: RealtimeClient, principal: AuthPrincipal | null, token: string | null): void {
    this.clients.setPrincipal(client, principal, token);
  }

  /** Parses a topic. @throws ApiError 400 for a malformed topic, 404 for an unknown collection. */
  parseTopic(topic: string): Topic {
    return this.topics.parseTopic(topic);
  }

  /**
   * Adds (or replaces) a subscription (Topics.subscribe).
   * @throws ApiError 400 (bad topic or filter, too many subscriptions), 401 (auth needed),
   *   403 (the rule is locked for this caller), 404 (unknown collection)
   */
  subscribe(client: RealtimeClient, topic: string, filterSrc: string | null, requireAuthUnlessPublic: boolean, name = topic): Subscription {
    return this.topics.subscribe(client, topic, filterSrc, requireAuthUnlessPublic, name);
  }

  /**
   * Checks that `client` may hold the distinct filter strings `filters` (Topics.checkFilters).
   * @throws ApiError 400 `bad_request` past a cap, naming it
   */
  checkFilters(client: RealtimeClient, filters: Iterable<string>): void {
    this.topics.checkFilters(client, filters);
  }

  /** Removes a subscription; false when there was none. */
  unsubscribeTopic(client: RealtimeClient, topic: string): boolean {
    return this.topics.unsubscribeTopic(client, topic);
  }

  /** Called by the WebSocket endpoint once the server can publish (native topics, topics.ts). */
  bindPublisher(publish: (topic: string, text: string) => void): void {
    this.topics.bindPublisher(publish);
  }

  /** Re-checks every client signed in as this auth record (a session row of it ended). */
  sessionEnded(collectionId: string, recordId: string): void {
    this.clients.sessionEnded(collectionId, recordId);
  }

  /**
   * A client's transport ended: `dropped` when it was closed for falling behind its send queue
   * (counted once, logged). Also called when a send fails.
   */
  ended(client: RealtimeClient, dropped: boolean): void {
    this.clients.ended(client, dropped);
  }
}
