/**
 * Access rules end to end (spec 1-core-api.md "Access rules", "Filter grammar" macros,
 * "Records" abilities, Errors status summary). One server for the file; the last test restarts it
 * on the same data directory to check the startup warnings about `@public` rules.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonLogLines, startSvc, type Svc } from '../helpers/server.js';
import {
  assertError, dumpServerLog, errorFragment, expectBody, runScenarios, seed, signup, type Scenario, type User,
} from '../helpers/records-fixtures.js';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-rules-'));
let srv: Svc;
let su: string;
let alice: User;
let bob: User;

const ALL = (rule: string | null) => ({ listRule: rule, viewRule: rule, createRule: rule, updateRule: rule, deleteRule: rule });
const TITLE = [{ name: 'title', type: 'text' }];

before(async () => {
  srv = await startSvc({ dataDir });
  su = srv.suToken;
  const users = await srv.createCollection({
    name: 'users', type: 'auth', fields: [],
    createRule: '@public', listRule: 'id = @request.auth.id', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id', deleteRule: null,
  });
  alice = await signup(srv, 'users', 'alice@example.com');
  bob = await signup(srv, 'users', 'bob@example.com');
  await srv.createCollection({ name: 'locked_null', type: 'base', fields: TITLE, ...ALL(null) });
  await srv.createCollection({ name: 'locked_empty', type: 'base', fields: TITLE, ...ALL('') });
  await srv.createCollection({ name: 'public_board', type: 'base', fields: TITLE, ...ALL('@public') });
  const owned = "owner = @request.auth.id";
  await srv.createCollection({
    name: 'notes', type: 'base',
    fields: [...TITLE, { name: 'owner', type: 'relation', options: { collectionId: users.id } }],
    listRule: owned, viewRule: owned, updateRule: owned, deleteRule: owned,
    createRule: "@request.auth.id != '' && @request.data.owner = @request.auth.id",
  });
  await srv.createCollection({
    name: 'posts', type: 'base', fields: TITLE,
    listRule: '@public', viewRule: '@public', createRule: "@request.data.title != 'forbidden'", updateRule: null, deleteRule: null,
  });
  await srv.createCollection({
    name: 'methods', type: 'base', fields: TITLE,
    listRule: "@request.method = 'GET'", viewRule: "@request.method = 'GET'", createRule: "@request.method = 'POST'",
    updateRule: "@request.method = 'PATCH'", deleteRule: "@request.method = 'POST'",
  });
  await srv.createCollection({
    name: 'tenant', type: 'base', fields: [...TITLE, { name: 'account', type: 'text' }],
    listRule: 'account = @request.account.id', viewRule: "@request.account.id != ''", createRule: "@request.account.role = 'admin'",
    updateRule: 'account in @request.account.ids', deleteRule: 'account = @request.account.id',
  });
  await srv.createCollection({
    name: 'mixed', type: 'base', fields: TITLE,
    listRule: '@public', viewRule: '@public', createRule: null, updateRule: null, deleteRule: "@request.auth.id != ''",
  });
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The five record operations against one record of `col`, each expecting a status. */
function ops(col: string, id: string, who: string, token: string | null, expect: { list: number; view: number; create: number; update: number; delete: number }, listCount?: number): Scenario[] {
  const P = `/api/collections/${col}/records`;
  const err = (s: number) => (s >= 400 ? errorFragment(s, s === 403 ? 'forbidden' : s === 404 ? 'not_found' : undefined) : undefined);
  return [
    {
      name: `${col} list as ${who} → ${expect.list}`, method: 'GET', url: P, token, status: expect.list,
      expect: expect.list === 200 ? { items: (v: unknown) => Array.isArray(v) && (listCount === undefined || v.length === listCount) } : err(expect.list),
    },
    { name: `${col} view as ${who} → ${expect.view}`, method: 'GET', url: `${P}/${id}`, token, status: expect.view, expect: expect.view === 200 ? { id } : err(expect.view) },
    { name: `${col} create as ${who} → ${expect.create}`, method: 'POST', url: P, token, body: { title: `by ${who}` }, status: expect.create, expect: expect.create === 201 ? { title: `by ${who}` } : err(expect.create) },
    { name: `${col} update as ${who} → ${expect.update}`, method: 'PATCH', url: `${P}/${id}`, token, body: { title: `changed by ${who}` }, status: expect.update, expect: expect.update === 200 ? { id, title: `changed by ${who}` } : err(expect.update) },
    { name: `${col} delete as ${who} → ${expect.delete}`, method: 'DELETE', url: `${P}/${id}`, token, status: expect.delete },
  ];
}

const DENIED = { list: 403, view: 404, create: 403, update: 404, delete: 404 };

test('locked rules (null and ""): list 403, view/update/delete 404, create 403 for anyone but a superuser', async (t) => {
  for (const col of ['locked_null', 'locked_empty']) {
    const rec = await seed(srv, col, { title: 'secret' });
    await runScenarios(t, srv, [
      ...ops(col, rec.id, 'anonymous', null, DENIED),
      ...ops(col, rec.id, 'user', alice.token, DENIED),
    ]);
    const still = await srv.api('GET', `/api/collections/${col}/records/${rec.id}`, { token: su });
    assert.equal(still.status, 200, still.text);
    assert.equal(still.body.title, 'secret', `${col}: denied requests changed nothing`);
    const count = await srv.api('GET', `/api/collections/${col}/records`, { token: su });
    assert.equal(count.body.totalItems, 1, `${col}: denied creates created nothing`);
    // superuser bypass
    await runScenarios(t, srv, ops(col, rec.id, 'superuser', su, { list: 200, view: 200, create: 201, update: 200, delete: 204 }, 1));
    assertError(await srv.api('GET', `/api/collections/${col}/records/${rec.id}`, { token: su }), 404, 'not_found');
  }
});

test('@public opens every operation, anonymous included', async (t) => {
  const a = await seed(srv, 'public_board', { title: 'hello' });
  await runScenarios(t, srv, ops('public_board', a.id, 'anonymous', null, { list: 200, view: 200, create: 201, update: 200, delete: 204 }));
  const b = await seed(srv, 'public_board', { title: 'hello' });
  await runScenarios(t, srv, ops('public_board', b.id, 'user', bob.token, { list: 200, view: 200, create: 201, update: 200, delete: 204 }));
});

test('an invalid token is 401 even on a public route', async (t) => {
  await runScenarios(t, srv, [
    { name: 'garbage bearer', method: 'GET', url: '/api/collections/public_board/records', token: 'garbage', status: 401, expect: errorFragment(401, 'unauthorized') },
    { name: 'tampered signature', method: 'GET', url: '/api/collections/public_board/records', token: alice.token.slice(0, -3) + (alice.token.endsWith('AAA') ? 'BBB' : 'AAA'), status: 401, expect: errorFragment(401, 'unauthorized') },
  ]);
});

test('owner rules with @request.auth.id: others and anonymous get 404, lists show only own rows', async (t) => {
  const P = '/api/collections/notes/records';
  const mine = await srv.api('POST', P, { token: alice.token, body: { title: 'alice note', owner: alice.id } });
  assert.equal(mine.status, 201, mine.text);
  const bobs = await srv.api('POST', P, { token: bob.token, body: { title: 'bob note', owner: bob.id } });
  assert.equal(bobs.status, 201, bobs.text);
  const id = mine.body.id;
  await runScenarios(t, srv, [
    { name: 'create for someone else → 403', method: 'POST', url: P, token: bob.token, body: { title: 'x', owner: alice.id }, status: 403, expect: errorFragment(403, 'forbidden') },
    { name: 'anonymous create → 403', method: 'POST', url: P, body: { title: 'x', owner: alice.id }, status: 403, expect: errorFragment(403, 'forbidden') },
    { name: 'owner views', method: 'GET', url: `${P}/${id}`, token: alice.token, status: 200, expect: { id, title: 'alice note', owner: alice.id } },
    { name: 'other user view → 404', method: 'GET', url: `${P}/${id}`, token: bob.token, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'anonymous view → 404', method: 'GET', url: `${P}/${id}`, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'owner list shows only own', method: 'GET', url: P, token: alice.token, status: 200, expect: { totalItems: 1, items: [{ id, owner: alice.id }] } },
    { name: 'other list shows only own', method: 'GET', url: P, token: bob.token, status: 200, expect: { totalItems: 1, items: [{ id: bobs.body.id, owner: bob.id }] } },
    { name: 'anonymous list is empty', method: 'GET', url: P, status: 200, expect: { totalItems: 0, items: [] } },
    { name: 'a client filter cannot widen the rule', method: 'GET', url: `${P}?filter=${encodeURIComponent(`owner = '${alice.id}' || id != ''`)}`, token: bob.token, status: 200, expect: { items: [{ owner: bob.id }] } },
    { name: 'superuser list shows all', method: 'GET', url: P, token: su, status: 200, expect: { totalItems: 2 } },
    { name: 'other user update → 404', method: 'PATCH', url: `${P}/${id}`, token: bob.token, body: { title: 'hacked' }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'anonymous update → 404', method: 'PATCH', url: `${P}/${id}`, body: { title: 'hacked' }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'other user delete → 404', method: 'DELETE', url: `${P}/${id}`, token: bob.token, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'anonymous delete → 404', method: 'DELETE', url: `${P}/${id}`, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'owner update', method: 'PATCH', url: `${P}/${id}`, token: alice.token, body: { title: 'edited' }, status: 200, expect: { id, title: 'edited' } },
    { name: 'other user view after update still 404', method: 'GET', url: `${P}/${id}`, token: bob.token, status: 404 },
    { name: 'owner delete', method: 'DELETE', url: `${P}/${id}`, token: alice.token, status: 204 },
    { name: 'gone after delete', method: 'GET', url: `${P}/${id}`, token: alice.token, status: 404, expect: errorFragment(404, 'not_found') },
  ]);
  const b = await srv.api('GET', `${P}/${bobs.body.id}`, { token: su });
  assert.equal(b.body.title, 'bob note', 'bob\'s note untouched');
  // the users collection's own rule: each user lists only themself
  const ul = await srv.api('GET', '/api/collections/users/records', { token: alice.token });
  assert.equal(ul.status, 200, ul.text);
  assert.deepEqual(ul.body.items.map((r: any) => r.id), [alice.id]);
  assertError(await srv.api('GET', `/api/collections/users/records/${bob.id}`, { token: alice.token }), 404, 'not_found');
});

test('credentials: raw Authorization token accepted; cookie auth needs X-CSRF-Token on unsafe methods', async (t) => {
  const P = '/api/collections/notes/records';
  const login = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'alice@example.com', password: 'password123' } });
  assert.equal(login.status, 200, login.text);
  const setCookies = login.headers.getSetCookie();
  const cookie = (name: string) => setCookies.map((c) => c.split(';')[0]).find((c) => c.startsWith(`${name}=`));
  const authC = cookie('svc_auth');
  const csrfC = cookie('svc_csrf');
  assert.ok(authC && csrfC, `svc_auth and svc_csrf cookies set: ${setCookies.join(' | ')}`);
  const authLine = setCookies.find((c) => c.startsWith('svc_auth='))!;
  const csrfLine = setCookies.find((c) => c.startsWith('svc_csrf='))!;
  assert.match(authLine, /HttpOnly/i, 'svc_auth is httpOnly');
  assert.match(authLine, /SameSite=Strict/i);
  assert.doesNotMatch(csrfLine, /HttpOnly/i, 'svc_csrf is readable');
  const csrf = csrfC!.slice('svc_csrf='.length);
  const jar = `${authC}; ${csrfC}`;
  const note = await srv.api('POST', P, { token: alice.token, body: { title: 'cookie note', owner: alice.id } });
  assert.equal(note.status, 201, note.text);
  const id = note.body.id;
  await runScenarios(t, srv, [
    { name: 'raw token in Authorization (no Bearer)', method: 'GET', url: `${P}/${id}`, headers: { authorization: alice.token }, status: 200, expect: { id } },
    { name: 'cookie GET (safe method, no CSRF needed)', method: 'GET', url: `${P}/${id}`, headers: { cookie: jar }, status: 200, expect: { id } },
    { name: 'cookie PATCH without X-CSRF-Token → unauthenticated → 404', method: 'PATCH', url: `${P}/${id}`, headers: { cookie: jar }, body: { title: 'x' }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'cookie PATCH with a wrong X-CSRF-Token → 404', method: 'PATCH', url: `${P}/${id}`, headers: { cookie: jar, 'x-csrf-token': 'wrong' }, body: { title: 'x' }, status: 404 },
    { name: 'cookie POST without X-CSRF-Token → 403', method: 'POST', url: P, headers: { cookie: jar }, body: { title: 'x', owner: alice.id }, status: 403, expect: errorFragment(403, 'forbidden') },
    { name: 'cookie DELETE without X-CSRF-Token → 404', method: 'DELETE', url: `${P}/${id}`, headers: { cookie: jar }, status: 404 },
    { name: 'cookie PATCH with X-CSRF-Token → 200', method: 'PATCH', url: `${P}/${id}`, headers: { cookie: jar, 'x-csrf-token': csrf }, body: { title: 'via cookie' }, status: 200, expect: { id, title: 'via cookie' } },
  ]);
});

test('@request.data in a create rule: violating it is 403, nothing is created', async (t) => {
  const P = '/api/collections/posts/records';
  await runScenarios(t, srv, [
    { name: 'forbidden title → 403', method: 'POST', url: P, body: { title: 'forbidden' }, status: 403, expect: errorFragment(403, 'forbidden') },
    { name: 'forbidden title as user → 403', method: 'POST', url: P, token: alice.token, body: { title: 'forbidden' }, status: 403, expect: errorFragment(403, 'forbidden') },
    { name: 'allowed title → 201', method: 'POST', url: P, body: { title: 'fine' }, status: 201, expect: { title: 'fine' } },
    { name: 'superuser bypasses the rule', method: 'POST', url: P, token: su, body: { title: 'forbidden' }, status: 201, expect: { title: 'forbidden' } },
    { name: 'update locked (null) → 404', method: 'PATCH', url: `${P}/zzzzzzzzzzzzzzz`, body: { title: 'x' }, status: 404 },
  ]);
  const l = await srv.api('GET', `${P}?sort=title`);
  assert.deepEqual(l.body.items.map((r: any) => r.title), ['fine', 'forbidden'], 'only the allowed and superuser rows exist');
});

test('@request.method rules', async (t) => {
  const rec = await seed(srv, 'methods', { title: 'm' });
  // list/view need GET (true), create needs POST (true), update needs PATCH (true), delete needs POST (false on DELETE)
  await runScenarios(t, srv, ops('methods', rec.id, 'anonymous', null, { list: 200, view: 200, create: 201, update: 200, delete: 404 }));
  assert.equal((await srv.api('GET', `/api/collections/methods/records/${rec.id}`)).status, 200, 'delete denied, record kept');
});

test('@request.account.* rules fail closed without a tenancy resolver; superuser bypasses', async (t) => {
  const rec = await seed(srv, 'tenant', { title: 't', account: 'acme' });
  const denied = { list: 200, view: 404, create: 403, update: 404, delete: 404 };
  await runScenarios(t, srv, [
    ...ops('tenant', rec.id, 'anonymous', null, denied, 0),
    ...ops('tenant', rec.id, 'user', alice.token, denied, 0),
  ]);
  const r = await srv.api('GET', `/api/collections/tenant/records/${rec.id}`, { token: su });
  assert.equal(r.body.title, 't', 'unchanged');
  await runScenarios(t, srv, ops('tenant', rec.id, 'superuser', su, { list: 200, view: 200, create: 201, update: 200, delete: 204 }, 1));
});

test('abilities: booleans per rule for the caller; 404 when the record is not viewable', async (t) => {
  const m = await seed(srv, 'mixed', { title: 'x' });
  const note = await srv.api('POST', '/api/collections/notes/records', { token: alice.token, body: { title: 'n', owner: alice.id } });
  assert.equal(note.status, 201, note.text);
  const locked = await seed(srv, 'locked_null', { title: 'l' });
  const A = (col: string, id: string) => `/api/collections/${col}/records/${id}/abilities`;
  const exactly = (want: Record<string, boolean>) => (b: any) => {
    if (!b || typeof b !== 'object') return false;
    for (const [k, v] of Object.entries(want)) if (b[k] !== v) return false;
    return Object.values(b).every((v) => typeof v === 'boolean');
  };
  await runScenarios(t, srv, [
    { name: 'mixed as anonymous', method: 'GET', url: A('mixed', m.id), status: 200, expect: exactly({ view: true, update: false, delete: false }) },
    { name: 'mixed as user', method: 'GET', url: A('mixed', m.id), token: bob.token, status: 200, expect: exactly({ view: true, update: false, delete: true }) },
    { name: 'mixed as superuser', method: 'GET', url: A('mixed', m.id), token: su, status: 200, expect: exactly({ view: true, update: true, delete: true }) },
    { name: 'note as owner', method: 'GET', url: A('notes', note.body.id), token: alice.token, status: 200, expect: exactly({ view: true, update: true, delete: true }) },
    { name: 'note as other user → 404', method: 'GET', url: A('notes', note.body.id), token: bob.token, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'note as anonymous → 404', method: 'GET', url: A('notes', note.body.id), status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'locked as user → 404', method: 'GET', url: A('locked_null', locked.id), token: alice.token, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'locked as superuser', method: 'GET', url: A('locked_null', locked.id), token: su, status: 200, expect: exactly({ view: true, update: true, delete: true }) },
    { name: 'unknown record → 404', method: 'GET', url: A('mixed', 'zzzzzzzzzzzzzzz'), token: su, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown collection → 404', method: 'GET', url: A('nope', m.id), token: su, status: 404, expect: errorFragment(404, 'not_found') },
  ]);
  // abilities agree with what the API actually does
  const upd = await srv.api('PATCH', `/api/collections/mixed/records/${m.id}`, { token: bob.token, body: { title: 'y' } });
  assert.equal(upd.status, 404, 'update:false → update denied');
  const del = await srv.api('DELETE', `/api/collections/mixed/records/${m.id}`, { token: bob.token });
  assert.equal(del.status, 204, 'delete:true → delete allowed');
});

test('startup logs a warning naming each collection with a @public rule', async () => {
  const first = jsonLogLines(srv.stderr());
  assert.ok(!first.some((l) => l.level === 'warn' && String(l.msg).includes('public_board')), 'public_board did not exist at the first start');
  await srv.stop();
  srv = await startSvc({ dataDir });
  su = srv.suToken;
  const lines = jsonLogLines(srv.stderr());
  const warns = lines.filter((l) => l.level === 'warn');
  const names = (n: string) => warns.filter((l) => String(l.msg).includes(n));
  assert.ok(names('public_board').length >= 1, `a warn line names public_board:\n${warns.map((l) => l.msg).join('\n')}`);
  assert.ok(names('posts').length >= 1, `a warn line names posts (public list/view): ${warns.map((l) => l.msg).join('\n')}`);
  assert.ok(names('mixed').length >= 1, 'a warn line names mixed');
  for (const quiet of ['locked_null', 'locked_empty', 'notes', 'tenant', 'methods']) {
    assert.equal(names(quiet).length, 0, `no @public warning for ${quiet}: ${names(quiet).map((l) => l.msg).join('\n')}`);
  }
  // the restarted server enforces the same rules
  assert.equal((await srv.api('GET', '/api/collections/locked_null/records')).status, 403);
  assert.equal((await srv.api('GET', '/api/collections/public_board/records')).status, 200);
});
