/**
 * Several instances, one service, end to end: two real `svc serve` processes on one
 * throw-away PostgreSQL server (test/helpers/postgres.ts), behind a real nginx load balancer from
 * Debian (test/helpers/nginx.ts, round robin). A write made on one instance is read, listed,
 * searched and delivered over realtime on the other; a token issued by one is accepted by the
 * other (the shared token secret); each instance's caches drop what another instance changed
 * (the cluster change feed, src/store/pg/cluster-feed.ts), settings, flag and experiment
 * overrides and ended sessions included (what `svc migrate` wrote too); and clients through the
 * balancer see one service.
 *
 * Skips, saying why, when PostgreSQL or nginx cannot run here (ci/install-apt.sh installs both).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ROOT, startSvc, runCli, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { postgresSkipReason, startPostgres, type Postgres } from '../helpers/postgres.js';
import { nginxSkipReason, startNginx } from '../helpers/nginx.js';
import { openRealtime } from '../helpers/realtime-socket.js';

const skip = postgresSkipReason() ?? nginxSkipReason();

let pgs: Postgres | null = null;
let a: Svc;
let b: Svc;
let lb: Awaited<ReturnType<typeof startNginx>> | null = null;
/** the shared database */
let dbUrl = '';
const dirs: string[] = [];

/**
 * A server of the cluster: its own data directory, the shared database, and the app that declares
 * flags and experiments (test/fixtures/app-features.mjs: state route `/api/flags-state`,
 * `/api/checkout` reading `app.flags` and `app.settings`).
 */
async function instance(url: string): Promise<Svc> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-cluster-'));
  dirs.push(dataDir);
  return startSvc({ dataDir, env: { SERVICE_DATABASE_URL: url }, superuser: true, args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-features.mjs')}`] });
}

before(async () => {
  if (skip) return;
  pgs = await startPostgres();
  const url = await pgs.createDatabase('cluster');
  dbUrl = url;
  // the superuser is made once, in the shared database, by the CLI
  const su = runCli(['superuser', 'upsert', `--email=${SU_EMAIL}`, `--password=${SU_PASSWORD}`], { SERVICE_DATABASE_URL: url });
  assert.equal(su.status, 0, su.stderr);
  a = await instance(url);
  b = await instance(url);
  await a.createCollection({
    name: 'posts', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public',
    fields: [{ name: 'title', type: 'text', options: { searchable: true } }, { name: 'n', type: 'number' }],
  });
  await a.createCollection({
    name: 'users', type: 'auth', createRule: '@public', listRule: 'id = @request.auth.id', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id',
    fields: [{ name: 'nick', type: 'text' }],
  });
  lb = await startNginx([new URL(a.url).host, new URL(b.url).host]);
});

after(async () => {
  await lb?.stop();
  await a?.stop();
  await b?.stop();
  await pgs?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Polls `fn` until it answers true (the other instance hears of a commit within milliseconds). */
async function eventually(what: string, fn: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A realtime WebSocket client (0-conventions.md protocol) collecting frames, subscribed to
 * `topic`; signed in with `opts.token` first, and with `opts.filter` when given.
 */
async function subscribe(url: string, topic: string, opts: { token?: string; filter?: string } = {}): Promise<{ frames: any[]; ws: WebSocket }> {
  const { ws, frames } = await openRealtime(url);
  await eventually('connect frame', async () => frames.some((f) => f.type === 'connect'));
  if (opts.token) {
    ws.send(JSON.stringify({ action: 'auth', token: opts.token }));
    await eventually('auth ok', async () => frames.some((f) => f.type === 'auth' && f.status === 'ok'));
  }
  ws.send(JSON.stringify({ action: 'subscribe', topic, ...(opts.filter ? { filter: opts.filter } : {}) }));
  await eventually('subscribe ack', async () => frames.some((f) => f.type === 'ack' && f.action === 'subscribe'));
  return { frames, ws };
}

test('the second instance sees the schema the first one changed', { skip: skip ?? false }, async () => {
  // B reloads its registry when A's commit reaches it over the cluster feed, with a read of its
  // own: asynchronous, like every other change B hears of
  const read = () => b.api('GET', '/api/collections/posts', { token: b.suToken });
  let r = await read();
  if (r.status === 404) await eventually('B knows the collection A made', async () => (r = await read()).status !== 404, 10_000);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.name, 'posts');
});

test('a write on A is read, listed, searched and delivered over realtime on B', { skip: skip ?? false }, async () => {
  const rt = await subscribe(b.url, 'posts');
  // B caches the list page and the count before the write
  const before = await b.api('GET', '/api/collections/posts/records?sort=-n');
  assert.equal(before.status, 200);
  const created = await a.api('POST', '/api/collections/posts/records', { body: { title: 'zebra crossing', n: 1 } });
  assert.ok(created.status === 200 || created.status === 201, created.text);
  const id = created.body.id;
  // read
  const got = await b.api('GET', `/api/collections/posts/records/${id}`);
  assert.equal(got.status, 200, got.text);
  assert.equal(got.body.title, 'zebra crossing');
  // listed: the page B cached before is dropped once B hears of the commit (the notification
  // reaches B a moment after A answers: docs/deployment.md, "Several instances")
  await eventually('B lists the new record', async () => {
    const list = await b.api('GET', '/api/collections/posts/records?sort=-n');
    return list.body.items.some((x: any) => x.id === id) && list.body.totalItems === before.body.totalItems + 1;
  });
  // searched
  const found = await b.api('GET', `/api/collections/posts/records?search=${encodeURIComponent('zebra')}`);
  assert.deepEqual(found.body.items.map((x: any) => x.id), [id]);
  // delivered over realtime by B (which reads the record itself)
  await eventually('the create event on B', async () => rt.frames.some((f) => f.type === 'event' && f.action === 'create' && f.record?.id === id));
  const ev = rt.frames.find((f) => f.type === 'event' && f.action === 'create');
  assert.equal(ev.record.title, 'zebra crossing');
  // an update on A: B's cached record is not served stale
  const upd = await a.api('PATCH', `/api/collections/posts/records/${id}`, { body: { title: 'zebra updated' } });
  assert.equal(upd.status, 200, upd.text);
  await eventually('B reads the update', async () => (await b.api('GET', `/api/collections/posts/records/${id}`)).body.title === 'zebra updated');
  await eventually('the update event on B', async () => rt.frames.some((f) => f.type === 'event' && f.action === 'update' && f.record?.title === 'zebra updated'));
  // a delete on A: gone on B
  assert.equal((await a.api('DELETE', `/api/collections/posts/records/${id}`)).status, 204);
  await eventually('B answers 404 for the deleted record', async () => (await b.api('GET', `/api/collections/posts/records/${id}`)).status === 404);
  await eventually('the delete event on B', async () => rt.frames.some((f) => f.type === 'event' && f.action === 'delete' && f.record?.id === id));
  rt.ws.close();
});

test('a delete on A reaches, on B, exactly the subscribers whose rule and filter held for the deleted row', { skip: skip ?? false }, async () => {
  // an auth collection of its own: the rate-limit test below counts sign-ins per collection
  const members = await a.createCollection({ name: 'members', type: 'auth', createRule: '@public', viewRule: 'id = @request.auth.id', fields: [] });
  await a.createCollection({
    name: 'memos', type: 'base', listRule: 'owner = @request.auth.id', viewRule: 'owner = @request.auth.id',
    createRule: '@request.auth.id != ""', deleteRule: 'owner = @request.auth.id',
    fields: [{ name: 'text', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: members.id } }],
  });
  const signIn = async (email: string) => {
    const made = await a.api('POST', '/api/collections/members/records', { body: { email, password: 'password123', passwordConfirm: 'password123' } });
    assert.ok(made.status === 200 || made.status === 201, made.text);
    const r = await a.api('POST', '/api/collections/members/auth-with-password', { body: { identity: email, password: 'password123' } });
    assert.equal(r.status, 200, r.text);
    return { id: r.body.record.id as string, token: r.body.token as string };
  };
  const alice = await signIn('alice@example.com');
  const bob = await signIn('bob@example.com');
  /** A client on B, signed in, subscribed to memos (with `filter` when given). */
  const listener = (token: string, filter?: string) => subscribe(b.url, 'memos', { token, filter });
  const aliceAll = await listener(alice.token);
  const aliceKept = await listener(alice.token, 'text = "keep"'); // the filter needs the row's text
  const bobAll = await listener(bob.token);
  const events = (l: { frames: any[] }, id: string) => l.frames.filter((f) => f.type === 'event' && f.record?.id === id).map((f) => f.action);

  const memo = async (text: string) => {
    const r = await a.api('POST', '/api/collections/memos/records', { token: alice.token, body: { text, owner: alice.id } });
    assert.ok(r.status === 200 || r.status === 201, r.text);
    return r.body.id as string;
  };
  const kept = await memo('keep');
  const other = await memo('other');
  await eventually('the creates on B', async () => events(aliceAll, kept).length === 1 && events(aliceAll, other).length === 1);
  for (const id of [kept, other]) assert.equal((await a.api('DELETE', `/api/collections/memos/records/${id}`, { token: alice.token })).status, 204);
  // deleted on A, gone before B hears of it: B decides on the row the notification carries
  await eventually('alice hears both deletes on B', async () => events(aliceAll, kept).includes('delete') && events(aliceAll, other).includes('delete'));
  await eventually('the filtered subscription hears the delete of the row it matched', async () => events(aliceKept, kept).includes('delete'));
  const del = aliceAll.frames.find((f) => f.type === 'event' && f.action === 'delete' && f.record?.id === kept);
  assert.deepEqual(del.record, { id: kept }, 'a delete event names the record (as a local delete does)');
  // a marker write after the deletes: once alice hears it, B has delivered everything before it
  const marker = await memo('marker');
  await eventually('the marker on B', async () => events(aliceAll, marker).length === 1);
  assert.deepEqual(events(aliceKept, other), [], 'the filter did not hold for "other"');
  assert.deepEqual(events(aliceKept, kept), ['create', 'delete']);
  for (const id of [kept, other, marker]) assert.deepEqual(events(bobAll, id), [], 'bob is not the owner: no event, not even a delete');
  for (const l of [aliceAll, aliceKept, bobAll]) l.ws.close();
});

test('SSE: the stream on B, its subscription POST on A (no sticky routing): A relays it to B, with the caller\'s credential', { skip: skip ?? false }, async () => {
  const { openSse } = await import('../helpers/devtool.js');
  const stream = await openSse(`${b.url}/api/realtime`);
  const connect = await stream.next('PB_CONNECT');
  const { clientId } = JSON.parse(connect.data);
  // the POST reaches A, which does not hold the stream
  const set = await a.api('POST', '/api/realtime', { token: a.suToken, body: { clientId, subscriptions: ['posts/*'] } });
  assert.equal(set.status, 204, set.text);
  const created = await a.api('POST', '/api/collections/posts/records', { body: { title: 'over sse', n: 7 } });
  const ev = await stream.next('posts/*');
  assert.deepEqual([JSON.parse(ev.data).action, JSON.parse(ev.data).record.id], ['create', created.body.id]);

  // errors come back from the instance holding the stream, as they would from it directly
  const badTopic = await a.api('POST', '/api/realtime', { token: a.suToken, body: { clientId, subscriptions: ['no_such_collection/*'] } });
  const direct = await b.api('POST', '/api/realtime', { token: b.suToken, body: { clientId, subscriptions: ['no_such_collection/*'] } });
  assert.equal(badTopic.status, direct.status, badTopic.text);
  assert.deepEqual(badTopic.body, direct.body);
  assert.ok(badTopic.status >= 400 && badTopic.status < 500, badTopic.text);
  // another caller's token cannot take the stream over through the relay either
  const signup = await a.api('POST', '/api/collections/users/records', { body: { email: 'sse@example.com', password: 'password123', passwordConfirm: 'password123' } });
  assert.ok(signup.status === 200 || signup.status === 201, signup.text);
  const other = await a.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'sse@example.com', password: 'password123' } });
  const hijack = await a.api('POST', '/api/realtime', { token: other.body.token, body: { clientId, subscriptions: ['posts/*'] } });
  assert.equal(hijack.status, 403, hijack.text);
  // nor can a POST without credentials, relayed or not: the stream keeps its caller
  const anonRelayed = await a.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['posts/*'] } });
  assert.equal(anonRelayed.status, 403, anonRelayed.text);
  const anonDirect = await b.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['posts/*'] } });
  assert.equal(anonDirect.status, 403, anonDirect.text);
  // an id no instance holds: 404, once no instance answered
  const unknown = await a.api('POST', '/api/realtime', { body: { clientId: 'nosuchclient00', subscriptions: [] } });
  assert.equal(unknown.status, 404, unknown.text);
  // unsubscribing through A stops the events on B
  assert.equal((await a.api('POST', '/api/realtime', { token: a.suToken, body: { clientId, subscriptions: [] } })).status, 204);
  const before = stream.events.length;
  // a watcher on B: once it hears the create, B has dispatched it to every client it holds (the
  // change reaches B asynchronously, so resubscribing before that would rightly deliver it)
  const watcher = await subscribe(b.url, 'posts');
  const after = await a.api('POST', '/api/collections/posts/records', { body: { title: 'after unsubscribe', n: 8 } });
  await eventually('B dispatched the create made after the unsubscribe', async () => watcher.frames.some((f) => f.type === 'event' && f.record?.id === after.body.id));
  watcher.ws.close();
  const marker = await b.api('POST', '/api/realtime', { token: b.suToken, body: { clientId, subscriptions: ['posts/*'] } });
  assert.equal(marker.status, 204);
  const third = await a.api('POST', '/api/collections/posts/records', { body: { title: 'third', n: 9 } });
  const ev3 = await stream.next('posts/*', before);
  assert.equal(JSON.parse(ev3.data).record.id, third.body.id, 'nothing was delivered between the unsubscribe and the new subscription');
  stream.close();
});

test('the SDK\'s OAuth2 redirect reaching A is relayed to B, which holds the @oauth2 stream; an id no instance holds delivers nothing', { skip: skip ?? false }, async () => {
  const { openSse } = await import('../helpers/devtool.js');
  const stream = await openSse(`${b.url}/api/realtime`);
  const { clientId } = JSON.parse((await stream.next('PB_CONNECT')).data);
  const set = await a.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['@oauth2'] } });
  assert.equal(set.status, 204, set.text);
  const r = await fetch(`${a.url}/api/oauth2-redirect?state=${clientId}&code=relayed-code`);
  assert.equal(r.status, 200, await r.text());
  assert.deepEqual(JSON.parse((await stream.next('@oauth2')).data), { state: clientId, code: 'relayed-code' });
  // delivered once: neither instance takes it again
  assert.equal((await fetch(`${a.url}/api/oauth2-redirect?state=${clientId}&code=again`)).status, 400);
  assert.equal((await fetch(`${b.url}/api/oauth2-redirect?state=${clientId}&code=again`)).status, 400);
  assert.equal((await fetch(`${a.url}/api/oauth2-redirect?state=nosuchclient00x&code=x`)).status, 400);
  stream.close();
});

test('the PocketBase SDK through the round-robin balancer: its stream and its subscription POST land on either instance', { skip: skip ?? false }, async () => {
  const { default: PocketBase } = await import('pocketbase');
  // Node 20 has no EventSource; the SDK's realtime needs one
  (globalThis as { EventSource?: unknown }).EventSource ??= (await import('eventsource')).EventSource;
  const clients = Array.from({ length: 4 }, () => {
    const pb = new PocketBase(lb!.url);
    pb.autoCancellation(false);
    return pb;
  });
  const got: string[][] = clients.map(() => []);
  try {
    const metric = async () => {
      const [ma, mb] = await Promise.all([a.api('GET', '/api/realtime/metrics', { token: a.suToken }), b.api('GET', '/api/realtime/metrics', { token: b.suToken })]);
      return ma.body.relayedPosts + mb.body.relayedPosts;
    };
    const relayedBefore = await metric();
    // one after the other: round robin then sends a client's stream and its POST to different instances
    for (const [i, pb] of clients.entries()) await pb.collection('posts').subscribe('*', (e) => got[i].push(`${e.action}:${e.record.title}`));
    assert.ok((await metric()) > relayedBefore, 'at least one subscription POST reached the instance without the stream');
    const r = await fetch(`${lb!.url}/api/collections/posts/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'to every sdk', n: 50 }) });
    assert.ok(r.status === 200 || r.status === 201, await r.text());
    await eventually('every SDK client hears the create', async () => got.every((g) => g.includes('create:to every sdk')));
  } finally {
    // the SDK reconnects a dropped stream forever: close them, or the test process stays up
    for (const pb of clients) await pb.realtime.unsubscribe().catch(() => undefined);
  }
});

test('a token issued by one instance is accepted by the other', { skip: skip ?? false }, async () => {
  const signup = await a.api('POST', '/api/collections/users/records', { body: { email: 'c@example.com', password: 'password123', passwordConfirm: 'password123', nick: 'c' } });
  assert.ok(signup.status === 200 || signup.status === 201, signup.text);
  const auth = await a.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'c@example.com', password: 'password123' } });
  assert.equal(auth.status, 200, auth.text);
  const me = await b.api('GET', `/api/collections/users/records/${auth.body.record.id}`, { token: auth.body.token });
  assert.equal(me.status, 200, me.text);
  assert.equal(me.body.nick, 'c');
});

test('through the load balancer: writes and reads spread over both instances agree', { skip: skip ?? false }, async () => {
  const base = lb!.url;
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await fetch(`${base}/api/collections/posts/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: `lb ${i}`, n: 100 + i }) });
    const text = await r.text();
    assert.ok(r.status >= 200 && r.status < 300, text);
    ids.push((JSON.parse(text) as { id: string }).id);
  }
  // every read through the balancer (alternating instances) sees all ten at once
  for (let i = 0; i < 6; i++) {
    const r = await fetch(`${base}/api/collections/posts/records?filter=${encodeURIComponent('n >= 100')}&sort=n&perPage=50`);
    const body = (await r.json()) as { items: Array<{ id: string }>; totalItems: number };
    assert.deepEqual(body.items.map((x) => x.id), ids);
    assert.equal(body.totalItems, 10);
  }
  // both instances served requests
  assert.match(a.stderr(), /\/api\/collections\/posts\/records/);
  assert.match(b.stderr(), /\/api\/collections\/posts\/records/);
});

test('rate limits are shared: failed sign-ins spread over both instances meet one budget', { skip: skip ?? false }, async () => {
  // the default budget: 10 attempts a minute per client and collection
  const statuses: number[] = [];
  for (let i = 0; i < 14; i++) {
    const srv = i % 2 === 0 ? a : b;
    const r = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'nobody@example.com', password: `wrong-${i}` } });
    statuses.push(r.status);
  }
  assert.deepEqual(statuses.slice(0, 10), Array(10).fill(400), statuses.join(','));
  assert.deepEqual(statuses.slice(10), [429, 429, 429, 429], 'the 11th attempt is refused, whichever instance it reaches');
});

test('settings: a setting saved on A is read on B, through the REST routes and app.settings; replaced and deleted on A, so on B', { skip: skip ?? false }, async () => {
  // B's mirror of _settings is loaded before the writes
  assert.equal((await b.api('GET', '/api/settings/greeting', { token: b.suToken })).status, 404);
  assert.equal((await b.api('GET', '/api/checkout')).body.greeting, null);
  assert.equal((await a.api('PUT', '/api/settings/greeting', { token: a.suToken, body: { value: 'hello' } })).status, 200);
  await eventually('B reads the setting saved on A', async () => (await b.api('GET', '/api/settings/greeting', { token: b.suToken })).body?.value === 'hello');
  assert.ok((await b.api('GET', '/api/settings', { token: b.suToken })).body.items.some((s: any) => s.key === 'greeting' && s.value === 'hello'));
  assert.equal((await b.api('GET', '/api/checkout')).body.greeting, 'hello', 'app.settings on B');
  assert.equal((await a.api('PUT', '/api/settings/greeting', { token: a.suToken, body: { value: 'hola' } })).status, 200);
  await eventually('B reads the replaced value', async () => (await b.api('GET', '/api/checkout')).body.greeting === 'hola');
  assert.equal((await a.api('DELETE', '/api/settings/greeting', { token: a.suToken })).status, 204);
  await eventually('the setting deleted on A is gone on B', async () => (await b.api('GET', '/api/settings/greeting', { token: b.suToken })).status === 404);
  assert.equal((await b.api('GET', '/api/checkout')).body.greeting, null);
  assert.ok(!(await b.api('GET', '/api/settings', { token: b.suToken })).body.items.some((s: any) => s.key === 'greeting'));
  // and the other way round: B's write reaches A
  assert.equal((await b.api('PUT', '/api/settings/motto', { token: b.suToken, body: { value: 'one service' } })).status, 200);
  await eventually('A reads the setting saved on B', async () => (await a.api('GET', '/api/settings/motto', { token: a.suToken })).body?.value === 'one service');
});

test('flags and experiments: an override changed on A changes B\'s evaluation (state route, app.flags, /api/features) and sends B\'s clients the __features signal', { skip: skip ?? false }, async () => {
  // B answers (and caches) the state before the override
  const before = await b.api('GET', '/api/flags-state?subject=ann');
  assert.equal(before.body.flags['new-checkout'], false);
  assert.equal((await b.api('GET', '/api/checkout?subject=ann')).body.newCheckout, false);
  const ws = new WebSocket(`${b.url.replace('http', 'ws')}/api/realtime`);
  const frames: any[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
  try {
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    await eventually('connect frame', async () => frames.some((f) => f.type === 'connect'));
    assert.equal((await a.api('PUT', '/api/settings/flag:new-checkout', { token: a.suToken, body: { value: 'true' } })).status, 200);
    await eventually('B evaluates the flag as overridden on A', async () => (await b.api('GET', '/api/flags-state?subject=ann')).body.flags['new-checkout'] === true);
    assert.equal((await b.api('GET', '/api/checkout?subject=ann')).body.newCheckout, true, 'app.flags on B');
    assert.equal((await b.api('GET', '/api/features', { token: b.suToken })).body.flags[0].override, 'true');
    await eventually('B\'s client gets the __features signal', async () => frames.some((f) => f.type === 'signal' && f.topic === '__features'));
    // an experiment's weights overridden on A move B's (non-sticky) assignments
    assert.equal((await a.api('PUT', '/api/settings/exp:pricing:weights', { token: a.suToken, body: { value: '[0,1]' } })).status, 200);
    await eventually('B applies the weights set on A', async () => {
      for (let i = 0; i < 10; i++) if ((await b.api('GET', `/api/flags-state?subject=w-${i}`)).body.experiments.pricing !== 'b') return false;
      return true;
    });
    // the override deleted on A: B is back to the default
    assert.equal((await a.api('DELETE', '/api/settings/flag:new-checkout', { token: a.suToken })).status, 204);
    await eventually('B is back to the default', async () => (await b.api('GET', '/api/flags-state?subject=ann')).body.flags['new-checkout'] === false);
    assert.equal((await b.api('GET', '/api/checkout?subject=ann')).body.newCheckout, false);
    assert.equal((await a.api('DELETE', '/api/settings/exp:pricing:weights', { token: a.suToken })).status, 204);
    // a sticky assignment made on A is the one B hands out
    const first = (await a.api('GET', '/api/flags-state?subject=sticky-1')).body.experiments.onboarding;
    assert.equal((await b.api('GET', '/api/flags-state?subject=sticky-1')).body.experiments.onboarding, first);
  } finally {
    ws.close();
  }
});

test('a session ended on A is refused on B: a table-store session at once (B reads its row), and B\'s realtime client signed in with it is told', { skip: skip ?? false }, async () => {
  const own = { createRule: '@public', viewRule: 'id = @request.auth.id', listRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' };
  await a.createCollection({ name: 'handsets', type: 'auth', fields: [], ...own, options: { auth: { session: { store: 'table' } } } });
  await eventually('B knows handsets', async () => (await b.api('GET', '/api/collections/handsets', { token: b.suToken })).status === 200);
  const pw = 'member-pass-1';
  const signup = await a.api('POST', '/api/collections/handsets/records', { body: { email: 'm@example.com', password: pw, passwordConfirm: pw } });
  assert.equal(signup.status, 201, signup.text);
  const id = signup.body.id;
  const one = (await a.api('POST', '/api/collections/handsets/auth-with-password', { body: { identity: 'm@example.com', password: pw } })).body.token as string;
  const two = (await a.api('POST', '/api/collections/handsets/auth-with-password', { body: { identity: 'm@example.com', password: pw } })).body.token as string;
  assert.equal((await b.api('GET', `/api/collections/handsets/records/${id}`, { token: one })).status, 200, 'B accepts the session before');
  const rt = await subscribe(b.url, 'handsets', { token: one });
  try {
    const sid = (await a.api('GET', '/api/collections/handsets/auth/sessions', { token: one })).body.items.find((s: any) => s.is_current).id;
    assert.equal((await a.api('DELETE', `/api/collections/handsets/auth/sessions/${sid}`, { token: two })).status, 204);
    // no poll: B checks the session row on every request
    assert.equal((await b.api('GET', `/api/collections/handsets/records/${id}`, { token: one })).status, 401, 'the ended session is refused on B at once');
    assert.equal((await b.api('GET', `/api/collections/handsets/records/${id}`, { token: two })).status, 200, 'the other session lives on');
    await eventually('B tells its realtime client the session ended', async () => rt.frames.some((f) => f.type === 'auth' && f.status === 'error'));
    // logout everywhere on A (bumps the token epoch, wipes the rows): refused on B too
    assert.equal((await a.api('DELETE', '/api/collections/handsets/auth/sessions', { token: two })).status, 204);
    assert.equal((await b.api('GET', `/api/collections/handsets/records/${id}`, { token: two })).status, 401);
  } finally {
    rt.ws.close();
  }
});

test('logout everywhere on A in the epoch store: B, which caches the auth record, refuses the token once the feed drops it (bounded)', { skip: skip ?? false }, async () => {
  const own = { createRule: '@public', viewRule: 'id = @request.auth.id', listRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' };
  await a.createCollection({ name: 'fans', type: 'auth', fields: [], ...own });
  await eventually('B knows fans', async () => (await b.api('GET', '/api/collections/fans', { token: b.suToken })).status === 200);
  const pw = 'fan-pass-1';
  const id = (await a.api('POST', '/api/collections/fans/records', { body: { email: 'f@example.com', password: pw, passwordConfirm: pw } })).body.id;
  const token = (await a.api('POST', '/api/collections/fans/auth-with-password', { body: { identity: 'f@example.com', password: pw } })).body.token as string;
  const rt = await subscribe(b.url, 'fans', { token });
  try {
    assert.equal((await b.api('GET', `/api/collections/fans/records/${id}`, { token })).status, 200, 'B caches the record');
    assert.equal((await a.api('DELETE', '/api/collections/fans/auth/sessions', { token })).status, 204);
    await eventually('B refuses the token', async () => (await b.api('GET', `/api/collections/fans/records/${id}`, { token })).status === 401);
    await eventually('B tells its realtime client', async () => rt.frames.some((f) => f.type === 'auth' && f.status === 'error'));
  } finally {
    rt.ws.close();
  }
});

test('`svc migrate` run beside the instances: a setting and a flag override its migration wrote reach both of them', { skip: skip ?? false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cluster-migrate-'));
  dirs.push(dir);
  const appFile = join(dir, 'app.mjs');
  writeFileSync(appFile, `export default { migrations: [{ id: '0001_settings', up(tx) {
    tx.exec('INSERT INTO "_settings" ("key","value","created","updated") VALUES (?,?,?,?), (?,?,?,?)',
      ['from-migration', 'yes', '2026-01-01 00:00:00.000Z', '2026-01-01 00:00:00.000Z', 'flag:dark-mode', 'false', '2026-01-01 00:00:00.000Z', '2026-01-01 00:00:00.000Z']);
  } }] };\n`);
  assert.equal((await b.api('GET', '/api/flags-state?subject=m')).body.flags['dark-mode'], true, 'B caches the state before');
  const r = runCli(['migrate', `--app=${appFile}`, `--data-dir=${join(dir, 'data')}`], { SERVICE_DATABASE_URL: dbUrl });
  assert.equal(r.status, 0, r.stderr + r.stdout);
  for (const srv of [a, b]) {
    await eventually('the instance reads the setting the migration wrote', async () => (await srv.api('GET', '/api/settings/from-migration', { token: srv.suToken })).body?.value === 'yes');
    await eventually('the instance evaluates the override the migration wrote', async () => (await srv.api('GET', '/api/flags-state?subject=m')).body.flags['dark-mode'] === false);
  }
});
