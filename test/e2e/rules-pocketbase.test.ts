/**
 * PocketBase's additions to the filter grammar end to end (docs/rules.md, "PocketBase's
 * additions"), through real HTTP lists and rules: datetime macros, request macros, modifiers, any-of operators. Runs on SQLite, and on
 * PostgreSQL with `npx tsx test/pg-suite.ts test/e2e/rules-pocketbase.test.ts`.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { openRealtime } from '../helpers/realtime-socket.js';
import { assertError, dumpServerLog, qs, seed, signup } from '../helpers/records-fixtures.js';

let srv: Svc;
const day = (offsetDays: number): string => new Date(Date.now() + offsetDays * 86_400_000).toISOString().replace('T', ' ');
const ids = new Map<string, string>();

before(async () => {
  srv = await startSvc();
  await srv.createCollection({
    name: 'events', type: 'base',
    fields: [{ name: 'title', type: 'text' }, { name: 'at', type: 'date' }, { name: 'n', type: 'number' }],
    // only events from yesterday on are listed to anyone; creating one in the past is refused
    listRule: 'at >= @yesterday', viewRule: '@public', createRule: '@request.data.at > @now', updateRule: null, deleteRule: null,
  });
  await srv.createCollection({
    name: 'gated', type: 'base', fields: [{ name: 'title', type: 'text' }],
    listRule: "@request.query.key = 'open'", viewRule: "@request.context = 'default' && @request.query.key != 'shut'",
    createRule: "@request.body.title != 'no' && @request.headers.user_agent != 'bad-agent' && @request.context = 'default'",
    updateRule: "@request.query.confirm = 'yes'",
    deleteRule: '@request.headers.x_custom = null && @request.headers.authorization = null',
  });
  ids.set('gated', (await seed(srv, 'gated', { title: 'g' })).id);
  await srv.createCollection({
    name: 'items', type: 'base',
    fields: [{ name: 'title', type: 'text' }, { name: 'tags', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 3 } }, { name: 'locked', type: 'bool' }],
    listRule: '@public', viewRule: '@public', createRule: '@request.body.locked:isset = false && @request.body.tags:length <= 2',
    // the title may change only while not locked; tags never
    updateRule: '(locked = false || @request.body.title:changed = false) && @request.body.tags:isset = false', deleteRule: null,
  });
  for (const [title, tags, locked] of [['Alpha', ['a', 'b'], false], ['ALPHA', ['a'], true], ['beta', [], false], ['Gamma', ['c', 'a', 'b'], false]] as const) {
    ids.set(title, (await seed(srv, 'items', { title, tags, locked })).id);
  }
  // reachable only through realtime, and only through file downloads
  await srv.createCollection({ name: 'live_only', type: 'base', fields: [{ name: 'title', type: 'text' }], listRule: "@request.context = 'realtime'", viewRule: "@request.context = 'realtime'" });
  await srv.createCollection({
    name: 'files_only', type: 'base', fields: [{ name: 'doc', type: 'file', options: { maxSelect: 1, maxSize: 65536 } }],
    listRule: "@request.context = 'protectedFile'", viewRule: "@request.context = 'protectedFile'",
  });
  for (const [title, at] of [['old', day(-3)], ['recent', day(-0.5)], ['soon', day(0.5)], ['next_year', day(400)]] as const) {
    ids.set(title, (await seed(srv, 'events', { title, at, n: 1 })).id);
  }
});

after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
});

async function titles(filter: string, token: string | null = srv.suToken): Promise<string[]> {
  const r = await srv.api('GET', `/api/collections/events/records${qs({ filter, sort: 'at', perPage: 50 })}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items.map((x: { title: string }) => x.title);
}

test('datetime macros in list filters', async () => {
  assert.deepEqual(await titles('at < @now'), ['old', 'recent']);
  assert.deepEqual(await titles('at > @now'), ['soon', 'next_year']);
  assert.deepEqual(await titles('at >= @yesterday && at <= @tomorrow'), ['recent', 'soon']);
  assert.deepEqual(await titles('at > @yearEnd'), ['next_year']);
  assert.deepEqual(await titles('@year >= 2024 && n <= @month'), ['old', 'recent', 'soon', 'next_year']);
});

test('datetime macros in rules', async () => {
  // the list rule hides what is older than a day from anyone but superusers
  assert.deepEqual(await titles('n = 1', null), ['recent', 'soon', 'next_year']);
  const past = await srv.api('POST', '/api/collections/events/records', { body: { title: 'x', at: day(-1) }, token: null });
  assertError(past, 403);
  const future = await srv.api('POST', '/api/collections/events/records', { body: { title: 'y', at: day(1) }, token: null });
  assert.equal(future.status, 201, future.text);
});

test('an unknown macro is a 400 in the error envelope', async () => {
  const r = await srv.api('GET', `/api/collections/events/records${qs({ filter: 'at > @nowish' })}`, { token: srv.suToken });
  assertError(r, 400, 'bad_request');
  assert.match(r.body.message, /^Invalid filter: unknown macro "@nowish" at position 6\.$/);
  const bad = await srv.api('PATCH', '/api/collections/events', { body: { listRule: 'at > @today' }, token: srv.suToken });
  assertError(bad, 400);
});

test('request macros: query, body, headers and context in rules', async () => {
  const base = '/api/collections/gated/records';
  const list = async (q: string) => srv.api('GET', `${base}${q}`, { token: null });
  assert.equal((await list('?key=open')).body.items.length, 1);
  assert.equal((await list('?key=shut')).body.items.length, 0);
  assert.equal((await list('')).body.items.length, 0);
  const id = ids.get('gated')!;
  assert.equal((await srv.api('GET', `${base}/${id}`, { token: null })).status, 200);
  assert.equal((await srv.api('GET', `${base}/${id}?key=shut`, { token: null })).status, 404);
  // @request.body is the request body; user_agent is read on requests with a body
  assertError(await srv.api('POST', base, { body: { title: 'no' }, token: null }), 403);
  assertError(await srv.api('POST', base, { body: { title: 'ok' }, token: null, headers: { 'user-agent': 'bad-agent' } }), 403);
  const made = await srv.api('POST', base, { body: { title: 'ok' }, token: null, headers: { 'user-agent': 'good-agent' } });
  assert.equal(made.status, 201, made.text);
  assertError(await srv.api('PATCH', `${base}/${made.body.id}`, { body: { title: 'x' }, token: null }), 404);
  assert.equal((await srv.api('PATCH', `${base}/${made.body.id}?confirm=yes`, { body: { title: 'x' }, token: null })).status, 200);
  // a header svc does not read is NULL
  assert.equal((await srv.api('DELETE', `${base}/${made.body.id}`, { token: null, headers: { 'x-custom': '1' } })).status, 204);
});

test('modifiers in list filters: :lower, :length, :each', async () => {
  const titlesOf = async (filter: string): Promise<string[]> => {
    const r = await srv.api('GET', `/api/collections/items/records${qs({ filter, sort: 'title' })}`, { token: null });
    assert.equal(r.status, 200, r.text);
    return r.body.items.map((x: { title: string }) => x.title);
  };
  assert.deepEqual(await titlesOf("title:lower = 'alpha'"), ['ALPHA', 'Alpha']);
  assert.deepEqual(await titlesOf('tags:length = 0'), ['beta']);
  assert.deepEqual(await titlesOf('tags:length >= 2'), ['Alpha', 'Gamma']);
  assert.deepEqual(await titlesOf("tags:each = 'a'"), ['ALPHA']);
  assert.deepEqual(await titlesOf("tags:each in ('a', 'b')"), ['ALPHA', 'Alpha']);
  assert.deepEqual(await titlesOf("tags = 'b'"), ['Alpha', 'Gamma']);
  const bad = await srv.api('GET', `/api/collections/items/records${qs({ filter: 'title:length > 1' })}`, { token: null });
  assertError(bad, 400, 'bad_request');
  assert.match(bad.body.message, /^Invalid filter: the modifier ":length" cannot apply to "title"/);
  assertError(await srv.api('GET', `/api/collections/items/records${qs({ filter: "title:upper = 'a'" })}`, { token: null }), 400, 'bad_request');
});

test('modifiers in rules: :isset, :length, :changed', async () => {
  const base = '/api/collections/items/records';
  assertError(await srv.api('POST', base, { body: { title: 'x', locked: false }, token: null }), 403);
  assertError(await srv.api('POST', base, { body: { title: 'x', tags: ['a', 'b', 'c'] }, token: null }), 403);
  assert.equal((await srv.api('POST', base, { body: { title: 'x', tags: ['a', 'b'] }, token: null })).status, 201);
  const locked = ids.get('ALPHA')!;
  const open = ids.get('beta')!;
  // the locked record's title cannot change; sending the same title, or not sending it, is no change
  assertError(await srv.api('PATCH', `${base}/${locked}`, { body: { title: 'other' }, token: null }), 404);
  assert.equal((await srv.api('PATCH', `${base}/${locked}`, { body: { title: 'ALPHA' }, token: null })).status, 200);
  assert.equal((await srv.api('PATCH', `${base}/${locked}`, { body: {}, token: null })).status, 200);
  assert.equal((await srv.api('PATCH', `${base}/${open}`, { body: { title: 'beta 2' }, token: null })).status, 200);
  assertError(await srv.api('PATCH', `${base}/${open}`, { body: { tags: 'a' }, token: null }), 404);
});

test('any-of operators in list filters', async () => {
  const titlesOf = async (filter: string): Promise<string[]> => {
    const r = await srv.api('GET', `/api/collections/items/records${qs({ filter, sort: 'title', perPage: 50 })}`, { token: null });
    assert.equal(r.status, 200, r.text);
    return r.body.items.map((x: { title: string }) => x.title).filter((t: string) => ['ALPHA', 'Alpha', 'Gamma', 'beta', 'beta 2'].includes(t));
  };
  assert.deepEqual(await titlesOf("tags ?= 'b'"), await titlesOf("tags = 'b'"));
  assert.deepEqual(await titlesOf("tags ?= 'b'"), ['Alpha', 'Gamma']);
  assert.deepEqual(await titlesOf("tags != 'a'"), ['beta 2']);
  assert.deepEqual(await titlesOf("tags ?!= 'a'"), ['Alpha', 'Gamma']);
  assert.deepEqual(await titlesOf("tags ?!~ 'A'"), ['Alpha', 'Gamma']);
  assert.deepEqual(await titlesOf("tags ?> 'b'"), ['Gamma']);
  assertError(await srv.api('GET', `/api/collections/items/records${qs({ filter: "tags ?? 'a'" })}`, { token: null }), 400, 'bad_request');
});

test('@request.context: realtime for subscriptions, protectedFile for downloads', async () => {
  // REST reads run in the default context
  assert.equal((await srv.api('GET', '/api/collections/live_only/records', { token: null })).body.items.length, 0);
  const { ws, waitFor } = await openRealtime(srv.url);
  await waitFor((f) => f.type === 'connect');
  // a realtime subscriber who is no superuser (superusers pass every rule)
  await srv.createCollection({ name: 'people', type: 'auth', fields: [], createRule: '@public', listRule: null, viewRule: null, updateRule: null, deleteRule: null });
  const user = await signup(srv, 'people', 'ann@example.com');
  ws.send(JSON.stringify({ action: 'auth', token: user.token }));
  await waitFor((f) => f.type === 'auth');
  ws.send(JSON.stringify({ action: 'subscribe', topic: 'live_only' }));
  await waitFor((f) => f.type === 'ack' && f.topic === 'live_only');
  const rec = await seed(srv, 'live_only', { title: 'seen live' });
  const ev = await waitFor((f) => f.type === 'event' && f.topic === 'live_only');
  assert.equal(ev.record.id, rec.id);
  ws.close();
  assertError(await srv.api('GET', `/api/collections/live_only/records/${rec.id}`, { token: null }), 404);

  const fd = new FormData();
  fd.append('doc', new Blob(['hello'], { type: 'text/plain' }), 'note.txt');
  const made = await fetch(`${srv.url}/api/collections/files_only/records`, { method: 'POST', body: fd, headers: { authorization: `Bearer ${srv.suToken}` } });
  const doc = await made.json() as { id: string; doc: string };
  assert.equal(made.status, 201, JSON.stringify(doc));
  assertError(await srv.api('GET', `/api/collections/files_only/records/${doc.id}`, { token: null }), 404);
  const file = await fetch(`${srv.url}/api/files/files_only/${doc.id}/${doc.doc}`);
  assert.equal(file.status, 200);
  assert.equal(await file.text(), 'hello');
});
