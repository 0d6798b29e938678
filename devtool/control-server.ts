/**
 * The control server of a dev session (docs/devtool.md), on the
 * session host and its own port. No authentication; any origin may read it.
 *
 * - `GET /_devtool/status`: 200 with the status object, `access-control-allow-origin: *`, always
 *   on (also under `--no-live-reload`).
 * - `GET /_devtool/reload`: the reload stream (Server-Sent Events). A new stream first gets
 *   `event: ready` with `{session, cursor, refresh}` and the id `<session>.<cursor>`; each
 *   successful rebuild then sends `event: reload` with `{cursor, generation}` under the id
 *   `<session>.<cursor>`. The cursor counts successful rebuilds of the session. A reconnecting
 *   browser sends `Last-Event-ID` (or `?last_event_id=`): `refresh` is true when it names another
 *   session (a restarted server) or an older cursor (notices were missed: a full refresh instead
 *   of replaying a possibly incomplete delta), false when it is current or absent. Under
 *   `--no-live-reload` the stream still opens but carries no reload events.
 * - Build errors (for the page overlay of snippet.ts): `ready` also carries `error`, the failure
 *   of the latest build or null, and a failed build sends `event: build-error` with
 *   `{file, line, message, generation}` and no id (the cursor counts reloads only). The next
 *   successful build's `reload` clears it. Under `--no-live-reload` no build-error events either.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { StatusObject } from './status.js';

/**
 * Where a build failed, as the page overlay shows it: `file` relative to the site directory and
 * its 1-based `line` (null when the failure names no source, such as an I/O error), and the reason.
 */
export interface BuildFailure {
  file: string | null;
  line: number | null;
  message: string;
}

/** Keep-alive comment interval on idle reload streams. */
const PING_MS = 15_000;

export interface ControlServerOptions {
  host: string;
  /** the current status object (read per request) */
  status: () => StatusObject;
  /** this session's id (random, per session) */
  session: string;
  /** whether reload events are sent */
  liveReload: boolean;
}

export interface ControlServer {
  port: number;
  /** `http://host:port` */
  url: string;
  /** the current reload cursor (successful rebuilds announced) */
  cursor(): number;
  /** announces a successful rebuild: clears the build failure, bumps the cursor and sends `reload` to every stream */
  reload(generation: number): void;
  /** announces a failed build: keeps `failure` for new streams' `ready` and sends `build-error` to every stream */
  buildFailed(failure: BuildFailure, generation: number): void;
  /** number of open reload streams */
  clients(): number;
  close(): Promise<void>;
}

/** Formats a host for a URL (brackets around IPv6). */
export function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Starts the control server on `opts.host`, port chosen by the system. */
export async function startControlServer(opts: ControlServerOptions): Promise<ControlServer> {
  let cursor = 0;
  let failure: BuildFailure | null = null;
  const streams = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const cors = { 'access-control-allow-origin': '*' };

  const reloadStream = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams): void => {
    const last = (req.headers['last-event-id'] as string | undefined) ?? query.get('last_event_id') ?? '';
    let refresh = false;
    if (last) {
      const dot = last.lastIndexOf('.');
      const session = dot < 0 ? last : last.slice(0, dot);
      const seen = dot < 0 ? NaN : Number(last.slice(dot + 1));
      refresh = session !== opts.session || !Number.isInteger(seen) || seen !== cursor;
    }
    res.writeHead(200, { ...cors, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(`retry: 1000\nevent: ready\nid: ${opts.session}.${cursor}\ndata: ${JSON.stringify({ session: opts.session, cursor, refresh, error: failure })}\n\n`);
    streams.add(res);
    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    res.on('close', () => {
      clearInterval(ping);
      streams.delete(res);
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://control');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'GET, OPTIONS', 'access-control-allow-headers': 'Last-Event-ID, Accept', 'access-control-max-age': '86400' });
      res.end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...cors, allow: 'GET, OPTIONS', 'content-type': 'text/plain; charset=utf-8' });
      res.end('Method not allowed.\n');
      return;
    }
    if (url.pathname === '/_devtool/status') {
      const body = JSON.stringify(opts.status());
      res.writeHead(200, { ...cors, 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (url.pathname === '/_devtool/reload' && req.method === 'GET') {
      reloadStream(req, res, url.searchParams);
      return;
    }
    res.writeHead(404, { ...cors, 'content-type': 'text/plain; charset=utf-8' });
    res.end('Not found.\n');
  };

  const server: Server = createServer({ keepAliveTimeout: 5000 }, handle);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${urlHost(opts.host)}:${port}`,
    cursor: () => cursor,
    clients: () => streams.size,
    reload(generation: number) {
      failure = null;
      if (!opts.liveReload) return;
      cursor++;
      const frame = `event: reload\nid: ${opts.session}.${cursor}\ndata: ${JSON.stringify({ cursor, generation })}\n\n`;
      for (const s of streams) s.write(frame);
    },
    buildFailed(f: BuildFailure, generation: number) {
      failure = f;
      if (!opts.liveReload) return;
      const frame = `event: build-error\ndata: ${JSON.stringify({ ...f, generation })}\n\n`;
      for (const s of streams) s.write(frame);
    },
    close() {
      return new Promise<void>((resolve) => {
        for (const s of streams) s.end();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}
