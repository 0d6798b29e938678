/**
 * `svc serve --public=DIR` (0-conventions.md "Static files and the devtool site"):
 * files at `/` beside the API on both HTTP engines, index files, types, ETag and caching, ranges,
 * a plain-text 404, `/api/` and `/_/` winning, and containment (encoded `..`, NUL, symlinks).
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, runCli, type Svc } from '../helpers/server.js';

let pub: string;
let outside: string;
const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);

before(() => {
  pub = mkdtempSync(join(tmpdir(), 'svc-public-'));
  outside = mkdtempSync(join(tmpdir(), 'svc-outside-'));
  writeFileSync(join(pub, 'index.html'), '<!doctype html><h1>root</h1>');
  mkdirSync(join(pub, 'docs', 'deep'), { recursive: true });
  writeFileSync(join(pub, 'docs', 'index.html'), '<h1>docs</h1>');
  writeFileSync(join(pub, 'docs', 'deep', 'page one.txt'), 'spaced');
  mkdirSync(join(pub, 'noindex'));
  // a directory named like a host: `//evil.example` must not redirect to the host evil.example
  mkdirSync(join(pub, 'evil.example'));
  writeFileSync(join(pub, 'evil.example', 'index.html'), '<h1>local</h1>');
  writeFileSync(join(pub, 'app.js'), 'console.log(1)');
  writeFileSync(join(pub, 'style.css'), 'body{}');
  writeFileSync(join(pub, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(pub, 'data.json'), '{"a":1}');
  writeFileSync(join(pub, 'blob.bin'), Buffer.from([1, 2, 3]));
  writeFileSync(join(pub, 'big.bin'), big);
  writeFileSync(join(pub, '.env'), 'SECRET=1');
  mkdirSync(join(pub, '.well-known'));
  writeFileSync(join(pub, '.well-known', 'security.txt'), 'Contact: x');
  writeFileSync(join(outside, 'secret.txt'), 'outside secret');
  symlinkSync(join(outside, 'secret.txt'), join(pub, 'leak.txt'));
  symlinkSync(outside, join(pub, 'leakdir'));
  symlinkSync(join(pub, 'app.js'), join(pub, 'alias.js'));
});
after(() => {
  rmSync(pub, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

/** A GET with the request target exactly as given (fetch would normalize `..`). */
function raw(url: string, path: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const engine of ['default', 'node'] as const) {
  describe(`static files (${engine} engine)`, () => {
    let srv: Svc;
    before(async () => {
      srv = await startSvc({ args: [`--public=${pub}`], superuser: false, env: engine === 'node' ? { SERVICE_HTTP_ENGINE: 'node' } : {} });
    });
    after(async () => { await srv?.stop(); });

    test('index files, content types and caching headers', async () => {
      const root = await fetch(`${srv.url}/`);
      assert.equal(root.status, 200);
      assert.equal(root.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(await root.text(), '<!doctype html><h1>root</h1>');
      assert.equal(root.headers.get('cache-control'), 'no-cache');
      assert.match(root.headers.get('etag') ?? '', /^"[0-9a-z]+-[0-9a-z]+"$/);
      assert.ok(root.headers.get('last-modified'));
      assert.equal((await (await fetch(`${srv.url}/index.html`)).text()), '<!doctype html><h1>root</h1>');
      const docs = await fetch(`${srv.url}/docs/`);
      assert.equal(await docs.text(), '<h1>docs</h1>');
      const types: Record<string, string> = {
        '/app.js': 'text/javascript; charset=utf-8', '/style.css': 'text/css; charset=utf-8', '/logo.svg': 'image/svg+xml',
        '/data.json': 'application/json', '/blob.bin': 'application/octet-stream', '/docs/deep/page%20one.txt': 'text/plain; charset=utf-8',
      };
      for (const [path, type] of Object.entries(types)) {
        const r = await fetch(srv.url + path);
        assert.equal(r.status, 200, path);
        assert.equal(r.headers.get('content-type'), type, path);
        assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
        await r.arrayBuffer();
      }
      assert.equal(await (await fetch(`${srv.url}/alias.js`)).text(), 'console.log(1)', 'a symlink inside the directory is served');
      assert.equal(await (await fetch(`${srv.url}/.well-known/security.txt`)).text(), 'Contact: x');
    });

    test('a directory without its slash redirects; one without index.html is a 404', async () => {
      const r = await fetch(`${srv.url}/docs?x=1`, { redirect: 'manual' });
      assert.equal(r.status, 302);
      assert.equal(r.headers.get('location'), '/docs/?x=1');
      const n = await fetch(`${srv.url}/noindex/`);
      assert.equal(n.status, 404);
      assert.equal(await n.text(), 'Not found.\n');
    });

    test('a directory redirect never leaves the site: leading slashes and backslashes collapse to one local path', async () => {
      for (const path of ['//evil.example', '///evil.example', '//evil.example?q=1', '/%2Fevil.example']) {
        const r = await raw(srv.url, path);
        const location = String(r.headers.location ?? '');
        if (r.status === 302) {
          assert.ok(location.startsWith('/') && !location.startsWith('//') && !location.startsWith('/\\'), `${path} redirected to ${location}`);
          assert.match(location, /^\/evil\.example\/(\?q=1)?$/, path);
        } else {
          assert.ok([400, 404].includes(r.status), `${path} answered ${r.status}`);
        }
      }
      // a backslash is never a path separator here: refused, never a redirect to `/\evil.example/`
      for (const path of ['/\\evil.example', '/%5Cevil.example', '/\\/evil.example']) {
        const r = await raw(srv.url, path);
        assert.equal(r.status, 400, `${path} answered ${r.status} ${String(r.headers.location ?? '')}`);
        assert.equal(r.headers.location, undefined, path);
      }
      // the normal directory redirect still works, and the redirected path serves the index
      const docs = await raw(srv.url, '/docs');
      assert.equal(docs.status, 302);
      assert.equal(docs.headers.location, '/docs/');
      const local = await raw(srv.url, '//evil.example/');
      assert.equal(local.status, 200);
      assert.equal(local.body, '<h1>local</h1>');
    });

    test('ETag revalidation answers 304; ranges answer 206 and 416; HEAD has no body', async () => {
      const first = await fetch(`${srv.url}/app.js`);
      const etag = first.headers.get('etag')!;
      await first.text();
      const again = await fetch(`${srv.url}/app.js`, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
      assert.equal(await again.text(), '');
      const range = await fetch(`${srv.url}/app.js`, { headers: { range: 'bytes=0-6' } });
      assert.equal(range.status, 206);
      assert.equal(range.headers.get('content-range'), 'bytes 0-6/14');
      assert.equal(await range.text(), 'console');
      const bad = await fetch(`${srv.url}/app.js`, { headers: { range: 'bytes=100-' } });
      assert.equal(bad.status, 416);
      await bad.text();
      const head = await raw(srv.url, '/app.js', 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(head.headers['content-length'], '14');
    });

    test('a large file is streamed whole', async () => {
      const r = await fetch(`${srv.url}/big.bin`);
      assert.equal(r.status, 200);
      const body = Buffer.from(await r.arrayBuffer());
      assert.equal(body.length, big.length);
      assert.ok(body.equals(big));
    });

    test('missing files are a plain-text 404; /api/ keeps the JSON 404 and the API and admin routes win', async () => {
      const miss = await fetch(`${srv.url}/nope.html`);
      assert.equal(miss.status, 404);
      assert.equal(miss.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(await miss.text(), 'Not found.\n');
      const api = await fetch(`${srv.url}/api/nope`);
      assert.equal(api.status, 404);
      assert.equal((await api.json()).code, 'not_found');
      const health = await fetch(`${srv.url}/api/health`);
      assert.equal((await health.json()).status, 'ok');
      const admin = await fetch(`${srv.url}/_/`);
      assert.match(admin.headers.get('content-type') ?? '', /text\/html|text\/plain/);
      assert.doesNotMatch(await admin.text(), /<h1>root<\/h1>/);
      const post = await fetch(`${srv.url}/index.html`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      assert.equal(post.status, 404, 'only GET and HEAD reach static files');
      await post.text();
    });

    test('no path escapes the directory: dot segments, encoded dots, NUL, dot-files, symlinks out', async () => {
      const cases: Array<[string, number[]]> = [
        ['/../etc/passwd', [400, 404]],
        ['/docs/../../etc/passwd', [400, 404]],
        ['/%2e%2e/%2e%2e/etc/passwd', [404]],
        ['/docs/%2E%2E/%2E%2E/etc/hostname', [404]],
        ['/..%2fetc%2fpasswd', [400]],
        ['/docs%2f..%2f..%2fetc%2fpasswd', [400]],
        ['/%00', [400]],
        ['/index.html%00.txt', [400]],
        ['/%zz', [400]],
        ['/..%5c..%5cetc', [400]],
        ['/.env', [404]],
        ['/leak.txt', [404]],
        ['/leakdir/secret.txt', [404]],
      ];
      for (const [path, statuses] of cases) {
        const r = await raw(srv.url, path);
        assert.ok(statuses.includes(r.status), `${path} answered ${r.status}`);
        assert.doesNotMatch(r.body, /outside secret|root:|SECRET/, path);
      }
    });
  });
}

test('SERVICE_PUBLIC serves too; a missing public directory fails the start with exit 1', async () => {
  const srv = await startSvc({ superuser: false, env: { SERVICE_PUBLIC: pub } });
  try {
    assert.equal(await (await fetch(`${srv.url}/docs/`)).text(), '<h1>docs</h1>');
  } finally {
    await srv.stop();
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  try {
    const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, `--public=${join(pub, 'absent')}`]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /invalid --public ".*absent": expected an existing directory/);
    // refused as a configuration error, before the data directory is opened
    assert.ok(!existsSync(join(dataDir, 'data.db')), 'no database was created');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
