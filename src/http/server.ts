/**
 * The HTTP front end: uWebSockets.js on the main thread. This folder is the only one that
 * imports uWS; handlers see a plain `Req` snapshot and return a `Reply`.
 *
 * uWS lifetime rules this file follows (see ../shared/STYLE.md):
 * - HttpRequest is valid only during the synchronous handler: everything is copied first.
 * - onAborted is registered before any asynchronous step; after it fires `res` is not touched.
 * - Writes after an await happen inside res.cork(); status, then headers, then end, exactly once.
 * - Body chunks are copied (uWS neuters the ArrayBuffer after the callback); the size limit is
 *   enforced on Content-Length and on bytes received.
 * - No exception escapes into uWS.
 * - Large bodies out (Reply.stream): tryEnd + onWritable under backpressure; the source is closed
 *   on abort. HEAD, 204 and 304 end with endWithoutBody (HEAD reports Content-Length as a header).
 */
import type * as UWS from '@trufflesuite/uws-js-unofficial';
import { ApiError, toApiError } from '../errors/api-error.js';
import type { Logger } from '../log/logger.js';
import { statusLine } from './status-text.js';
import { WS_SLOW_CONSUMER, type BodyStream, type EventStreamBody, type Handler, type Reply, type Req, type RequestHeaders, type Route, type WsConnection, type WsRoute } from './types.js';
import { Admission, OVERLOADED, TIMED_OUT, type AdmissionLimits } from './admission.js';
import { BODY_METHODS, SinkIntake, decodeParams, elapsedMs, errorReply, openEventStream, tooLarge, untilIdle, type EventTransport } from './common.js';

export interface HttpServerOptions extends AdmissionLimits {
  host: string;
  port: number;
  logger: Logger;
  routes: Route[];
  /** called for non-ApiError exceptions (they answer 500) */
  onUnexpected: (err: unknown, req: Req) => void;
  /** WebSocket endpoints (registered before the routes, so `/*` never shadows them) */
  websockets?: WsRoute[];
}

/** uWS's ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT on the listen socket. */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

const FIXED_METHOD: Partial<Record<Route['method'], string>> = { post: 'POST', patch: 'PATCH', put: 'PUT', del: 'DELETE', options: 'OPTIONS' };
const CORS: Array<[string, string]> = [['Access-Control-Allow-Origin', '*']];

export class HttpServer {
  private app: UWS.TemplatedApp;
  private listenSocket: UWS.us_listen_socket | null = null;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private draining = false;
  private admission: Admission;

  /** @param uWS the native module chosen by uws-loader.ts */
  constructor(private opts: HttpServerOptions, private uWS: typeof UWS) {
    this.admission = new Admission(opts);
    this.app = uWS.App();
    for (const w of opts.websockets ?? []) this.registerWs(w);
    for (const r of opts.routes) this.register(r);
  }

  /**
   * Starts listening, alone on the address; resolves with the bound port (port 0 picks a free one).
   * uWS opens its listen socket with SO_REUSEPORT unless told LIBUS_LISTEN_EXCLUSIVE_PORT: a second
   * server on the same port would then start without error and the kernel would spread requests
   * over both. Both uWS packages (uws-loader.ts) take the option as `listen(host, port, options, cb)`.
   * @throws Error `cannot listen on HOST:PORT (address in use or not available)`: uWS reports no
   *   reason, so a taken address and one this host cannot bind read alike
   */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      const listen = this.app.listen as unknown as (host: string, port: number, options: number, cb: (sock: UWS.us_listen_socket | false) => void) => void;
      listen.call(this.app, this.opts.host, this.opts.port, LIBUS_LISTEN_EXCLUSIVE_PORT, (sock) => {
        if (!sock) return reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port} (address in use or not available)`));
        this.listenSocket = sock;
        resolve(this.uWS.us_socket_local_port(sock as unknown as UWS.us_socket));
      });
    });
  }

  /**
   * Stops accepting connections, resolves when no request is in flight, then closes every
   * connection left (idle keep-alive ones too: an embedding program goes on running after stop,
   * and a kept connection must not reach routes whose database is closed).
   */
  async drain(timeoutMs = 10_000): Promise<void> {
    this.draining = true;
    this.admission.close();
    if (this.listenSocket) {
      this.uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    await untilIdle(this.inFlight, this.idleWaiters, timeoutMs);
    (this.app as { close?: () => unknown }).close?.();
  }

  /** A WebSocket endpoint on uWS's native WebSockets (see WsRoute). */
  private registerWs(route: WsRoute): void {
    const max = route.maxBackpressure ?? 1024 * 1024;
    type Data = { conn: WsConnection | null; req: Req; closed: () => void };
    this.app.ws<Data>(route.pattern, {
      // uWS's own limit above ours: the connection is dropped by `send` at `max`, and its close
      // frame still fits behind the queued messages
      maxBackpressure: max * 2 + 1024,
      closeOnBackpressureLimit: 0,
      idleTimeout: 120,
      maxPayloadLength: 64 * 1024,
      upgrade: (res, ureq, context) => {
        const req = new Snapshot('GET', ureq.getUrl(), ureq.getQuery() ?? '', readHeaders(ureq, false, false), null, res);
        const key = ureq.getHeader('sec-websocket-key');
        const protocol = ureq.getHeader('sec-websocket-protocol');
        const extensions = ureq.getHeader('sec-websocket-extensions');
        const refused = route.upgrade?.(req);
        if (refused) {
          res.cork(() => {
            res.writeStatus(statusLine(refused.status));
            for (const [k, v] of CORS) res.writeHeader(k, v);
            res.writeHeader('Content-Type', 'application/json');
            res.end(refused.body as string);
          });
          this.opts.logger.request('GET', req.path, refused.status, 0);
          return;
        }
        void req.remoteAddress; // read while the request is valid
        res.upgrade<Data>({ conn: null, req, closed: () => undefined }, key, protocol, extensions, context);
      },
      open: (ws) => {
        const state = ws.getUserData();
        let closed = false;
        let dropped = false;
        const conn: WsConnection = {
          data: {},
          get dropped() {
            return dropped;
          },
          send: (text) => {
            if (!conn.checkBackpressure()) return false;
            ws.send(text, false);
            return true;
          },
          checkBackpressure: () => {
            if (closed) return false;
            if (ws.getBufferedAmount() <= max) return true;
            closed = true;
            dropped = true;
            ws.end(WS_SLOW_CONSUMER, 'slow consumer');
            return false;
          },
          subscribe: (topic) => {
            if (!closed) ws.subscribe(topic);
          },
          unsubscribe: (topic) => {
            if (!closed) ws.unsubscribe(topic);
          },
          close: (code = 1000, reason = '') => {
            if (closed) return;
            closed = true;
            ws.end(code, reason);
          },
          bufferedAmount: () => (closed ? 0 : ws.getBufferedAmount()),
        };
        state.conn = conn;
        // uWS's socket is gone once its close handler runs: no call may reach it after that
        state.closed = () => {
          closed = true;
        };
        route.open(conn, state.req);
      },
      message: (ws, message, isBinary) => {
        const conn = ws.getUserData().conn;
        if (conn) route.message(conn, Buffer.from(message).toString('utf8'), isBinary);
      },
      close: (ws, code) => {
        const state = ws.getUserData();
        if (state.conn) {
          state.closed();
          route.close(state.conn, code);
        }
      },
    });
    route.bind?.({ publish: (topic, text) => void this.app.publish(topic, text, false) });
  }

  private register(route: Route): void {
    const paramCount = (route.pattern.match(/\/:/g) ?? []).length;
    const bind = (method: string | null) => (res: UWS.HttpResponse, req: UWS.HttpRequest) =>
      this.handle(res, req, route, method ?? req.getCaseSensitiveMethod().toUpperCase(), paramCount);
    if (route.method === 'get') {
      // A HEAD handler of its own lets the GET handler know its method without asking uWS.
      this.app.get(route.pattern, bind('GET'));
      this.app.head(route.pattern, bind('HEAD'));
      return;
    }
    this.app[route.method](route.pattern, bind(FIXED_METHOD[route.method] ?? null));
  }

  /**
   * One request. What is read from uWS is what the route needs: every uWS call costs measurable
   * time on the hot path (2 µs to 10 µs each for the remote address, parameters, headers), so the
   * remote address and the body-related headers are copied only for methods with a body, and the
   * conditional and range headers only for routes that ask (`route.fileHeaders`).
   */
  private handle(res: UWS.HttpResponse, ureq: UWS.HttpRequest, route: Route, method: string, paramCount: number): void {
    // the clock is read only for the request log (its duration_ms)
    const start = this.opts.logger.requestsEnabled ? process.hrtime.bigint() : 0n;
    const path = ureq.getUrl();
    const hasBody = BODY_METHODS.has(method);
    const state = { aborted: false, done: false };
    this.inFlight++;
    const headers = readHeaders(ureq, hasBody || !!route.clientHeaders, !!route.fileHeaders);
    if (route.extraHeaders) {
      headers.extra = {};
      for (const name of route.extraHeaders) headers.extra[name] = ureq.getHeader(name);
    }
    const req = new Snapshot(method, path, ureq.getQuery() ?? '', headers, hasBody ? res.getRemoteAddressAsText().slice(0) : null, res);
    const finish = (reply: Reply) => this.finish(res, req, reply, state, start);
    if (this.inFlight > this.opts.maxInFlight) {
      finish(errorReply(OVERLOADED()));
      return;
    }
    const bad = decodeParams(paramCount, (i) => ureq.getParameter(i), req.params);
    if (bad) {
      finish(bad);
      return;
    }
    const watchAbort = (onAbort?: () => void) =>
      res.onAborted(() => {
        state.aborted = true;
        onAbort?.();
        if (!state.done) {
          state.done = true;
          this.opts.logger.request(method, path, 499, elapsedMs(start));
          this.release();
        }
      });
    if (!hasBody) {
      this.dispatch(route.handler, req, finish, watchAbort);
      return;
    }
    const limit = route.bodyLimit ?? this.admission.bodyLimit(req.headers.contentType, route.multipart?.(req) ?? false);
    const lengthHeader = ureq.getHeader('content-length');
    const declared = Number(lengthHeader || 0);
    if (declared > limit) {
      watchAbort();
      finish(tooLarge(limit));
      return;
    }
    if (route.bodySink) {
      this.stream(res, req, route.bodySink, lengthHeader === '' ? -1 : declared, limit, state, finish, watchAbort, start);
      return;
    }
    const chunks: Buffer[] = [];
    const ticket = this.admission.start(() => {
      // the deadline passed: answer 408 and close the connection (the rest of the body is not read)
      if (state.done || state.aborted) return;
      state.done = true;
      this.closeWith(res, req, errorReply(TIMED_OUT()), start);
    });
    watchAbort(() => this.admission.done(ticket));
    res.onData((ab, isLast) => {
      if (state.done) return;
      const n = ab.byteLength;
      if (ticket.bytes + n > limit) {
        this.admission.done(ticket);
        finish(tooLarge(limit));
        return;
      }
      if (!this.admission.take(ticket, n)) {
        this.admission.done(ticket);
        state.done = true;
        this.closeWith(res, req, errorReply(OVERLOADED()), start);
        return;
      }
      chunks.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        this.admission.done(ticket);
        req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        this.dispatch(route.handler, req, finish, null);
      }
    });
  }

  /**
   * A body handed to a route's sink as it arrives (Route.bodySink, common.ts SinkIntake): each
   * chunk is passed on during uWS's callback, with no copy here. Bytes given to a sink do not
   * count against the buffered-bodies cap: they land in memory the route reserved already.
   */
  private stream(
    res: UWS.HttpResponse, req: Req, open: NonNullable<Route['bodySink']>, declared: number, limit: number,
    state: { aborted: boolean; done: boolean }, finish: (r: Reply) => void, watchAbort: (onAbort?: () => void) => void, start: bigint,
  ): void {
    const intake = new SinkIntake(finish, (err) => this.fail(err, req), () => state.done || state.aborted);
    const ticket = this.admission.start(() => {
      if (state.done || state.aborted) return;
      intake.abort();
      state.done = true;
      this.closeWith(res, req, errorReply(TIMED_OUT()), start);
    });
    watchAbort(() => {
      this.admission.done(ticket);
      intake.abort();
    });
    intake.open(open, req, declared);
    res.onData((ab, isLast) => {
      if (state.done || state.aborted) return;
      if (intake.received + ab.byteLength > limit) {
        this.admission.done(ticket);
        intake.abort();
        finish(tooLarge(limit));
        return;
      }
      // uWS neuters `ab` after this callback: the sink copies what it keeps during the call
      intake.data(new Uint8Array(ab), () => Buffer.from(ab.slice(0)));
      if (isLast) {
        this.admission.done(ticket);
        intake.end();
      }
    });
  }

  /** Answers `reply` and closes the connection (a body that is cut off is never read to its end). */
  private closeWith(res: UWS.HttpResponse, req: Req, reply: Reply, start: bigint): void {
    res.cork(() => {
      if (reply.status !== 200) res.writeStatus(statusLine(reply.status)); // uWS writes 200 OK by default
      for (const [k, v] of CORS) res.writeHeader(k, v);
      res.writeHeader('Content-Type', 'application/json');
      res.end(reply.body, true);
    });
    this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start));
    this.release();
  }

  /**
   * Runs the handler. A synchronous reply is written at once (no abort watch needed: uWS cannot
   * abort inside its own callback); before waiting on a promise the abort watch is registered,
   * still inside the uWS callback as uWS requires.
   */
  private dispatch(handler: Handler, req: Req, finish: (r: Reply) => void, watchAbort: (() => void) | null): void {
    let out: Reply | Promise<Reply>;
    try {
      out = handler(req);
    } catch (err) {
      finish(this.fail(err, req));
      return;
    }
    if (out instanceof Promise) {
      watchAbort?.();
      out.then(finish, (err) => finish(this.fail(err, req)));
    } else finish(out);
  }

  private fail(err: unknown, req: Req): Reply {
    const api = toApiError(err);
    if (!(err instanceof ApiError)) this.opts.onUnexpected(err, req);
    return errorReply(api);
  }

  private finish(res: UWS.HttpResponse, req: Req, reply: Reply, state: { aborted: boolean; done: boolean }, start: bigint): void {
    if (state.done || state.aborted) return;
    state.done = true;
    const bodiless = reply.status === 204 || reply.status === 304 || req.method === 'HEAD';
    if (reply.events && !bodiless) {
      this.openEvents(res, req, reply, reply.events, start);
      return;
    }
    const stream = reply.stream && reply.stream.size > 0 && !bodiless ? reply.stream : null;
    // The request record is written before the reply leaves (stderr is a synchronous pipe on
    // Linux), so a client never holds an answer whose record is not in the log yet.
    if (!stream) this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start));
    res.cork(() => {
      if (reply.status !== 200) res.writeStatus(statusLine(reply.status)); // uWS writes 200 OK by default
      for (const [k, v] of CORS) res.writeHeader(k, v);
      if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
      if (this.draining) res.writeHeader('Connection', 'close');
      // A string body is non-empty exactly when its UTF-8 length is; the byte count itself is
      // needed only for HEAD (uWS measures what it sends).
      const nonEmpty = reply.stream ? reply.stream.size > 0 : reply.body.length > 0;
      if (nonEmpty) res.writeHeader('Content-Type', reply.contentType ?? 'application/json');
      // HEAD reports the length of the body it leaves out (a header, because endWithoutBody(length)
      // leaves the response unfinished in uWS 20.30 and uWS then aborts the process).
      if (req.method === 'HEAD' && nonEmpty && reply.status !== 304) res.writeHeader('Content-Length', String(reply.stream ? reply.stream.size : Buffer.byteLength(reply.body)));
      if (bodiless) res.endWithoutBody();
      else if (!stream) res.end(reply.body);
    });
    if (stream) {
      void this.pump(res, req, reply.status, stream, state, start);
      return;
    }
    this.release();
  }

  /**
   * Sends a streamed body after its headers: chunk by chunk with tryEnd, waiting on onWritable
   * under backpressure; the iterator is closed on abort. A body that ends short of its announced
   * size (or fails) closes the connection. Logs and releases the request at the end.
   */
  private async pump(res: UWS.HttpResponse, req: Req, status: number, stream: BodyStream, state: StreamState, start: bigint): Promise<void> {
    res.onAborted(() => {
      state.aborted = true;
      state.wake?.();
    });
    let it: AsyncIterator<Buffer> | null = null;
    let finished = false;
    try {
      it = stream.open()[Symbol.asyncIterator]();
      while (!state.aborted) {
        const next = await it.next();
        if (state.aborted || next.done) break;
        if ((await this.sendChunk(res, next.value, stream.size, state)) === 'done') {
          finished = true;
          break;
        }
      }
    } catch (err) {
      this.opts.onUnexpected(err, req);
    } finally {
      if (!finished && !state.aborted) res.cork(() => res.close());
      await Promise.resolve(it?.return?.()).catch(() => undefined);
      this.opts.logger.request(req.method, req.path, state.aborted ? 499 : status, elapsedMs(start));
      this.release();
    }
  }

  /** One chunk of a streamed body: 'more' when fully written, 'done' at the end, 'aborted'. */
  private sendChunk(res: UWS.HttpResponse, chunk: Buffer, total: number, state: StreamState): Promise<'more' | 'done' | 'aborted'> {
    let offset = 0;
    let ok = false;
    let done = false;
    res.cork(() => {
      offset = res.getWriteOffset();
      [ok, done] = res.tryEnd(chunk, total);
    });
    if (done) return Promise.resolve('done');
    if (ok) return Promise.resolve('more');
    return new Promise((resolve) => {
      state.wake = () => resolve('aborted');
      res.onWritable((at) => {
        const [ok2, done2] = res.tryEnd(chunk.subarray(at - offset), total);
        if (done2) resolve('done');
        else if (ok2) resolve('more');
        return ok2;
      });
    });
  }

  /**
   * An event stream (Reply.events): headers now, then the sink. Writes are corked; when uWS
   * reports backpressure the bytes queued since are counted until it drains, and past
   * `maxQueuedBytes` the connection is closed as a slow consumer.
   */
  private openEvents(res: UWS.HttpResponse, req: Req, reply: Reply, events: EventStreamBody, start: bigint): void {
    const max = events.maxQueuedBytes ?? 1024 * 1024;
    let queued = 0;
    let waiting = false;
    let gone = () => {};
    res.onAborted(() => gone());
    res.cork(() => {
      if (reply.status !== 200) res.writeStatus(statusLine(reply.status)); // uWS writes 200 OK by default
      for (const [k, v] of CORS) res.writeHeader(k, v);
      if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
      res.writeHeader('Content-Type', reply.contentType ?? 'text/event-stream');
      res.writeHeader('Cache-Control', 'no-cache');
      res.writeHeader('X-Accel-Buffering', 'no');
      res.write('');
    });
    this.release(); // a long-lived stream is not a request in flight
    // uWS reports backpressure but not how much is queued: the bytes written since it began are
    // counted until the socket drains.
    const transport: EventTransport = {
      write: (text) => {
        let ok = true;
        res.cork(() => {
          ok = res.write(text);
        });
        if (ok) return true;
        queued += Buffer.byteLength(text);
        if (queued > max) return false;
        if (!waiting) {
          waiting = true;
          res.onWritable(() => {
            queued = 0;
            waiting = false;
            return true;
          });
        }
        return true;
      },
      end: () => res.cork(() => res.end()),
      abort: () => res.close(),
    };
    ({ gone } = openEventStream(events, transport, () => this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start)), (err) => this.opts.onUnexpected(err, req)));
  }

  private release(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}

/**
 * The request snapshot. For methods with a body the remote address is copied at once (decoded
 * lazily); for others it is read on first use, which is valid only while the uWS callback runs
 * (handlers that need it on a GET read it before their first await).
 */
class Snapshot implements Req {
  params: string[] = [];
  body: Buffer | null = null;
  private addr: ArrayBuffer | string | null;
  private res: UWS.HttpResponse | null;
  constructor(readonly method: string, readonly path: string, readonly query: string, readonly headers: RequestHeaders, addr: ArrayBuffer | null, res: UWS.HttpResponse) {
    this.addr = addr;
    this.res = addr === null ? res : null;
  }
  get remoteAddress(): string {
    if (this.addr === null) {
      try {
        this.addr = this.res ? this.res.getRemoteAddressAsText().slice(0) : '';
      } catch {
        this.addr = '';
      }
      this.res = null;
    }
    if (typeof this.addr !== 'string') this.addr = Buffer.from(this.addr).toString();
    return this.addr;
  }
}

/** Copies the headers the request may need (see `handle`). Absent headers read as ''. */
function readHeaders(r: UWS.HttpRequest, body: boolean, file: boolean): RequestHeaders {
  const h: RequestHeaders = {
    authorization: r.getHeader('authorization'),
    contentType: '',
    cookie: r.getHeader('cookie'),
    csrf: '',
    userAgent: '',
    forwardedFor: '',
    realIp: '',
    origin: '',
    accept: '',
    range: '',
    ifNoneMatch: '',
    account: '',
    requestId: r.getHeader('x-request-id'),
  };
  if (h.authorization || h.cookie) h.account = r.getHeader('x-account-id');
  if (body) {
    h.contentType = r.getHeader('content-type');
    // The CSRF token only matters next to a cookie credential (auth-service.ts).
    if (h.cookie) h.csrf = r.getHeader('x-csrf-token');
    h.userAgent = r.getHeader('user-agent');
    h.forwardedFor = r.getHeader('x-forwarded-for');
    h.realIp = r.getHeader('x-real-ip');
    h.origin = r.getHeader('origin');
    h.accept = r.getHeader('accept');
  }
  if (file) {
    h.range = r.getHeader('range');
    h.ifNoneMatch = r.getHeader('if-none-match');
  }
  return h;
}

/** Request state while a streamed body is sent: `wake` resolves a wait for writability on abort. */
interface StreamState {
  aborted: boolean;
  done: boolean;
  wake?: () => void;
}

export { errorReply } from './common.js';
