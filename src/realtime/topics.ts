/**
 * Realtime topics and subscriptions (docs/realtime.md, "Protocol"; docs/api.md "Realtime"): topic
 * parsing, subscribing with the rule checks and the caps on filters (RealtimeLimits), the
 * subscriptions by collection that fan-out reads, and native topics, WebSocket subscriptions
 * whose events go out in one publish.
 */
import type { Collection, RuleName } from '../model/schema.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { SqlWriter, BackendKind } from '../store/backend.js';
import type { SchemaLookup } from '../store/rule-types.js';
import { compileFilter, filterCache, type BoundFilter } from '../rules/compiler.js';
import type { RuleBook, RuleCheck } from '../rules/access.js';
import { ApiError } from '../errors/api-error.js';
import type { HubStats, RealtimeClient } from './clients.js';

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

/** One subscription of a client. */
export interface Subscription {
  readonly client: RealtimeClient;
  /** the topic as the client named it (echoed in frames; the SSE event name) */
  readonly topic: string;
  readonly collectionId: string;
  /** one record's id, or null for the whole collection */
  readonly recordId: string | null;
  readonly filterSrc: string | null;
  /** compiled for `filterFor` (a superuser's filter skips relation targets' rules), with its literal values (compileFilter) */
  filter: BoundFilter | null;
  filterFor: { generation: number; superuser: boolean } | null;
  /** the native topic this subscription is a member of (see Topics: native fan-out), or null */
  native: string | null;
  /** what the membership was decided for: the schema generation and the client's authVersion */
  nativeGen: number;
  nativeAuth: number;
}

/** The members of one native topic: WebSocket subscriptions that every event reaches alike. */
export interface NativeGroup {
  key: string;
  topic: string;
  recordId: string | null;
  members: Set<Subscription>;
}

/** A parsed topic: `<collection>`, `<collection>/*` or `<collection>/<id>` (collection by name or id). */
export interface Topic {
  collection: Collection;
  recordId: string | null;
}

const RECORD_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TOPIC = 512;
const MAX_FILTER = 4096;

/** The subscriptions of every client, by collection and by native topic. */
/**
 * What Topics needs instead of the whole Store (src/context/store.ts; ARCHITECTURE.md, "Folders"):
 * the collection a topic names, the schema's generation and the schema the filter compiler reads
 * (the registry), the subscribe-time rule checks, the writer's capture of deleted rows (the rows a
 * delete event carries), and the backend kind (the filter's SQL dialect). Built by the composition
 * root (realtimeRepository, src/boot/repositories.ts).
 */
export interface TopicsRepository {
  registry: Pick<CollectionRegistry, 'find' | 'schemaGeneration'> & SchemaLookup;
  rules: Pick<RuleBook, 'check' | 'isPublic'>;
  writer: Pick<SqlWriter, 'captureDeletedRows'>;
  /** the backend's SQL dialect (StoreSql.kind) */
  kind: BackendKind;
}

export class Topics {
  /** subscriptions by collection id */
  readonly byCollection = new Map<string, Set<Subscription>>();
  /** summed filter length per client address (RealtimeLimits.maxAddressFilterBytes) */
  private filterBytesByAddress = new Map<string, number>();
  /** compiled filter shapes (compileFilter), shared by the subscriptions */
  private readonly filterShapes = filterCache(2000);

  constructor(private repo: TopicsRepository, private limits: RealtimeLimits, private stats: HubStats) {}

  /**
   * Parses a topic. @throws ApiError 400 for a malformed topic, 404 for an unknown collection.
   */
  parseTopic(topic: string): Topic {
    if (typeof topic !== 'string' || topic === '' || topic.length > MAX_TOPIC || /[\r\n]/.test(topic)) throw ApiError.badRequest('Invalid topic: expected "<collection>" or "<collection>/<id>".');
    const slash = topic.indexOf('/');
    const name = slash < 0 ? topic : topic.slice(0, slash);
    const rest = slash < 0 ? '*' : topic.slice(slash + 1);
    if (rest !== '*' && !RECORD_ID.test(rest)) throw ApiError.badRequest('Invalid topic: expected "<collection>" or "<collection>/<id>".');
    const collection = this.repo.registry.find(name);
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
    const check = this.repo.rules.check(collection, rule, p, null, 'GET', null, 'realtime');
    if (check.kind === 'deny') throw ApiError.forbidden('Only superusers can subscribe to this collection.');
    if (requireAuthUnlessPublic && !p && !this.repo.rules.isPublic(collection, rule)) throw ApiError.unauthorized('Subscribing to this collection requires authentication: send an auth frame first.');
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
    this.decideNative(sub, collection, check, this.repo.registry.schemaGeneration());
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
  publisher: ((topic: string, text: string) => void) | null = null;
  /** native topics by collection id, then by topic key */
  readonly nativeByCollection = new Map<string, Map<string, NativeGroup>>();

  /** Called by the WebSocket endpoint once the server can publish. */
  bindPublisher(publish: (topic: string, text: string) => void): void {
    this.publisher = publish;
  }

  /** Makes `sub` a member of its native topic (created on first use). */
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
  decideNative(sub: Subscription, c: Collection, check: RuleCheck, generation: number): boolean {
    const client = sub.client;
    if (!this.publisher || check.kind !== 'all' || sub.filterSrc || c.type === 'auth' || !client.transport.join || client.checking) return false;
    this.joinNative(sub);
    sub.nativeGen = generation;
    sub.nativeAuth = client.authVersion;
    return true;
  }

  /** Takes `sub` out of its native topic, if it is in one. */
  leaveNative(sub: Subscription): void {
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

  /** Forgets a subscription (unsubscribed, replaced, or its client gone). */
  dropSub(sub: Subscription): void {
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
      this.repo.writer.captureDeletedRows([...this.byCollection.keys()]);
    });
  }

  /** Compiles (or recompiles after a schema change) a subscription's filter for its caller. */
  compileFilter(sub: Subscription, c: Collection): BoundFilter {
    const generation = this.repo.registry.schemaGeneration();
    const superuser = !!sub.client.principal?.superuser;
    if (sub.filter && sub.filterFor && sub.filterFor.generation === generation && sub.filterFor.superuser === superuser) return sub.filter;
    // subscriptions whose filters differ only in string and number literals share one compiled shape
    const scope = `${superuser ? 's' : 'u'}:${generation}:${c.id}`;
    sub.filter = compileFilter(sub.filterSrc!, c, this.repo.registry, { mode: 'filter', alias: 'r', superuser, dialect: this.repo.kind }, this.filterShapes, scope);
    sub.filterFor = { generation, superuser };
    return sub.filter;
  }
}
