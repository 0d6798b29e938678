/**
 * The HTTP request pipeline both engines share: the route table and its matching, admission (the
 * in-flight cap, body limits, body deadlines, the buffered-bytes cap), the request lifecycle from
 * the head to the request-log record, the error envelope, streamed and event-stream replies.
 *
 * An engine adapter (server.ts for uWebSockets.js, node-server.ts for node:http) copies the
 * request into a `Req`, makes an `Exchange` for it (its response and socket primitives) and hands
 * both to `Pipeline.serve`. The pipeline never awaits before the engine's callback returns without
 * first asking the exchange to watch for an abort (`Exchange.watchAbort`), and it writes every
 * reply through `Exchange.write` (uWS corks it), so the uWS rules of server.ts hold on both sides.
 */
import { ApiError, knownApiError, toApiError } from '../errors/api-error.js';
import type { Logger } from '../log/logger.js';
import { Admission, OVERLOADED, TIMED_OUT, type AdmissionLimits, type BodyTicket } from './admission.js';
import { BODY_METHODS, SinkIntake, decodeParams, errorReply, openEventStream, tooLarge, untilIdle, type EventTransport } from './common.js';
import type { BodyStream, EventStreamBody, Handler, Reply, Req, Route, WsRoute } from './types.js';

export interface HttpServerOptions extends AdmissionLimits {
  host: string;
  port: number;
  logger: Logger;
  routes: Route[];
  /** called for non-ApiError exceptions (they answer 500) */
  onUnexpected: (err: unknown, req: Req) => void;
  /** WebSocket endpoints (registered before the routes, so `/*` never shadows them) */
  websockets?: WsRoute[];
  /**
   * Called once for every request that ended, after its request-log record (metrics and the
   * logs store; docs/operations.md): each must be cheap and must not throw.
   */
  requestObservers?: ReadonlyArray<(end: RequestEnd) => void>;
}

/** A request that ended, as `HttpServerOptions.requestObservers` see it. */
export interface RequestEnd {
  req: Req;
  /** the matched route's pattern (`/api/collections/:collection/records`); null when none matched */
  route: string | null;
  /** the status answered; 499 when the client went away first */
  status: number;
  /** milliseconds from arrival to the end of the reply, fractional */
  durationMs: number;
}

/** Headers every reply carries (the API answers any origin; docs/api.md). */
export const CORS: ReadonlyArray<readonly [string, string]> = [['Access-Control-Allow-Origin', '*']];

const ROUTE_METHOD: Record<Route['method'], string | null> = { get: 'GET', post: 'POST', patch: 'PATCH', put: 'PUT', del: 'DELETE', options: 'OPTIONS', any: null };

/** A route compiled for matching: its method (null: any), path segments and parameter count. */
export interface CompiledRoute {
  route: Route;
  /** upper-case method; null for `any` (GET routes also answer HEAD) */
  method: string | null;
  segments: string[];
  /** the pattern ends in `/*` (matches any rest) */
  wildcard: boolean;
  /** `:name` segments in the pattern */
  paramCount: number;
  /**
   * The precedence of a match (see RouteTable): one entry per segment, STATIC or PARAM, then 0
   * for the wildcard. It depends on the pattern only: a route that matches a path matches every
   * static segment exactly and every parameter with a non-empty one.
   */
  rank: number[];
}

/** Segment kinds by precedence (uWS: static, then parameter, then wildcard). */
const STATIC = 2;
const PARAM = 1;

/** Paths of up to this many segments are matched on a prepared candidate list (longer: every route). */
const INDEXED_SEGMENTS = 16;

/**
 * The routes in uWS's precedence: a static segment beats a parameter, a parameter beats the `/*`
 * wildcard (the first differing segment decides; a longer rank wins a tie; equal ranks: the
 * first route given). uWS matches natively over `routes`; an engine without a router calls `match`.
 *
 * `match` looks only at the routes that can fit the request: per method and per number of path
 * segments, the routes of that method (or `any`) with as many segments, and the wildcards with
 * no more, sorted best rank first (stable), so the first route that fits is the answer.
 */
export class RouteTable {
  readonly routes: CompiledRoute[];
  /** method → candidates by path segment count (0 … INDEXED_SEGMENTS) */
  private byMethod = new Map<string, CompiledRoute[][]>();
  /** the candidates of a method no route names (only `any` routes fit it) */
  private anyMethod: CompiledRoute[][];

  constructor(routes: Route[]) {
    this.routes = routes.map((route) => {
      const wildcard = route.pattern.endsWith('/*');
      const body = wildcard ? route.pattern.slice(0, -2) : route.pattern;
      const segments = body === '' ? [] : body.split('/').slice(1);
      const rank: number[] = segments.map((s) => (s.startsWith(':') ? PARAM : STATIC));
      if (wildcard) rank.push(0);
      return { route, method: ROUTE_METHOD[route.method], segments, wildcard, paramCount: segments.filter((s) => s.startsWith(':')).length, rank };
    });
    const methods = new Set<string>(['HEAD']);
    for (const c of this.routes) if (c.method !== null) methods.add(c.method);
    for (const m of methods) this.byMethod.set(m, this.candidates(m));
    this.anyMethod = this.candidates(null);
  }

  /** The candidate lists of a method (null: one no route names), best rank first. */
  private candidates(method: string | null): CompiledRoute[][] {
    const of = this.routes.filter((c) => c.method === null || c.method === method || (c.method === 'GET' && method === 'HEAD'));
    const lists: CompiledRoute[][] = [];
    for (let n = 0; n <= INDEXED_SEGMENTS; n++) {
      const fit = of.filter((c) => (c.wildcard ? c.segments.length <= n : c.segments.length === n));
      // Array.prototype.sort is stable: routes of equal rank keep their order
      lists.push(fit.sort((a, b) => (better(a.rank, b.rank) ? -1 : better(b.rank, a.rank) ? 1 : 0)));
    }
    return lists;
  }

  /**
   * The best route for a method and path, and its raw parameters; undefined when none matches.
   * The path's segments are what follows its first '/', split at each further '/' (as
   * `path.split('/').slice(1)`), read in place.
   */
  match(method: string, path: string): { route: Route; params: string[] } | undefined {
    let n = 0;
    for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === SLASH) n++;
    const from = path.indexOf('/') + 1;
    if (n > INDEXED_SEGMENTS) return this.scan(method, path, from, n);
    const list = (this.byMethod.get(method) ?? this.anyMethod)[n];
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      if (fits(c, path, from)) return { route: c.route, params: paramsOf(c, path, from) };
    }
    return undefined;
  }

  /** `match` over every route (paths longer than the prepared lists), `n` segments from `from`. */
  private scan(method: string, path: string, from: number, n: number): { route: Route; params: string[] } | undefined {
    let best: CompiledRoute | undefined;
    for (const c of this.routes) {
      if (c.method !== null && c.method !== method && !(c.method === 'GET' && method === 'HEAD')) continue;
      if (c.wildcard ? n < c.segments.length : n !== c.segments.length) continue;
      if (fits(c, path, from) && (!best || better(c.rank, best.rank))) best = c;
    }
    return best && { route: best.route, params: paramsOf(best, path, from) };
  }
}

const SLASH = 0x2f;

/** Where the path segment starting at `at` ends (its '/' or the end of the path). */
function segmentEnd(path: string, at: number): number {
  const end = path.indexOf('/', at);
  return end < 0 ? path.length : end;
}

/**
 * True when the path's segments (from `from`) fit the route's: each static one equal, each
 * parameter non-empty. The caller has checked the segment count.
 */
function fits(c: CompiledRoute, path: string, from: number): boolean {
  const segments = c.segments;
  let at = from;
  for (let i = 0; i < segments.length; i++) {
    const end = segmentEnd(path, at);
    if (c.rank[i] === PARAM ? end === at : end - at !== segments[i].length || !path.startsWith(segments[i], at)) return false;
    at = end + 1;
  }
  return true;
}

/** The route's parameters as they appear in the path (segments from `from`). */
function paramsOf(c: CompiledRoute, path: string, from: number): string[] {
  const params: string[] = [];
  if (c.paramCount === 0) return params;
  let at = from;
  for (let i = 0; i < c.segments.length; i++) {
    const end = segmentEnd(path, at);
    if (c.rank[i] === PARAM) params.push(path.slice(at, end));
    at = end + 1;
  }
  return params;
}

/** True when rank `a` is more specific than `b` (first differing segment decides; longer wins a tie). */
function better(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] > b[i];
  return a.length > b.length;
}

/** How one chunk of a streamed reply went: written, the last one written, or the client left. */
export type ChunkResult = 'more' | 'done' | 'aborted';

/**
 * One request as an engine serves it: the pipeline's state for it (the fields: the pipeline sets
 * them; an engine reads them, and sets only `watching` and `gone` as their docs say) and the
 * engine's primitives (the abstract methods, called by the pipeline only, never after the client
 * went away unless they say so).
 */
export abstract class Exchange {
  /** answered (or given up on: aborted, cut off) */
  done = false;
  /** the client went away */
  aborted = false;
  /** the engine's abort watch is registered (see `watchAbort`) */
  watching = false;
  /** the reply about to be written closes the connection (a body cut off: it is never read) */
  closing = false;
  /** the body being received: its admission ticket */
  ticket: BodyTicket | null = null;
  /** a body handed to the route's sink (Route.bodySink) */
  intake: SinkIntake | null = null;
  /** a buffered body: its chunks so far, and its limit in bytes */
  chunks: Buffer[] | null = null;
  limit = 0;
  /** the route's handler, run once a buffered body arrived */
  handler: Handler | null = null;
  /** the matched route's pattern, for the request observers */
  route: string | null = null;
  /**
   * called when the client goes away after the reply began: ends an event stream; an engine
   * waiting on backpressure in `sendChunk` sets it to resolve its wait as 'aborted'
   */
  gone: (() => void) | null = null;

  /**
   * @param req the request, copied out of the engine already
   * @param start `performance.now()` at its arrival, milliseconds (0 when `Pipeline.timed` is false)
   */
  constructor(readonly req: Req, readonly start: number) {}

  /**
   * Makes the engine report the client going away (`Pipeline.clientGone`). Called before the
   * first asynchronous step, possibly more than once (the engine registers once: `watching`).
   */
  abstract watchAbort(): void;
  /** The Content-Length as sent, as a number; -1 when absent. */
  abstract declaredLength(): number;
  /** The body will not be read (a bodiless method, or refused on its declared length). */
  abstract skipBody(): void;
  /** Starts reading the body: the engine calls `Pipeline.data` per chunk, then `Pipeline.end`. */
  abstract readBody(p: Pipeline): void;
  /** Runs `writes` (status, headers, end) as one batch (uWS: corked). */
  abstract write(writes: () => void): void;
  /** The status (not called for 200, each engine's default). */
  abstract status(code: number): void;
  /** One header, in order; a name may repeat. */
  abstract header(name: string, value: string): void;
  /** Ends the reply with `body` (its Content-Length is the engine's to write). */
  abstract end(body: string | Buffer): void;
  /** Ends a reply that has no body (HEAD, 204, 304). */
  abstract endWithoutBody(): void;
  /** After a reply that cut the body off (`closing`): makes sure the connection closes. */
  abstract afterCutOff(): void;
  /** Ends the head of a streamed reply of `size` bytes (inside `write`). */
  abstract beginStream(size: number): void;
  /**
   * Sends one chunk of a streamed reply of `total` bytes, waiting out backpressure: 'done' once the
   * last byte was written, 'aborted' when the client went away while waiting (see `gone`).
   */
  abstract sendChunk(chunk: Buffer, total: number): Promise<ChunkResult>;
  /** Ends the head of an event stream and sends it (inside `write`). */
  abstract beginEvents(): void;
  /** The engine's side of an open event stream, dropped past `maxQueued` bytes unsent. */
  abstract eventTransport(maxQueued: number): EventTransport;
  /** Closes the connection at once (a streamed reply that failed or ended short). */
  abstract close(): void;
}

/**
 * The engine-independent HTTP server: one per engine instance. It counts the requests in flight
 * (a drain waits for them), admits bodies, runs handlers, answers in the error envelope and writes
 * the request log.
 */
export class Pipeline {
  readonly table: RouteTable;
  /** true once a drain began: replies say `Connection: close` */
  private draining = false;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private admission: Admission;

  /**
   * @param capRequests refuse requests past `maxInFlight` with 503 (uWS); node:http caps its
   *   connections instead (node-server.ts)
   */
  /** Whether a request's arrival time is needed (request log or observers): engines read the clock only then. */
  readonly timed: boolean;
  private readonly observers: ReadonlyArray<(end: RequestEnd) => void>;

  constructor(readonly opts: HttpServerOptions, private capRequests: boolean) {
    this.admission = new Admission(opts);
    this.table = new RouteTable(opts.routes);
    this.observers = opts.requestObservers ?? [];
    this.timed = opts.logger.requestsEnabled || this.observers.length > 0;
  }

  /**
   * A request ended with `status`: its request-log record, then the observers. The clock is read
   * once here, and not at all when neither wants it: a read costs about as much as an observer's
   * whole work (bench/README.md, "Metrics").
   */
  private ended(x: Exchange, status: number): void {
    if (!this.timed) return;
    const req = x.req;
    const durationMs = performance.now() - x.start;
    this.opts.logger.request(req.method, req.path, status, Math.floor(durationMs));
    if (this.observers.length === 0) return;
    const end: RequestEnd = { req, route: x.route, status, durationMs };
    for (const observe of this.observers) observe(end);
  }

  /** Stops admitting bodies and resolves when no request is in flight, or after `timeoutMs`. */
  drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    this.admission.close();
    return untilIdle(this.inFlight, this.idleWaiters, timeoutMs);
  }

  /** A request arrived (counted in flight until it is answered or aborted). */
  arrive(): void {
    this.inFlight++;
  }

  /**
   * Serves a request the engine copied into `x.req`, once `arrive` counted it: `route` is the
   * matched route (undefined: 404), `rawParam(i)` reads its parameter i as received (called
   * during this call only).
   */
  serve(x: Exchange, route: Route | undefined, paramCount: number, rawParam: (i: number) => string): void {
    if (this.capRequests && this.inFlight > this.opts.maxInFlight) return this.finish(x, errorReply(OVERLOADED()));
    if (!route) return this.finish(x, errorReply(ApiError.notFound()));
    x.route = route.pattern;
    const req = x.req;
    const bad = decodeParams(paramCount, rawParam, req.params);
    if (bad) return this.finish(x, bad);
    if (!BODY_METHODS.has(req.method)) {
      x.skipBody();
      this.dispatch(x, route.handler);
      return;
    }
    const limit = route.bodyLimit ?? this.admission.bodyLimit(req.headers.contentType, route.multipart?.(req) ?? false);
    const declared = x.declaredLength();
    if (declared > limit) {
      x.watchAbort();
      this.finish(x, tooLarge(limit));
      x.skipBody();
      return;
    }
    x.limit = limit;
    if (route.bodySink) {
      // Bytes given to a sink do not count against the buffered-bodies cap: they land in memory
      // the route reserved already.
      const intake = (x.intake = new SinkIntake((r) => this.finish(x, r), (err) => this.fail(err, req), () => x.done || x.aborted));
      x.ticket = this.admission.start(() => {
        if (x.done || x.aborted) return;
        intake.abort();
        this.cutOff(x, errorReply(TIMED_OUT()));
      });
      x.watchAbort();
      intake.open(route.bodySink, req, declared);
    } else {
      x.chunks = [];
      x.handler = route.handler;
      // the deadline passed: answer 408 and close the connection (the rest of the body is not read)
      x.ticket = this.admission.start(() => {
        if (!(x.done || x.aborted)) this.cutOff(x, errorReply(TIMED_OUT()));
      });
      x.watchAbort();
    }
    x.readBody(this);
  }

  /**
   * A chunk of the body arrived (from `Exchange.readBody`): `chunk` is valid during this call
   * only when `copy` (uWS neuters it after its callback), else it may be kept as is.
   */
  data(x: Exchange, chunk: Uint8Array, copy: boolean): void {
    if (x.done || x.aborted) return;
    const n = chunk.byteLength;
    const ticket = x.ticket!;
    if (x.intake) {
      if (x.intake.received + n > x.limit) {
        this.admission.done(ticket);
        x.intake.abort();
        this.finish(x, tooLarge(x.limit));
        return;
      }
      x.intake.data(chunk, () => (copy ? Buffer.from(chunk) : (chunk as Buffer)));
      return;
    }
    if (ticket.bytes + n > x.limit) {
      this.admission.done(ticket);
      this.finish(x, tooLarge(x.limit));
      return;
    }
    if (!this.admission.take(ticket, n)) {
      this.admission.done(ticket);
      this.cutOff(x, errorReply(OVERLOADED()));
      return;
    }
    x.chunks!.push(copy ? Buffer.from(chunk) : (chunk as Buffer));
  }

  /** The whole body arrived (from `Exchange.readBody`). */
  end(x: Exchange): void {
    this.admission.done(x.ticket!);
    if (x.done || x.aborted) return;
    if (x.intake) return x.intake.end();
    const chunks = x.chunks!;
    x.req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    x.chunks = null;
    this.dispatch(x, x.handler!);
  }

  /**
   * The client went away (the engine's abort watch; node:http also reports the close that follows
   * every response): the body's admission ends, a sink is aborted, a stream is woken, and a request
   * not answered yet is logged as 499.
   */
  clientGone(x: Exchange): void {
    x.aborted = true;
    if (x.ticket) this.admission.done(x.ticket);
    x.intake?.abort();
    x.gone?.();
    if (!x.done) {
      x.done = true;
      this.ended(x, 499);
      this.release();
    }
  }

  /**
   * Runs the handler. A synchronous reply is written at once (uWS cannot abort inside its own
   * callback); before waiting on a promise the abort watch is registered, still inside the
   * engine's callback as uWS requires.
   */
  private dispatch(x: Exchange, handler: Handler): void {
    let out: Reply | Promise<Reply>;
    try {
      out = handler(x.req);
    } catch (err) {
      this.finish(x, this.fail(err, x.req));
      return;
    }
    if (out instanceof Promise) {
      x.watchAbort();
      out.then((r) => this.finish(x, r), (err) => this.finish(x, this.fail(err, x.req)));
    } else this.finish(x, out);
  }

  /**
   * The reply of a thrown error; exceptions other than an ApiError or a typed storage error
   * (knownApiError) are reported (they answer 500).
   */
  private fail(err: unknown, req: Req): Reply {
    const known = knownApiError(err);
    if (known === null) this.opts.onUnexpected(err, req);
    return errorReply(known ?? toApiError(err));
  }

  /** Answers `reply` and closes the connection (a body that is cut off is never read to its end). */
  private cutOff(x: Exchange, reply: Reply): void {
    x.closing = true;
    this.finish(x, reply);
    x.afterCutOff();
  }

  /** Answers the request, once; later calls (and calls after an abort) are ignored. */
  private finish(x: Exchange, reply: Reply): void {
    if (x.done || x.aborted) return;
    x.done = true;
    const req = x.req;
    const bodiless = reply.status === 204 || reply.status === 304 || req.method === 'HEAD';
    if (reply.events && !bodiless) {
      this.openEvents(x, reply, reply.events);
      return;
    }
    const stream = reply.stream && reply.stream.size > 0 && !bodiless ? reply.stream : null;
    // The request record is written before the reply leaves (stderr is a synchronous pipe on
    // Linux), so a client never holds an answer whose record is not in the log yet.
    if (!stream) this.ended(x, reply.status);
    x.write(() => {
      this.head(x, reply);
      if (!x.closing && this.draining) x.header('Connection', 'close');
      // A string body is non-empty exactly when its UTF-8 length is; the byte count itself is
      // needed only for HEAD (the engine measures what it sends).
      const nonEmpty = reply.stream ? reply.stream.size > 0 : reply.body.length > 0;
      if (nonEmpty) x.header('Content-Type', reply.contentType ?? 'application/json');
      // HEAD reports the length of the body it leaves out, as a header (uWS: endWithoutBody(length)
      // leaves the response unfinished in uWS 20.30 and uWS then aborts the process).
      if (req.method === 'HEAD' && nonEmpty && reply.status !== 304) x.header('Content-Length', String(reply.stream ? reply.stream.size : Buffer.byteLength(reply.body)));
      if (bodiless) x.endWithoutBody();
      else if (stream) x.beginStream(stream.size);
      else x.end(reply.body);
    });
    if (stream) {
      void this.pump(x, reply.status, stream);
      return;
    }
    this.release();
  }

  /** The status and the headers every reply starts with: CORS, then the reply's own. */
  private head(x: Exchange, reply: Reply): void {
    if (reply.status !== 200) x.status(reply.status);
    for (const [k, v] of CORS) x.header(k, v);
    if (reply.headers) for (const [k, v] of reply.headers) x.header(k, v);
  }

  /**
   * Sends a streamed body after its head, chunk by chunk with backpressure; the iterator is closed
   * on abort. A body that ends short of its announced size (or fails) closes the connection. Logs
   * and releases the request at the end.
   */
  private async pump(x: Exchange, status: number, stream: BodyStream): Promise<void> {
    x.watchAbort();
    let it: AsyncIterator<Buffer> | null = null;
    let finished = false;
    try {
      it = stream.open()[Symbol.asyncIterator]();
      while (!x.aborted) {
        const next = await it.next();
        if (x.aborted || next.done) break;
        if ((await x.sendChunk(next.value, stream.size)) === 'done') {
          finished = true;
          break;
        }
      }
    } catch (err) {
      this.opts.onUnexpected(err, x.req);
    } finally {
      if (!finished && !x.aborted) x.close();
      await Promise.resolve(it?.return?.()).catch(() => undefined);
      this.ended(x, x.aborted && !finished ? 499 : status);
      this.release();
    }
  }

  /**
   * An event stream (Reply.events): the head now, then the sink (common.ts openEventStream) on the
   * engine's transport. The stream is not a request in flight; it is logged when it ends.
   */
  private openEvents(x: Exchange, reply: Reply, events: EventStreamBody): void {
    const req = x.req;
    x.watchAbort();
    x.write(() => {
      this.head(x, reply);
      x.header('Content-Type', reply.contentType ?? 'text/event-stream');
      x.header('Cache-Control', 'no-cache');
      x.header('X-Accel-Buffering', 'no');
      x.beginEvents();
    });
    this.release(); // a long-lived stream is not a request in flight
    const transport = x.eventTransport(events.maxQueuedBytes ?? 1024 * 1024);
    x.gone = openEventStream(events, transport, () => this.ended(x, reply.status), (err) => this.opts.onUnexpected(err, req)).gone;
  }

  private release(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
