/**
 * Request observers (src/http/pipeline.ts, `HttpServerOptions.requestObservers`) on both HTTP
 * engines: one call per ended request with the matched route's pattern, the status and a
 * duration; 404s carry the catch-all's pattern, a streamed reply is observed when it ends, a client
 * gone before the answer is observed as 499, and an event stream when it closes. Real sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { HttpServer, errorReply } from '../../../src/http/server.js';
import { NodeHttpServer } from '../../../src/http/node-server.js';
import type { RequestEnd } from '../../../src/http/pipeline.js';
import { chooseEngine } from '../../../src/http/uws-loader.js';
import { createLogger } from '../../../src/log/logger.js';
import { ApiError } from '../../../src/errors/api-error.js';
import { json, type Route } from '../../../src/http/types.js';

const engine = chooseEngine();
const ENGINES = [
  { name: 'node:http', make: (o: ConstructorParameters<typeof NodeHttpServer>[0]) => new NodeHttpServer(o) },
  ...(engine.engine === 'uws' ? [{ name: 'uWS', make: (o: ConstructorParameters<typeof NodeHttpServer>[0]) => new HttpServer(o, engine.uws) }] : []),
];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const e of ENGINES) {
  test(`${e.name}: observers see each ended request once, with its route pattern, status and duration`, async () => {
    const seen: RequestEnd[] = [];
    const routes: Route[] = [
      { method: 'get', pattern: '/items/:id', handler: async () => { await sleep(30); return json(200, '{"ok":true}'); } },
      { method: 'get', pattern: '/slow', handler: async () => { await sleep(2000); return json(200, '{}'); } },
      {
        method: 'get', pattern: '/file', handler: () => ({
          status: 200, body: '', stream: { size: 6, open: async function* () { yield Buffer.from('abc'); await sleep(10); yield Buffer.from('def'); } },
        }),
      },
      {
        method: 'get', pattern: '/events', handler: () => ({
          status: 200, body: '', events: { open: (sink) => { sink.write('event: hello\ndata: {}\n\n'); setTimeout(() => sink.close(), 20); } },
        }),
      },
      { method: 'any', pattern: '/*', handler: () => errorReply(ApiError.notFound()) },
    ];
    const srv = e.make({
      host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, jsonBodyBytes: 1 << 20, bodyTimeoutMs: 30_000, maxInFlight: 1000, maxInflightBodyBytes: 1 << 26,
      // the request log is off: observers alone make the engine read the clock
      logger: createLogger({ format: 'json', level: 'error', requests: false, write: () => {} }),
      routes, onUnexpected: (err) => assert.fail(String(err)), requestObservers: [(end) => seen.push(end)],
    });
    const port = await srv.listen();
    const base = `http://127.0.0.1:${port}`;
    try {
      assert.equal((await fetch(`${base}/items/42?x=1`)).status, 200);
      assert.equal((await fetch(`${base}/nowhere`)).status, 404);
      assert.equal(await (await fetch(`${base}/file`)).text(), 'abcdef');
      assert.match(await (await fetch(`${base}/events`)).text(), /hello/);
      // a client that goes away before the answer
      await new Promise<void>((resolve) => {
        const r = request(`${base}/slow`);
        r.on('error', () => resolve());
        r.end();
        setTimeout(() => { r.destroy(); resolve(); }, 100);
      });
      for (let i = 0; i < 100 && seen.length < 5; i++) await sleep(20);
      const byRoute = new Map(seen.map((s) => [s.route, s]));
      assert.equal(seen.length, 5, JSON.stringify(seen.map((s) => [s.route, s.status])));
      assert.deepEqual([...byRoute.keys()].sort(), ['/*', '/events', '/file', '/items/:id', '/slow']);
      const item = byRoute.get('/items/:id')!;
      assert.deepEqual([item.status, item.req.method, item.req.path, item.req.query], [200, 'GET', '/items/42', 'x=1']);
      assert.ok(item.durationMs >= 25 && item.durationMs < 2000, `duration ${item.durationMs} ms`);
      assert.equal(byRoute.get('/*')!.status, 404);
      assert.equal(byRoute.get('/file')!.status, 200);
      assert.equal(byRoute.get('/events')!.status, 200);
      assert.equal(byRoute.get('/slow')!.status, 499);
    } finally {
      await srv.drain(1000);
    }
  });
}
