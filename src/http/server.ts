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
 */
import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';
import { ApiError, toApiError, writeErrorBody } from '../errors/api-error.js';
import type { Logger } from '../log/logger.js';
import { statusLine } from './status-text.js';
import type { Handler, Reply, Req, RequestHeaders, Route } from './types.js';

const require = createRequire(import.meta.url);

/** Loads uWS and refuses its slow JavaScript fallback (the package switches silently). */
export function loadUws(): typeof UWS {
  const uWS = require('@trufflesuite/uws-js-unofficial') as typeof UWS;
  if (typeof (uWS as unknown as { getParts?: unknown }).getParts !== 'function') {
    throw new Error('the native uWebSockets.js binding did not load (only the slow JavaScript fallback is available); refusing to start');
  }
  return uWS;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  /** request body limit in bytes (413 above it) */
  maxBodyBytes: number;
  logger: Logger;
  routes: Route[];
  /** called for non-ApiError exceptions (they answer 500) */
  onUnexpected: (err: unknown, req: Req) => void;
}

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const CORS: Array<[string, string]> = [['Access-Control-Allow-Origin', '*']];

export class HttpServer {
  private uWS = loadUws();
  private app = this.uWS.App();
  private listenSocket: UWS.us_listen_socket | null = null;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private draining = false;

  constructor(private opts: HttpServerOptions) {
    for (const r of opts.routes) this.register(r);
  }

  /** Starts listening; resolves with the bound port (port 0 picks a free one). */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(this.opts.host, this.opts.port, (sock) => {
        if (!sock) return reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port} (address in use or not available)`));
        this.listenSocket = sock;
        resolve(this.uWS.us_socket_local_port(sock as unknown as UWS.us_socket));
      });
    });
  }

  /** Stops accepting connections and resolves when no request is in flight. */
  async drain(timeoutMs = 10_000): Promise<void> {
    this.draining = true;
    if (this.listenSocket) {
      this.uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  private register(route: Route): void {
    const paramCount = (route.pattern.match(/\/:/g) ?? []).length;
    const wildcard = route.pattern.endsWith('*');
    this.app[route.method](route.pattern, (res, req) => this.handle(res, req, route.handler, paramCount, wildcard));
  }

  private handle(res: UWS.HttpResponse, ureq: UWS.HttpRequest, handler: Handler, paramCount: number, _wildcard: boolean): void {
    const start = process.hrtime.bigint();
    const method = ureq.getCaseSensitiveMethod().toUpperCase();
    const path = ureq.getUrl();
    const state = { aborted: false, done: false };
    this.inFlight++;
    const req = new Snapshot(method, path, ureq.getQuery() ?? '', readHeaders(ureq), res.getRemoteAddressAsText().slice(0));
    const finish = (reply: Reply) => this.finish(res, req, reply, state, start);
    try {
      for (let i = 0; i < paramCount; i++) req.params.push(decodeURIComponent(ureq.getParameter(i)));
    } catch {
      finish(errorReply(ApiError.badRequest('Malformed percent-encoding in the path.')));
      return;
    }
    res.onAborted(() => {
      state.aborted = true;
      if (!state.done) {
        state.done = true;
        this.opts.logger.request(method, path, 499, elapsedMs(start));
        this.release();
      }
    });
    if (!BODY_METHODS.has(method)) {
      this.dispatch(handler, req, finish);
      return;
    }
    const declared = Number(ureq.getHeader('content-length') || 0);
    if (declared > this.opts.maxBodyBytes) {
      finish(tooLarge(this.opts.maxBodyBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.onData((ab, isLast) => {
      if (state.done) return;
      size += ab.byteLength;
      if (size > this.opts.maxBodyBytes) {
        finish(tooLarge(this.opts.maxBodyBytes));
        return;
      }
      chunks.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        this.dispatch(handler, req, finish);
      }
    });
  }

  private dispatch(handler: Handler, req: Req, finish: (r: Reply) => void): void {
    let out: Reply | Promise<Reply>;
    try {
      out = handler(req);
    } catch (err) {
      finish(this.fail(err, req));
      return;
    }
    if (out instanceof Promise) out.then(finish, (err) => finish(this.fail(err, req)));
    else finish(out);
  }

  private fail(err: unknown, req: Req): Reply {
    const api = toApiError(err);
    if (!(err instanceof ApiError)) this.opts.onUnexpected(err, req);
    return errorReply(api);
  }

  private finish(res: UWS.HttpResponse, req: Req, reply: Reply, state: { aborted: boolean; done: boolean }, start: bigint): void {
    if (state.done || state.aborted) return;
    state.done = true;
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      for (const [k, v] of CORS) res.writeHeader(k, v);
      if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
      if (this.draining) res.writeHeader('Connection', 'close');
      const empty = reply.body.length === 0;
      if (!empty) res.writeHeader('Content-Type', reply.contentType ?? 'application/json');
      if (reply.status === 204 || reply.status === 304 || (empty && req.method === 'HEAD')) res.endWithoutBody();
      else res.end(reply.body);
    });
    this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start));
    this.release();
  }

  private release(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}

/** The request snapshot; the remote address is copied now and decoded only when asked for. */
class Snapshot implements Req {
  params: string[] = [];
  body: Buffer | null = null;
  private addr: ArrayBuffer | string;
  constructor(readonly method: string, readonly path: string, readonly query: string, readonly headers: RequestHeaders, addr: ArrayBuffer) {
    this.addr = addr;
  }
  get remoteAddress(): string {
    if (typeof this.addr !== 'string') this.addr = Buffer.from(this.addr).toString();
    return this.addr;
  }
}

function readHeaders(r: UWS.HttpRequest): RequestHeaders {
  return {
    authorization: r.getHeader('authorization'),
    contentType: r.getHeader('content-type'),
    cookie: r.getHeader('cookie'),
    csrf: r.getHeader('x-csrf-token'),
    userAgent: r.getHeader('user-agent'),
    forwardedFor: r.getHeader('x-forwarded-for'),
    realIp: r.getHeader('x-real-ip'),
    origin: r.getHeader('origin'),
    accept: r.getHeader('accept'),
    range: r.getHeader('range'),
    ifNoneMatch: r.getHeader('if-none-match'),
  };
}

function elapsedMs(start: bigint): number {
  return Number((process.hrtime.bigint() - start) / 1_000_000n);
}

export function errorReply(err: ApiError): Reply {
  return { status: err.status, body: writeErrorBody(err) };
}

function tooLarge(limit: number): Reply {
  return errorReply(new ApiError(413, 'payload_too_large', `The request body exceeds the limit of ${limit} bytes.`));
}
