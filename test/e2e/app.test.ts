/**
 * The embeddable framework (0-conventions.md "Embedding: the app
 * definition"; spec 1-core-api.md "Events"), end to end: `svc serve --app=FILE` serving
 * test/fixtures/app-full.mjs (it imports `svc`, the package root), and `app.start()` in this
 * process. Record hooks (before may change or abort with nothing written; after sees the commit),
 * auth hooks and the auth-success handler with its method tags, custom routes with their auth
 * modes, errors and rate limit, a custom sign-in method, a scheduled job, and a bad definition
 * refused before any port opens.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ROOT, runCli, startSvc, type Svc } from '../helpers/server.js';
import { sleep } from '../helpers/auth-helpers.js';

const APP = join(ROOT, 'test', 'fixtures', 'app-full.mjs');
const PW = 'app-pass-123';
let srv: Svc;

const audit = async (): Promise<Array<{ action: string; target: string }>> => {
  const r = await srv.api('GET', '/api/collections/audit/records?perPage=500&sort=created', { token: srv.suToken });
  return r.body.items.map((i: any) => ({ action: i.action, target: i.target }));
};
const actions = async () => (await audit()).map((a) => a.action);
const count = async (col: string) => (await srv.api('GET', `/api/collections/${col}/records?perPage=1`, { token: srv.suToken })).body.totalItems;

async function member(email: string, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const made = await srv.api('POST', '/api/collections/members/records', { token: srv.suToken, body: { email, password: PW, passwordConfirm: PW, ...extra } });
  assert.equal(made.status, 201, made.text);
  const login = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: email, password: PW } });
  return { id: made.body.id, token: login.body.token };
}

before(async () => {
  srv = await startSvc({ args: [`--app=${APP}`], env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  await srv.createCollection({ name: 'audit', type: 'base', fields: [{ name: 'action', type: 'text' }, { name: 'target', type: 'text' }] });
  await srv.createCollection({
    name: 'posts', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'slug', type: 'text' }, { name: 'owner', type: 'text' }],
    listRule: 'owner = @request.auth.id', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public',
  });
  await srv.createCollection({
    name: 'members', type: 'auth', fields: [{ name: 'pin', type: 'text' }], viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id',
    options: { auth: { methods: { pin: { enabled: true } } } },
  });
  await srv.createCollection({ name: 'plain', type: 'auth', fields: [] });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('before-create changes the record; after-create sees the commit; a refusing hook writes nothing', async () => {
  const r = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'Hello World' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.slug, 'hello-world', 'the before-hook set the slug');
  assert.ok((await audit()).some((a) => a.action === 'create' && a.target === r.body.id), 'the after-hook saw the stored id');

  const before = await count('posts');
  const forbidden = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'forbidden' } });
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.body.code, 'forbidden');
  assert.equal(forbidden.body.message, 'No forbidden posts.');
  const crash = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'crash' } });
  assert.equal(crash.status, 500);
  assert.equal(crash.body.code, 'internal');
  assert.ok(!crash.text.includes('boom'), 'no internals in the answer');
  const teapot = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'teapot' } });
  assert.equal(teapot.status, 500, 'an unregistered code is not sent');
  assert.equal(await count('posts'), before, 'nothing written');
  assert.match(srv.stderr(), /record hook posts\.beforeCreate failed \(request [0-9a-f]{16}\): Error: boom/);
  assert.match(srv.stderr(), /unregistered code \\?"teapot\\?"/);
});

test('update and delete hooks: change, refuse with nothing written, see the result', async () => {
  const r = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'Draft' } });
  const up = await srv.api('PATCH', `/api/collections/posts/records/${r.body.id}`, { body: { title: 'Final Title' } });
  assert.equal(up.status, 200, up.text);
  assert.equal(up.body.slug, 'final-title');
  const locked = await srv.api('PATCH', `/api/collections/posts/records/${r.body.id}`, { body: { title: 'locked' } });
  assert.equal(locked.status, 409);
  assert.equal((await srv.api('GET', `/api/collections/posts/records/${r.body.id}`)).body.title, 'Final Title', 'unchanged');
  assert.ok((await audit()).some((a) => a.action === 'update' && a.target === r.body.id));

  const keep = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'keep' } });
  const refused = await srv.api('DELETE', `/api/collections/posts/records/${keep.body.id}`);
  assert.equal(refused.status, 403);
  assert.equal((await srv.api('GET', `/api/collections/posts/records/${keep.body.id}`)).status, 200, 'still there');
  const del = await srv.api('DELETE', `/api/collections/posts/records/${r.body.id}`);
  assert.equal(del.status, 204);
  assert.ok((await audit()).some((a) => a.action === 'delete' && a.target === r.body.id), 'after-delete saw the deleted record');
});

test('custom routes: params, query, body, auth modes, errors in the envelope, 204, rate limit', async () => {
  const hello = await srv.api('GET', '/api/hello/ada%20l?q=x');
  assert.equal(hello.status, 200);
  assert.deepEqual(hello.body, { hello: 'ada l', q: 'x' });

  assert.equal((await srv.api('POST', '/api/echo', { body: { a: 1 } })).status, 401);
  const m = await member('echo@example.com');
  const echo = await srv.api('POST', '/api/echo', { token: m.token, body: { a: 1 } });
  assert.deepEqual(echo.body, { body: { a: 1 }, who: m.id });

  assert.equal((await srv.api('GET', '/api/admin/stats')).status, 401);
  assert.equal((await srv.api('GET', '/api/admin/stats', { token: m.token })).status, 403);
  const stats = await srv.api('GET', '/api/admin/stats', { token: srv.suToken });
  assert.equal(stats.status, 200);
  assert.equal(typeof stats.body.posts, 'number');

  const fail = await srv.api('GET', '/api/fail');
  assert.equal(fail.status, 409);
  assert.deepEqual(Object.keys(fail.body), ['status', 'code', 'message', 'data']);
  assert.equal(fail.body.code, 'conflict');
  const crash = await srv.api('GET', '/api/crash');
  assert.equal(crash.status, 500);
  assert.ok(!crash.text.includes('kaboom'));
  assert.equal((await srv.api('GET', '/api/teapot')).status, 500);
  assert.equal((await srv.api('DELETE', '/api/nothing')).status, 204);
  assert.equal((await srv.api('GET', '/api/limited')).status, 200);
  assert.equal((await srv.api('GET', '/api/limited')).status, 200);
  const limited = await srv.api('GET', '/api/limited');
  assert.equal(limited.status, 429);
  assert.equal(limited.body.code, 'too_many_requests');
  assert.equal((await srv.api('GET', '/api/nope')).status, 404, 'the catch-all still answers');
});

test('app.records(…).asUser applies the rules as that user; the default handle is a superuser', async () => {
  const a = await member('owner-a@example.com');
  const b = await member('owner-b@example.com');
  await srv.api('POST', '/api/collections/posts/records', { body: { title: 'A one', owner: a.id } });
  await srv.api('POST', '/api/collections/posts/records', { body: { title: 'B one', owner: b.id } });
  const mine = await srv.api('GET', '/api/mine', { token: a.token });
  assert.equal(mine.status, 200, mine.text);
  assert.ok(mine.body.items.length >= 1);
  assert.ok(mine.body.items.every((p: any) => p.owner === a.id), 'the list rule applied as user A');
  const anon = await srv.api('GET', '/api/anon-posts');
  assert.equal(anon.body.items.length, 0, 'anonymous: owner = "" matches nothing');
  const all = await srv.api('GET', '/api/admin/stats', { token: srv.suToken });
  assert.ok(all.body.posts >= 2);
});

test('app.batch: several writes commit together or not at all (a refusing hook, a missing record)', async () => {
  const ok = await srv.api('POST', '/api/batch', { body: { tag: 't-ok', title: 'Batch Post' } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.length, 2);
  assert.equal(ok.body[0].target, 't-ok');
  assert.equal(ok.body[1].slug, 'batch-post', 'hooks run inside a batch');
  assert.ok((await audit()).some((a) => a.action === 'batch' && a.target === 't-ok'));

  const refused = await srv.api('POST', '/api/batch', { body: { tag: 't-refused', title: 'forbidden' } });
  assert.equal(refused.status, 403, refused.text);
  const missing = await srv.api('POST', '/api/batch', { body: { tag: 't-missing', title: 'x', updateId: 'nosuchrecord000' } });
  assert.equal(missing.status, 404, missing.text);
  const log = await audit();
  assert.ok(!log.some((a) => a.target === 't-refused'), 'a hook refusal wrote nothing');
  assert.ok(!log.some((a) => a.target === 't-missing'), 'a failing write in the job rolled the other back');
});

test('auth hooks and the auth-success handler: method tags, a refusing before-hook, refresh, logout, password change', async () => {
  const m = await member('hooks@example.com');
  const log = await audit();
  assert.ok(log.some((x) => x.action === 'auth:password' && x.target === m.id), 'password sign-in fired onAuthSuccess with method password');

  const refreshed = await srv.api('POST', '/api/collections/members/auth-refresh', { token: m.token });
  assert.equal(refreshed.status, 200);
  const after = await actions();
  for (const a of ['before-refresh', 'auth:refresh', 'after-refresh']) assert.ok(after.includes(a), a);

  await srv.api('POST', '/api/collections/members/records', { token: srv.suToken, body: { email: 'banned@example.com', password: PW, passwordConfirm: PW } });
  const banned = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'banned@example.com', password: PW } });
  assert.equal(banned.status, 403, banned.text);
  assert.equal(banned.headers.get('set-cookie'), null, 'no session');

  const pw = await srv.api('PATCH', `/api/collections/members/records/${m.id}`, { token: m.token, body: { oldPassword: PW, password: 'new-pass-456', passwordConfirm: 'new-pass-456' } });
  assert.equal(pw.status, 200, pw.text);
  const afterPw = await actions();
  assert.ok(afterPw.includes('before-password') && afterPw.includes('after-password'));
  const frozen = await member('frozen@example.com');
  const refusedPw = await srv.api('PATCH', `/api/collections/members/records/${frozen.id}`, { token: frozen.token, body: { oldPassword: PW, password: 'new-pass-456', passwordConfirm: 'new-pass-456' } });
  assert.equal(refusedPw.status, 403);
  const still = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'frozen@example.com', password: PW } });
  assert.equal(still.status, 200, 'the old password still works: nothing changed');

  const out = await srv.api('POST', '/api/collections/members/auth-logout', { token: still.body.token });
  assert.equal(out.status, 204);
  const afterOut = await actions();
  assert.ok(afterOut.includes('before-logout') && afterOut.includes('after-logout'));
});

test('a custom sign-in method: on when enabled, 404 when not, the session through the one path (method tag custom)', async () => {
  const made = await srv.api('POST', '/api/collections/members/records', { token: srv.suToken, body: { email: 'pin@example.com', password: PW, passwordConfirm: PW, pin: '4321' } });
  const init = await srv.api('POST', '/api/collections/members/auth/pin/initiate', { body: {} });
  assert.equal(init.status, 200);
  assert.deepEqual(init.body, { hint: 'POST {email, pin} to complete' });
  const wrong = await srv.api('POST', '/api/collections/members/auth/pin/complete', { body: { email: 'pin@example.com', pin: '0000' } });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.headers.get('set-cookie'), null);
  const ok = await srv.api('POST', '/api/collections/members/auth/pin/complete', { body: { email: 'pin@example.com', pin: '4321' } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.record.id, made.body.id);
  assert.match(ok.headers.get('set-cookie') ?? '', /svc_auth=/);
  assert.ok((await audit()).some((a) => a.action === 'auth:custom' && a.target === made.body.id));
  assert.equal((await srv.api('POST', '/api/collections/plain/auth/pin/complete', { body: {} })).status, 404, 'off where not enabled');
  // without the app, the slug is unknown to the options validation
  const refused = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'other', type: 'auth', fields: [], options: { auth: { methods: { sms: { enabled: true } } } } } });
  assert.equal(refused.status, 400);
});

test('a scheduled job runs on its cron schedule', { timeout: 75_000 }, async () => {
  const deadline = Date.now() + 70_000;
  while (Date.now() < deadline) {
    if ((await actions()).includes('job:minutely')) return;
    await sleep(500);
  }
  assert.fail('the minutely job did not run within 70 s');
});

test('a bad app definition is refused before any port opens, every problem listed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-badapp-'));
  try {
    const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, `--app=${join(ROOT, 'test', 'fixtures', 'app-bad.mjs')}`, '--json']);
    assert.equal(r.status, 1);
    assert.doesNotMatch(r.stderr, /serving on/);
    for (const p of ['routes[0].path', 'jobs[0].schedule', 'pagination', 'colections: unknown key']) assert.ok(r.stdout.includes(p) || r.stderr.includes(p), `${p}: ${r.stderr}`);
    const missing = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, '--app=/no/such/app.mjs']);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /cannot load the app/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a TypeScript app module is served (through tsx)', async () => {
  const ts = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-typed.ts')}`] });
  try {
    const r = await ts.api('GET', '/api/greet/ts');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { greeting: 'hello ts' });
  } finally {
    await ts.stop();
    rmSync(ts.dataDir, { recursive: true, force: true });
  }
});

test('app.start() serves in the embedding process and stops cleanly', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-start-'));
  try {
    const { defineApp } = await import('svc');
    const app = defineApp({ routes: [{ method: 'GET', path: '/api/ping', handler: () => ({ pong: true }) }] });
    const running = await app.start({ http: '127.0.0.1:0', dataDir: dir });
    try {
      assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.deepEqual(await (await fetch(`${running.url}/api/ping`)).json(), { pong: true });
      assert.equal((await fetch(`${running.url}/api/health`)).status, 200);
    } finally {
      await running.stop();
    }
    await assert.rejects(fetch(`${running.url}/api/ping`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
