/**
 * E2E: process logging and the error envelope on every exit path (spec 1-core-api.md,
 * "Process logging", "Errors"; 0-conventions.md "Logs").
 *
 * Servers (started together): JSON format (harness default), text format, --no-request-log and
 * --log-level=warn. Invalid log settings are checked with short-lived `serve` processes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc, type ApiResponse } from '../helpers/server.js';
import { freePort, spawnSvc, waitHealthy, jsonRecordsSince, sleep, TS_RE, type RawServe } from '../helpers/proc.js';

const REQUEST_KEYS = ['ts', 'level', 'scope', 'msg', 'method', 'path', 'status', 'duration_ms'];
const ENVELOPE_KEYS = ['status', 'code', 'message', 'data'];
const TEXT_TS = String.raw`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z`;
const TEXT_LINE = new RegExp(String.raw`^${TEXT_TS} (debug|info|warn|err)(\([^()\s]+\))?: .*$`);

let json: Svc;
let text: Svc;
let noReq: Svc;
let warn: RawServe;
let warnUrl = '';
const tmpDirs: string[] = [];

function tmp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tmpDirs.push(d);
  return d;
}

/** http (request) records after `mark` in a server's stderr. */
const httpSince = (stderr: string, mark: number) => jsonRecordsSince(stderr, mark).filter((r) => r.scope === 'http');

/** Waits until at least `n` request records appear after `mark`, then a little longer (to catch extras). */
async function settleHttp(srv: { stderr(): string }, mark: number, n = 1): Promise<any[]> {
  const deadline = Date.now() + 10_000;
  while (httpSince(srv.stderr(), mark).length < n && Date.now() < deadline) await sleep(20);
  await sleep(150);
  return httpSince(srv.stderr(), mark);
}

/**
 * Waits until the server's log has been quiet for 200 ms: a record written before an earlier
 * reply may reach this process after that reply (the log pipe and the socket are read apart).
 */
async function quiet(srv: { stderr(): string }): Promise<void> {
  let last = -1;
  while (srv.stderr().length !== last) {
    last = srv.stderr().length;
    await sleep(200);
  }
}

/** Waits for text-format lines after `mark` containing `needle`, then a little longer. */
async function settleText(srv: { stderr(): string }, mark: number, needle: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  const lines = () => srv.stderr().slice(mark).split('\n').filter((l) => l.length > 0);
  while (!lines().some((l) => l.includes(needle)) && Date.now() < deadline) await sleep(20);
  await sleep(150);
  return lines();
}

/** Sends one raw HTTP/1.1 request (bytes as given) and returns the raw response text. */
function rawRequest(url: string, requestLine: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname, () => {
      sock.write(`${requestLine}\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`);
    });
    let data = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => (data += d));
    sock.on('end', () => resolve(data));
    sock.on('error', reject);
    sock.setTimeout(5000, () => {
      sock.destroy();
      resolve(data);
    });
  });
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function assertRequestRecord(rec: any, method: string, path: string, status: number, ctx: string): void {
  assert.deepEqual(Object.keys(rec), REQUEST_KEYS, `${ctx}: request record keys in order`);
  assert.equal(rec.level, 'info', `${ctx}: level`);
  assert.equal(rec.scope, 'http', `${ctx}: scope`);
  assert.equal(rec.msg, 'request', `${ctx}: msg`);
  assert.equal(rec.method, method, `${ctx}: method`);
  assert.ok(rec.path === path || rec.path === safeDecode(path), `${ctx}: path ${JSON.stringify(rec.path)} vs ${JSON.stringify(path)}`);
  assert.equal(rec.status, status, `${ctx}: logged status is what the client received`);
  assert.ok(Number.isInteger(rec.status), `${ctx}: status integer`);
  assert.ok(Number.isInteger(rec.duration_ms) && rec.duration_ms >= 0, `${ctx}: duration_ms integer >= 0 (${rec.duration_ms})`);
  assert.match(rec.ts, TS_RE, `${ctx}: ts format`);
  assert.ok(Math.abs(Date.parse(rec.ts) - Date.now()) < 60_000, `${ctx}: ts is now (UTC)`);
}

before(async () => {
  const warnPort = await freePort();
  warnUrl = `http://127.0.0.1:${warnPort}`;
  // --log-level=warn hides the "serving on" line, so readiness is polled on /api/health.
  warn = spawnSvc(['serve', `--http=127.0.0.1:${warnPort}`, `--data-dir=${tmp('svc-test-warn-')}`, '--insecure-cookies', '--log-level=warn'], { SERVICE_LOG_FORMAT: 'json' });
  [json, text, noReq] = await Promise.all([
    startSvc(),
    startSvc({ superuser: false, args: ['--log-format=text'] }),
    startSvc({ superuser: false, args: ['--no-request-log'] }),
    waitHealthy(warnUrl, warn),
  ]);
  await json.createCollection({ name: 'logbox', type: 'base', fields: [{ name: 'title', type: 'text' }], createRule: '@public', listRule: '@public', viewRule: '@public', updateRule: '@public', deleteRule: '@public' });
  // The record of a request is written after its response; let the setup's records land first.
  const deadline = Date.now() + 10_000;
  while (!httpSince(json.stderr(), 0).some((r) => r.method === 'POST' && r.path === '/api/collections') && Date.now() < deadline) await sleep(20);
  await sleep(100);
});

after(async () => {
  await Promise.all([json?.stop(), text?.stop(), noReq?.stop(), warn?.stop()]);
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

test('json: one request record with keys ts, level, scope, msg, method, path, status, duration_ms; query string excluded', async () => {
  const mark = json.stderr().length;
  const r = await json.api('GET', '/api/health?token=secret-query-token-42&x=1');
  assert.equal(r.status, 200);
  const recs = await settleHttp(json, mark);
  assert.equal(recs.length, 1, `exactly one record: ${JSON.stringify(recs)}`);
  assertRequestRecord(recs[0], 'GET', '/api/health', 200, 'health');
  assert.equal(recs[0].path, '/api/health', 'path excludes the query string');
  assert.ok(!json.stderr().includes('secret-query-token-42'), 'the query string (token) never reaches the log');
});

test('json: every line of the stream is one object whose first keys are ts, level, scope, msg', async () => {
  const lines = json.stderr().split('\n').filter((l) => l.trim());
  assert.ok(lines.length >= 3);
  for (const line of lines) {
    const rec = JSON.parse(line);
    assert.deepEqual(Object.keys(rec).slice(0, 4), ['ts', 'level', 'scope', 'msg'], line);
    assert.match(rec.ts, TS_RE, line);
    assert.ok(['debug', 'info', 'warn', 'err'].includes(rec.level), line);
    assert.equal(typeof rec.scope, 'string');
    assert.equal(typeof rec.msg, 'string');
  }
  assert.ok(lines.some((l) => JSON.parse(l).scope === 'default'), 'records without a named scope carry scope "default"');
});

test('errors: envelope {status, code, message, data} on every exit path, each logged exactly once with the status sent', async () => {
  const big = Buffer.alloc(33 * 1024 * 1024, 0x61); // 33 MiB > 32 MiB limit
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  const streamed = () => {
    let n = 0;
    return new ReadableStream({ pull(c) { if (n++ < 34) c.enqueue(chunk); else c.close(); } });
  };
  const cases: Array<{ name: string; method: string; path: string; status: number; code?: string; body?: BodyInit; ct?: string; headers?: Record<string, string>; stream?: boolean }> = [
    { name: 'unknown route', method: 'GET', path: '/api/definitely-not-a-route', status: 404, code: 'not_found' },
    { name: 'unknown nested route', method: 'POST', path: '/api/nope/deeper/still', status: 404, code: 'not_found', body: '{}', ct: 'application/json' },
    { name: 'unknown collection', method: 'GET', path: '/api/collections/missing_col/records', status: 404, code: 'not_found' },
    { name: 'unknown record', method: 'GET', path: '/api/collections/logbox/records/aaaaaaaaaaaaaaa', status: 404, code: 'not_found' },
    { name: 'malformed JSON', method: 'POST', path: '/api/collections/logbox/records', status: 400, code: 'bad_request', body: '{"title": "x",', ct: 'application/json' },
    { name: 'JSON that is not an object', method: 'POST', path: '/api/collections/logbox/records', status: 400, body: '[1,2,3]', ct: 'application/json' },
    { name: 'malformed JSON on PATCH', method: 'PATCH', path: '/api/collections/logbox/records/aaaaaaaaaaaaaaa', status: 400, body: '{nope', ct: 'application/json' },
    { name: 'bad percent-encoding (collection param)', method: 'GET', path: '/api/collections/%E0%A4%A/records', status: 400 },
    { name: 'bad percent-encoding (record id)', method: 'GET', path: '/api/collections/logbox/records/%E0%A4%A', status: 400 },
    { name: 'bad percent-encoding (lone %)', method: 'GET', path: '/api/collections/logbox/records/%', status: 400 },
    { name: 'bad percent-encoding on DELETE', method: 'DELETE', path: '/api/collections/%ZZ/records/abc', status: 400 },
    { name: 'bad percent-encoding on POST', method: 'POST', path: '/api/collections/%E0%A4%A/records', status: 400, body: '{}', ct: 'application/json' },
    { name: 'malformed filter', method: 'GET', path: `/api/collections/logbox/records?filter=${encodeURIComponent('title = (((')}`, status: 400, code: 'bad_request' },
    { name: 'no credentials on collections', method: 'GET', path: '/api/collections', status: 401, code: 'unauthorized' },
    { name: 'garbage token', method: 'GET', path: '/api/collections', status: 401, code: 'unauthorized', headers: { authorization: 'Bearer not.a.jwt' } },
    { name: 'body over the limit (Content-Length 33 MiB)', method: 'POST', path: '/api/collections/logbox/records', status: 413, code: 'payload_too_large', body: big, ct: 'application/json' },
    { name: 'body over the limit (chunked, no Content-Length)', method: 'POST', path: '/api/collections/logbox/records', status: 413, code: 'payload_too_large', ct: 'application/json', stream: true },
  ];
  for (const c of cases) {
    const mark = json.stderr().length;
    const headers: Record<string, string> = { ...(c.headers ?? {}) };
    if (c.ct) headers['content-type'] = c.ct;
    const init: RequestInit & { duplex?: string } = { method: c.method, headers };
    if (c.stream) {
      init.body = streamed();
      init.duplex = 'half';
    } else if (c.body !== undefined) init.body = c.body;
    let res: Response;
    try {
      res = await fetch(json.url + c.path, init);
    } catch (err) {
      assert.fail(`${c.name}: request failed without a response: ${(err as Error).cause ?? err}`);
    }
    const bodyText = await res.text();
    let body: any = null;
    try { body = JSON.parse(bodyText); } catch { /* asserted below */ }
    assert.equal(res.status, c.status, `${c.name}: status (${bodyText})`);
    assert.ok(body && typeof body === 'object', `${c.name}: JSON body, got ${JSON.stringify(bodyText.slice(0, 200))}`);
    assert.deepEqual(Object.keys(body), ENVELOPE_KEYS, `${c.name}: envelope keys in order`);
    assert.equal(body.status, c.status, `${c.name}: body.status`);
    assert.equal(typeof body.code, 'string');
    assert.equal(typeof body.message, 'string');
    assert.ok(body.data && typeof body.data === 'object' && !Array.isArray(body.data), `${c.name}: data object`);
    if (c.code) assert.equal(body.code, c.code, `${c.name}: code`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${c.name}: content-type`);

    const recs = await settleHttp(json, mark);
    assert.equal(recs.length, 1, `${c.name}: exactly one request record, got ${JSON.stringify(recs)}`);
    assertRequestRecord(recs[0], c.method, c.path.split('?')[0], c.status, c.name);
  }
  const h = await json.api('GET', '/api/health');
  assert.equal(h.status, 200, 'server still healthy after the error paths');
});

test('json: concurrent requests produce exactly one record each', async () => {
  await quiet(json);
  const mark = json.stderr().length;
  const paths = Array.from({ length: 25 }, (_, i) => `/api/collections/logbox/records/burst${String(i).padStart(10, '0')}`);
  const rs = await Promise.all(paths.map((p) => json.api('GET', p)));
  for (const r of rs) assert.equal(r.status, 404);
  const recs = await settleHttp(json, mark, paths.length);
  for (const p of paths) {
    const mine = recs.filter((r) => r.path === p);
    assert.equal(mine.length, 1, `one record for ${p}`);
    assert.equal(mine[0].status, 404);
  }
  assert.equal(recs.length, paths.length, `no extra records: ${JSON.stringify(recs.filter((r) => !paths.includes(r.path)))}`);
});

test('json: a crafted path cannot forge a second record (encoded newline, raw quotes and backslashes)', async () => {
  const forged = '{"ts":"2000-01-01T00:00:00Z","level":"err","scope":"forged","msg":"pwned"}';
  const cases = [
    { name: 'encoded newline + JSON', send: () => fetch(`${json.url}/api/evil${encodeURIComponent(`\n${forged}\n`)}`) },
    { name: 'encoded CRLF + quote', send: () => fetch(`${json.url}/api/evil%0D%0A%22%7D%0A${encodeURIComponent(forged)}`) },
    { name: 'raw quote and backslash in the request line', send: () => rawRequest(json.url, `GET /api/evil"},"scope":"forged","x":"\\ HTTP/1.1`) },
  ];
  for (const c of cases) {
    const mark = json.stderr().length;
    const r = await c.send();
    if (r instanceof Response) {
      assert.equal(r.status, 404, c.name);
      await r.text();
    } else assert.match(r, /^HTTP\/1\.1 404/, `${c.name}: ${r.slice(0, 80)}`);
    const recs = await settleHttp(json, mark);
    const lines = json.stderr().slice(mark).split('\n').filter((l) => l.trim());
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), `${c.name}: every line is one JSON object: ${l}`);
    const all = jsonRecordsSince(json.stderr(), mark);
    assert.equal(all.filter((x) => x.scope === 'forged' || x.msg === 'pwned').length, 0, `${c.name}: no forged record`);
    assert.equal(recs.length, 1, `${c.name}: exactly one request record`);
    assert.equal(recs[0].status, 404);
    assert.ok(recs[0].path.startsWith('/api/evil'), `${c.name}: path kept: ${recs[0].path}`);
    assert.deepEqual(Object.keys(recs[0]), REQUEST_KEYS);
  }
});

test('json: a request the client abandons mid-body is still logged exactly once', async () => {
  const { hostname, port } = new URL(json.url);
  const mark = json.stderr().length;
  await new Promise<void>((resolve, reject) => {
    const sock = connect(Number(port), hostname, () => {
      sock.write('POST /api/collections/logbox/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":');
      setTimeout(() => { sock.destroy(); resolve(); }, 200);
    });
    sock.on('error', reject);
  });
  const recs = await settleHttp(json, mark);
  assert.equal(recs.length, 1, `exactly one record for the abandoned request: ${JSON.stringify(recs)}`);
  assert.deepEqual(Object.keys(recs[0]), REQUEST_KEYS);
  assert.equal(recs[0].method, 'POST');
  assert.equal(recs[0].path, '/api/collections/logbox/records');
  assert.ok(Number.isInteger(recs[0].status));
  const h = await json.api('GET', '/api/health');
  assert.equal(h.status, 200);
});

test('text: request line `<ts> info(http): GET /api/health 200 <n>ms`; other lines `<ts> <level>[(<scope>)]: <msg>`', async () => {
  const mark = text.stderr().length;
  const r = await text.api('GET', '/api/health?token=text-secret-77');
  assert.equal(r.status, 200);
  const nf = await text.api('GET', '/api/text-missing-route');
  assert.equal(nf.status, 404);
  const bad = await text.api('POST', '/api/collections/x/records', { raw: '{oops', headers: { 'content-type': 'application/json' } });
  assert.ok(bad.status === 400 || bad.status === 404, `malformed body on an unknown collection: ${bad.status}`);
  const lines = await settleText(text, mark, '/api/collections/x/records');
  const health = lines.filter((l) => l.includes('/api/health'));
  assert.equal(health.length, 1, `one line for the request: ${JSON.stringify(lines)}`);
  const m = new RegExp(String.raw`^(${TEXT_TS}) info\(http\): GET /api/health 200 (\d+)ms$`).exec(health[0]);
  assert.ok(m, `text request line shape: ${JSON.stringify(health[0])}`);
  assert.ok(Math.abs(Date.parse(m[1]) - Date.now()) < 60_000, 'ts is now (UTC)');
  assert.equal(lines.filter((l) => /^\S+ info\(http\): GET \/api\/text-missing-route 404 \d+ms$/.test(l)).length, 1, '404 logged once');
  assert.equal(lines.filter((l) => new RegExp(String.raw`^\S+ info\(http\): POST /api/collections/x/records ${bad.status} \d+ms$`).test(l)).length, 1, 'error path logged once');
  assert.ok(!text.stderr().includes('text-secret-77'), 'query string never logged');

  const all = text.stderr().split('\n').filter((l) => l.length > 0);
  for (const l of all) assert.match(l, TEXT_LINE, 'every text line has the text shape');
  assert.ok(all.some((l) => new RegExp(String.raw`^${TEXT_TS} info: serving on `).test(l)), 'default scope is omitted: `<ts> info: serving on …`');
  assert.ok(!all.some((l) => l.startsWith('{')), 'no JSON in text mode (the flag beats SERVICE_LOG_FORMAT=json)');
});

test('text: a crafted path stays on one line (path JSON-escaped)', async () => {
  const forgedLine = '2000-01-01T00:00:00Z err(forged): pwned';
  const cases = [
    { name: 'encoded newline', send: () => fetch(`${text.url}/api/tevil${encodeURIComponent(`\n${forgedLine}\n`)}`) },
    { name: 'raw quote/backslash', send: () => rawRequest(text.url, 'GET /api/tevil"\\"x HTTP/1.1') },
  ];
  for (const c of cases) {
    const mark = text.stderr().length;
    const r = await c.send();
    if (r instanceof Response) await r.text();
    const lines = await settleText(text, mark, '/api/tevil');
    assert.equal(lines.filter((l) => l.includes('/api/tevil')).length, 1, `${c.name}: one line: ${JSON.stringify(lines)}`);
    for (const l of lines) assert.match(l, TEXT_LINE, `${c.name}: line shape`);
    assert.ok(!lines.some((l) => l.startsWith('2000-01-01T00:00:00Z')), `${c.name}: no forged line`);
    const line = lines.find((l) => l.includes('/api/tevil'))!;
    assert.match(line, /^\S+ info\(http\): GET \/api\/tevil\S* 404 \d+ms$/, `${c.name}: ${line}`);
  }
});

test('--log-level=warn silences request records (and info records)', async () => {
  const mark = warn.stderr().length;
  for (const p of ['/api/health', '/api/warn-missing', '/api/collections']) {
    const r = await fetch(warnUrl + p);
    await r.text();
    assert.ok([200, 401, 404].includes(r.status), `${p}: ${r.status}`);
  }
  await sleep(300);
  const recs = jsonRecordsSince(warn.stderr(), 0);
  assert.equal(recs.filter((r) => r.scope === 'http').length, 0, `no request records: ${warn.stderr()}`);
  for (const r of recs) assert.ok(r.level === 'warn' || r.level === 'err', `only warn/err records: ${JSON.stringify(r)}`);
  assert.equal(warn.stderr().slice(mark).trim(), '', 'nothing logged for the requests');
});

test('--no-request-log silences request records; other info records remain', async () => {
  const mark = noReq.stderr().length;
  for (const p of ['/api/health', '/api/noreq-missing']) {
    const r = await noReq.api('GET', p);
    assert.ok(r.status === 200 || r.status === 404);
  }
  await noReq.api('POST', '/api/collections/x/records', { raw: '{bad', headers: { 'content-type': 'application/json' } });
  await sleep(300);
  assert.equal(httpSince(noReq.stderr(), 0).length, 0, 'no request records');
  assert.equal(noReq.stderr().slice(mark).trim(), '', 'nothing logged for the requests');
  assert.ok(jsonRecordsSince(noReq.stderr(), 0).some((r) => r.level === 'info' && /serving on/.test(r.msg)), 'info level still on');
});

test('invalid log settings: serve exits 1 and names the variable, the value and the expected values', async () => {
  const cases = [
    { name: 'SERVICE_LOG_LEVEL=loud', args: [] as string[], env: { SERVICE_LOG_LEVEL: 'loud' }, mentions: ['SERVICE_LOG_LEVEL', 'loud', 'debug', 'info', 'warn', 'error'] },
    { name: 'SERVICE_LOG_LEVEL=loud with json format', args: [], env: { SERVICE_LOG_LEVEL: 'loud', SERVICE_LOG_FORMAT: 'json' }, mentions: ['SERVICE_LOG_LEVEL', 'loud', 'debug', 'info', 'warn', 'error'], jsonReport: true },
    { name: 'SERVICE_LOG_FORMAT=xml', args: [], env: { SERVICE_LOG_FORMAT: 'xml' }, mentions: ['SERVICE_LOG_FORMAT', 'xml', 'text', 'json'] },
    { name: 'SERVICE_LOG_REQUESTS=maybe', args: [], env: { SERVICE_LOG_REQUESTS: 'maybe' }, mentions: ['SERVICE_LOG_REQUESTS', 'maybe'] },
    { name: '--log-level=loud', args: ['--log-level=loud'], env: {}, mentions: ['log-level', 'loud', 'debug', 'info', 'warn', 'error'] },
    { name: '--log-format=yaml', args: ['--log-format=yaml'], env: {}, mentions: ['log-format', 'yaml', 'text', 'json'] },
  ];
  const runs = await Promise.all(cases.map(async (c) => {
    const dir = join(tmp('svc-test-badlog-'), 'data');
    const p = spawnSvc(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, ...c.args], { SERVICE_LOG_FORMAT: undefined, SERVICE_LOG_LEVEL: undefined, SERVICE_LOG_REQUESTS: undefined, ...c.env });
    const timer = setTimeout(() => p.proc.kill('SIGKILL'), 15_000);
    const ex = await p.exited;
    clearTimeout(timer);
    return { c, p, ex, dir };
  }));
  for (const { c, p, ex, dir } of runs) {
    assert.equal(ex.code, 1, `${c.name}: exit code (stderr: ${p.stderr()})`);
    for (const m of c.mentions) assert.ok(p.stderr().includes(m), `${c.name}: stderr mentions ${JSON.stringify(m)}: ${p.stderr()}`);
    assert.ok(!/serving on/.test(p.stderr()), `${c.name}: never served`);
    assert.equal(p.stdout(), '', `${c.name}: stdout stays empty without --json`);
    assert.ok(!existsSync(join(dir, 'svc.lock')), `${c.name}: no lock left behind`);
    if (c.jsonReport) {
      const recs = jsonRecordsSince(p.stderr(), 0);
      assert.ok(recs.some((r) => r.level === 'err' && String(r.msg).includes('SERVICE_LOG_LEVEL')), `${c.name}: reported as a JSON err record`);
    }
  }
});
