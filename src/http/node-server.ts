/**
 * The `node:http` engine: a thin adapter onto the shared pipeline (pipeline.ts) for Node versions
 * and platforms where no native uWebSockets.js build loads (uws-loader.ts). Handlers see the same
 * `Req` snapshot and return the same `Reply`; routing is the pipeline's table (uWS's precedence);
 * bodies have the same limits; streamed replies honour backpressure and stop on abort; an aborted
 * request is logged as 499. WebSockets go through the `ws` package.
 *
 * It is slower than uWS (bench/README.md, "node:http engine floors": node:http's own work per
 * request is about twice uWS's), and that is its only difference a client can see.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { ApiError, writeErrorBody } from '../errors/api-error.js';
import type { Req, RequestHeaders } from './types.js';
import { OVERLOADED } from './admission.js';
import type { EventTransport } from './common.js';
import { Exchange, Pipeline, type ChunkResult, type HttpServerOptions } from './pipeline.js';
import { WebSocketServer, type WebSocket } from 'ws';
import type { WsConnection, WsRoute } from './types.js';
import { EngineSocket, WS_MAX_PAYLOAD, maxQueue } from './websocket.js';

/** Longest request line plus headers accepted (node:http's default is 16 KiB). */
const MAX_HEAD_BYTES = 1024 * 1024;

/** The server on node:http: each request matched on the pipeline's table and served by it. */
export class NodeHttpServer {
  private server: Server;
  private sockets = new Set<Socket>();
  private pipeline: Pipeline;

  constructor(private opts: HttpServerOptions) {
    this.pipeline = new Pipeline(opts, false);
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
    const wss = new WebSocketServer({ noServer: true, maxPayload: WS_MAX_PAYLOAD });
    // pub/sub topics as uWS has them natively: topic → its connections (the same for every route)
    const topics = new Map<string, Set<WsConnection>>();
    const publisher = {
      publish: (topic: string, text: string) => {
        for (const c of topics.get(topic) ?? []) c.send(text);
      },
    };
    for (const r of routes) r.bind?.(publisher);
    this.server.on('upgrade', (ireq: IncomingMessage, socket: Socket, head: Buffer) => {
      const { path, query } = splitUrl(ireq.url);
      const route = routes.find((r) => r.pattern === path);
      const refuse = (status: number, body: string) => {
        socket.end(`HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Refused'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      };
      if (!route) {
        this.opts.logger.request('GET', path, 404, 0);
        return refuse(404, writeErrorBody(ApiError.notFound()));
      }
      const req: Req = { method: 'GET', path, query, headers: readHeaders(ireq), params: [], remoteAddress: ireq.socket.remoteAddress ?? '', body: null };
      const refused = route.upgrade?.(req);
      if (refused) {
        this.opts.logger.request('GET', path, refused.status, 0);
        return refuse(refused.status, refused.body as string);
      }
      wss.handleUpgrade(ireq, socket, head, (ws: WebSocket) => {
        const conn = new NodeSocket(maxQueue(route), ws, topics);
        ws.on('message', (data, isBinary) => route.message(conn, Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'), isBinary));
        ws.on('close', (code) => {
          conn.leaveAll();
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
    const idle = this.pipeline.drain(timeoutMs);
    this.server.close();
    this.server.closeIdleConnections();
    await idle;
    for (const s of this.sockets) s.destroy();
  }

  /**
   * One request: copied into a `Req`, matched on the pipeline's table, served by the pipeline.
   * The close of the response is watched only once the pipeline asks (NodeExchange.watchAbort):
   * a reply written within this call cannot have lost its client.
   */
  private handle(ireq: IncomingMessage, res: ServerResponse): void {
    const start = this.pipeline.timed ? performance.now() : 0;
    // llhttp accepts only its list of methods, all upper case
    const method = ireq.method ?? 'GET';
    const { path, query } = splitUrl(ireq.url);
    this.pipeline.arrive();
    const req: Req = { method, path, query, headers: readHeaders(ireq), params: [], remoteAddress: ireq.socket.remoteAddress ?? '', body: null };
    const x = new NodeExchange(req, start, ireq, res, this.pipeline);
    const found = this.pipeline.table.match(method, path);
    if (found?.route.extraHeaders) {
      req.headers.extra = {};
      for (const name of found.route.extraHeaders) req.headers.extra[name] = header(ireq, name);
    }
    this.pipeline.serve(x, found?.route, found?.params.length ?? 0, (i) => found!.params[i]);
  }
}

/** A WebSocket through `ws`; pub/sub topics are sets of connections (`topics`, one per server). */
class NodeSocket extends EngineSocket {
  private joined = new Set<string>();

  constructor(max: number, private ws: WebSocket, private topics: Map<string, Set<WsConnection>>) {
    super(max);
  }

  bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  subscribe(topic: string): void {
    let set = this.topics.get(topic);
    if (!set) this.topics.set(topic, (set = new Set()));
    set.add(this);
    this.joined.add(topic);
  }

  unsubscribe(topic: string): void {
    const set = this.topics.get(topic);
    set?.delete(this);
    if (set?.size === 0) this.topics.delete(topic);
    this.joined.delete(topic);
  }

  /** Leaves every topic (the socket closed). */
  leaveAll(): void {
    for (const t of [...this.joined]) this.unsubscribe(t);
  }

  protected writable(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  protected queued(): number {
    return this.ws.bufferedAmount;
  }

  protected transmit(text: string): void {
    this.ws.send(text);
  }

  protected end(code: number, reason: string): void {
    this.ws.close(code, reason);
  }
}

/**
 * One request's node:http primitives (see Exchange). The head is gathered and written at the end
 * with one `writeHead` of a flat `[name, value, …]` list, headers in the order given, a repeated
 * name right after its earlier values (the lines a `{ name: [values] }` object gives).
 */
class NodeExchange extends Exchange {
  private code = 200;
  private headers: string[] = [];

  constructor(req: Req, start: number, private ireq: IncomingMessage, private res: ServerResponse, private p: Pipeline) {
    super(req, start);
  }

  /** Watches the response's close (node:http reports the close that follows every response too; the pipeline tells them apart). */
  watchAbort(): void {
    if (this.watching) return;
    this.watching = true;
    this.res.once('close', () => this.p.clientGone(this));
  }

  declaredLength(): number {
    const h = this.ireq.headers['content-length'];
    return h === undefined ? -1 : Number(h);
  }

  skipBody(): void {
    this.ireq.resume();
  }

  readBody(p: Pipeline): void {
    this.ireq.on('data', (chunk: Buffer) => p.data(this, chunk, false));
    this.ireq.once('end', () => p.end(this));
  }

  /** Runs the writes; a head node:http refuses (e.g. a bad header value) is reported and the connection dropped. */
  write(writes: () => void): void {
    // a cut-off body: the connection closes after the reply (see afterCutOff)
    if (this.closing) this.res.setHeader('Connection', 'close');
    try {
      writes();
    } catch (err) {
      this.p.opts.onUnexpected(err, this.req);
      this.res.destroy();
    }
  }

  status(code: number): void {
    this.code = code;
  }

  header(name: string, value: string): void {
    const h = this.headers;
    let at = -1;
    for (let i = 0; i < h.length; i += 2) if (h[i] === name) at = i;
    if (at < 0) h.push(name, value);
    else h.splice(at + 2, 0, name, value);
  }

  /** Sets a header's one value: in place of its first line (dropping the others), else last. */
  private put(name: string, value: string): void {
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) {
      if (h[i] !== name) continue;
      h[i + 1] = value;
      let n = 0;
      while (h[i + 2 + n] === name) n += 2;
      if (n) h.splice(i + 2, n);
      return;
    }
    h.push(name, value);
  }

  /** Writes the head: the flat list, or after a `setHeader` (the cut-off's Connection) the object of lists it stands for. */
  private writeHead(): void {
    if (!this.closing) return void this.res.writeHead(this.code, this.headers);
    const obj: Record<string, string | string[]> = {};
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) {
      const prev = obj[h[i]];
      obj[h[i]] = prev === undefined ? h[i + 1] : Array.isArray(prev) ? [...prev, h[i + 1]] : [prev, h[i + 1]];
    }
    this.res.writeHead(this.code, obj);
  }

  end(body: string | Buffer): void {
    this.put('Content-Length', String(Buffer.byteLength(body)));
    this.writeHead();
    this.res.end(body);
  }

  endWithoutBody(): void {
    this.writeHead();
    this.res.end();
  }

  afterCutOff(): void {
    this.ireq.socket.destroySoon();
  }

  beginStream(size: number): void {
    this.put('Content-Length', String(size));
    this.writeHead();
  }

  private sent = 0;

  /** write, and under backpressure a wait for 'drain' (or 'close'); the last byte ends the response. */
  async sendChunk(chunk: Buffer, total: number): Promise<ChunkResult> {
    const res = this.res;
    if (res.destroyed) return 'aborted';
    this.sent += chunk.length;
    if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    if (this.aborted || res.destroyed) return 'aborted';
    if (this.sent !== total) return 'more';
    res.end();
    return 'done';
  }

  beginEvents(): void {
    this.writeHead();
    this.res.flushHeaders();
  }

  /** Dropped when node:http holds more than `max` bytes unsent. */
  eventTransport(max: number): EventTransport {
    const res = this.res;
    return {
      write: (text) => {
        if (res.destroyed) {
          this.gone?.(); // the client went away; its 'close' has not been seen yet
          return true;
        }
        res.write(text);
        return res.writableLength <= max;
      },
      end: () => res.end(),
      abort: () => res.destroy(),
    };
  }

  close(): void {
    this.res.destroy();
  }
}

/** The path and the query string (without '?') of a request target. */
function splitUrl(url = '/'): { path: string; query: string } {
  const q = url.indexOf('?');
  return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) };
}

/** A request header as one string ('' when absent; node:http's list of a repeated one joined). */
function header(r: IncomingMessage, name: string): string {
  return one(r.headers[name]);
}

function one(v: string | string[] | undefined): string {
  return v === undefined ? '' : typeof v === 'string' ? v : v.join(', ');
}

/** The headers every route may read (absent ones as ''); node:http parsed them all already. */
function readHeaders(r: IncomingMessage): RequestHeaders {
  const h = r.headers;
  const cookie = one(h.cookie);
  return {
    authorization: one(h.authorization),
    contentType: one(h['content-type']),
    cookie,
    csrf: cookie ? one(h['x-csrf-token']) : '',
    userAgent: one(h['user-agent']),
    forwardedFor: one(h['x-forwarded-for']),
    realIp: one(h['x-real-ip']),
    origin: one(h.origin),
    accept: one(h.accept),
    range: one(h.range),
    ifNoneMatch: one(h['if-none-match']),
    account: one(h['x-account-id']),
    requestId: one(h['x-request-id']),
  };
}

