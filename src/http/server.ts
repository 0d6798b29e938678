/**
 * The uWebSockets.js engine: a thin adapter that copies each request out of uWS and hands it to
 * the shared pipeline (pipeline.ts), with `UwsExchange` for uWS's response primitives. This folder
 * is the only one that imports uWS; handlers see a plain `Req` snapshot and return a `Reply`.
 *
 * uWS lifetime rules this file follows (see ../shared/STYLE.md):
 * - HttpRequest is valid only during the synchronous handler: everything is copied first.
 * - onAborted is registered before any asynchronous step (the pipeline calls `watchAbort`); after
 *   it fires `res` is not touched.
 * - Writes after an await happen inside res.cork() (`write`); status, then headers, then end,
 *   exactly once.
 * - Body chunks are copied (uWS neuters the ArrayBuffer after the callback); the size limit is
 *   enforced on Content-Length and on bytes received.
 * - No exception escapes into uWS.
 * - Large bodies out (Reply.stream): tryEnd + onWritable under backpressure; the source is closed
 *   on abort. HEAD, 204 and 304 end with endWithoutBody (HEAD reports Content-Length as a header).
 */
import type * as UWS from '@trufflesuite/uws-js-unofficial';
import type { Logger } from '../log/logger.js';
import { statusLine } from './status-text.js';
import type { Req, RequestHeaders, Route, WsConnection, WsRoute } from './types.js';
import { BODY_METHODS, type EventTransport } from './common.js';
import { EngineSocket, WS_MAX_PAYLOAD, maxQueue } from './websocket.js';
import { CORS, Exchange, Pipeline, type ChunkResult, type CompiledRoute, type HttpServerOptions } from './pipeline.js';

export type { HttpServerOptions } from './pipeline.js';

/** uWS's ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT on the listen socket. */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

const FIXED_METHOD: Partial<Record<Route['method'], string>> = { post: 'POST', patch: 'PATCH', put: 'PUT', del: 'DELETE', options: 'OPTIONS' };

/**
 * The server on uWS: routes registered on uWS's native router (from the pipeline's table), each
 * request served by the pipeline, WebSocket endpoints on uWS's native WebSockets.
 */
export class HttpServer {
  private app: UWS.TemplatedApp;
  private listenSocket: UWS.us_listen_socket | null = null;
  private pipeline: Pipeline;
  private logger: Logger;

  /** @param uWS the native module chosen by uws-loader.ts */
  constructor(private opts: HttpServerOptions, private uWS: typeof UWS) {
    this.pipeline = new Pipeline(opts, true);
    this.logger = opts.logger;
    this.app = uWS.App();
    for (const w of opts.websockets ?? []) this.registerWs(w);
    for (const r of this.pipeline.table.routes) this.register(r);
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
    const idle = this.pipeline.drain(timeoutMs);
    if (this.listenSocket) {
      this.uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    await idle;
    (this.app as { close?: () => unknown }).close?.();
  }

  /** A WebSocket endpoint on uWS's native WebSockets (see WsRoute). */
  private registerWs(route: WsRoute): void {
    const max = maxQueue(route);
    this.app.ws<WsData>(route.pattern, {
      // uWS's own limit above ours: the connection is dropped by `send` at `max`, and its close
      // frame still fits behind the queued messages
      maxBackpressure: max * 2 + 1024,
      closeOnBackpressureLimit: 0,
      idleTimeout: 120,
      maxPayloadLength: WS_MAX_PAYLOAD,
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
          this.logger.request('GET', req.path, refused.status, 0);
          return;
        }
        void req.remoteAddress; // read while the request is valid
        res.upgrade<WsData>({ conn: null, req, closed: () => undefined }, key, protocol, extensions, context);
      },
      open: (ws) => {
        const state = ws.getUserData();
        const conn = new UwsSocket(max, ws);
        state.conn = conn;
        // uWS's socket is gone once its close handler runs: no call may reach it after that
        state.closed = () => {
          conn.closed = true;
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

  private register(c: CompiledRoute): void {
    const route = c.route;
    const bind = (method: string | null) => (res: UWS.HttpResponse, req: UWS.HttpRequest) =>
      this.handle(res, req, c, method ?? req.getCaseSensitiveMethod().toUpperCase());
    if (route.method === 'get') {
      // A HEAD handler of its own lets the GET handler know its method without asking uWS.
      this.app.get(route.pattern, bind('GET'));
      this.app.head(route.pattern, bind('HEAD'));
      return;
    }
    this.app[route.method](route.pattern, bind(FIXED_METHOD[route.method] ?? null));
  }

  /**
   * One request: copied out of uWS, then served by the pipeline. What is read from uWS is what the
   * route needs: every uWS call costs measurable time on the hot path (the remote address,
   * parameters, headers; bench/README.md, "Reads from uWS"), so the remote address and the
   * body-related headers are copied only for methods with a body, and the conditional and range
   * headers only for routes that ask (`route.fileHeaders`).
   */
  private handle(res: UWS.HttpResponse, ureq: UWS.HttpRequest, c: CompiledRoute, method: string): void {
    const route = c.route;
    // the clock is read only for the request log (its duration_ms) and the request observers
    const start = this.pipeline.timed ? performance.now() : 0;
    const hasBody = BODY_METHODS.has(method);
    this.pipeline.arrive();
    const headers = readHeaders(ureq, hasBody || !!route.clientHeaders, !!route.fileHeaders);
    if (route.extraHeaders) {
      headers.extra = {};
      for (const name of route.extraHeaders) headers.extra[name] = ureq.getHeader(name);
    }
    const req = new Snapshot(method, ureq.getUrl(), ureq.getQuery() ?? '', headers, hasBody ? res.getRemoteAddressAsText().slice(0) : null, res);
    const x = new UwsExchange(req, start, res, ureq, this.pipeline);
    this.pipeline.serve(x, route, c.paramCount, (i) => ureq.getParameter(i));
  }
}

/** What uWS keeps with each WebSocket. */
type WsData = { conn: WsConnection | null; req: Req; closed: () => void };

/** A WebSocket on uWS's native WebSockets and topics (see EngineSocket). */
class UwsSocket extends EngineSocket {
  constructor(max: number, private ws: UWS.WebSocket<WsData>) {
    super(max);
  }

  bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  subscribe(topic: string): void {
    if (!this.closed) this.ws.subscribe(topic);
  }

  unsubscribe(topic: string): void {
    if (!this.closed) this.ws.unsubscribe(topic);
  }

  protected writable(): boolean {
    return true;
  }

  protected queued(): number {
    return this.ws.getBufferedAmount();
  }

  protected transmit(text: string): void {
    this.ws.send(text, false);
  }

  protected end(code: number, reason: string): void {
    this.ws.end(code, reason);
  }
}

/** One request's uWS response primitives (see Exchange); `ureq` is read only during `serve`. */
class UwsExchange extends Exchange {
  constructor(req: Req, start: number, private res: UWS.HttpResponse, private ureq: UWS.HttpRequest, private p: Pipeline) {
    super(req, start);
  }

  watchAbort(): void {
    if (this.watching) return;
    this.watching = true;
    this.res.onAborted(() => this.p.clientGone(this));
  }

  declaredLength(): number {
    const h = this.ureq.getHeader('content-length');
    return h === '' ? -1 : Number(h);
  }

  skipBody(): void {}

  readBody(p: Pipeline): void {
    // uWS neuters `ab` after this callback: the pipeline copies what it keeps during the call
    this.res.onData((ab, isLast) => {
      p.data(this, new Uint8Array(ab), true);
      if (isLast) p.end(this);
    });
  }

  write(writes: () => void): void {
    this.res.cork(writes);
  }

  status(code: number): void {
    this.res.writeStatus(statusLine(code));
  }

  header(name: string, value: string): void {
    this.res.writeHeader(name, value);
  }

  end(body: string | Buffer): void {
    this.res.end(body, this.closing);
  }

  endWithoutBody(): void {
    this.res.endWithoutBody();
  }

  afterCutOff(): void {}

  beginStream(): void {}

  /** tryEnd, and under backpressure onWritable until the chunk is out (uWS measures the offset). */
  sendChunk(chunk: Buffer, total: number): Promise<ChunkResult> {
    const res = this.res;
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
      this.gone = () => resolve('aborted');
      res.onWritable((at) => {
        const [ok2, done2] = res.tryEnd(chunk.subarray(at - offset), total);
        if (done2) resolve('done');
        else if (ok2) resolve('more');
        return ok2;
      });
    });
  }

  beginEvents(): void {
    this.res.write('');
  }

  /**
   * Writes are corked; uWS reports backpressure but not how much is queued, so the bytes written
   * since it began are counted until the socket drains.
   */
  eventTransport(max: number): EventTransport {
    const res = this.res;
    let queued = 0;
    let waiting = false;
    return {
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
  }

  close(): void {
    this.res.cork(() => this.res.close());
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
  knownRemoteAddress(): string {
    return this.addr === null ? '' : this.remoteAddress;
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

export { errorReply } from './common.js';
