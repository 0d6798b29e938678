/**
 * WebSocket endpoints on both HTTP engines (the node:http adapter upgrades through `ws`,
 * uWS natively): messages both ways, the open request's path and query, close codes, refused
 * upgrades answered with their status, unknown paths 404, and a consumer that stops reading
 * dropped with 1008 once its queue passes the limit (the server's close code; the client's may be
 * 1006, see the test). Real sockets on loopback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { HttpServer, errorReply } from '../../../src/http/server.js';
import { NodeHttpServer } from '../../../src/http/node-server.js';
import { chooseEngine } from '../../../src/http/uws-loader.js';
import { createLogger } from '../../../src/log/logger.js';
import { ApiError } from '../../../src/errors/api-error.js';
import { json, WS_SLOW_CONSUMER, type WsConnection, type WsRoute } from '../../../src/http/types.js';

const engine = chooseEngine();
const ENGINES = [
  { name: 'node:http', make: (o: ConstructorParameters<typeof NodeHttpServer>[0]) => new NodeHttpServer(o) },
  ...(engine.engine === 'uws' ? [{ name: 'uWS', make: (o: ConstructorParameters<typeof NodeHttpServer>[0]) => new HttpServer(o, engine.uws) }] : []),
];

function options(websockets: WsRoute[]) {
  return {
    host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, jsonBodyBytes: 1 << 20, bodyTimeoutMs: 30_000, maxInFlight: 1000, maxInflightBodyBytes: 1 << 26,
    logger: createLogger({ format: 'json', level: 'error', requests: false, write: () => {} }),
    routes: [{ method: 'get' as const, pattern: '/plain', handler: () => json(200, '{"ok":true}') }, { method: 'any' as const, pattern: '/*', handler: () => errorReply(ApiError.notFound()) }],
    onUnexpected: () => {},
    websockets,
  };
}

const opened = (ws: WebSocket) => new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
const nextMessage = (ws: WebSocket) => new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
const closedWith = (ws: WebSocket) => new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
const refusedWith = (url: string) => new Promise<string>((resolve) => {
  const ws = new WebSocket(url);
  ws.once('unexpected-response', (_req, res) => { resolve(String(res.statusCode)); ws.terminate(); });
  ws.once('error', (err) => resolve(String(err.message)));
  ws.once('open', () => resolve('opened'));
});

for (const e of ENGINES) {
  test(`${e.name}: WebSocket messages, close codes, refusals and slow consumers`, async () => {
    const closes: number[] = [];
    let lastOpen = '';
    let slow: WsConnection | null = null;
    const echo: WsRoute = {
      pattern: '/ws/echo',
      open: (c, req) => { lastOpen = `${req.path}?${req.query}`; c.data.n = 0; },
      message: (c, text) => { c.data.n = Number(c.data.n) + 1; c.send(`echo:${text}:${c.data.n}`); },
      close: (_c, code) => closes.push(code),
    };
    const refused: WsRoute = { pattern: '/ws/full', upgrade: () => errorReply(new ApiError(503, 'overloaded', 'full')), open: () => assert.fail('opened'), message: () => {}, close: () => {} };
    const floodCloses: number[] = [];
    const flood: WsRoute = { pattern: '/ws/flood', maxBackpressure: 64 * 1024, open: (c) => { slow = c; }, message: () => {}, close: (_c, code) => floodCloses.push(code) };
    const srv = e.make(options([echo, refused, flood]));
    const port = await srv.listen();
    const base = `ws://127.0.0.1:${port}`;
    try {
      const ws = new WebSocket(`${base}/ws/echo?token=abc`);
      await opened(ws);
      assert.equal(lastOpen, '/ws/echo?token=abc');
      ws.send('hi');
      assert.equal(await nextMessage(ws), 'echo:hi:1');
      ws.send('again');
      assert.equal(await nextMessage(ws), 'echo:again:2');
      const closing = closedWith(ws);
      ws.close(4001, 'bye');
      assert.equal(await closing, 4001);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(closes, [4001], 'the route saw the close code');
      // plain HTTP still answers beside the WebSocket endpoints
      assert.equal((await fetch(`http://127.0.0.1:${port}/plain`)).status, 200);
      assert.equal(await refusedWith(`${base}/ws/full`), '503');
      assert.match(await refusedWith(`${base}/ws/nowhere`), /404/);

      // a consumer that stops reading: the server's queue passes 64 KiB and the connection is dropped
      const reader = new WebSocket(`${base}/ws/flood`);
      reader.on('error', () => {}); // a frame cut short by the drop (see below)
      await opened(reader);
      (reader as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
      const code = closedWith(reader);
      const chunk = 'x'.repeat(16 * 1024);
      let refusedAt = -1;
      for (let i = 0; i < 2000; i++) {
        if (!slow!.send(chunk)) { refusedAt = i; break; }
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5));
      }
      assert.ok(refusedAt > 0, 'send() refused once the queue passed the limit');
      (reader as unknown as { _socket: { resume(): void } })._socket.resume();
      // The server ends the connection with 1008. The client reads that close frame when the bytes
      // before it arrive whole; an engine dropping a consumer whose socket buffers are full may
      // cut the frame it was sending (uWS does on a busy machine), and the client then sees 1006.
      assert.ok([WS_SLOW_CONSUMER, 1006].includes(await code));
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(floodCloses, [WS_SLOW_CONSUMER], 'the server closed the slow consumer with 1008');
    } finally {
      await srv.drain(1000);
    }
  });
}
