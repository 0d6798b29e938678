/**
 * Files and limits, end to end on both HTTP engines: data directory 0700 and files
 * 0600 with a start-up warning for looser modes; a small JSON body limit beside the upload limit;
 * passwords over 256 characters refused before hashing; a body deadline that cuts off a trickled
 * body; caps on requests in flight and on buffered body bytes answering 503 `overloaded`; and
 * 2,000 idle connections that do not starve normal requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError } from '../helpers/records-fixtures.js';
import { TEST_BACKEND } from '../helpers/backend.js';

const ENGINES = [{ name: 'uWS', env: {} }, { name: 'node:http', env: { SERVICE_HTTP_ENGINE: 'node' } }];

async function withSvc(env: Record<string, string>, fn: (srv: Svc) => Promise<void>): Promise<void> {
  const srv = await startSvc({ env });
  try {
    await fn(srv);
  } finally {
    await srv.stop();
    rmSync(srv.dataDir, { recursive: true, force: true });
  }
}

/** Opens a raw connection to the server. */
function rawSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname, () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything the server sends on `s` until it closes the connection (or `ms` pass). */
function readUntilClose(s: Socket, ms: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const t = setTimeout(() => resolve({ text, closed: false }), ms);
    s.on('data', (d) => (text += d.toString()));
    s.once('close', () => {
      clearTimeout(t);
      resolve({ text, closed: true });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `fn` until `ok` holds for its answer or `ms` pass, and returns the last answer: the server
 * takes in connections and bytes in its own time, which a loaded machine stretches.
 */
async function retry<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await fn();
  while (!ok(v) && Date.now() < deadline) {
    await sleep(50);
    v = await fn();
  }
  return v;
}

/** Sends `raw` on a new connection and reads the answer until the server closes it. */
async function exchange(url: string, raw: string): Promise<{ text: string; closed: boolean }> {
  const s = await rawSocket(url);
  const reading = readUntilClose(s, 5000);
  s.write(raw);
  return reading;
}

test('the data directory is 0700 and its files 0600, stored files included; looser modes are reported at start', async (t) => {
  await withSvc({}, async (srv) => {
    await srv.createCollection({ name: 'docs', fields: [{ name: 'f', type: 'file' }], createRule: '@public', viewRule: '@public' });
    const form = new FormData();
    form.set('f', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'a.txt');
    const up = await fetch(`${srv.url}/api/collections/docs/records`, { method: 'POST', body: form });
    assert.equal(up.status, 201, await up.text());
    const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [join(dir, e.name), ...walk(join(dir, e.name))] : [join(dir, e.name)]));
    const mode = (p: string) => statSync(p).mode & 0o777;
    assert.equal(mode(srv.dataDir), 0o700, 'data directory');
    const all = walk(srv.dataDir);
    // the SQLite database and its WAL live in the data directory; PostgreSQL keeps no file there
    assert.ok((TEST_BACKEND === 'postgres' || all.some((p) => p.endsWith('data.db-wal'))) && all.some((p) => p.includes('storage')), all.join(' '));
    for (const p of all) assert.equal(mode(p), statSync(p).isDirectory() ? 0o700 : 0o600, `${p} has mode ${mode(p).toString(8)}`);
  });
  // a data directory opened with looser modes: one warning naming them
  const loose = TEST_BACKEND === 'postgres' ? 'the looser-mode case loosens data.db, the SQLite database file, which the PostgreSQL backend does not have; the start-up mode warning is logged by the SQLite open path only (src/store/open.ts)' : false;
  await t.test('looser modes are reported at start', { skip: loose }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-modes-'));
    const srv = await startSvc({ dataDir: dir });
    await srv.stop();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'data.db'), 0o644);
    const again = await startSvc({ dataDir: dir, superuser: false });
    try {
      const warn = again.stderr().split('\n').find((l) => l.includes('readable or writable by other users'));
      assert.ok(warn, again.stderr());
      assert.ok(warn.includes('data.db (mode 0644)') && warn.includes('(mode 0755)'), warn);
    } finally {
      await again.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const engine of ENGINES) {
  test(`${engine.name}: JSON bodies have a small limit (1 MiB, SERVICE_BODY_LIMIT), uploads keep maxUploadSize; nothing is written`, async () => {
    await withSvc({ ...engine.env, SERVICE_BODY_LIMIT: '4096' }, async (srv) => {
      await srv.createCollection({ name: 'notes', fields: [{ name: 't', type: 'text' }, { name: 'f', type: 'file', options: { maxSize: 2 * 1024 * 1024 } }], createRule: '@public', listRule: '@public' });
      const big = await srv.api('POST', '/api/collections/notes/records', { body: { t: 'x'.repeat(5000) } });
      assertError(big, 413, 'payload_too_large');
      const ok = await srv.api('POST', '/api/collections/notes/records', { body: { t: 'x'.repeat(3000) } });
      assert.equal(ok.status, 201, ok.text);
      // a multipart upload far larger than the JSON limit is fine
      const form = new FormData();
      form.set('t', 'with a file');
      form.set('f', new Blob([Buffer.alloc(1024 * 1024, 1)]), 'big.bin');
      const up = await fetch(`${srv.url}/api/collections/notes/records`, { method: 'POST', body: form });
      assert.equal(up.status, 201, await up.text());
      const list = await srv.api('GET', '/api/collections/notes/records');
      assert.equal(list.body.items.length, 2, 'the refused body wrote nothing');
    });
    await withSvc(engine.env, async (srv) => {
      const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'x', fields: [{ name: 'pad', type: 'text' }], pad: 'y'.repeat(1024 * 1024 + 10) } });
      assertError(r, 413, 'payload_too_large');
    });
  });

  test(`${engine.name}: the multipart allowance belongs to record writes of collections with file fields; any other multipart body has the JSON limit (413)`, async () => {
    await withSvc({ ...engine.env, SERVICE_BODY_LIMIT: '4096' }, async (srv) => {
      await srv.createCollection({ name: 'people', type: 'auth', fields: [], createRule: '@public', viewRule: '@public' });
      await srv.createCollection({ name: 'plain', fields: [{ name: 't', type: 'text' }], createRule: '@public', updateRule: '@public', listRule: '@public' });
      await srv.createCollection({ name: 'files', fields: [{ name: 't', type: 'text' }, { name: 'f', type: 'file', options: { maxSize: 2 * 1024 * 1024 } }], createRule: '@public', updateRule: '@public', listRule: '@public' });
      const plainRec = await srv.api('POST', '/api/collections/plain/records', { body: { t: 'x' } });
      assert.equal(plainRec.status, 201, plainRec.text);
      const filesRec = await srv.api('POST', '/api/collections/files/records', { body: { t: 'x' } });
      assert.equal(filesRec.status, 201, filesRec.text);
      /** A multipart body of about `bytes` bytes: one text part, and a file part when `file`. */
      const form = (bytes: number, file: boolean) => {
        const f = new FormData();
        f.set('t', 'y'.repeat(file ? 10 : bytes));
        if (file) f.set('f', new Blob([Buffer.alloc(bytes, 1)]), 'big.bin');
        return f;
      };
      /**
       * Sends `body` with its length declared (fetch), then chunked without a length (raw): only
       * the first 16 KiB, past the JSON limit, so the answer is read before the server closes (a
       * client still writing when it closes would get a reset that loses the answer).
       */
      const both = async (method: string, path: string, body: FormData): Promise<Array<{ status: number; text: string }>> => {
        const declared = await fetch(srv.url + path, { method, body });
        const out = [{ status: declared.status, text: await declared.text() }];
        const encoded = new Response(body);
        const type = encoded.headers.get('content-type')!;
        const bytes = Buffer.from(await encoded.arrayBuffer());
        const { hostname, port } = new URL(srv.url);
        const s = await rawSocket(srv.url);
        let text = '';
        s.on('data', (d) => (text += d.toString()));
        s.write(`${method} ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`);
        const part = bytes.subarray(0, 16 * 1024);
        s.write(`${part.length.toString(16)}\r\n`);
        s.write(part);
        s.write('\r\n');
        await retry(async () => text, (t) => /\r\n\r\n[\s\S]*\}/.test(t), 10_000);
        const r = { text };
        s.destroy();
        const m = /^HTTP\/1\.1 (\d{3})/.exec(r.text);
        out.push({ status: m ? Number(m[1]) : 0, text: r.text.slice(r.text.indexOf('\r\n\r\n') + 4) });
        return out;
      };
      const refused: Array<[string, string, boolean]> = [
        ['POST', '/api/collections/people/auth-with-password', false],
        ['POST', '/api/collections/people/records', false],
        ['POST', '/api/collections/plain/records', false],
        ['PATCH', `/api/collections/plain/records/${plainRec.body.id}`, false],
        ['POST', '/api/collections', false],
        ['POST', '/api/collections/nope/records', true],
      ];
      for (const [method, path, file] of refused) {
        for (const r of await both(method, path, form(64 * 1024, file))) {
          assert.equal(r.status, 413, `${method} ${path}: ${r.text}`);
          const body = JSON.parse(r.text.trim().split('\r\n').find((l) => l.startsWith('{')) ?? r.text);
          assert.equal(body.code, 'payload_too_large', `${method} ${path}`);
          assert.equal(body.status, 413);
        }
      }
      // record writes of a collection with a file field keep the upload limit
      const created = await fetch(`${srv.url}/api/collections/files/records`, { method: 'POST', body: form(1024 * 1024, true) });
      assert.equal(created.status, 201, await created.text());
      const updated = await fetch(`${srv.url}/api/collections/files/records/${filesRec.body.id}`, { method: 'PATCH', body: form(1024 * 1024, true) });
      assert.equal(updated.status, 200, await updated.text());
      const list = await srv.api('GET', '/api/collections/plain/records');
      assert.equal(list.body.items.length, 1, 'the refused bodies wrote nothing');
    });
  });

  test(`${engine.name}: a body trickled byte by byte is cut off at the deadline (408 request_timeout, connection closed); the cap on requests in flight and on buffered body bytes answer 503 overloaded`, async () => {
    await withSvc({ ...engine.env, SERVICE_BODY_TIMEOUT: '2', SERVICE_MAX_CONNECTIONS: '6', SERVICE_MAX_INFLIGHT_BODY_BYTES: '3000' }, async (srv) => {
      await srv.createCollection({ name: 'notes', fields: [{ name: 't', type: 'text' }], createRule: '@public', listRule: '@public' });
      const { host } = new URL(srv.url);
      const head = (len: number) => `POST /api/collections/notes/records HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`;
      // trickle: one byte every 200 ms of a body that would take 20 s
      const s = await rawSocket(srv.url);
      s.write(head(100));
      const t0 = Date.now();
      const reading = readUntilClose(s, 10_000);
      const body = `{"t":"${'z'.repeat(93)}"}`;
      for (let i = 0; i < body.length && !s.destroyed; i++) {
        s.write(body[i]);
        await sleep(200);
        if (Date.now() - t0 > 6000) break;
      }
      const got = await reading;
      assert.ok(got.closed, 'the server closed the connection');
      assert.match(got.text, /^HTTP\/1\.1 408 /, got.text);
      assert.match(got.text, /"code":"request_timeout"/);
      assert.ok(Date.now() - t0 < 8000, `cut off after ${Date.now() - t0} ms`);
      assert.equal((await srv.api('GET', '/api/collections/notes/records')).body.items.length, 0, 'nothing written');

      // buffered body bytes: 2,500 bytes held by one request, then 1,000 more by another → 503
      const a = await rawSocket(srv.url);
      a.write(head(5000) + '{"t":"' + 'a'.repeat(2500));
      // once the server holds a's bytes, 600 more (not JSON: nothing is written) no longer fit
      const probe = `POST /api/collections/notes/records HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 600\r\nConnection: close\r\n\r\n${'x'.repeat(600)}`;
      await retry(() => exchange(srv.url, probe), (r) => /^HTTP\/1\.1 503 /.test(r.text));
      const b = await rawSocket(srv.url);
      const bRead = readUntilClose(b, 5000);
      b.write(head(1500) + '{"t":"' + 'b'.repeat(1000));
      const bGot = await bRead;
      assert.match(bGot.text, /^HTTP\/1\.1 503 /, bGot.text);
      assert.match(bGot.text, /"code":"overloaded"/);
      a.destroy();
      await sleep(300);

      // requests in flight: six stalled bodies fill the cap; the next request is refused
      const held: Socket[] = [];
      for (let i = 0; i < 6; i++) {
        const h = await rawSocket(srv.url);
        h.write(head(50) + '{');
        held.push(h);
      }
      // (a new connection: on node:http the cap counts connections, and a kept-alive one is already in;
      // asked again until the server has taken in the six)
      const over = await retry(() => exchange(srv.url, `GET /api/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), (r) => /^HTTP\/1\.1 503 /.test(r.text));
      assert.match(over.text, /^HTTP\/1\.1 503 /, over.text);
      assert.match(over.text, /"code":"overloaded"/);
      for (const h of held) h.destroy();
      // the server notices the closed connections in its own time
      const again = await retry(() => srv.api('GET', '/api/health'), (r) => r.status === 200);
      assert.equal(again.status, 200, 'serves again once they are gone');
    });
  });

  test(`${engine.name}: 2,000 idle connections do not starve normal requests`, async () => {
    await withSvc(engine.env, async (srv) => {
      const idle: Socket[] = [];
      try {
        for (let i = 0; i < 2000; i++) {
          const s = await rawSocket(srv.url);
          if (i % 2) s.write('GET /api/he'); // half of them a partial request line
          idle.push(s);
        }
        const t0 = Date.now();
        const rs = await Promise.all(Array.from({ length: 50 }, () => srv.api('GET', '/api/health')));
        for (const r of rs) assert.equal(r.status, 200);
        assert.ok(Date.now() - t0 < 10_000, `50 requests beside 2,000 idle connections took ${Date.now() - t0} ms`);
      } finally {
        for (const s of idle) s.destroy();
      }
    });
  });
}

test('passwords over 256 characters are refused before any hashing: sign-in, sign-up, reset', async () => {
  await withSvc({}, async (srv) => {
    await srv.createCollection({ name: 'members', type: 'auth', fields: [], createRule: '@public' });
    const long = 'p'.repeat(257);
    const signin = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'x@example.com', password: long } });
    assertError(signin, 400, 'validation_failed');
    assert.equal(signin.body.data.password.code, 'validation_max');
    const su = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: 'admin@test.local', password: 'q'.repeat(100_000) } });
    assertError(su, 400, 'validation_failed');
    const signup = await srv.api('POST', '/api/collections/members/records', { body: { email: 'y@example.com', password: long } });
    assertError(signup, 400, 'validation_failed');
    assert.equal(signup.body.data.password.code, 'validation_max');
    const ok = await srv.api('POST', '/api/collections/members/records', { body: { email: 'z@example.com', password: 'p'.repeat(256) } });
    assert.equal(ok.status, 201, ok.text);
  });
});
