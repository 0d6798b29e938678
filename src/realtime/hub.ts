/**
 * The realtime hub (protocol in docs/realtime.md, "Protocol"; the PocketBase client
 * in docs/pocketbase.md): the connected clients, their subscriptions, and the fan-out of every
 * committed change from the change feed (src/store/change-feed.ts) to the clients allowed to see
 * it. Transports (WebSocket frames, PocketBase-shaped Server-Sent Events) live in ./routes.ts;
 * here a client is anything that can take a text frame.
 *
 * Every delivery is checked as REST checks a read: the collection's list rule (a subscription to
 * a collection) or view rule (a subscription to one record) for that caller, the subscription's
 * filter, the expiry field (an expired row is never sent), hidden fields never serialized and a
 * private email shown only to its owner and superusers. Fan-out groups subscriptions by what
 * decides visibility (rule, bound rule parameters, filter, bound filter parameters), so one SQL
 * query per group and commit decides for every socket in it, however many there are; a record's
 * JSON is rendered once per visibility class. A delete is decided on the row as it was (the
 * writer reports it) and carries only the id.
 *
 * A session that ends stops deliveries at once: a change to the caller's auth record (password
 * change, logout everywhere, deletion), an ended session row, or the token's expiry re-checks the
 * client's token before anything more is sent to it; a token that no longer resolves leaves the
 * client anonymous, with an error frame. With tenancy, a caller's account context (membership,
 * role) is resolved again before a delivery once it is ACCOUNT_RECHECK_MS old.
 */
import type { Collection, RuleName } from '../collections/types.js';
import type { Store } from '../store/store.js';
import type { Change, ChangeBatch } from '../store/change-feed.js';
import type { SqlValue } from '../store/bind.js';
import { bindValue } from '../store/bind.js';
import { Where } from '../store/sqlite/where.js';
import { ReadBudgetExceeded } from '../store/sqlite/reader.js';
import { bindParams, compileExpression, type CompiledExpr } from '../rules/compiler.js';
import { ownerMatches, type OwnerColumn, type RuleCheck } from '../rules/access.js';
import type { AuthPrincipal, AuthService } from '../auth/auth-service.js';
import type { ClientInfo } from '../auth/client.js';
import { hidePrivate } from '../records/record-scope.js';
import { newId } from '../records/ids.js';
import { ApiError } from '../errors/api-error.js';
import { authFrame, errorFrame } from './protocol.js';
import type { Logger } from '../log/logger.js';

/** How a client receives: one call per event, already framed for its transport. */
export interface RealtimeTransport {
  readonly kind: 'ws' | 'sse';
  /** false when the client is gone or was just dropped as a slow consumer */
  send(text: string): boolean;
  /** true when the last failed send dropped the client for its queue */
  readonly dropped: boolean;
  close(code?: number): void;
  /**
   * Native pub/sub (WebSockets): join or leave a topic that `RealtimeHub.publisher` publishes to
   * in one call for every member; `checkQueue` drops the client (false) when a publish left its
   * queue past the bound.
   */
  join?(topic: string): void;
  leave?(topic: string): void;
  checkQueue?(): boolean;
}

/**
 * What realtime clients may cost the server (docs/api.md "Realtime"; docs/configuration.md "Request limits"). Every
 * distinct filter is one query per committed batch that touches its collection, so filters are
 * capped by count and by summed length, per connection and per client address.
 */
export interface RealtimeLimits {
  /** connections (WebSocket and event streams together); past it an upgrade answers 503 */
  maxConnections: number;
  /** subscriptions per client */
  maxSubscriptions: number;
  /** SERVICE_REALTIME_MAX_FILTERS: distinct filter strings per connection */
  maxFilters: number;
  /** SERVICE_REALTIME_MAX_FILTER_BYTES: summed length (characters) of a connection's distinct filters */
  maxFilterBytes: number;
  /** SERVICE_REALTIME_MAX_ADDRESS_FILTER_BYTES: the same sum over every connection of one client address */
  maxAddressFilterBytes: number;
  /**
   * SERVICE_REALTIME_FILTER_BUDGET_MS: the longest the costly verdicts of one collection's batch
   * may take on the reader pool, queue time included; past it those subscribers get nothing of
   * the batch (fail closed, logged). 0: no budget.
   */
  filterBudgetMs: number;
}

export const DEFAULT_REALTIME_LIMITS: RealtimeLimits = {
  maxConnections: 20_000, maxSubscriptions: 500, maxFilters: 50, maxFilterBytes: 64 * 1024, maxAddressFilterBytes: 256 * 1024, filterBudgetMs: 2000,
};

/**
 * A batch's verdicts leave the main thread for the reader pool past this many query-decided
 * groups, or this many characters of their SQL: below it (a few filters, simple rules: the common
 * case) they stay synchronous, as a pool round trip would cost more than the queries.
 */
const OFF_THREAD_GROUPS = 8;
const OFF_THREAD_SQL_CHARS = 16 * 1024;
/** Groups handed to the reader pool per turn of the event loop (decideOffThread). */
const OFF_THREAD_SLICE = 16;
/**
 * Past the thresholds above, groups whose SQL (filter and rule) is at most CHEAP_SQL_CHARS long
 * are still decided on the main thread for up to MAIN_THREAD_SLICE_MS per collection and batch
 * (a pool round trip costs more than such a query); longer ones, and the rest, go to the pool.
 */
const CHEAP_SQL_CHARS = 2048;
const MAIN_THREAD_SLICE_MS = 10;
/**
 * How long a tenancy caller's account context (membership, role, accounts) is trusted before it
 * is resolved again, ms: a member removed from an account hears of it for at most this long
 * after REST refuses it (docs/api.md "Realtime").
 */
export const ACCOUNT_RECHECK_MS = 5000;

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

/** One subscription of a client. */
export interface Subscription {
  readonly client: RealtimeClient;
  /** the topic as the client named it (echoed in frames; the SSE event name) */
  readonly topic: string;
  readonly collectionId: string;
  /** one record's id, or null for the whole collection */
  readonly recordId: string | null;
  readonly filterSrc: string | null;
  /** compiled for `filterFor` (a superuser's filter skips relation targets' rules) */
  filter: CompiledExpr | null;
  filterFor: { generation: number; superuser: boolean } | null;
  /** the native topic this subscription is a member of (see RealtimeHub: native fan-out), or null */
  native: string | null;
  /** what the membership was decided for: the schema generation and the client's authVersion */
  nativeGen: number;
  nativeAuth: number;
}

/** The members of one native topic: WebSocket subscriptions that every event reaches alike. */
interface NativeGroup {
  key: string;
  topic: string;
  recordId: string | null;
  members: Set<Subscription>;
}

/** A connected client: its transport, caller and subscriptions. */
export class RealtimeClient {
  readonly id = newId();
  principal: AuthPrincipal | null = null;
  /** the bearer token the principal came from (re-checked when the session may have ended) */
  token: string | null = null;
  /** the active account named in the auth frame (tenancy), '' for none */
  account = '';
  /**
   * SSE: the caller the stream's first subscription POST established (`<collectionId>/<recordId>`,
   * '' for anonymous), null before it. Later POSTs must come from the same signed-in caller
   * (docs/api.md "Realtime"); a session that ends does not change it.
   */
  streamCaller: string | null = null;
  /** distinct filter strings of the subscriptions, with how many subscriptions use each */
  readonly filters = new Map<string, number>();
  /** summed length of `filters`' keys */
  filterBytes = 0;
  /** when the principal (and its tenancy account) was last resolved, performance.now() ms */
  resolvedAt = 0;
  /** the token is being re-checked: nothing is delivered until it is */
  checking = false;
  /** bumped whenever the caller or `checking` changes (native memberships are decided again) */
  authVersion = 0;
  expiry: NodeJS.Timeout | null = null;
  readonly subs = new Map<string, Subscription>();
  closed = false;
  dropCounted = false;

  /**
   * @param address the client's address as far as it is trusted (AuthRateLimits.clientIp): what
   *   the per-address filter cap counts by
   */
  constructor(readonly transport: RealtimeTransport, readonly info: ClientInfo, readonly address = info.remoteAddress) {}
}

/** A parsed topic: `<collection>`, `<collection>/*` or `<collection>/<id>` (collection by name or id). */
export interface Topic {
  collection: Collection;
  recordId: string | null;
}

const RECORD_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TOPIC = 512;
const MAX_FILTER = 4096;

/**
 * Frames an event for a transport: WebSocket `{"type":"event",...}` frames, or PocketBase's SSE
 * event (`event:` the topic, `data:` `{action, record}`, `id:` the client id).
 */
function frame(sub: Subscription, action: string, recordJson: string): string {
  if (sub.client.transport.kind === 'ws') return `{"type":"event","topic":${JSON.stringify(sub.topic)},"action":"${action}","record":${recordJson}}`;
  return `id:${sub.client.id}\nevent:${sub.topic}\ndata:{"action":"${action}","record":${recordJson}}\n\n`;
}

/** Subscribers that share a verdict: same rule, same bound parameters, same filter. */
interface Audience {
  rule: RuleCheck;
  /**
   * The owner-rule shortcut (RuleBook.ownerColumn): the rule is `<field> = @request.auth.id` and
   * there is no filter, so the verdict is a comparison in JavaScript, no query.
   */
  owner: { column: OwnerColumn; field: string; principal: AuthPrincipal | null } | null;
  filterSql: string | null;
  filterParams: SqlValue[];
  subs: Subscription[];
  /** ids visible to this audience, decided lazily per batch */
  visible?: Set<string>;
  /** deleted ids visible to it (decided ahead, off the main thread, for a costly batch) */
  deleted?: Set<string>;
  /** decided off the main thread: the clients' authVersion then (a caller changed since gets nothing) */
  authVersions?: number[];
}

/** A stable key for bound parameter values. */
function paramsKey(params: SqlValue[]): string {
  let out = '';
  for (const v of params) out += `${typeof v === 'object' && v !== null ? 'b' : typeof v}:${String(v)}\u0001`;
  return out;
}

export class RealtimeHub {
  private clients = new Map<string, RealtimeClient>();
  /** subscriptions by collection id */
  private byCollection = new Map<string, Set<Subscription>>();
  /** authenticated clients by `<collectionId>/<recordId>` of their auth record */
  private byPrincipal = new Map<string, Set<RealtimeClient>>();
  private queue: Array<{ batch: ChangeBatch; at: number }> = [];
  private scheduled = false;
  private unsubscribe: () => void;
  /** summed filter length per client address (RealtimeLimits.maxAddressFilterBytes) */
  private filterBytesByAddress = new Map<string, number>();
  private readonly stats = { delivered: 0, droppedConsumers: 0, refusedConnections: 0, ws: 0, sse: 0, subscriptions: 0, relayedPosts: 0 };

  constructor(
    private store: Store,
    private auth: AuthService,
    private logger: Logger,
    readonly limits: RealtimeLimits = DEFAULT_REALTIME_LIMITS,
  ) {
    this.unsubscribe = store.writer.changes.subscribe((batch) => this.onBatch(batch));
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
      deliveryMs: this.deliveryTimes(),
    };
  }

  /** Ring of recent batch delivery times (ms), for metrics. */
  private timings = new Float64Array(1000);
  private timed = 0;

  private deliveryTimes(): RealtimeMetrics['deliveryMs'] {
    const n = Math.min(this.timed, this.timings.length);
    if (n === 0) return null;
    const sorted = Array.from(this.timings.subarray(0, n)).sort((a, b) => a - b);
    const at = (p: number) => Math.round(sorted[Math.min(n - 1, Math.floor(p * n))] * 100) / 100;
    return { p50: at(0.5), p99: at(0.99), max: at(1), batches: n };
  }

  /** Registers a connected client. */
  connect(transport: RealtimeTransport, info: ClientInfo): RealtimeClient {
    const client = new RealtimeClient(transport, info, this.auth.limits.clientIp(info));
    this.clients.set(client.id, client);
    this.stats[transport.kind]++;
    return client;
  }

  /** Forgets a client (its transport closed). */
  disconnect(client: RealtimeClient): void {
    if (client.closed) return;
    client.closed = true;
    this.clients.delete(client.id);
    this.stats[client.transport.kind]--;
    for (const sub of client.subs.values()) this.dropSub(sub);
    client.subs.clear();
    this.setPrincipal(client, null, null);
  }

  /** Counts an SSE subscription POST relayed to the instance holding its stream (metrics `relayedPosts`). */
  relayed(): void {
    this.stats.relayedPosts++;
  }

  /** A client by id (SSE: the POST that sets its subscriptions). */
  find(id: string): RealtimeClient | undefined {
    return this.clients.get(id);
  }

  /**
   * Sends every client `{"type":"signal","topic":<topic>}` (SSE: an event named `topic` with that
   * JSON): `__features` after a flag or experiment override changes (docs/realtime.md,
   * "Protocol"). Counts as delivered.
   */
  signal(topic: string): void {
    const frame = JSON.stringify({ type: 'signal', topic });
    for (const c of this.clients.values()) {
      const text = c.transport.kind === 'ws' ? frame : `id:${c.id}\nevent:${topic}\ndata:${frame}\n\n`;
      if (c.transport.send(text)) this.stats.delivered++;
    }
  }

  /** Closes every client (shutdown). */
  closeAll(): void {
    this.unsubscribe();
    for (const c of [...this.clients.values()]) {
      c.transport.close(1001);
      this.disconnect(c);
    }
  }

  /**
   * Authenticates a client with a bearer token (and, for an app with tenancy, its active
   * `account`, as X-Account-Id names it on REST). Resolves true when the token is valid (the
   * client is then that caller), false otherwise (the client is anonymous).
   */
  async authenticate(client: RealtimeClient, token: string, account = ''): Promise<boolean> {
    let principal: AuthPrincipal | null = null;
    client.account = account;
    try {
      principal = await this.auth.resolve(this.clientInfo(client, token));
    } catch {
      principal = null;
    }
    if (client.closed) return false;
    this.setPrincipal(client, principal, principal ? token : null);
    return principal !== null;
  }

  /** Sets the caller of a client (from an SSE POST already authenticated by the route). */
  setPrincipal(client: RealtimeClient, principal: AuthPrincipal | null, token: string | null): void {
    client.authVersion++;
    if (client.principal) {
      const key = `${client.principal.collection.id}/${String(client.principal.record.id)}`;
      const set = this.byPrincipal.get(key);
      set?.delete(client);
      if (set?.size === 0) this.byPrincipal.delete(key);
    }
    if (client.expiry) clearTimeout(client.expiry);
    client.expiry = null;
    client.principal = principal;
    client.token = principal ? token : null;
    client.resolvedAt = performance.now();
    if (!principal || client.closed) return;
    const key = `${principal.collection.id}/${String(principal.record.id)}`;
    let set = this.byPrincipal.get(key);
    if (!set) this.byPrincipal.set(key, (set = new Set()));
    set.add(client);
    const exp = token ? this.auth.tokens.peek(token)?.exp : undefined;
    if (exp !== undefined) {
      // the token's expiry ends deliveries as surely as a logout (timers cap at about 24.8 days)
      const ms = Math.min(exp * 1000 - Date.now(), 2 ** 31 - 1);
      client.expiry = setTimeout(() => this.recheck(client), Math.max(0, ms));
      client.expiry.unref();
    }
  }

  /**
   * Parses a topic. @throws ApiError 400 for a malformed topic, 404 for an unknown collection.
   */
  parseTopic(topic: string): Topic {
    if (typeof topic !== 'string' || topic === '' || topic.length > MAX_TOPIC || /[\r\n]/.test(topic)) throw ApiError.badRequest('Invalid topic: expected "<collection>" or "<collection>/<id>".');
    const slash = topic.indexOf('/');
    const name = slash < 0 ? topic : topic.slice(0, slash);
    const rest = slash < 0 ? '*' : topic.slice(slash + 1);
    if (rest !== '*' && !RECORD_ID.test(rest)) throw ApiError.badRequest('Invalid topic: expected "<collection>" or "<collection>/<id>".');
    const collection = this.store.registry.find(name);
    if (!collection) throw ApiError.notFound(`Unknown collection ${JSON.stringify(name)}.`);
    return { collection, recordId: rest === '*' ? null : rest };
  }

  /**
   * Adds (or replaces) a subscription. `requireAuthUnlessPublic`: the WebSocket protocol refuses
   * a subscription to a collection whose rule is not `@public` from an anonymous client (SSE, as
   * PocketBase, accepts it and checks each delivery). `name`: the key the client knows the
   * subscription by (echoed in frames; the SSE SDK's topic with its options), `topic` by default.
   * @throws ApiError 400 (bad topic or filter, too many subscriptions), 401 (auth needed),
   *   403 (the rule is locked for this caller), 404 (unknown collection)
   */
  subscribe(client: RealtimeClient, topic: string, filterSrc: string | null, requireAuthUnlessPublic: boolean, name = topic): Subscription {
    const { collection, recordId } = this.parseTopic(topic);
    const rule: RuleName = recordId ? 'viewRule' : 'listRule';
    const p = client.principal;
    // A locked rule denies everyone but superusers (who pass every rule).
    const check = this.store.rules.check(collection, rule, p, null, 'GET');
    if (check.kind === 'deny') throw ApiError.forbidden('Only superusers can subscribe to this collection.');
    if (requireAuthUnlessPublic && !p && !this.store.rules.isPublic(collection, rule)) throw ApiError.unauthorized('Subscribing to this collection requires authentication: send an auth frame first.');
    if (filterSrc !== null && (typeof filterSrc !== 'string' || filterSrc.length > MAX_FILTER)) throw ApiError.badRequest(`Invalid filter: expected a string of at most ${MAX_FILTER} characters.`);
    if (!client.subs.has(name) && client.subs.size >= this.limits.maxSubscriptions) throw ApiError.badRequest(`Too many subscriptions: at most ${this.limits.maxSubscriptions} per connection.`);
    if (filterSrc && !client.filters.has(filterSrc)) {
      // a filter new to the client: the caps apply to the filters it would hold afterwards
      const replaced = client.subs.get(name)?.filterSrc;
      const after = [...client.filters.keys()].filter((f) => f !== replaced || client.filters.get(f)! > 1);
      after.push(filterSrc);
      this.checkFilters(client, after);
    }
    const sub: Subscription = { client, topic: name, collectionId: collection.id, recordId, filterSrc: filterSrc || null, filter: null, filterFor: null, native: null, nativeGen: -1, nativeAuth: -1 };
    if (sub.filterSrc) this.compileFilter(sub, collection); // throws 400 on a bad filter
    this.unsubscribeTopic(client, name);
    client.subs.set(name, sub);
    if (sub.filterSrc) this.countFilter(client, sub.filterSrc, 1);
    let set = this.byCollection.get(collection.id);
    if (!set) {
      this.byCollection.set(collection.id, (set = new Set()));
      this.watchedChanged();
    }
    set.add(sub);
    this.stats.subscriptions++;
    this.decideNative(sub, collection, check, this.store.registry.schemaGeneration());
    return sub;
  }

  /**
   * Checks that `client` may hold the distinct filter strings `filters` (all it would hold, the
   * same string counted once): at most `maxFilters` of them and `maxFilterBytes` characters in
   * all, and its address's connections together at most `maxAddressFilterBytes` (a change that
   * does not grow the client's sum always passes that one). docs/api.md "Realtime".
   * @throws ApiError 400 `bad_request` past a cap, naming it
   */
  checkFilters(client: RealtimeClient, filters: Iterable<string>): void {
    const distinct = new Set(filters);
    let bytes = 0;
    for (const f of distinct) bytes += f.length;
    const l = this.limits;
    if (distinct.size > l.maxFilters) throw ApiError.badRequest(`Too many filters: at most ${l.maxFilters} distinct filters per connection.`);
    if (bytes > l.maxFilterBytes) throw ApiError.badRequest(`The filters are too long: at most ${l.maxFilterBytes} characters of distinct filters per connection.`);
    const held = this.filterBytesByAddress.get(client.address) ?? 0;
    if (bytes > client.filterBytes && held - client.filterBytes + bytes > l.maxAddressFilterBytes) {
      throw ApiError.badRequest(`The filters are too long: at most ${l.maxAddressFilterBytes} characters of distinct filters per client address, over all its connections.`);
    }
  }

  /** Counts a subscription's filter in (`delta` 1) or out (-1) of its client's and address's sums. */
  private countFilter(client: RealtimeClient, filter: string, delta: 1 | -1): void {
    const n = (client.filters.get(filter) ?? 0) + delta;
    let bytes = 0;
    if (n <= 0) {
      if (!client.filters.delete(filter)) return;
      bytes = -filter.length;
    } else {
      if (n === 1 && delta === 1) bytes = filter.length;
      client.filters.set(filter, n);
    }
    if (bytes === 0) return;
    client.filterBytes += bytes;
    const sum = (this.filterBytesByAddress.get(client.address) ?? 0) + bytes;
    if (sum > 0) this.filterBytesByAddress.set(client.address, sum);
    else this.filterBytesByAddress.delete(client.address);
  }

  /** Removes a subscription; false when there was none. */
  unsubscribeTopic(client: RealtimeClient, topic: string): boolean {
    const sub = client.subs.get(topic);
    if (!sub) return false;
    client.subs.delete(topic);
    this.dropSub(sub);
    return true;
  }

  /**
   * Native fan-out. A WebSocket subscription whose events every member sees alike (the rule lets
   * its caller see every record: `@public`, or a superuser; no filter; not an auth collection,
   * whose emails are per caller) joins a native topic named by collection and topic, and an event
   * goes out to all of them in one publish (uWS's topics) instead of one send per socket.
   * Membership is decided again on every batch before anything is published, so a rule change,
   * a new auth or a session re-check moves a subscription out before the next event.
   */
  private publisher: ((topic: string, text: string) => void) | null = null;
  private nativeByCollection = new Map<string, Map<string, NativeGroup>>();

  /** Called by the WebSocket endpoint once the server can publish. */
  bindPublisher(publish: (topic: string, text: string) => void): void {
    this.publisher = publish;
  }

  private joinNative(sub: Subscription): void {
    const key = `rt\u0000${sub.collectionId}\u0000${sub.topic}`;
    if (sub.native === key) return;
    if (sub.native) this.leaveNative(sub);
    let groups = this.nativeByCollection.get(sub.collectionId);
    if (!groups) this.nativeByCollection.set(sub.collectionId, (groups = new Map()));
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { key, topic: sub.topic, recordId: sub.recordId, members: new Set() }));
    g.members.add(sub);
    sub.native = key;
    sub.client.transport.join!(key);
  }

  /**
   * Makes `sub` a native member when every event it may see is seen alike (see above); true when
   * it is one. Decided at subscribe time and again when the schema or the caller changes.
   */
  private decideNative(sub: Subscription, c: Collection, check: RuleCheck, generation: number): boolean {
    const client = sub.client;
    if (!this.publisher || check.kind !== 'all' || sub.filterSrc || c.type === 'auth' || !client.transport.join || client.checking) return false;
    this.joinNative(sub);
    sub.nativeGen = generation;
    sub.nativeAuth = client.authVersion;
    return true;
  }

  private leaveNative(sub: Subscription): void {
    const key = sub.native;
    if (!key) return;
    sub.native = null;
    const groups = this.nativeByCollection.get(sub.collectionId);
    const g = groups?.get(key);
    if (g) {
      g.members.delete(sub);
      if (g.members.size === 0) groups!.delete(key);
      if (groups!.size === 0) this.nativeByCollection.delete(sub.collectionId);
    }
    if (!sub.client.closed) sub.client.transport.leave?.(key);
  }

  private dropSub(sub: Subscription): void {
    this.leaveNative(sub);
    if (sub.filterSrc) this.countFilter(sub.client, sub.filterSrc, -1);
    const set = this.byCollection.get(sub.collectionId);
    if (set?.delete(sub)) this.stats.subscriptions--;
    if (set?.size === 0) {
      this.byCollection.delete(sub.collectionId);
      this.watchedChanged();
    }
  }

  private watchPending = false;
  /** Tells the writer which collections' deletes must carry their rows (once per turn). */
  private watchedChanged(): void {
    if (this.watchPending) return;
    this.watchPending = true;
    queueMicrotask(() => {
      this.watchPending = false;
      this.store.writer.captureDeletedRows([...this.byCollection.keys()]);
    });
  }

  /** Compiles (or recompiles after a schema change) a subscription's filter for its caller. */
  private compileFilter(sub: Subscription, c: Collection): CompiledExpr {
    const generation = this.store.registry.schemaGeneration();
    const superuser = !!sub.client.principal?.superuser;
    if (sub.filter && sub.filterFor && sub.filterFor.generation === generation && sub.filterFor.superuser === superuser) return sub.filter;
    sub.filter = compileExpression(sub.filterSrc!, c, this.store.registry, { mode: 'filter', alias: 'r', superuser, dialect: this.store.sql.kind });
    sub.filterFor = { generation, superuser };
    return sub.filter;
  }

  private clientInfo(client: RealtimeClient, token: string): ClientInfo {
    const headers = { ...client.info.headers, authorization: `Bearer ${token}`, cookie: '', csrf: '', account: client.account || client.info.headers.account || '' };
    return { method: 'GET', headers, remoteAddress: client.info.remoteAddress };
  }

  /**
   * Re-checks a client's token (its session may have ended). Synchronous when the token's
   * verification is cached (the usual case after a profile change); otherwise deliveries to the
   * client pause until the check ends. A token that no longer resolves makes the client
   * anonymous and sends it an error frame.
   */
  private recheck(client: RealtimeClient): void {
    if (client.closed || !client.token) return;
    const token = client.token;
    const done = (p: AuthPrincipal | null) => {
      client.checking = false;
      client.authVersion++;
      this.settle(client, token, p);
    };
    let out: AuthPrincipal | null | Promise<AuthPrincipal | null>;
    try {
      out = this.auth.resolve(this.clientInfo(client, token));
    } catch {
      out = null;
    }
    if (out instanceof Promise) {
      client.checking = true;
      client.authVersion++;
      out.then(done, () => done(null));
    } else done(out);
  }

  /**
   * Applies a re-check's verdict `p` for the token `token` (ignored when the client closed or
   * authenticated again meanwhile): the client's new principal, or anonymous with an `auth`
   * error frame (SSE: a `PB_AUTH` event) when the token no longer resolves.
   */
  private settle(client: RealtimeClient, token: string, p: AuthPrincipal | null): void {
    if (client.closed || client.token !== token) return;
    if (p) {
      this.setPrincipal(client, p, token);
      return;
    }
    this.setPrincipal(client, null, null);
    const msg = 'The session ended: deliveries continue as an anonymous client until a new auth.';
    client.transport.send(client.transport.kind === 'ws' ? authFrame(false) : `id:${client.id}\nevent:PB_AUTH\ndata:{"status":"error"}\n\n`);
    if (client.transport.kind === 'ws') client.transport.send(errorFrame(msg));
  }

  /**
   * Tenancy: the signed-in subscribers of `collectionIds` whose account context (membership,
   * role, accounts) was resolved more than ACCOUNT_RECHECK_MS ago; none without a tenancy
   * resolver. Superusers have no account context.
   */
  private staleAccounts(collectionIds: Iterable<string>): Set<RealtimeClient> {
    const out = new Set<RealtimeClient>();
    if (!this.auth.tenancy) return out;
    const now = performance.now();
    for (const cid of collectionIds) {
      for (const sub of this.byCollection.get(cid) ?? []) {
        const c = sub.client;
        if (c.principal && !c.principal.superuser && c.token && !c.checking && !c.closed && now - c.resolvedAt > ACCOUNT_RECHECK_MS) out.add(c);
      }
    }
    return out;
  }

  /**
   * Resolves the callers of `clients` again (token, session, the tenancy resolver's account
   * context), so a member removed from an account stops hearing of it as REST stops answering
   * (docs/api.md "Realtime"). A caller that no longer resolves becomes anonymous (settle).
   */
  private async refresh(clients: Set<RealtimeClient>): Promise<void> {
    await Promise.all([...clients].map(async (client) => {
      const token = client.token;
      if (!token) return;
      let p: AuthPrincipal | null;
      try {
        p = await this.auth.resolve(this.clientInfo(client, token));
      } catch {
        p = null;
      }
      this.settle(client, token, p);
    }));
  }

  /** Re-checks every client signed in as this auth record (a session row of it ended). */
  sessionEnded(collectionId: string, recordId: string): void {
    for (const c of [...(this.byPrincipal.get(`${collectionId}/${recordId}`) ?? [])]) this.recheck(c);
  }

  private onBatch(batch: ChangeBatch): void {
    if (this.byCollection.size === 0 && this.byPrincipal.size === 0) return;
    // Revocation first, synchronously, before any later commit can be delivered.
    for (const ch of batch.changes) {
      if (ch.op !== 'create' && this.byPrincipal.size) {
        const set = this.byPrincipal.get(`${ch.collection}/${ch.id}`);
        if (set) for (const c of [...set]) this.recheck(c);
      }
    }
    for (const cid of batch.truncated) {
      for (const [key, set] of this.byPrincipal) if (key.startsWith(`${cid}/`)) for (const c of [...set]) this.recheck(c);
    }
    if (this.byCollection.size === 0) return;
    this.queue.push({ batch, at: performance.now() });
    if (!this.scheduled && !this.flushing) {
      this.scheduled = true;
      // after the writes of this commit are answered: delivery never delays a write's reply
      setImmediate(() => void this.flush());
    }
  }

  /** A flush is delivering (it may wait for verdicts off the main thread); it takes later batches too. */
  private flushing = false;

  /**
   * Delivers the queued batches in commit order. A batch whose verdicts are costly (or whose
   * tenancy callers are due a re-check) is waited for before the next one, so every client still
   * gets its frames in commit order; the usual batch is delivered synchronously.
   */
  private async flush(): Promise<void> {
    this.scheduled = false;
    this.flushing = true;
    try {
      while (this.queue.length) {
        const batches = this.queue;
        this.queue = [];
        for (const { batch, at } of batches) {
          try {
            const pending = this.deliver(batch);
            if (pending) await pending;
          } catch (err) {
            this.logger.error(`realtime delivery failed: ${(err as Error)?.stack ?? String(err)}`);
          }
          this.timings[this.timed++ % this.timings.length] = performance.now() - at;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Delivers one committed batch; a promise when part of it waits (re-checks, verdicts off the main thread). */
  private deliver(batch: ChangeBatch): void | Promise<void> {
    const perCollection = new Map<string, Change[]>();
    for (const ch of batch.changes) {
      if (!this.byCollection.has(ch.collection)) continue;
      let list = perCollection.get(ch.collection);
      if (!list) perCollection.set(ch.collection, (list = []));
      list.push(ch);
    }
    const entries = [...perCollection];
    // tenancy: callers whose account context is due a re-check are resolved again first
    const stale = this.staleAccounts(perCollection.keys());
    if (stale.size) return this.refresh(stale).then(() => this.deliverFrom(entries, 0));
    return this.deliverFrom(entries, 0);
  }

  /** Delivers `entries` (collection id, its changes) from index `i` on, in order. */
  private deliverFrom(entries: Array<[string, Change[]]>, i: number): void | Promise<void> {
    for (; i < entries.length; i++) {
      const [cid, changes] = entries[i];
      const c = this.store.registry.byId(cid);
      const subs = this.byCollection.get(cid);
      if (!c || !subs) continue;
      const pending = this.deliverCollection(c, changes, subs);
      if (pending) {
        const next = i + 1;
        return pending.then(() => this.deliverFrom(entries, next));
      }
    }
  }

  private deliverCollection(c: Collection, changes: Change[], subs: Set<Subscription>): void | Promise<void> {
    const changed = new Set<string>();
    for (const ch of changes) changed.add(ch.id);
    // Group the interested subscriptions by what decides their verdict.
    const audiences = new Map<string, Audience>();
    const generation = this.store.registry.schemaGeneration();
    for (const sub of subs) {
      const client = sub.client;
      // a native member stays one until the schema (rules) or its caller changes: O(1) per socket
      if (sub.native && sub.nativeGen === generation && sub.nativeAuth === client.authVersion && !client.closed) continue;
      if (client.checking || client.closed) {
        if (sub.native) this.leaveNative(sub);
        continue;
      }
      const rule: RuleName = sub.recordId ? 'viewRule' : 'listRule';
      const check = this.store.rules.check(c, rule, client.principal, null, 'GET');
      if (this.decideNative(sub, c, check, generation)) continue;
      if (sub.native) this.leaveNative(sub);
      if (sub.recordId !== null && !changed.has(sub.recordId)) continue;
      if (check.kind === 'deny') continue;
      let filterSql: string | null = null;
      let filterParams: SqlValue[] = [];
      if (sub.filterSrc) {
        let compiled: CompiledExpr;
        try {
          compiled = this.compileFilter(sub, c);
        } catch (err) {
          // the schema changed under the filter: the subscription ends, with a reason
          this.unsubscribeTopic(client, sub.topic);
          if (client.transport.kind === 'ws') client.transport.send(errorFrame(`Subscription ${sub.topic} ended: ${(err as Error).message}`));
          continue;
        }
        filterSql = compiled.sql;
        filterParams = bindParams(compiled, { auth: client.principal?.record ?? null, data: null, method: 'GET' });
      }
      // The rule's SQL and the filter's are functions of this collection and schema generation,
      // the rule name, the filter's source and whether it was compiled for a superuser: the key
      // names those rather than the SQL, which a relation filter makes long enough that hashing it
      // was measured slow (bench/README.md, "Realtime audience keys").
      const key = `${rule}\u0000${check.kind}\u0000${check.kind === 'where' ? paramsKey(check.params) : ''}\u0000${sub.filterFor?.superuser ? 's' : ''}\u0000${sub.filterSrc ?? ''}\u0000${paramsKey(filterParams)}`;
      let a = audiences.get(key);
      if (!a) {
        const column = check.kind === 'where' && filterSql === null ? this.store.rules.ownerColumn(c, rule) : null;
        const owner = column ? { column, field: c.fields[column.index - 3].name, principal: client.principal } : null;
        audiences.set(key, (a = { rule: check, owner, filterSql, filterParams, subs: [] }));
      }
      a.subs.push(sub);
    }
    const natives = this.nativeByCollection.get(c.id);
    if (audiences.size === 0 && !natives) return;

    // The stored rows of created and updated records (expired rows are not sent), once.
    const upserts = changes.filter((ch) => ch.op !== 'delete').map((ch) => ch.id);
    const rows = upserts.length ? this.rowsById(c, upserts) : new Map<string, unknown[]>();

    // Groups with a filter (what a client, not the app, decides) are decided on the main thread
    // while they are few and short (the common case), else within a short slice of the main
    // thread and then on the reader pool under the filter budget, so a flood of costly filters
    // cannot hold the event loop (ARCHITECTURE.md "Realtime"). Groups without one keep their
    // query (the app's rule) on the main thread, decided as they are needed.
    const filtered: Audience[] = [];
    let sqlChars = 0;
    for (const a of audiences.values()) {
      if (a.owner || a.filterSql === null) continue;
      filtered.push(a);
      sqlChars += a.filterSql.length + (a.rule.kind === 'where' ? a.rule.sql.length : 0);
    }
    if (filtered.length > OFF_THREAD_GROUPS || sqlChars > OFF_THREAD_SQL_CHARS) {
      // verdicts are for the callers as they are now: one that changes meanwhile gets nothing
      for (const a of audiences.values()) a.authVersions = a.subs.map((sub) => sub.client.authVersion);
      return this.decideOffThread(c, filtered, changes, upserts, rows).then(() => this.send(c, changes, audiences, natives, upserts, rows, true));
    }
    this.send(c, changes, audiences, natives, upserts, rows, false);
  }

  /**
   * Decides the verdicts of the filter groups `all`: those with short SQL on the main thread for at most
   * MAIN_THREAD_SLICE_MS, the rest on the reader pool (allOffThread: a worker on SQLite, the
   * connection pool on PostgreSQL) within `filterBudgetMs` for all of them, queue time included.
   * A group not decided in time, or whose query failed, fails closed: its subscribers get nothing
   * of this batch, and the groups are logged.
   */
  private async decideOffThread(c: Collection, all: Audience[], changes: Change[], upserts: string[], rows: Map<string, unknown[]>): Promise<void> {
    const ids = upserts.filter((id) => rows.has(id));
    const deletes = changes.filter((ch) => ch.op === 'delete' && ch.old);
    const audiences: Audience[] = [];
    const sliceEnd = performance.now() + MAIN_THREAD_SLICE_MS;
    for (const a of all) {
      const cheap = a.filterSql!.length + (a.rule.kind === 'where' ? a.rule.sql.length : 0) <= CHEAP_SQL_CHARS;
      if (!cheap || performance.now() >= sliceEnd) {
        audiences.push(a);
        continue;
      }
      try {
        a.visible = new Set();
        for (let i = 0; i < ids.length; i += 500) {
          const q = this.visibleQuery(c, a, ids.slice(i, i + 500));
          for (const r of this.store.reader.all(q.sql, q.params)) a.visible.add(String(r[0]));
        }
        a.deleted = new Set();
        for (const ch of deletes) if (this.oldRowHolds(c, a, ch.old!)) a.deleted.add(ch.id);
      } catch (err) {
        a.visible = new Set();
        a.deleted = new Set();
        this.logger.warn(`realtime: a filter group of ${c.name} not decided (${(err as Error)?.message ?? String(err)}); its subscribers get nothing of this batch`);
      }
    }
    if (audiences.length === 0) return;
    const budget = this.limits.filterBudgetMs;
    const deadline = budget > 0 ? performance.now() + budget : Infinity;
    const left = () => (budget > 0 ? Math.max(1, deadline - performance.now()) : 0);
    const reader = this.store.reader;
    let failed = 0;
    let reason = '';
    const decide = async (a: Audience): Promise<void> => {
      const visible = new Set<string>();
      const deleted = new Set<string>();
      try {
        for (let i = 0; i < ids.length; i += 500) {
          const q = this.visibleQuery(c, a, ids.slice(i, i + 500));
          for (const r of await reader.allOffThread(q.sql, q.params, left())) visible.add(String(r[0]));
        }
        for (const ch of deletes) {
          if (performance.now() >= deadline) throw new ReadBudgetExceeded(budget);
          const q = this.rowHoldsQuery(c, a, ch.old!);
          if ((await reader.getOffThread(q.sql, q.params, left())) !== undefined) deleted.add(ch.id);
        }
      } catch (err) {
        failed++;
        reason = err instanceof ReadBudgetExceeded ? `over the budget of ${budget} ms` : (err as Error)?.message ?? String(err);
        a.visible = new Set();
        a.deleted = new Set();
        return;
      }
      a.visible = visible;
      a.deleted = deleted;
    };
    // handing a read to the pool copies its SQL (tens of KB for a relation filter): a slice of
    // groups per turn of the event loop, so requests are served between slices
    const running: Array<Promise<void>> = [];
    for (let i = 0; i < audiences.length; i++) {
      if (i > 0 && i % OFF_THREAD_SLICE === 0) await new Promise<void>((r) => setImmediate(r));
      running.push(decide(audiences[i]));
    }
    await Promise.all(running);
    if (failed) this.logger.warn(`realtime: ${failed} of ${audiences.length} filter groups of ${c.name} not decided (${reason}); their subscribers get nothing of this batch`);
  }

  /**
   * Sends one collection's changes of a batch to the audiences and native topics that may see
   * them. `waited`: the verdicts were decided off the main thread, so native members whose
   * caller changed meanwhile leave their topic first (decided again with the next batch).
   */
  private send(c: Collection, changes: Change[], audiences: Map<string, Audience>, natives: Map<string, NativeGroup> | undefined, upserts: string[], rows: Map<string, unknown[]>, waited: boolean): void {
    const publish = this.publisher;
    if (waited && natives) {
      for (const g of [...natives.values()]) for (const sub of [...g.members]) if (sub.client.closed || sub.client.checking || sub.nativeAuth !== sub.client.authVersion) this.leaveNative(sub);
    }
    const codec = this.store.codec(c);
    const rendered = new Map<string, string>();
    const render = (id: string, sub: Subscription): string => {
      // one rendering per record and visibility class (an auth record's email is private)
      const p = sub.client.principal;
      const full = c.type !== 'auth' || p?.superuser || (p?.collection.id === c.id && p.record.id === id);
      const key = `${full ? 'f' : 'm'}${id}`;
      let json = rendered.get(key);
      if (json === undefined) {
        const rec = codec.fromRow(rows.get(id)!);
        if (!full) hidePrivate(c, rec, null);
        json = codec.stringify(rec);
        rendered.set(key, json);
      }
      return json;
    };

    // WebSocket frames are shared by every socket with the same topic and rendering (SSE frames
    // carry the client id): built once, by topic then by the rendered record (the same string
    // object, so its hash is computed once).
    const wsFrames = new Map<string, Map<string, string>>();
    for (const ch of changes) {
      const isDelete = ch.op === 'delete';
      if (!isDelete && !rows.has(ch.id)) continue; // gone again, or expired
      const deleted = isDelete ? `{"id":${JSON.stringify(ch.id)}}` : '';
      for (const a of audiences.values()) {
        if (!this.visible(c, a, ch, upserts, rows)) continue;
        for (let i = 0; i < a.subs.length; i++) {
          const sub = a.subs[i];
          if (sub.recordId !== null && sub.recordId !== ch.id) continue;
          const client = sub.client;
          if (client.closed || client.checking) continue;
          // decided off the main thread for a caller that changed since: fail closed
          if (a.authVersions && a.authVersions[i] !== client.authVersion) continue;
          const json = isDelete ? deleted : render(ch.id, sub);
          let text: string;
          if (client.transport.kind === 'ws') {
            let byJson = wsFrames.get(sub.topic);
            if (!byJson) wsFrames.set(sub.topic, (byJson = new Map()));
            text = byJson.get(json) ?? '';
            if (text === '') byJson.set(json, (text = frame(sub, ch.op, json)));
          } else text = frame(sub, ch.op, json);
          if (client.transport.send(text)) this.stats.delivered++;
          else this.lost(client);
        }
      }
      if (natives && publish) {
        for (const g of natives.values()) {
          if (g.recordId !== null && g.recordId !== ch.id) continue;
          const first = g.members.values().next().value as Subscription | undefined;
          if (!first) continue;
          const json = isDelete ? deleted : render(ch.id, first);
          publish(g.key, frame(first, ch.op, json));
          this.stats.delivered += g.members.size;
          // a publish queues without asking: members past their bound are dropped now
          for (const sub of g.members) if (!sub.client.transport.checkQueue!()) this.lost(sub.client); // a Set may lose its current entry while iterated
        }
      }
    }
  }

  /** Whether a change is visible to an audience (rule and filter; decided once per batch and audience). */
  private visible(c: Collection, a: Audience, ch: Change, upserts: string[], rows: Map<string, unknown[]>): boolean {
    const open = a.rule.kind === 'all' && a.filterSql === null;
    if (ch.op === 'delete') {
      if (open) return true;
      if (!ch.old) return false; // nothing to decide on: fail closed
      if (a.owner) return ownerMatches(a.owner.column, ch.old[a.owner.field], a.owner.principal);
      if (a.deleted) return a.deleted.has(ch.id);
      return this.oldRowHolds(c, a, ch.old);
    }
    if (open) return rows.has(ch.id);
    if (a.owner) {
      const row = rows.get(ch.id);
      return row !== undefined && ownerMatches(a.owner.column, row[a.owner.column.index], a.owner.principal);
    }
    if (!a.visible) {
      a.visible = new Set();
      const ids = upserts.filter((id) => rows.has(id));
      for (let i = 0; i < ids.length; i += 500) {
        const q = this.visibleQuery(c, a, ids.slice(i, i + 500));
        for (const r of this.store.reader.all(q.sql, q.params)) a.visible.add(String(r[0]));
      }
    }
    return a.visible.has(ch.id);
  }

  /** The query answering which of `ids` (at most 500) an audience's rule and filter let it see. */
  private visibleQuery(c: Collection, a: Audience, ids: string[]): { sql: string; params: SqlValue[] } {
    const where = new Where();
    where.add(this.store.sql.list.idIn(ids.length), ids);
    where.addRule(a.rule);
    if (a.filterSql) where.add(a.filterSql, a.filterParams);
    return { sql: this.store.sql.records.selectAll(c, 'r."id"', where.sql()), params: where.params };
  }

  /** The rule and filter over a deleted row, as it was. */
  private oldRowHolds(c: Collection, a: Audience, old: Record<string, unknown>): boolean {
    try {
      const q = this.rowHoldsQuery(c, a, old);
      return this.store.reader.get(q.sql, q.params) !== undefined;
    } catch {
      return false; // e.g. a column dropped since: fail closed
    }
  }

  /** The query that answers a row when an audience's rule and filter hold for a deleted row `old`. */
  private rowHoldsQuery(c: Collection, a: Audience, old: Record<string, unknown>): { sql: string; params: SqlValue[] } {
    const columns = Object.keys(old);
    const where = new Where();
    where.addRule(a.rule);
    if (a.filterSql) where.add(a.filterSql, a.filterParams);
    const params: SqlValue[] = columns.map((k) => bindValue(old[k]));
    for (const p of where.params) params.push(p);
    return { sql: this.store.sql.records.rowHolds(columns, where.sql(), c), params };
  }

  /** Rows (codec columns) of records by id, without expired ones. */
  private rowsById(c: Collection, ids: string[]): Map<string, unknown[]> {
    const codec = this.store.codec(c);
    const out = new Map<string, unknown[]>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const where = new Where();
      where.add(this.store.sql.list.idIn(chunk.length), chunk);
      where.addTtl(c);
      for (const row of this.store.reader.all(this.store.sql.records.selectAll(c, codec.columns, where.sql()), where.params)) out.set(String(row[0]), row);
    }
    return out;
  }

  /**
   * A client's transport ended: `dropped` when it was closed for falling behind its send queue
   * (counted once, logged). Also called when a send fails.
   */
  ended(client: RealtimeClient, dropped: boolean): void {
    if (dropped && !client.dropCounted) {
      client.dropCounted = true;
      this.stats.droppedConsumers++;
      this.logger.warn(`realtime: dropped a slow consumer (${client.transport.kind} client ${client.id})`);
    }
    this.disconnect(client);
  }

  private lost(client: RealtimeClient): void {
    this.ended(client, client.transport.dropped);
  }
}
