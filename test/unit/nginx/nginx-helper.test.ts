/**
 * The nginx load-balancer helper (test/helpers/nginx.ts) against a real nginx from
 * Debian's package: two small node:http backends that answer with their own name behind one
 * nginx, and what a two-instance `svc` behind it will rely on: requests reach both backends
 * (round robin) with the forwarding headers set, a 5 MB request body arrives intact (it goes
 * through nginx's client body temp file, inside the helper's temp dir), Server-Sent Events
 * stream through unbuffered, and a WebSocket-style Upgrade reaches a backend and becomes a
 * two-way tunnel.
 *
 * Every test skips, saying why, when nginx is not installed (`bash ci/install-apt.sh nginx nginx`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { startNginx, nginxSkipReason, type Nginx } from '../../helpers/nginx.js';

const skipReason = nginxSkipReason();

/** Headers of the last upgrade request a backend saw. */
interface UpgradeSeen { backend: string; headers: IncomingHttpHeaders }

let nginx: Nginx | undefined;
const backends: Server[] = [];
/** Set by a backend's SSE handler right before it ends the response. */
let sseEnded = false;
const upgrades: UpgradeSeen[] = [];
/** The backends' upgraded sockets still open (destroyed in `after`). */
const tunnels = new Set<Socket>();

/**
 * A backend named `name`:
 * - `GET /who`: `{ name, headers }` (the request headers as the backend got them)
 * - `POST /upload`: `{ name, length, sha256 }` of the body
 * - `GET /events`: text/event-stream, three events 200 ms apart, then the end
 * - an Upgrade request: a raw 101 reply, then every byte received is echoed back
 */
function backend(name: string): Server {
  const srv = createServer((req, res) => {
    if (req.url === '/who') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name, headers: req.headers }));
    } else if (req.url === '/upload' && req.method === 'POST') {
      const hash = createHash('sha256');
      let length = 0;
      req.on('data', (d: Buffer) => { hash.update(d); length += d.length; });
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name, length, sha256: hash.digest('hex') }));
      });
    } else if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let n = 0;
      const tick = (): void => {
        n += 1;
        res.write(`event: tick\ndata: ${name} ${n}\n\n`);
        if (n < 3) {
          setTimeout(tick, 200);
        } else {
          setTimeout(() => { sseEnded = true; res.end(); }, 200);
        }
      };
      tick();
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  srv.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    upgrades.push({ backend: name, headers: req.headers });
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    if (head.length) socket.write(head);
    socket.on('data', (d) => socket.write(d));
    // an upgraded socket is the handler's own: node:http neither ends it when the peer does
    // (its sockets allow half-open) nor closes it in closeAllConnections(), and server.close()
    // waits for it
    socket.on('end', () => socket.end());
    socket.on('error', () => socket.destroy());
    tunnels.add(socket);
    socket.on('close', () => tunnels.delete(socket));
  });
  return srv;
}

/** Listens on a free loopback port; resolves with `127.0.0.1:<port>`. */
function listen(srv: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(`127.0.0.1:${(srv.address() as { port: number }).port}`));
  });
}

/** One request through nginx on a fresh connection; resolves with status and body text. */
function send(method: string, path: string, body?: Buffer): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${nginx!.url}${path}`, { method, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

before(async () => {
  if (skipReason) return;
  const addresses: string[] = [];
  for (const name of ['alpha', 'beta']) {
    const srv = backend(name);
    backends.push(srv);
    addresses.push(await listen(srv));
  }
  nginx = await startNginx(addresses);
});

after(async () => {
  await nginx?.stop();
  for (const socket of tunnels) socket.destroy();
  for (const srv of backends) {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
});

test('requests through nginx reach both backends, with the forwarding headers', { timeout: 20_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  const seen = new Map<string, number>();
  for (let i = 0; i < 10; i++) {
    const res = await send('GET', '/who');
    assert.equal(res.status, 200, nginx!.logs());
    const { name, headers } = JSON.parse(res.text) as { name: string; headers: IncomingHttpHeaders };
    seen.set(name, (seen.get(name) ?? 0) + 1);
    assert.equal(headers.host, `127.0.0.1:${nginx!.port}`, 'Host keeps the port the client used');
    assert.equal(headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(headers['x-forwarded-proto'], 'http');
    assert.equal(headers['x-real-ip'], '127.0.0.1');
  }
  // round robin over two servers alternates: five each
  assert.deepEqual([...seen.entries()].sort(), [['alpha', 5], ['beta', 5]]);
});

test('a 5 MB POST body arrives intact', { timeout: 20_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  const body = randomBytes(5 * 1024 * 1024);
  const res = await send('POST', '/upload', body);
  assert.equal(res.status, 200, `${res.text}\n${nginx!.logs()}`);
  const got = JSON.parse(res.text) as { name: string; length: number; sha256: string };
  assert.equal(got.length, body.length);
  assert.equal(got.sha256, createHash('sha256').update(body).digest('hex'));
});

test('Server-Sent Events stream through without buffering', { timeout: 20_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  sseEnded = false;
  const { firstBeforeEnd, text, type } = await new Promise<{ firstBeforeEnd: boolean; text: string; type: string | undefined }>((resolve, reject) => {
    const req = request(`${nginx!.url}/events`, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      let firstBeforeEnd: boolean | undefined;
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        // the backend ends 600 ms after its first event: a buffering proxy delivers nothing
        // before that
        firstBeforeEnd ??= !sseEnded;
        text += d;
      });
      res.on('end', () => resolve({ firstBeforeEnd: firstBeforeEnd ?? false, text, type: res.headers['content-type'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal(type, 'text/event-stream');
  assert.ok(firstBeforeEnd, 'the first event arrived only after the backend ended the response');
  assert.match(text, /^event: tick\ndata: (alpha|beta) 1\n\nevent: tick\ndata: \1 2\n\nevent: tick\ndata: \1 3\n\n$/);
});

test('a WebSocket-style Upgrade reaches a backend and becomes a two-way tunnel', { timeout: 20_000 }, async (t) => {
  if (skipReason) return t.skip(skipReason);
  upgrades.length = 0;
  const { status, echo } = await new Promise<{ status: number; echo: string }>((resolve, reject) => {
    const req = request(`${nginx!.url}/socket`, {
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
      },
    });
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      let echo = head.toString('utf8');
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        echo += d;
        if (echo.length >= 'ping'.length) {
          socket.destroy();
          resolve({ status: res.statusCode!, echo });
        }
      });
      socket.on('error', reject);
      socket.write('ping');
    });
    req.on('response', (res) => reject(new Error(`no upgrade: HTTP ${res.statusCode}\n${nginx!.logs()}`)));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 101);
  assert.equal(echo, 'ping');
  assert.equal(upgrades.length, 1);
  const { headers } = upgrades[0];
  assert.equal(headers.upgrade, 'websocket');
  assert.match(String(headers.connection), /\bupgrade\b/i);
});
