/**
 * `GET /api/metrics`: the server's metrics in the Prometheus text format (docs/operations.md,
 * "Metrics"), for superusers and for the bearer token `SERVICE_METRICS_TOKEN`.
 *
 * One prom-client `Registry` per server (never prom-client's global one: an embedding program may
 * keep its own there). Almost every series is read at scrape time from a value the server keeps
 * anyway (the writer's queue and commit count, the caches' hit counts, the reader pool, the
 * realtime hub, the mail queue), so serving requests pays nothing for them. The two HTTP series
 * are counted per request by `HttpSeries`, in plain maps and arrays that a scrape turns into
 * samples: prom-client's own counter and histogram hash their label values on every call, a cost
 * the per-request budget of bench/README.md ("Metrics") does not leave room for.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestEnd } from '../http/pipeline.js';
import type { Req, Route } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import { parseCacheStats } from '../rules/parser.js';
import { hashPoolStats } from '../auth/passwords.js';
import type { RealtimeMetrics } from '../realtime/hub.js';
import type { ApiContext } from './context.js';

/** Every series name starts with this (docs/operations.md, "Metrics"). */
export const METRICS_PREFIX = 'svc_';

/**
 * Upper bounds of the request-latency histogram's buckets, seconds: from half a millisecond (a
 * cached read) to ten seconds (the list time budget's order).
 */
export const HTTP_BUCKETS_S: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Upper bounds of the group-commit latency histogram's buckets, seconds. */
export const COMMIT_BUCKETS_S: readonly number[] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The `route` label of a request no route matched (refused before matching: 503 over the in-flight cap). */
export const NO_ROUTE = '(none)';
/** Methods labelled as they are; any other method is labelled `other` (the label stays bounded). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The realtime hub as the metrics read it (`RealtimeHub.metrics`, src/realtime/hub.ts). */
export interface RealtimeCounters {
  metrics(): RealtimeMetrics;
}

/** The counts of one route pattern and method: statuses, and the latency histogram's buckets. */
interface Cell {
  route: string;
  method: string;
  /** requests by status code (index), 0 for a code outside 100–599 */
  statuses: Float64Array;
  /** requests per bucket (not cumulative), the last one past every bound (+Inf) */
  buckets: Float64Array;
  /** summed latency, milliseconds */
  sumMs: number;
  count: number;
}

/** One sample of a series, as prom-client's Registry formats it. */
interface Sample {
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * The per-request series `svc_http_requests_total{route,method,status}` and
 * `svc_http_request_duration_seconds{route,method}`: `observe` (a request observer of the
 * pipeline, `HttpServerOptions.requestObservers`) counts into a cell per route pattern and
 * method; `register` adds both series to a registry, read from the cells at each scrape.
 */
export class HttpSeries {
  private readonly cells = new Map<string, Map<string, Cell>>();
  private readonly boundsMs = HTTP_BUCKETS_S.map((s) => s * 1000);

  /** Counts one ended request (cheap, never throws: a pipeline observer). */
  readonly observe = (end: RequestEnd): void => {
    const route = end.route ?? NO_ROUTE;
    let byMethod = this.cells.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.cells.set(route, byMethod);
    }
    const method = METHODS.has(end.req.method) ? end.req.method : 'other';
    let cell = byMethod.get(method);
    if (cell === undefined) {
      cell = { route, method, statuses: new Float64Array(600), buckets: new Float64Array(this.boundsMs.length + 1), sumMs: 0, count: 0 };
      byMethod.set(method, cell);
    }
    const status = end.status;
    cell.statuses[status >= 100 && status < 600 ? status : 0]++;
    const ms = end.durationMs;
    const bounds = this.boundsMs;
    let k = 0;
    while (k < bounds.length && ms > bounds[k]) k++;
    cell.buckets[k]++;
    cell.sumMs += ms;
    cell.count++;
  };

  /** Registers both series on `registry` (prom-client formats the samples `get` answers). */
  register(registry: Registry, prefix: string): void {
    const requests = {
      name: `${prefix}http_requests_total`,
      help: 'HTTP requests answered, by route pattern, method and status code (499: the client went away first).',
      type: 'counter',
      get: () => ({ name: requests.name, help: requests.help, type: requests.type, values: this.requestSamples(), aggregator: 'sum' }),
      reset: () => undefined,
    };
    const durations = {
      name: `${prefix}http_request_duration_seconds`,
      help: 'Time from a request\'s arrival to the end of its reply, by route pattern and method.',
      type: 'histogram',
      get: () => ({ name: durations.name, help: durations.help, type: durations.type, values: this.durationSamples(durations.name), aggregator: 'sum' }),
      reset: () => undefined,
    };
    // prom-client's Registry takes any object with a name and get() (its own metric classes are such objects)
    registry.registerMetric(requests as never);
    registry.registerMetric(durations as never);
  }

  private *eachCell(): Iterable<Cell> {
    for (const byMethod of this.cells.values()) yield* byMethod.values();
  }

  private requestSamples(): Sample[] {
    const out: Sample[] = [];
    for (const c of this.eachCell()) {
      for (let s = 0; s < 600; s++) if (c.statuses[s] > 0) out.push({ labels: { route: c.route, method: c.method, status: s === 0 ? 'other' : String(s) }, value: c.statuses[s] });
    }
    return out;
  }

  private durationSamples(name: string): Sample[] {
    const out: Sample[] = [];
    for (const c of this.eachCell()) {
      const labels = { route: c.route, method: c.method };
      let cumulative = 0;
      for (let k = 0; k <= HTTP_BUCKETS_S.length; k++) {
        cumulative += c.buckets[k];
        out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: k < HTTP_BUCKETS_S.length ? String(HTTP_BUCKETS_S[k]) : '+Inf' }, value: cumulative });
      }
      out.push({ metricName: `${name}_sum`, labels, value: c.sumMs / 1000 });
      out.push({ metricName: `${name}_count`, labels, value: c.count });
    }
    return out;
  }
}

/**
 * The metrics of one server: its registry with every series of docs/operations.md ("Metrics"),
 * the HTTP request observer, and the writer's commit latencies (subscribed here, unsubscribed
 * by `close`).
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly http = new HttpSeries();
  /** Ends the writer's commit timing (close). */
  private readonly stopTiming: () => void;

  constructor(ctx: ApiContext, realtime: RealtimeCounters) {
    const registers = [this.registry];
    const p = METRICS_PREFIX;
    const { store, mailQueue } = ctx;
    const { caches } = store;
    collectDefaultMetrics({ register: this.registry, prefix: p });
    this.http.register(this.registry, p);

    // the writer: its queue, commits, and each group commit's latency (one observation a group)
    gauge(registers, `${p}writer_queue_jobs`, 'Write jobs queued or being committed, not yet answered.', [], (set) => set({}, store.writer.inFlight));
    counter(registers, `${p}writer_commits_total`, 'Group commits of the writer since start (several write jobs each).', [], (add) => add({}, store.writer.groupCommits));
    const commits = new Histogram({ name: `${p}writer_commit_duration_seconds`, help: 'Time from the oldest job of a commit group being queued to its commit being acknowledged on the main thread.', buckets: [...COMMIT_BUCKETS_S], registers });
    this.stopTiming = store.writer.commitLatency.subscribe((ms) => commits.observe(ms / 1000));

    // caches: hits and misses of each, since start
    const cacheStats: Record<string, { hits: number; misses: number }> = {
      records: caches.records, list_rows: caches.listRows, auth_records: caches.authRecords, pages: caches.pages,
      counts: caches.counts, walks: caches.walks, rule_parse: parseCacheStats,
    };
    counter(registers, `${p}cache_hits_total`, 'Cache look-ups that found a valid entry, by cache.', ['cache'], (add) => {
      for (const [cache, s] of Object.entries(cacheStats)) add({ cache }, s.hits);
    });
    counter(registers, `${p}cache_misses_total`, 'Cache look-ups that found no valid entry, by cache.', ['cache'], (add) => {
      for (const [cache, s] of Object.entries(cacheStats)) add({ cache }, s.misses);
    });

    // the reader pool (SQLite: reader threads; PostgreSQL: pool connections)
    const readPool = () => store.reader.poolStats();
    gauge(registers, `${p}reader_pool_size`, 'Reader threads (SQLite) or pool connections (PostgreSQL) the reader pool runs at most.', [], (set) => set({}, readPool().size));
    gauge(registers, `${p}reader_pool_busy_reads`, 'Reads running on the reader pool now.', [], (set) => set({}, readPool().busy));
    gauge(registers, `${p}reader_pool_waiting_reads`, 'Reads waiting for a reader thread or pool connection.', [], (set) => set({}, readPool().waiting));
    counter(registers, `${p}reader_pool_reads_total`, 'Reads the reader pool finished since start.', [], (add) => add({}, readPool().completed));
    counter(registers, `${p}reader_pool_busy_seconds_total`, 'Time the reader pool spent running reads since start, summed over its threads or connections.', [], (add) => add({}, readPool().busyMs / 1000));

    // the password-hashing threads (a piscina pool of their own, started on the first hash)
    gauge(registers, `${p}password_hash_threads`, 'Password-hashing threads running now (0 while none is needed).', [], (set) => set({}, hashPoolStats().threads));
    gauge(registers, `${p}password_hash_waiting`, 'Password hashes and verifications waiting for a hashing thread.', [], (set) => set({}, hashPoolStats().waiting));
    counter(registers, `${p}password_hashes_total`, 'Password hashes and verifications finished since start.', [], (add) => add({}, hashPoolStats().completed));
    counter(registers, `${p}password_hash_busy_seconds_total`, 'Time the hashing threads spent hashing and verifying since start, summed over threads.', [], (add) => add({}, hashPoolStats().busyMs / 1000));

    // realtime
    const rt = () => realtime.metrics();
    gauge(registers, `${p}realtime_connections`, 'Realtime connections open now, by transport.', ['transport'], (set) => {
      const m = rt();
      set({ transport: 'websocket' }, m.websocket);
      set({ transport: 'sse' }, m.sse);
    });
    gauge(registers, `${p}realtime_subscriptions`, 'Realtime subscriptions of the open connections.', [], (set) => set({}, rt().subscriptions));
    counter(registers, `${p}realtime_deliveries_total`, 'Realtime events sent to clients since start.', [], (add) => add({}, rt().delivered));
    counter(registers, `${p}realtime_dropped_consumers_total`, 'Realtime clients dropped for falling behind their send queue.', [], (add) => add({}, rt().droppedConsumers));
    counter(registers, `${p}realtime_refused_connections_total`, 'Realtime connections refused at the connection cap.', [], (add) => add({}, rt().refusedConnections));
    gauge(registers, `${p}realtime_delivery_seconds`, 'Server-side delivery time of the last (up to) 1,000 committed batches with subscribers, as quantiles (1: the slowest).', ['quantile'], (set) => {
      const d = rt().deliveryMs;
      if (!d) return;
      set({ quantile: '0.5' }, d.p50 / 1000);
      set({ quantile: '0.99' }, d.p99 / 1000);
      set({ quantile: '1' }, d.max / 1000);
    });

    // the durable mail queue (one small read of _mailQueue per scrape)
    gauge(registers, `${p}mail_queue_messages`, 'Messages in the durable mail queue: pending (waiting or being retried) and failed (given up).', ['state'], async (set) => {
      const c = await mailQueue.counts();
      set({ state: 'pending' }, c.pending);
      set({ state: 'failed' }, c.failed);
    });
  }

  /** Stops timing the writer's commits (the server's stop). */
  close(): void {
    this.stopTiming();
  }
}

type LabelSet = Record<string, string>;
/** Sets a series' values at a scrape; may read first (prom-client awaits an async collect). */
type Read = (put: (labels: LabelSet, v: number) => void) => void | Promise<void>;

/** A gauge whose values `read` sets at each scrape. */
function gauge(registers: Registry[], name: string, help: string, labelNames: string[], read: Read): void {
  new Gauge({
    name, help, labelNames, registers,
    async collect() {
      this.reset();
      await read((labels, v) => this.set(labels, v));
    },
  });
}

/** A counter whose totals `read` gives at each scrape (from a count the server keeps since start). */
function counter(registers: Registry[], name: string, help: string, labelNames: string[], read: Read): void {
  new Counter({
    name, help, labelNames, registers,
    async collect() {
      this.reset();
      await read((labels, v) => this.inc(labels, v));
    },
  });
}

/**
 * Whether `authorization` carries `token`: `Bearer <token>`, or the raw token as the PocketBase
 * SDK sends credentials (docs/api.md, "Authentication"). Compared in constant time, as SHA-256
 * digests (equal lengths whatever was sent).
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  if (!authorization) return false;
  const sent = /^bearer /i.test(authorization) ? authorization.slice(7).trim() : authorization.trim();
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(sent), digest(token));
}

/**
 * `GET /api/metrics` (docs/api.md, "Metrics"): the registry's exposition, `text/plain;
 * version=0.0.4`. Answers 401 without credentials (or with a wrong token), 403 for a caller who
 * is not a superuser, in the error envelope.
 */
export function metricsRoutes(ctx: ApiContext, metrics: ServiceMetrics): Route[] {
  const token = ctx.config.metricsToken;
  const allowed = async (req: Req): Promise<void> => {
    if (token !== undefined && bearerMatches(req.headers.authorization, token)) return;
    const p = await ctx.auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    if (!p.superuser) throw ApiError.forbidden('Only superusers or the metrics token can read metrics.');
  };
  return [{
    method: 'get',
    pattern: '/api/metrics',
    handler: async (req) => {
      await allowed(req);
      // prom-client 15 writes a NaN sample (the event-loop delay before its first sample) as `Nan`;
      // the format spells it `NaN`
      const body = (await metrics.registry.metrics()).replace(/ Nan$/gm, ' NaN');
      return { status: 200, body, contentType: metrics.registry.contentType, headers: [['Cache-Control', 'no-store']] };
    },
  }];
}
