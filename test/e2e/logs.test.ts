/**
 * Request logs an operator reads back (docs/operations.md, "Request logs"): requests made against
 * the real server are read back through `GET /api/logs`, `/api/logs/:id` and `/api/logs/stats`
 * (shape, filter, sort, paging, stats), through the official `pocketbase` SDK's `pb.logs.*` too;
 * a bad filter is 400; non-superusers are refused; the retention settings delete old rows and
 * past the row cap; `SERVICE_LOGS_MAX_DAYS=0` turns the store off. Runs on PostgreSQL too
 * (`npx tsx test/pg-suite.ts test/e2e/logs.test.ts`: the file stays in the data directory).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PocketBase from 'pocketbase';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { signup, type User } from '../helpers/records-fixtures.js';

let srv: Svc;
let alice: User;

before(async () => {
  // every request kept (the default keeps failures only: docs/operations.md, "Request logs")
  srv = await startSvc({ env: { SERVICE_LOGS_MIN_LEVEL: 'info' } });
  await srv.createCollection({ name: 'users', type: 'auth', fields: [], createRule: '@public' });
  await srv.createCollection({ name: 'notes', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', fields: [{ name: 'body', type: 'text' }] });
  alice = await signup(srv, 'users', 'alice@example.com');
  for (let i = 0; i < 3; i++) assert.equal((await srv.api('POST', '/api/collections/notes/records', { body: { body: `n${i}` } })).status, 201);
  assert.equal((await srv.api('GET', '/api/collections/notes/records?marker=one', { token: alice.token })).status, 200);
  assert.equal((await srv.api('GET', '/api/collections/missing/records')).status, 404);
  assert.equal((await srv.api('GET', '/api/collections/notes/records', { token: srv.suToken })).status, 200);
});

after(async () => {
  await srv?.stop();
});

/** GET /api/logs… as the superuser. */
async function logs(qs: string): Promise<any> {
  const r = await srv.api('GET', `/api/logs${qs}`, { token: srv.suToken });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

test('each ended request is an entry: PocketBase shape, its method, URL, status, time and caller', async () => {
  const page = await logs('?perPage=200');
  assert.deepEqual(Object.keys(page), ['page', 'perPage', 'totalItems', 'totalPages', 'items']);
  assert.equal(page.page, 1);
  assert.equal(page.perPage, 200);
  assert.ok(page.totalItems >= 8, String(page.totalItems));
  const marked = page.items.find((e: any) => e.data.url === '/api/collections/notes/records?marker=one');
  assert.ok(marked, JSON.stringify(page.items.map((e: any) => e.data.url)));
  assert.deepEqual(Object.keys(marked), ['id', 'created', 'level', 'message', 'data']);
  assert.match(marked.id, /^[a-z0-9]{15}$/);
  assert.match(marked.created, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(marked.level, 0);
  assert.equal(marked.message, 'GET /api/collections/notes/records?marker=one');
  assert.equal(marked.data.method, 'GET');
  assert.equal(marked.data.status, 200);
  assert.equal(typeof marked.data.execTime, 'number');
  assert.ok(marked.data.execTime >= 0);
  assert.equal(marked.data.auth, 'users');
  assert.equal(typeof marked.data.ip, 'string');
  // a 404 is a warning; the superuser's own request names its collection; a signup is a guest
  const missing = page.items.find((e: any) => e.data.url === '/api/collections/missing/records');
  assert.equal(missing.level, 4);
  assert.equal(missing.data.status, 404);
  assert.ok(page.items.some((e: any) => e.data.url === '/api/collections/notes/records' && e.data.auth === '_superusers'));
  const post = page.items.find((e: any) => e.data.method === 'POST' && e.data.url === '/api/collections/notes/records');
  assert.equal(post.data.auth, 'guest');
  assert.equal(post.data.status, 201);
  assert.ok(post.data.ip.length > 0, 'a request with a body records its peer address');
  // newest first by default
  const times = page.items.map((e: any) => e.created);
  assert.deepEqual(times, [...times].sort().reverse());
});

test('filter: data.status, data.method, data.url ~, level, created, && and ||', async () => {
  const errors = await logs(`?perPage=200&filter=${encodeURIComponent('data.status >= 400')}`);
  assert.ok(errors.items.length >= 1);
  assert.ok(errors.items.every((e: any) => e.data.status >= 400));
  const posts = await logs(`?perPage=200&filter=${encodeURIComponent('data.method = "POST" && data.url ~ "/api/collections/notes"')}`);
  assert.ok(posts.items.length >= 3);
  assert.ok(posts.items.every((e: any) => e.data.method === 'POST' && e.data.url.includes('/api/collections/notes')));
  const either = await logs(`?perPage=200&filter=${encodeURIComponent('level = 4 || data.url ~ "marker=one"')}`);
  assert.ok(either.items.some((e: any) => e.level === 4));
  assert.ok(either.items.some((e: any) => e.data.url.endsWith('marker=one')));
  assert.ok(either.items.every((e: any) => e.level === 4 || e.data.url.includes('marker=one')));
  const future = await logs(`?filter=${encodeURIComponent('created >= "2999-01-01 00:00:00.000Z"')}`);
  assert.equal(future.totalItems, 0);
  assert.deepEqual(future.items, []);
  const past = await logs(`?filter=${encodeURIComponent('created >= "2000-01-01 00:00:00.000Z" && data.auth = "users"')}`);
  assert.ok(past.totalItems >= 1);
});

test('sort and paging: -created, created, data.execTime; page, perPage, totalPages, skipTotal', async () => {
  const asc = await logs('?perPage=200&sort=created');
  const times = asc.items.map((e: any) => e.created);
  assert.deepEqual(times, [...times].sort());
  const slowest = await logs('?perPage=200&sort=-data.execTime');
  const exec = slowest.items.filter((e: any) => typeof e.data.execTime === 'number').map((e: any) => e.data.execTime);
  assert.deepEqual(exec, [...exec].sort((a: number, b: number) => b - a));
  const p1 = await logs('?perPage=2&page=1&sort=created');
  const p2 = await logs('?perPage=2&page=2&sort=created');
  assert.equal(p1.items.length, 2);
  assert.equal(p1.totalPages, Math.ceil(p1.totalItems / 2));
  assert.notEqual(p1.items[0].id, p2.items[0].id);
  assert.ok(p1.items[1].created <= p2.items[0].created);
  const skipped = await logs('?perPage=2&skipTotal=1');
  assert.equal(skipped.totalItems, -1);
  assert.equal(skipped.totalPages, -1);
});

test('getOne and stats; 404 for an unknown id', async () => {
  const first = (await logs('?perPage=1')).items[0];
  const one = await srv.api('GET', `/api/logs/${first.id}`, { token: srv.suToken });
  assert.equal(one.status, 200);
  assert.deepEqual(one.body, first);
  const none = await srv.api('GET', '/api/logs/nosuchentry0000', { token: srv.suToken });
  assert.equal(none.status, 404);
  assert.equal(none.body.code, 'not_found');
  const stats = await srv.api('GET', '/api/logs/stats', { token: srv.suToken });
  assert.equal(stats.status, 200);
  assert.ok(Array.isArray(stats.body) && stats.body.length >= 1);
  for (const s of stats.body) {
    assert.deepEqual(Object.keys(s), ['total', 'date']);
    assert.match(s.date, /^\d{4}-\d\d-\d\d \d\d:00:00\.000Z$/);
  }
  const total = stats.body.reduce((n: number, s: any) => n + s.total, 0);
  assert.ok(total >= 8);
  const filtered = await srv.api('GET', `/api/logs/stats?filter=${encodeURIComponent('data.status >= 400')}`, { token: srv.suToken });
  assert.ok(filtered.body.reduce((n: number, s: any) => n + s.total, 0) < total);
});

test('a bad filter or sort is 400 in the envelope, never 500', async () => {
  for (const qs of [
    `filter=${encodeURIComponent('data.status >=')}`,
    `filter=${encodeURIComponent('nosuch = 1')}`,
    `filter=${encodeURIComponent('data.status.x = 1')}`,
    `filter=${encodeURIComponent('@request.auth.id = "x"')}`,
    `filter=${encodeURIComponent('data.url ?= "x"')}`,
    `filter=${encodeURIComponent('(((')}`,
    'sort=nosuch',
    'sort=data.x-y',
    'page=abc',
  ]) {
    for (const path of ['/api/logs', '/api/logs/stats']) {
      if (path.endsWith('stats') && !qs.startsWith('filter')) continue;
      const r = await srv.api('GET', `${path}?${qs}`, { token: srv.suToken });
      assert.equal(r.status, 400, `${path}?${qs}: ${r.text}`);
      assert.deepEqual(Object.keys(r.body), ['status', 'code', 'message', 'data']);
      assert.equal(r.body.code, 'bad_request');
    }
  }
});

test('only superusers read the logs: 401 anonymous, 403 any other caller', async () => {
  for (const path of ['/api/logs', '/api/logs/stats', '/api/logs/abc']) {
    const anon = await srv.api('GET', path);
    assert.equal(anon.status, 401, path);
    assert.equal(anon.body.code, 'unauthorized');
    const user = await srv.api('GET', path, { token: alice.token });
    assert.equal(user.status, 403, path);
    assert.equal(user.body.code, 'forbidden');
  }
});

test('the official PocketBase SDK reads them: pb.logs.getList, getOne, getStats', async () => {
  const pb = new PocketBase(srv.url);
  await pb.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  const list = await pb.logs.getList(1, 5, { filter: 'data.status >= 400', sort: '-created' });
  assert.equal(list.perPage, 5);
  assert.ok(list.items.length >= 1);
  assert.ok(list.items.every((e) => (e.data as { status: number }).status >= 400));
  const one = await pb.logs.getOne(list.items[0].id);
  assert.equal(one.id, list.items[0].id);
  assert.equal(one.message, list.items[0].message);
  const stats = await pb.logs.getStats({ filter: 'data.method = "POST"' });
  assert.ok(stats.length >= 1 && stats.every((s) => s.total >= 1 && typeof s.date === 'string'));
  await assert.rejects(pb.logs.getList(1, 5, { filter: 'data.status >=' }), (e: { status: number }) => e.status === 400);
});

test('retention: past the row cap the oldest go, past SERVICE_LOGS_MAX_DAYS every entry goes', async () => {
  // 0.00003 days: about 2.6 s
  const short = await startSvc({ env: { SERVICE_LOGS_MIN_LEVEL: 'info', SERVICE_LOGS_MAX_DAYS: '0.00003', SERVICE_LOGS_MAX_ROWS: '5', SERVICE_LOGS_PRUNE_INTERVAL_MS: '100', SERVICE_LOGS_FLUSH_MS: '50' } });
  try {
    assert.ok(existsSync(join(short.dataDir, 'logs.db')));
    for (let i = 0; i < 12; i++) await short.api('GET', `/api/health?n=${i}`);
    const read = async () => {
      const r = await short.api('GET', `/api/logs?perPage=100&filter=${encodeURIComponent('data.url ~ "/api/health"')}&sort=created`, { token: short.suToken });
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    // a flush (50 ms) and a retention pass (100 ms) without any request in between
    await new Promise((r) => setTimeout(r, 400));
    let page = await read();
    // the log thread (which makes -wal and -shm) starts with the first entry kept
    for (const f of ['logs.db', 'logs.db-wal', 'logs.db-shm']) assert.equal(statSync(join(short.dataDir, f)).mode & 0o777, 0o600, `${f} is 0600 like data.db`);
    assert.equal(page.totalItems, 5, JSON.stringify(page.items.map((e: any) => e.data.url)));
    assert.deepEqual(page.items.map((e: any) => e.data.url), [7, 8, 9, 10, 11].map((n) => `/api/health?n=${n}`), 'the newest stay');
    // past the age (the cap alone would keep these five): nothing left
    await new Promise((r) => setTimeout(r, 3000));
    page = await read();
    assert.equal(page.totalItems, 0, 'older than the retention: deleted');
  } finally {
    await short.stop();
  }
});

test('SERVICE_LOGS_MAX_DAYS=0: no store, the routes answer empty', async () => {
  const off = await startSvc({ env: { SERVICE_LOGS_MAX_DAYS: '0' } });
  try {
    await off.api('GET', '/api/health');
    const r = await off.api('GET', '/api/logs', { token: off.suToken });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { page: 1, perPage: 30, totalItems: 0, totalPages: 0, items: [] });
    assert.deepEqual((await off.api('GET', '/api/logs/stats', { token: off.suToken })).body, []);
    assert.equal((await off.api('GET', '/api/logs/x', { token: off.suToken })).status, 404);
    assert.equal(existsSync(join(off.dataDir, 'logs.db')), false);
  } finally {
    await off.stop();
  }
});

test('a logs.db that cannot be opened: the server serves without request logs and says why', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-logs-bad-'));
  writeFileSync(join(dataDir, 'logs.db'), 'this is not a SQLite database, it is long enough to have a header of its own'.repeat(2), { mode: 0o600 });
  const broken = await startSvc({ dataDir });
  try {
    assert.match(broken.stderr(), /request logs are off/);
    assert.equal((await broken.api('GET', '/api/health')).status, 200);
    const r = await broken.api('GET', '/api/logs', { token: broken.suToken });
    assert.equal(r.status, 200);
    assert.equal(r.body.totalItems, 0);
  } finally {
    await broken.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a bad retention setting stops the start with its name', async () => {
  await assert.rejects(startSvc({ env: { SERVICE_LOGS_MAX_DAYS: 'week' } }), /SERVICE_LOGS_MAX_DAYS/);
});
