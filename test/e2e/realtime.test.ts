/**
 * Realtime, end to end against the real server: the WebSocket protocol of
 * 0-conventions.md (connect, auth, subscribe, unsubscribe, events, error frames), PocketBase-shaped
 * Server-Sent Events driven by the official PocketBase JS SDK's `subscribe()`, and every delivery
 * checked: list/view rules per caller, subscription filters, expiry, hidden fields and private
 * emails, revocation (logout everywhere, session revoke, password change), slow consumers dropped
 * with a close code, the connection cap (503 `overloaded`), metrics and the request log.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import WebSocket from 'ws';
import { connect } from 'node:net';
import { EventSource } from 'eventsource';
import PocketBase from 'pocketbase';
import { startSvc, jsonLogLines, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { seed, signup, type User } from '../helpers/records-fixtures.js';
import { tokenSecret, withDb } from '../helpers/auth-helpers.js';
import { createHmac } from 'node:crypto';
import { until } from '../helpers/wait.js';

(globalThis as { EventSource?: unknown }).EventSource ??= EventSource;

let srv: Svc;
let alice: User;
let bob: User;

before(async () => {
  srv = await startSvc();
  await srv.createCollection({
    name: 'users', type: 'auth', createRule: '@public', listRule: '@public', viewRule: '@public', updateRule: 'id = @request.auth.id',
    fields: [{ name: 'secret', type: 'text', options: { hidden: true } }, { name: 'nick', type: 'text' }],
  });
  alice = await signup(srv, 'users', 'alice@example.com');
  bob = await signup(srv, 'users', 'bob@example.com');
  await srv.createCollection({
    name: 'news', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public',
    fields: [{ name: 'title', type: 'text' }, { name: 'n', type: 'number' }, { name: 'internal', type: 'text', options: { hidden: true } }, { name: 'body', type: 'text' }],
  });
  const users = await srv.api('GET', '/api/collections/users', { token: srv.suToken });
  const owner = 'owner = @request.auth.id';
  await srv.createCollection({
    name: 'notes', type: 'base', listRule: owner, viewRule: owner, createRule: owner, updateRule: owner, deleteRule: owner,
    fields: [{ name: 'text', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: users.body.id } }],
  });
  await srv.createCollection({ name: 'locked', type: 'base', fields: [{ name: 'x', type: 'text' }] });
  await srv.createCollection({
    name: 'expiring', type: 'base', listRule: '@public', viewRule: '@public', options: { ttl_field: 'expires' },
    fields: [{ name: 'title', type: 'text' }, { name: 'expires', type: 'date' }],
  });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

/** A WebSocket client that records every frame and waits for the ones it expects. */
class Client {
  frames: any[] = [];
  closed: { code: number } | null = null;
  private waiters: Array<() => void> = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.frames.push(JSON.parse(d.toString()));
      for (const w of this.waiters.splice(0)) w();
    });
    ws.on('close', (code) => {
      this.closed = { code };
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(url = srv.url): Promise<Client> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/realtime`);
    const c = new Client(ws);
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    await c.next((f) => f.type === 'connect');
    return c;
  }
  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }
  /** The first frame (from `from` on) matching `pred`; fails after `ms`. */
  async next(pred: (f: any) => boolean, ms = 5000, from = 0): Promise<any> {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = this.frames.slice(from).find(pred);
      if (hit) return hit;
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting; frames: ${JSON.stringify(this.frames)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; frames: ${JSON.stringify(this.frames)}`);
      await new Promise<void>((res) => {
        const t = setTimeout(res, left);
        this.waiters.push(() => {
          clearTimeout(t);
          res();
        });
      });
    }
  }
  /** Sends a frame and waits for its answer (the next ack, auth or error frame after it). */
  async ask(frame: unknown): Promise<any> {
    const from = this.frames.length;
    this.send(frame);
    return this.next((f) => f.type === 'ack' || f.type === 'auth' || f.type === 'error', 5000, from);
  }
  events(topic?: string): any[] {
    return this.frames.filter((f) => f.type === 'event' && (topic === undefined || f.topic === topic));
  }
  close(): void {
    this.ws.close();
  }
}

/** Waits a moment for deliveries that must not come (a later positive event bounds it). */
const settle = () => new Promise((r) => setTimeout(r, 150));

test('connect, subscribe, and create/update/delete events in order; a delete carries only the id; hidden fields never sent', async () => {
  const c = await Client.open();
  assert.match(c.frames[0].clientId, /^[a-z0-9]{15}$/);
  assert.deepEqual(await c.ask({ action: 'subscribe', topic: 'news' }), { type: 'ack', action: 'subscribe', topic: 'news' });
  const rec = await seed(srv, 'news', { title: 'hello', n: 1, internal: 'classified' });
  const created = await c.next((f) => f.type === 'event' && f.action === 'create');
  assert.equal(created.topic, 'news');
  assert.equal(created.record.id, rec.id);
  assert.equal(created.record.title, 'hello');
  assert.equal(created.record.collectionName, 'news');
  assert.ok(!('internal' in created.record), 'a hidden field is never sent');
  await srv.api('PATCH', `/api/collections/news/records/${rec.id}`, { body: { title: 'hello2' } });
  const updated = await c.next((f) => f.type === 'event' && f.action === 'update');
  assert.equal(updated.record.title, 'hello2');
  await srv.api('DELETE', `/api/collections/news/records/${rec.id}`);
  const deleted = await c.next((f) => f.type === 'event' && f.action === 'delete');
  assert.deepEqual(deleted, { type: 'event', topic: 'news', action: 'delete', record: { id: rec.id } });
  assert.deepEqual(c.events().map((e) => e.action), ['create', 'update', 'delete']);
  c.close();
});

test('a rule change applies to open subscriptions from the next event (native fan-out included)', async () => {
  await srv.createCollection({
    name: 'board', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'title', type: 'text' }, { name: 'n', type: 'number' }],
  });
  const anon = await Client.open();
  const su = await Client.open();
  await su.ask({ action: 'auth', token: srv.suToken });
  await anon.ask({ action: 'subscribe', topic: 'board' });
  await su.ask({ action: 'subscribe', topic: 'board' });
  const a = await seed(srv, 'board', { title: 'open', n: 1 });
  await anon.next((f) => f.type === 'event' && f.record.id === a.id);
  const r = await srv.api('PATCH', '/api/collections/board', { token: srv.suToken, body: { listRule: 'n > 5' } });
  assert.equal(r.status, 200, r.text);
  const low = await seed(srv, 'board', { title: 'low', n: 2 });
  const high = await seed(srv, 'board', { title: 'high', n: 9 });
  await anon.next((f) => f.type === 'event' && f.record.id === high.id);
  await su.next((f) => f.type === 'event' && f.record.id === high.id);
  await srv.api('PATCH', '/api/collections/board', { token: srv.suToken, body: { listRule: null } });
  const locked = await seed(srv, 'board', { title: 'locked', n: 10 });
  await su.next((f) => f.type === 'event' && f.record.id === locked.id);
  await settle();
  assert.deepEqual(anon.events().map((e) => e.record.title), ['open', 'high'], 'the anonymous client follows the rule');
  assert.deepEqual(su.events().map((e) => e.record.title), ['open', 'low', 'high', 'locked'], 'superusers see everything');
  assert.ok(low.id);
  anon.close();
  su.close();
});

test('a record topic hears only that record; unsubscribe stops events', async () => {
  const c = await Client.open();
  const a = await seed(srv, 'news', { title: 'a' });
  const b = await seed(srv, 'news', { title: 'b' });
  await c.ask({ action: 'subscribe', topic: `news/${a.id}` });
  await srv.api('PATCH', `/api/collections/news/records/${b.id}`, { body: { title: 'b2' } });
  await srv.api('PATCH', `/api/collections/news/records/${a.id}`, { body: { title: 'a2' } });
  const ev = await c.next((f) => f.type === 'event');
  assert.equal(ev.topic, `news/${a.id}`);
  assert.equal(ev.record.title, 'a2');
  assert.deepEqual(await c.ask({ action: 'unsubscribe', topic: `news/${a.id}` }), { type: 'ack', action: 'unsubscribe', topic: `news/${a.id}` });
  await srv.api('PATCH', `/api/collections/news/records/${a.id}`, { body: { title: 'a3' } });
  await settle();
  assert.equal(c.events().length, 1, 'nothing after unsubscribe');
  c.close();
});

test('bad frames answer error frames and the socket stays usable', async () => {
  const c = await Client.open();
  const cases: Array<[unknown, RegExp]> = [
    ['not json', /not valid JSON/],
    ['[1,2]', /JSON object/],
    [{ action: 'dance' }, /Unknown action/],
    [{ action: 'subscribe' }, /topic/],
    [{ action: 'subscribe', topic: 'nope' }, /Unknown collection/],
    [{ action: 'subscribe', topic: 'news/bad id!' }, /Invalid topic/],
    [{ action: 'subscribe', topic: 'news', filter: 'title ==== 1' }, /filter|Invalid/i],
    [{ action: 'subscribe', topic: 'news', filter: 'internal = "x"' }, /internal|hidden|Invalid/i],
    [{ action: 'subscribe', topic: 'news', filter: 42 }, /filter/],
    [{ action: 'subscribe', topic: 'notes' }, /requires authentication/],
    [{ action: 'subscribe', topic: 'locked' }, /superusers/],
    [{ action: 'auth' }, /token/],
  ];
  for (const [frame, message] of cases) {
    const r = await c.ask(frame);
    assert.equal(r.type, 'error', `${JSON.stringify(frame)} → ${JSON.stringify(r)}`);
    assert.match(r.message, message, JSON.stringify(frame));
  }
  assert.deepEqual(await c.ask({ action: 'auth', token: 'garbage' }), { type: 'auth', status: 'error' });
  // still usable
  assert.equal((await c.ask({ action: 'subscribe', topic: 'news' })).type, 'ack');
  const rec = await seed(srv, 'news', { title: 'after errors' });
  assert.equal((await c.next((f) => f.type === 'event' && f.record.id === rec.id)).action, 'create');
  c.close();
});

test('the list rule is checked per caller: an owner rule delivers each user only their own records, deletes included', async () => {
  const ca = await Client.open();
  const cb = await Client.open();
  const anon = await Client.open();
  assert.deepEqual(await ca.ask({ action: 'auth', token: alice.token }), { type: 'auth', status: 'ok' });
  assert.deepEqual(await cb.ask({ action: 'auth', token: bob.token }), { type: 'auth', status: 'ok' });
  await ca.ask({ action: 'subscribe', topic: 'notes' });
  await cb.ask({ action: 'subscribe', topic: 'notes' });
  const na = await srv.api('POST', '/api/collections/notes/records', { token: alice.token, body: { text: 'alice note', owner: alice.id } });
  assert.equal(na.status, 201, na.text);
  const nb = await srv.api('POST', '/api/collections/notes/records', { token: bob.token, body: { text: 'bob note', owner: bob.id } });
  assert.equal(nb.status, 201, nb.text);
  await ca.next((f) => f.type === 'event' && f.record.id === na.body.id);
  await cb.next((f) => f.type === 'event' && f.record.id === nb.body.id);
  await srv.api('DELETE', `/api/collections/notes/records/${na.body.id}`, { token: alice.token });
  await ca.next((f) => f.type === 'event' && f.action === 'delete');
  await srv.api('DELETE', `/api/collections/notes/records/${nb.body.id}`, { token: bob.token });
  await cb.next((f) => f.type === 'event' && f.action === 'delete');
  await settle();
  assert.deepEqual(ca.events().map((e) => `${e.action} ${e.record.id}`), [`create ${na.body.id}`, `delete ${na.body.id}`]);
  assert.deepEqual(cb.events().map((e) => `${e.action} ${e.record.id}`), [`create ${nb.body.id}`, `delete ${nb.body.id}`]);
  assert.equal(anon.events().length, 0);
  for (const c of [ca, cb, anon]) c.close();
});

test('frames are handled in order: a subscribe sent right behind an auth is decided as that caller', async () => {
  const c = await Client.open();
  c.send({ action: 'auth', token: alice.token });
  c.send({ action: 'subscribe', topic: 'notes', filter: 'text != "skip"' });
  await c.next((f) => f.type === 'ack');
  assert.deepEqual(c.frames.slice(1).map((f) => f.type), ['auth', 'ack'], JSON.stringify(c.frames));
  const n = await srv.api('POST', '/api/collections/notes/records', { token: alice.token, body: { text: 'in order', owner: alice.id } });
  assert.equal((await c.next((f) => f.type === 'event')).record.id, n.body.id);
  c.close();
});

test('a subscription filter narrows events (creates, updates and deletes alike)', async () => {
  const c = await Client.open();
  await c.ask({ action: 'subscribe', topic: 'news', filter: 'n >= 10' });
  const low = await seed(srv, 'news', { title: 'low', n: 1 });
  const high = await seed(srv, 'news', { title: 'high', n: 50 });
  await c.next((f) => f.type === 'event' && f.record.id === high.id);
  await srv.api('DELETE', `/api/collections/news/records/${low.id}`);
  await srv.api('DELETE', `/api/collections/news/records/${high.id}`);
  await c.next((f) => f.type === 'event' && f.action === 'delete');
  await settle();
  assert.deepEqual(c.events().map((e) => `${e.action} ${e.record.id}`), [`create ${high.id}`, `delete ${high.id}`]);
  c.close();
});

test('expired rows are never sent; private emails only to their owner and superusers', async () => {
  const c = await Client.open();
  await c.ask({ action: 'subscribe', topic: 'expiring' });
  await c.ask({ action: 'subscribe', topic: 'users' });
  const self = await Client.open();
  await self.ask({ action: 'auth', token: alice.token });
  await self.ask({ action: 'subscribe', topic: 'users' });
  const su = await Client.open();
  assert.equal((await su.ask({ action: 'auth', token: srv.suToken })).status, 'ok');
  await su.ask({ action: 'subscribe', topic: 'users' });

  await seed(srv, 'expiring', { title: 'gone', expires: '2000-01-01 00:00:00.000Z' });
  const live = await seed(srv, 'expiring', { title: 'live', expires: '2999-01-01 00:00:00.000Z' });
  await c.next((f) => f.type === 'event' && f.record.id === live.id);

  const r = await srv.api('PATCH', `/api/collections/users/records/${alice.id}`, { token: alice.token, body: { nick: 'al' } });
  assert.equal(r.status, 200, r.text);
  const seen = await c.next((f) => f.type === 'event' && f.topic === 'users');
  const own = await self.next((f) => f.type === 'event' && f.topic === 'users');
  const bySu = await su.next((f) => f.type === 'event' && f.topic === 'users');
  await settle();
  assert.deepEqual(c.events('expiring').map((e) => e.record.title), ['live'], 'the expired row was not sent');
  assert.equal(seen.record.nick, 'al');
  assert.ok(!('email' in seen.record), 'a private email is not sent to others');
  assert.equal(own.record.email, alice.email, 'the owner sees their email');
  assert.equal(bySu.record.email, alice.email, 'superusers see it');
  for (const x of [seen, own, bySu]) {
    for (const k of ['secret', 'passwordHash', 'tokenKey', 'token_epoch']) assert.ok(!(k in x.record), k);
  }
  for (const x of [c, self, su]) x.close();
});

/** A fresh user of `users` with its own client subscribed to its notes. */
async function subscribedUser(email: string): Promise<{ user: User; c: Client }> {
  const user = await signup(srv, 'users', email);
  const c = await Client.open();
  assert.equal((await c.ask({ action: 'auth', token: user.token })).status, 'ok');
  await c.ask({ action: 'subscribe', topic: 'notes' });
  // deliveries work before the revocation
  const n = await srv.api('POST', '/api/collections/notes/records', { token: user.token, body: { text: 'before', owner: user.id } });
  await c.next((f) => f.type === 'event' && f.record.id === n.body.id);
  return { user, c };
}

/** After a revocation: the client is told, and a record it could see before is not delivered. */
async function assertRevoked(c: Client, user: User): Promise<void> {
  await c.next((f) => f.type === 'auth' && f.status === 'error');
  const n = await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { text: 'after', owner: user.id } });
  assert.equal(n.status, 201, n.text);
  const probe = await Client.open();
  await probe.ask({ action: 'auth', token: srv.suToken });
  await probe.ask({ action: 'subscribe', topic: 'notes' });
  await seed(srv, 'notes', { text: 'marker', owner: user.id });
  await probe.next((f) => f.type === 'event' && f.record.text === 'marker');
  await settle();
  assert.deepEqual(c.events().map((e) => e.record.text), ['before'], 'nothing delivered after the session ended');
  probe.close();
  c.close();
}

test('revocation: logout everywhere stops deliveries at once', async () => {
  const { user, c } = await subscribedUser('rev-all@example.com');
  const r = await srv.api('DELETE', '/api/collections/users/auth/sessions', { token: user.token });
  assert.equal(r.status, 204, r.text);
  await assertRevoked(c, user);
});

test('revocation: a password change stops deliveries to the old token', async () => {
  const { user, c } = await subscribedUser('rev-pw@example.com');
  const r = await srv.api('PATCH', `/api/collections/users/records/${user.id}`, {
    token: user.token, body: { oldPassword: user.password, password: 'newpassword456', passwordConfirm: 'newpassword456' },
  });
  assert.equal(r.status, 200, r.text);
  await assertRevoked(c, user);
});

test('revocation: a logout (its session row revoked, table store) stops deliveries', async () => {
  const devices = await srv.createCollection({ name: 'devices', type: 'auth', createRule: '@public', options: { auth: { session: { store: 'table' } } }, fields: [] });
  const mine = 'device = @request.auth.id';
  await srv.createCollection({
    name: 'gadgets', type: 'base', listRule: mine, viewRule: mine,
    fields: [{ name: 'text', type: 'text' }, { name: 'device', type: 'relation', options: { collectionId: devices.id } }],
  });
  const user = await signup(srv, 'devices', 'rev-one@example.com');
  const c = await Client.open();
  assert.equal((await c.ask({ action: 'auth', token: user.token })).status, 'ok');
  await c.ask({ action: 'subscribe', topic: 'gadgets' });
  const before = await seed(srv, 'gadgets', { text: 'before', device: user.id });
  await c.next((f) => f.type === 'event' && f.record.id === before.id);
  const r = await srv.api('POST', '/api/collections/devices/auth-logout', { token: user.token });
  assert.equal(r.status, 204, r.text);
  await c.next((f) => f.type === 'auth' && f.status === 'error');
  const stale = await srv.api('GET', '/api/collections/gadgets/records', { token: user.token });
  assert.equal(stale.status, 401, 'REST refuses the token too');
  await seed(srv, 'gadgets', { text: 'after', device: user.id });
  const probe = await Client.open();
  await probe.ask({ action: 'auth', token: srv.suToken });
  await probe.ask({ action: 'subscribe', topic: 'gadgets' });
  await seed(srv, 'gadgets', { text: 'marker', device: user.id });
  await probe.next((f) => f.type === 'event' && f.record.text === 'marker');
  await settle();
  assert.deepEqual(c.events().map((e) => e.record.text), ['before']);
  probe.close();
  c.close();
});

/** A valid token for `user` that expires in `seconds` (signed as the server signs: HS256 over HMAC(secret, tokenKey)). */
function shortLivedToken(user: User, seconds: number): string {
  const secret = tokenSecret(srv.dataDir);
  const [tokenKey, epoch, collectionId] = withDb(srv.dataDir, (db) => {
    const row = db.prepare('SELECT "tokenKey", "token_epoch" FROM "users" WHERE "id" = ?').raw(true).get(user.id) as unknown[];
    const cid = (db.prepare(`SELECT "id" FROM "_collections" WHERE "name" = 'users'`).raw(true).get() as unknown[])[0];
    return [String(row[0]), Number(row[1]), String(cid)];
  });
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ id: user.id, collectionId, type: 'auth', ep: epoch, csrf: 'x', iat: now, exp: now + seconds })}`;
  const key = createHmac('sha256', secret).update(tokenKey).digest();
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

test('revocation: a token that expires stops deliveries when it does', async () => {
  const user = await signup(srv, 'users', 'rev-exp@example.com');
  const token = shortLivedToken(user, 2);
  const r = await srv.api('GET', `/api/collections/notes/records`, { token });
  assert.equal(r.status, 200, 'the short-lived token is valid');
  const c = await Client.open();
  assert.equal((await c.ask({ action: 'auth', token })).status, 'ok');
  await c.ask({ action: 'subscribe', topic: 'notes' });
  const before = await seed(srv, 'notes', { text: 'before', owner: user.id });
  await c.next((f) => f.type === 'event' && f.record.id === before.id);
  await c.next((f) => f.type === 'auth' && f.status === 'error', 6000);
  await seed(srv, 'notes', { text: 'after', owner: user.id });
  await settle();
  await settle();
  assert.deepEqual(c.events().map((e) => e.record.text), ['before']);
  c.close();
});

test('the PocketBase JS SDK subscribes over Server-Sent Events: events, filters, record topics, rules, unsubscribe', async () => {
  const pb = new PocketBase(srv.url);
  pb.autoCancellation(false);
  const all: any[] = [];
  const filtered: any[] = [];
  const one: any[] = [];
  const target = await seed(srv, 'news', { title: 'target', n: 0 });
  const unsubAll = await pb.collection('news').subscribe('*', (e) => all.push(e));
  await pb.collection('news').subscribe('*', (e) => filtered.push(e), { filter: 'n > 100' });
  await pb.collection('news').subscribe(target.id, (e) => one.push(e));
  const small = await seed(srv, 'news', { title: 'sdk small', n: 5 });
  const big = await seed(srv, 'news', { title: 'sdk big', n: 500, internal: 'x' });
  await srv.api('PATCH', `/api/collections/news/records/${target.id}`, { body: { title: 'target2' } });
  const until = async (pred: () => boolean) => {
    for (let i = 0; i < 100 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(pred(), `events: ${JSON.stringify({ all, filtered, one })}`);
  };
  await until(() => all.length >= 3 && filtered.length >= 1 && one.length >= 1);
  assert.deepEqual(all.map((e) => `${e.action} ${e.record.title}`), ['create sdk small', 'create sdk big', 'update target2']);
  assert.deepEqual(filtered.map((e) => e.record.id), [big.id]);
  assert.deepEqual(one.map((e) => `${e.action} ${e.record.title}`), ['update target2']);
  assert.ok(!('internal' in all[1].record));
  await unsubAll();
  await srv.api('DELETE', `/api/collections/news/records/${small.id}`);
  await srv.api('DELETE', `/api/collections/news/records/${big.id}`);
  await until(() => filtered.length >= 2);
  assert.deepEqual(filtered[1], { action: 'delete', record: { id: big.id } });
  assert.equal(all.length, 3, 'nothing after unsubscribe');

  // an SDK signed in as alice hears her notes only; an anonymous one hears none
  const pa = new PocketBase(srv.url);
  pa.autoCancellation(false);
  await pa.collection('users').authWithPassword(alice.email, alice.password);
  const mine: any[] = [];
  const anonNotes: any[] = [];
  await pa.collection('notes').subscribe('*', (e) => mine.push(e));
  await pb.collection('notes').subscribe('*', (e) => anonNotes.push(e));
  await seed(srv, 'notes', { text: 'for bob', owner: bob.id });
  const forAlice = await seed(srv, 'notes', { text: 'for alice', owner: alice.id });
  await until(() => mine.length >= 1);
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(mine.map((e) => e.record.id), [forAlice.id]);
  assert.equal(anonNotes.length, 0);
  pa.realtime.unsubscribe();
  pb.realtime.unsubscribe();
});

test('SSE routes: bad requests answer the error envelope', async () => {
  const r1 = await srv.api('GET', '/api/realtime');
  assert.equal(r1.status, 400);
  const r2 = await srv.api('POST', '/api/realtime', { body: { clientId: 'nope', subscriptions: [] } });
  assert.equal(r2.status, 404);
  const r3 = await srv.api('POST', '/api/realtime', { body: { subscriptions: [] } });
  assert.equal(r3.status, 400);
  assert.equal(r3.body.code, 'validation_failed');
  // a real stream, then bad topics
  const es = new EventSource(`${srv.url}/api/realtime`);
  const clientId = await new Promise<string>((res, rej) => {
    es.addEventListener('PB_CONNECT', (e: any) => res(JSON.parse(e.data).clientId));
    es.onerror = rej;
  });
  for (const [subs, status] of [[['nope/*'], 404], [['news/bad id'], 400], [[42], 400], [['news/*?options=%7Bbad'], 400], [['news/*?options=' + encodeURIComponent(JSON.stringify({ query: { filter: 'nope = 1' } }))], 400]] as const) {
    const r = await srv.api('POST', '/api/realtime', { body: { clientId, subscriptions: subs } });
    assert.equal(r.status, status, `${JSON.stringify(subs)}: ${r.text}`);
  }
  const ok = await srv.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['news/*'] } });
  assert.equal(ok.status, 204);
  // another caller cannot take over a signed-in stream
  const mine = await srv.api('POST', '/api/realtime', { token: alice.token, body: { clientId, subscriptions: ['news/*'] } });
  assert.equal(mine.status, 204);
  const other = await srv.api('POST', '/api/realtime', { token: bob.token, body: { clientId, subscriptions: ['news/*'] } });
  assert.equal(other.status, 403);
  es.close();
});

test('metrics for operators (superusers only), capabilities, and upgrades in the request log', async () => {
  const c = await Client.open();
  await c.ask({ action: 'subscribe', topic: 'news' });
  const rec = await seed(srv, 'news', { title: 'for the metrics' });
  await c.next((f) => f.type === 'event' && f.record.id === rec.id);
  const anon = await srv.api('GET', '/api/realtime/metrics');
  assert.equal(anon.status, 401);
  const user = await srv.api('GET', '/api/realtime/metrics', { token: alice.token });
  assert.equal(user.status, 403);
  const m = await srv.api('GET', '/api/realtime/metrics', { token: srv.suToken });
  assert.equal(m.status, 200);
  assert.ok(m.body.connections >= 1 && m.body.websocket >= 1 && m.body.subscriptions >= 1, JSON.stringify(m.body));
  assert.ok(m.body.delivered > 0);
  for (const k of ['sse', 'droppedConsumers', 'refusedConnections']) assert.equal(typeof m.body[k], 'number');
  assert.ok(m.body.deliveryMs.batches > 0 && m.body.deliveryMs.p99 >= m.body.deliveryMs.p50, JSON.stringify(m.body.deliveryMs));
  const meta = await srv.api('GET', '/api/meta');
  assert.equal(meta.body.capabilities.realtime, true);
  c.close();
  const lines = jsonLogLines(srv.stderr());
  assert.ok(lines.some((l) => l.method === 'GET' && l.path === '/api/realtime' && l.status === 101), 'the upgrade is logged');
});

test('a slow consumer is dropped with close code 1008; the connection cap answers 503 overloaded', async () => {
  const small = await startSvc({ env: { SERVICE_REALTIME_MAX_CONNECTIONS: '2' } });
  try {
    await small.createCollection({ name: 'big', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'blob', type: 'text', options: { max: 100000 } }] });
    const slow = await Client.open(small.url);
    const fast = await Client.open(small.url);
    await slow.ask({ action: 'subscribe', topic: 'big' });
    await fast.ask({ action: 'subscribe', topic: 'big' });
    // the cap: a third connection is refused, in the envelope
    const refused = await new Promise<{ status: number; body: string }>((res, rej) => {
      const ws = new WebSocket(`${small.url.replace('http', 'ws')}/api/realtime`);
      ws.on('unexpected-response', (_req, resp) => {
        let body = '';
        resp.on('data', (d) => (body += d));
        resp.on('end', () => res({ status: resp.statusCode ?? 0, body }));
      });
      ws.on('open', () => rej(new Error('a third connection was accepted')));
      ws.on('error', () => undefined);
    });
    assert.equal(refused.status, 503);
    assert.equal(JSON.parse(refused.body).code, 'overloaded');
    const sse = await fetch(`${small.url}/api/realtime`, { headers: { accept: 'text/event-stream' } });
    assert.equal(sse.status, 503);

    // the slow one stops reading; about 24 MB of events follow
    (slow.ws as any)._socket.pause();
    const blob = 'x'.repeat(80_000);
    for (let i = 0; i < 300; i += 10) {
      await Promise.all(Array.from({ length: 10 }, () => small.api('POST', '/api/collections/big/records', { token: small.suToken, body: { blob } })));
    }
    // the fast one got everything; the slow one was dropped
    await fast.next(() => fast.events().length === 300, 20_000);
    (slow.ws as any)._socket.resume();
    for (let i = 0; i < 200 && !slow.closed; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(slow.closed?.code, 1008, 'dropped as a slow consumer');
    assert.ok(slow.events().length < 300);
    const m = await small.api('GET', '/api/realtime/metrics', { token: small.suToken });
    assert.equal(m.body.droppedConsumers, 1);
    assert.ok(m.body.refusedConnections >= 2);
    assert.match(small.stderr(), /dropped a slow consumer/);
    fast.close();
  } finally {
    await small.stop();
    rmSync(small.dataDir, { recursive: true, force: true });
  }
});

test('an event stream that stops reading is dropped past its queue bound and counted', async () => {
  const own = await startSvc();
  try {
    await own.createCollection({ name: 'big', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'blob', type: 'text', options: { max: 100000 } }] });
    // a raw client that opens a stream, subscribes, and then never reads again
    const url = new URL(own.url);
    const sock = connect(Number(url.port), url.hostname);
    let head = '';
    let closed = false;
    sock.on('close', () => (closed = true));
    sock.on('error', () => undefined);
    const clientId = await new Promise<string>((resolve) => {
      sock.on('data', function onData(d) {
        head += d.toString();
        const m = /data:\{"clientId":"([a-z0-9]+)"\}/.exec(head);
        if (m) {
          sock.off('data', onData);
          resolve(m[1]);
        }
      });
      sock.write(`GET /api/realtime HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    const r = await own.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['big/*'] } });
    assert.equal(r.status, 204, r.text);
    sock.pause();
    const blob = 'x'.repeat(80_000);
    for (let i = 0; i < 400 && !closed; i += 10) {
      await Promise.all(Array.from({ length: 10 }, () => own.api('POST', '/api/collections/big/records', { token: own.suToken, body: { blob } })));
    }
    let m: any = null;
    for (let i = 0; i < 100; i++) {
      m = (await own.api('GET', '/api/realtime/metrics', { token: own.suToken })).body;
      if (m.droppedConsumers >= 1) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(m.droppedConsumers, 1, JSON.stringify(m) + own.stderr().slice(-2000));
    assert.equal(m.sse, 0, 'the stream is gone');
    assert.match(own.stderr(), /dropped a slow consumer \(sse client/);
    sock.destroy();
  } finally {
    await own.stop();
    rmSync(own.dataDir, { recursive: true, force: true });
  }
});

test('SDK auth through the SSE stream uses the POST Authorization; superusers hear locked collections', async () => {
  const pb = new PocketBase(srv.url);
  pb.autoCancellation(false);
  await pb.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  const got: any[] = [];
  await pb.collection('locked').subscribe('*', (e) => got.push(e));
  const rec = await seed(srv, 'locked', { x: 'only su' });
  for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(got[0]?.record?.id, rec.id);
  pb.realtime.unsubscribe();
});

test('SSE: a POST from another principal than the stream\'s (anonymous included) is refused 403; the stream keeps its subscriptions and identity', async () => {
  const es = new EventSource(`${srv.url}/api/realtime`);
  const notes: any[] = [];
  const clientId = await new Promise<string>((res, rej) => {
    es.addEventListener('PB_CONNECT', (e: any) => res(JSON.parse(e.data).clientId));
    es.onerror = rej;
  });
  es.addEventListener('notes/*', (e: any) => notes.push(JSON.parse(e.data)));
  try {
    const signedIn = await srv.api('POST', '/api/realtime', { token: alice.token, body: { clientId, subscriptions: ['notes/*'] } });
    assert.equal(signedIn.status, 204, signedIn.text);
    // no credentials: neither the subscriptions nor the identity change
    const anon = await srv.api('POST', '/api/realtime', { body: { clientId, subscriptions: ['news/*'] } });
    assert.equal(anon.status, 403, anon.text);
    assert.equal(anon.body.code, 'forbidden');
    const other = await srv.api('POST', '/api/realtime', { token: bob.token, body: { clientId, subscriptions: ['news/*'] } });
    assert.equal(other.status, 403);
    const mine = await seed(srv, 'notes', { text: 'still alice\'s', owner: alice.id });
    for (let i = 0; i < 100 && notes.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(notes.map((e) => e.record.id), [mine.id], 'alice\'s note still arrives: subscriptions and identity kept');
    // the same principal may change the subscriptions
    const again = await srv.api('POST', '/api/realtime', { token: alice.token, body: { clientId, subscriptions: ['notes/*', 'news/*'] } });
    assert.equal(again.status, 204, again.text);
  } finally {
    es.close();
  }
});

/** A distinct filter of about 4 KB over a multiple relation (`author.name ~ …`, a LIKE per term), number `i`. */
const relationFilter = (i: number): string => {
  const terms: string[] = [];
  for (let k = 0; terms.join(' || ').length < 4000; k++) terms.push(`author.name ~ "f${i}_${k}"`);
  return terms.join(' || ');
};

/** The topics a stream subscribes to: `posts/*` with filters `from`..`to - 1` (PocketBase SDK shape). */
const filteredTopics = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, j) => `posts/*?options=${encodeURIComponent(JSON.stringify({ query: { filter: relationFilter(from + j) } }))}`);

test('realtime filter caps: distinct filters and their summed length per connection and per address; refusals are a 400 envelope (SSE) and an error frame (WebSocket)', async () => {
  // the address cap: room for the stream's filters below and two more of 4 KB, not a third
  const small = ['posts/*?options=' + encodeURIComponent(JSON.stringify({ query: { filter: 'title = "a"' } }))];
  const held = [0, 1, 2, 100, 101].reduce((n, i) => n + relationFilter(i).length, 'title = "a"'.length);
  const own = await startSvc({ env: { SERVICE_BODY_LIMIT: String(4 * 1024 * 1024), SERVICE_REALTIME_MAX_FILTERS: '5', SERVICE_REALTIME_MAX_FILTER_BYTES: '16384', SERVICE_REALTIME_MAX_ADDRESS_FILTER_BYTES: String(held + 2000), SERVICE_REALTIME_FILTER_BUDGET_MS: '1' } });
  try {
    await own.createCollection({ name: 'authors', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'name', type: 'text' }] });
    const authors = await own.api('GET', '/api/collections/authors', { token: own.suToken });
    await own.createCollection({ name: 'posts', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: authors.body.id } }] });
    const { openSse } = await import('../helpers/devtool.js');
    const stream = await openSse(`${own.url}/api/realtime`);
    const { clientId } = JSON.parse((await stream.next('PB_CONNECT')).data);
    // hundreds of distinct 4 KB relation filters: refused, and nothing changes
    const flood = await own.api('POST', '/api/realtime', { body: { clientId, subscriptions: filteredTopics(0, 200) } });
    assert.equal(flood.status, 400, flood.text);
    assert.equal(flood.body.code, 'bad_request');
    assert.match(flood.body.message, /filters/i);
    // past the summed length (4 filters of 4 KB > 16 KB) with fewer than 5 distinct filters
    const long = await own.api('POST', '/api/realtime', { body: { clientId, subscriptions: filteredTopics(0, 5) } });
    assert.equal(long.status, 400, long.text);
    // within both caps: accepted; the same filter on many topics counts once
    const ok = await own.api('POST', '/api/realtime', { body: { clientId, subscriptions: [...filteredTopics(0, 3), ...small, 'posts', 'posts/*'] } });
    assert.equal(ok.status, 204, ok.text);
    // per address: this stream holds about 12 KB; a WebSocket from the same address gets two
    // filters of 4 KB more (8 KB, under its own 16 KB cap), not a third
    const ws = await Client.open(own.url);
    const f = (i: number) => relationFilter(100 + i);
    assert.equal((await ws.ask({ action: 'subscribe', topic: 'posts', filter: f(0) })).type, 'ack');
    assert.equal((await ws.ask({ action: 'subscribe', topic: 'posts/*', filter: f(1) })).type, 'ack');
    const third = await ws.ask({ action: 'subscribe', topic: 'authors', filter: `name = "${'y'.repeat(4000)}"` });
    assert.equal(third.type, 'error', JSON.stringify(third));
    assert.match(third.message, /address/i);
    // a connection's own cap on distinct filters, as an error frame
    ws.close();
    const ws2 = await Client.open(own.url);
    const cheap = (i: number) => `title = "${i}"`;
    // (the stream above still holds its filters: this connection stays under the address cap)
    for (const [i, topic] of ['posts', 'posts/*', 'authors', 'authors/*'].entries()) assert.equal((await ws2.ask({ action: 'subscribe', topic, filter: topic.startsWith('posts') ? cheap(i) : `name = "${i}"` })).type, 'ack');
    const rec = await own.api('POST', '/api/collections/posts/records', { token: own.suToken, body: { title: 'rec' } });
    const one = await ws2.ask({ action: 'subscribe', topic: `posts/${rec.body.id}`, filter: cheap(4) });
    assert.equal(one.type, 'ack', 'the fifth distinct filter is allowed');
    const sixth = await ws2.ask({ action: 'subscribe', topic: `authors/${rec.body.id}`, filter: 'name = "six"' });
    assert.equal(sixth.type, 'error');
    assert.match(sixth.message, /at most 5 distinct filters/);
    // replacing a subscription's filter frees its old one
    assert.equal((await ws2.ask({ action: 'subscribe', topic: 'posts', filter: cheap(40) })).type, 'ack');
    ws2.close();

    // the stream's relation filters are decided on the reader pool, here within 1 ms: past it
    // they fail closed (logged) while the unfiltered topics of the same batch, and the short
    // filter (decided on the main thread), are delivered. The author's name is 1.5 MB, so a
    // group's LIKE terms scan megabytes and cannot be decided within the budget on any machine
    // (a short name was sometimes decided in time, and its event rightly delivered)
    const author = await own.api('POST', '/api/collections/authors/records', { token: own.suToken, body: { name: `${'q'.repeat(1_500_000)}f0_1` } });
    const post = await own.api('POST', '/api/collections/posts/records', { token: own.suToken, body: { title: 'a', author: author.body.id } });
    const topicsOf = () => stream.events.filter((e) => e.event !== 'PB_CONNECT' && JSON.parse(e.data).record?.id === post.body.id).map((e) => e.event);
    await until(() => topicsOf().includes('posts/*') && topicsOf().includes('posts') && topicsOf().includes(small[0]), 10_000, 'the unfiltered events');
    await settle();
    const got = topicsOf();
    assert.ok(!got.includes(filteredTopics(0, 1)[0]), `no relation-filtered event past the budget: ${got.map((e) => e.slice(-40))}`);
    assert.match(own.stderr(), /filter groups of posts not decided \(over the budget of 1 ms\)/);
    stream.close();
  } finally {
    await own.stop();
    rmSync(own.dataDir, { recursive: true, force: true });
  }
});

test('a flood of costly realtime filters does not block the server: /api/health stays fast while a create fans out', async () => {
  const N = 400;
  const own = await startSvc({ env: { SERVICE_BODY_LIMIT: String(16 * 1024 * 1024), SERVICE_REALTIME_MAX_FILTERS: String(N), SERVICE_REALTIME_MAX_FILTER_BYTES: String(N * 4200), SERVICE_REALTIME_MAX_ADDRESS_FILTER_BYTES: String(N * 4200), SERVICE_REALTIME_FILTER_BUDGET_MS: '60000' } });
  try {
    await own.createCollection({ name: 'authors', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'name', type: 'text' }] });
    const authors = await own.api('GET', '/api/collections/authors', { token: own.suToken });
    await own.createCollection({ name: 'posts', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: authors.body.id, maxSelect: 10 } }] });
    const author = await own.api('POST', '/api/collections/authors/records', { token: own.suToken, body: { name: 'f3_1' } });
    const { openSse } = await import('../helpers/devtool.js');
    const stream = await openSse(`${own.url}/api/realtime`);
    const { clientId } = JSON.parse((await stream.next('PB_CONNECT')).data);
    const topics = filteredTopics(0, N);
    const set = await own.api('POST', '/api/realtime', { body: { clientId, subscriptions: topics } });
    assert.equal(set.status, 204, set.text);
    const health = async () => {
      const t0 = performance.now();
      const r = await own.api('GET', '/api/health');
      assert.equal(r.status, 200);
      return performance.now() - t0;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 10; i++) baseline.push(await health());
    // a create, and /api/health polled while its fan-out runs
    const during: number[] = [];
    const created = await own.api('POST', '/api/collections/posts/records', { body: { title: 'flood', author: [author.body.id] } });
    assert.equal(created.status, 201, created.text);
    const end = Date.now() + 3000;
    while (Date.now() < end) during.push(await health());
    const worst = Math.max(...during);
    assert.ok(worst < 1000, `health took ${Math.round(worst)} ms during the fan-out (baseline max ${Math.round(Math.max(...baseline))} ms)`);
    // the one matching filter (#3: author.name ~ "f3_1") still delivers once its group is decided
    const ev = await stream.next(topics[3], 0, 30_000);
    assert.equal(JSON.parse(ev.data).record.id, created.body.id);
    stream.close();
  } finally {
    await own.stop();
    rmSync(own.dataDir, { recursive: true, force: true });
  }
});
