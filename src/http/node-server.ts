/**
 * The `node:http` adapter (issue 25): the same front end as the uWS one (server.ts) for Node
 * versions and platforms where no native uWebSockets.js build loads (uws-loader.ts). Handlers see
 * the same `Req` snapshot and return the same `Reply`; routing follows uWS's precedence (a static
 * segment beats a parameter, a parameter beats the `/*` wildcard); bodies have the same limits;
 * streamed replies honour backpressure and stop on abort; an aborted request is logged as 499.
 *
 * It is slower than uWS (bench: "HTTP engine"), and that is its only difference a client can see.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { ApiError, toApiError, writeErrorBody } from '../errors/api-error.js';
import type { BodyStream, EventStreamBody, Handler, Reply, Req, RequestHeaders, Route } from './types.js';
import type { HttpServerOptions } from './server.js';
import { Admission, OVERLOADED, TIMED_OUT } from './admission.js';
import { BODY_METHODS, SinkIntake, decodeParams, elapsedMs, errorReply, openEventStream, tooLarge, untilIdle, type EventTransport } from './common.js';
import { WebSocketServer, type WebSocket } from 'ws';
import { WS_SLOW_CONSUMER, type WsConnection, type WsRoute } from './types.js';

/** Longest request line plus headers accepted (node:http's default is 16 KiB). */
const MAX_HEAD_BYTES = 1024 * 1024;
const ROUTE_METHOD: Record<Route['method'], string | null> = { get: 'GET', post: 'POST', patch: 'PATCH', put: 'PUT', del: 'DELETE', options: 'OPTIONS', any: null };

/** A route compiled for matching: its method (null: any) and path segments. */
interface Compiled {
  route: Route;
  method: string | null;
  segments: string[];
  /** the pattern ends in `/*` (matches any rest) */
  wildcard: boolean;
}

/** Segment kinds by precedence (uWS: static, then parameter, then wildcard). */
const STATIC = 2;
const PARAM = 1;

export class NodeHttpServer {
  private server: Server;
  private routes: Compiled[];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private draining = false;
  private sockets = new Set<Socket>();
  private admission: Admission;

  constructor(private opts: HttpServerOptions) {
    this.admission = new Admission(opts);
    this.routes = opts.routes.map((route) => {
      const wildcard = route.pattern.endsWith('/*');
      const body = wildcard ? route.pattern.slice(0, -2) : route.pattern;
      return { route, method: ROUTE_METHOD[route.method], segments: body === '' ? [] : body.split('/').slice(1), wildcard };
    });
    // Request heads up to 1 MiB (long filters travel in the query string); past that, and for a
    // head node:http cannot parse, the answer is the error envelope, then the connection closes.
    this.server = createServer({ keepAlive: true, maxHeaderSize: MAX_HEAD_BYTES }, (req, res) => this.handle(req, res));
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      if (!socket.writable) return socket.destroy();
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      const status = tooLarge ? 431 : 400;
      const body = writeErrorBody(new ApiError(status, 'bad_request', tooLarge ? `The request head exceeds ${MAX_HEAD_BYTES} bytes.` : 'The request is not valid HTTP.'));
      socket.end(`HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    if (opts.websockets?.length) this.acceptWebSockets(opts.websockets);
    this.server.on('connection', (sock: Socket) => {
      // past the connection cap: 503 in the envelope, then close (node:http caps connections)
      if (this.sockets.size >= opts.maxInFlight) {
        const body = writeErrorBody(OVERLOADED());
        sock.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        return;
      }
      this.sockets.add(sock);
      sock.once('close', () => this.sockets.delete(sock));
    });
  }

  /** WebSocket endpoints through `ws` (see WsRoute): an upgrade on another path answers 404. */
  private acceptWebSockets(routes: WsRoute[]): void {
    const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
    // pub/sub topics as uWS has them natively: topic → its connections (the same for every route)
    const topics = new Map<string, Set<WsConnection>>();
    const publisher = {
      publish: (topic: string, text: string) => {
        for (const c of topics.get(topic) ?? []) c.send(text);
      },
    };
    for (const r of routes) r.bind?.(publisher);
    this.server.on('upgrade', (ireq: IncomingMessage, socket: Socket, head: Buffer) => {
      const url = ireq.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const route = routes.find((r) => r.pattern === path);
      const refuse = (status: number, body: string) => {
        socket.end(`HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Refused'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      };
      if (!route) {
        this.opts.logger.request('GET', path, 404, 0);
        return refuse(404, writeErrorBody(ApiError.notFound()));
      }
      const req: Snapshot = { method: 'GET', path, query: q < 0 ? '' : url.slice(q + 1), headers: readHeaders(ireq), params: [], remoteAddress: ireq.socket.remoteAddress ?? '', body: null };
      const refused = route.upgrade?.(req);
      if (refused) {
        this.opts.logger.request('GET', path, refused.status, 0);
        return refuse(refused.status, refused.body as string);
      }
      wss.handleUpgrade(ireq, socket, head, (ws: WebSocket) => {
        const max = route.maxBackpressure ?? 1024 * 1024;
        let closed = false;
        let dropped = false;
        const joined = new Set<string>();
        const conn: WsConnection = {
          data: {},
          get dropped() {
            return dropped;
          },
          send: (text) => {
            if (!conn.checkBackpressure()) return false;
            ws.send(text);
            return true;
          },
          checkBackpressure: () => {
            if (closed || ws.readyState !== ws.OPEN) return false;
            if (ws.bufferedAmount <= max) return true;
            closed = true;
            dropped = true;
            ws.close(WS_SLOW_CONSUMER, 'slow consumer');
            return false;
          },
          subscribe: (topic) => {
            let set = topics.get(topic);
            if (!set) topics.set(topic, (set = new Set()));
            set.add(conn);
            joined.add(topic);
          },
          unsubscribe: (topic) => {
            const set = topics.get(topic);
            set?.delete(conn);
            if (set?.size === 0) topics.delete(topic);
            joined.delete(topic);
          },
          close: (code = 1000, reason = '') => {
            if (closed) return;
            closed = true;
            ws.close(code, reason);
          },
          bufferedAmount: () => ws.bufferedAmount,
        };
        ws.on('message', (data, isBinary) => route.message(conn, Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'), isBinary));
        ws.on('close', (code) => {
          for (const t of [...joined]) conn.unsubscribe(t);
          route.close(conn, code);
        });
        ws.on('error', () => ws.terminate());
        route.open(conn, req);
      });
    });
  }

  /**
   * Starts listening, alone on the address (never sharing the port with another process: requests
   * would alternate between the two servers); resolves with the bound port (port 0 picks a free
   * one).
   * @throws Error `cannot listen on HOST:PORT (address in use)` when another socket holds the
   *   address, `(…)` with the system's reason otherwise
   */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) =>
        reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port} (${err.code === 'EADDRINUSE' ? 'address in use' : err.message})`));
      this.server.once('error', onError);
      // no reusePort (the default), and `exclusive` so a cluster worker never shares a primary's handle
      this.server.listen({ port: this.opts.port, host: this.opts.host, exclusive: true }, () => {
        this.server.off('error', onError);
        const addr = this.server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : this.opts.port);
      });
    });
  }

  /** Stops accepting connections and resolves when no request is in flight (idle connections are closed). */
  async drain(timeoutMs = 10_000): Promise<void> {
    this.draining = true;
    this.admission.close();
    this.server.close();
    this.server.closeIdleConnections();
    await untilIdle(this.inFlight, this.idleWaiters, timeoutMs);
    for (const s of this.sockets) s.destroy();
  }

  /** The best route for a method and path, and its raw parameters; undefined when none matches. */
  private match(method: string, path: string): { route: Route; params: string[] } | undefined {
    const parts = path.split('/').slice(1);
    let best: { route: Route; params: string[]; rank: number[] } | undefined;
    for (const c of this.routes) {
      if (c.method !== null && c.method !== method && !(c.method === 'GET' && method === 'HEAD')) continue;
      if (c.wildcard ? parts.length < c.segments.length : parts.length !== c.segments.length) continue;
      const params: string[] = [];
      const rank: number[] = [];
      let ok = true;
      for (let i = 0; i < c.segments.length; i++) {
        const seg = c.segments[i];
        if (seg.startsWith(':')) {
          if (parts[i] === '') {
            ok = false;
            break;
          }
          params.push(parts[i]);
          rank.push(PARAM);
        } else if (seg === parts[i]) rank.push(STATIC);
        else {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (c.wildcard) rank.push(0);
      if (!best || better(rank, best.rank)) best = { route: c.route, params, rank };
    }
    return best;
  }

  private handle(ireq: IncomingMessage, res: ServerResponse): void {
    const start = process.hrtime.bigint();
    const method = (ireq.method ?? 'GET').toUpperCase();
    const url = ireq.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);
    const state = { done: false, aborted: false };
    this.inFlight++;
    const req: Snapshot = { method, path, query, headers: readHeaders(ireq), params: [], remoteAddress: ireq.socket.remoteAddress ?? '', body: null };
    const finish = (reply: Reply) => this.finish(res, req, reply, state, start);
    res.once('close', () => {
      if (!state.done) {
        state.aborted = true;
        state.done = true;
        this.opts.logger.request(method, path, 499, elapsedMs(start));
        this.release();
      }
    });
    const found = this.match(method, path);
    if (!found) {
      finish(errorReply(ApiError.notFound()));
      return;
    }
    if (found.route.extraHeaders) {
      req.headers.extra = {};
      for (const name of found.route.extraHeaders) req.headers.extra[name] = header(ireq, name);
    }
    const bad = decodeParams(found.params.length, (i) => found.params[i], req.params);
    if (bad) {
      finish(bad);
      return;
    }
    const handler = found.route.handler;
    if (!BODY_METHODS.has(method)) {
      ireq.resume();
      this.dispatch(handler, req, finish);
      return;
    }
    const limit = found.route.bodyLimit ?? this.admission.bodyLimit(req.headers.contentType, found.route.multipart?.(req) ?? false);
    if (Number(ireq.headers['content-length'] ?? 0) > limit) {
      finish(tooLarge(limit));
      ireq.resume();
      return;
    }
    if (found.route.bodySink) {
      const lengthHeader = ireq.headers['content-length'];
      this.stream(ireq, res, req, found.route.bodySink, lengthHeader === undefined ? -1 : Number(lengthHeader), limit, state, finish);
      return;
    }
    const chunks: Buffer[] = [];
    const cutOff = (reply: Reply) => {
      // answer and close: the rest of the body is never read
      res.setHeader('Connection', 'close');
      finish(reply);
      ireq.socket.destroySoon();
    };
    const ticket = this.admission.start(() => {
      if (!state.done) cutOff(errorReply(TIMED_OUT()));
    });
    res.once('close', () => this.admission.done(ticket));
    ireq.on('data', (chunk: Buffer) => {
      if (state.done) return;
      if (ticket.bytes + chunk.length > limit) {
        this.admission.done(ticket);
        finish(tooLarge(limit));
        return;
      }
      if (!this.admission.take(ticket, chunk.length)) {
        this.admission.done(ticket);
        cutOff(errorReply(OVERLOADED()));
        return;
      }
      chunks.push(chunk);
    });
    ireq.once('end', () => {
      this.admission.done(ticket);
      if (state.done) return;
      req.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      this.dispatch(handler, req, finish);
    });
  }

  /** A body handed to a route's sink as it arrives (Route.bodySink, common.ts SinkIntake). */
  private stream(ireq: IncomingMessage, res: ServerResponse, req: Req, open: NonNullable<Route['bodySink']>, declared: number, limit: number, state: { done: boolean; aborted: boolean }, finish: (r: Reply) => void): void {
    const intake = new SinkIntake(finish, (err) => this.fail(err, req), () => state.done);
    let ended = false;
    const ticket = this.admission.start(() => {
      if (state.done) return;
      intake.abort();
      res.setHeader('Connection', 'close');
      finish(errorReply(TIMED_OUT()));
      ireq.socket.destroySoon();
    });
    res.once('close', () => {
      this.admission.done(ticket);
      if (!ended) intake.abort();
    });
    intake.open(open, req, declared);
    ireq.on('data', (chunk: Buffer) => {
      if (state.done) return;
      if (intake.received + chunk.length > limit) {
        this.admission.done(ticket);
        intake.abort();
        finish(tooLarge(limit));
        return;
      }
      intake.data(chunk, () => chunk);
    });
    ireq.once('end', () => {
      this.admission.done(ticket);
      ended = true;
      intake.end();
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

  private finish(res: ServerResponse, req: Req, reply: Reply, state: { done: boolean; aborted: boolean }, start: bigint): void {
    if (state.done) return;
    state.done = true;
    const bodiless = reply.status === 204 || reply.status === 304 || req.method === 'HEAD';
    if (reply.events && !bodiless) {
      this.openEvents(res, req, reply, reply.events, start);
      return;
    }
    const stream = reply.stream && reply.stream.size > 0 && !bodiless ? reply.stream : null;
    const headers: Record<string, string | string[]> = { 'Access-Control-Allow-Origin': '*' };
    if (reply.headers) {
      for (const [k, v] of reply.headers) {
        const prev = headers[k];
        headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
      }
    }
    if (this.draining) headers.Connection = 'close';
    const nonEmpty = reply.stream ? reply.stream.size > 0 : reply.body.length > 0;
    if (nonEmpty) headers['Content-Type'] = reply.contentType ?? 'application/json';
    const length = reply.stream ? reply.stream.size : Buffer.byteLength(reply.body);
    if (!bodiless || (req.method === 'HEAD' && nonEmpty && reply.status !== 304)) headers['Content-Length'] = String(length);
    // The request record is written before the reply leaves (as uWS sends a corked reply only
    // after the handler returns), so a client never sees an answer whose record is not logged yet.
    if (!stream) this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start));
    try {
      res.writeHead(reply.status, headers);
      if (bodiless) res.end();
      else if (!stream) res.end(reply.body);
    } catch (err) {
      this.opts.onUnexpected(err, req);
      res.destroy();
    }
    if (stream) {
      void this.pump(res, req, reply.status, stream, start);
      return;
    }
    this.release();
  }

  /** Sends a streamed body with backpressure; closes the source on abort; a short body closes the connection. */
  private async pump(res: ServerResponse, req: Req, status: number, stream: BodyStream, start: bigint): Promise<void> {
    let aborted = false;
    const onClose = () => {
      aborted = !res.writableFinished;
    };
    res.once('close', onClose);
    let it: AsyncIterator<Buffer> | null = null;
    let sent = 0;
    try {
      it = stream.open()[Symbol.asyncIterator]();
      while (!aborted && !res.destroyed) {
        const next = await it.next();
        if (next.done || aborted) break;
        sent += next.value.length;
        if (!res.write(next.value)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      }
      if (!aborted && !res.destroyed) {
        if (sent === stream.size) res.end();
        else res.destroy();
      }
    } catch (err) {
      this.opts.onUnexpected(err, req);
      res.destroy();
    } finally {
      await Promise.resolve(it?.return?.()).catch(() => undefined);
      this.opts.logger.request(req.method, req.path, aborted ? 499 : status, elapsedMs(start));
      this.release();
    }
  }

  /** An event stream (Reply.events), as server.ts sends it: dropped when node:http holds more than the bound unsent. */
  private openEvents(res: ServerResponse, req: Req, reply: Reply, events: EventStreamBody, start: bigint): void {
    const max = events.maxQueuedBytes ?? 1024 * 1024;
    const headers: Record<string, string> = { 'Access-Control-Allow-Origin': '*', 'Content-Type': reply.contentType ?? 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' };
    for (const [k, v] of reply.headers ?? []) headers[k] = v;
    res.writeHead(reply.status, headers);
    res.flushHeaders();
    this.release(); // a long-lived stream is not a request in flight
    let gone = () => {};
    const transport: EventTransport = {
      write: (text) => {
        if (res.destroyed) {
          gone(); // the client went away; its 'close' has not been seen yet
          return true;
        }
        res.write(text);
        return res.writableLength <= max;
      },
      end: () => res.end(),
      abort: () => res.destroy(),
    };
    ({ gone } = openEventStream(events, transport, () => this.opts.logger.request(req.method, req.path, reply.status, elapsedMs(start)), (err) => this.opts.onUnexpected(err, req)));
    res.once('close', () => gone());
  }

  private release(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}

type Snapshot = Req & { params: string[]; body: Buffer | null };

/** True when rank `a` is more specific than `b` (first differing segment decides; longer wins a tie). */
function better(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] > b[i];
  return a.length > b.length;
}

function header(r: IncomingMessage, name: string): string {
  const v = r.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

/** The headers every route may read (absent ones as ''); node:http parsed them all already. */
function readHeaders(r: IncomingMessage): RequestHeaders {
  const cookie = header(r, 'cookie');
  return {
    authorization: header(r, 'authorization'),
    contentType: header(r, 'content-type'),
    cookie,
    csrf: cookie ? header(r, 'x-csrf-token') : '',
    userAgent: header(r, 'user-agent'),
    forwardedFor: header(r, 'x-forwarded-for'),
    realIp: header(r, 'x-real-ip'),
    origin: header(r, 'origin'),
    accept: header(r, 'accept'),
    range: header(r, 'range'),
    ifNoneMatch: header(r, 'if-none-match'),
    account: header(r, 'x-account-id'),
    requestId: header(r, 'x-request-id'),
  };
}


