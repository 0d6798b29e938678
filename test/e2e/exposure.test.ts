/**
 * Data that must stay private, end to end against the real server: hidden fields and
 * private emails through `expand`, one auth identity per collection, private emails in filters,
 * sorts and cursor tokens, relation paths that honour the target's view rule and expiry at every
 * hop, secrets in client filters, and auth options the server cannot honour.
 * Each test failed on the code before these fixes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, qs, seed, signup, type User } from '../helpers/records-fixtures.js';
import { withDb } from '../helpers/auth-helpers.js';
import { TEST_BACKEND } from '../helpers/backend.js';

let srv: Svc;
let su: string;
let users: any;
let alice: User;
let bob: User;
let carol: User;

const list = async (col: string, params: Record<string, string | number>, token?: string | null) => {
  const r = await srv.api('GET', `/api/collections/${col}/records${qs(params)}`, { token: token ?? null });
  return r;
};
const ids = (r: { body: any }) => (r.body.items as any[]).map((x) => x.id);

before(async () => {
  srv = await startSvc();
  su = srv.suToken;
  users = await srv.createCollection({
    name: 'users', type: 'auth', fields: [{ name: 'internal', type: 'text', options: { hidden: true } }, { name: 'nick', type: 'text' }],
    createRule: '@public', listRule: '@public', viewRule: '@public', updateRule: 'id = @request.auth.id',
  });
  // created out of alphabetical order: sorting by the real addresses would differ from creation order
  alice = await signup(srv, 'users', 'zed-alice@example.com');
  bob = await signup(srv, 'users', 'mid-bob@example.com');
  carol = await signup(srv, 'users', 'aaa-carol@example.com', 'password123', { emailVisibility: true });
  for (const u of [alice, bob, carol]) {
    const r = await srv.api('PATCH', `/api/collections/users/records/${u.id}`, { token: su, body: { internal: `secret-of-${u.email}`, nick: u.email.split('@')[0] } });
    assert.equal(r.status, 200, r.text);
  }
  await srv.createCollection({ name: 'members', type: 'auth', fields: [], createRule: '@public', listRule: '@public', viewRule: '@public' });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('expand serializes the expanded record with its own visibility: no hidden field, no private email', async () => {
  await srv.createCollection({
    name: 'docs', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'author', type: 'relation', options: { collectionId: users.id } },
      { name: 'reviewer', type: 'relation', options: { collectionId: users.id, hidden: true } },
    ],
  });
  const doc = await seed(srv, 'docs', { title: 'd1', author: alice.id, reviewer: bob.id });
  for (const [who, token] of [['anonymous', null], ['bob', bob.token]] as const) {
    for (const r of [await srv.api('GET', `/api/collections/docs/records/${doc.id}?expand=author`, { token }), await list('docs', { expand: 'author' }, token)]) {
      assert.equal(r.status, 200, r.text);
      const rec = r.body.items ? r.body.items[0] : r.body;
      const author = rec.expand?.author;
      assert.equal(author?.id, alice.id, `${who}: expanded: ${r.text}`);
      assert.equal(author.nick, 'zed-alice', `${who}: visible fields stay`);
      for (const k of ['internal', 'email', 'passwordHash', 'tokenKey', 'token_epoch', 'password']) assert.ok(!(k in author), `${who}: expanded author carries no ${k}: ${r.text}`);
      assert.ok(!r.text.includes('secret-of-'), `${who}: no hidden value anywhere in the body`);
    }
  }
  // the owner sees her own email through expand; the hidden field stays hidden for everyone
  const own = await srv.api('GET', `/api/collections/docs/records/${doc.id}?expand=author`, { token: alice.token });
  assert.equal(own.body.expand.author.email, alice.email);
  assert.ok(!own.text.includes('secret-of-'));
  // a visible email is shown
  const doc2 = await seed(srv, 'docs', { title: 'd2', author: carol.id });
  const vis = await srv.api('GET', `/api/collections/docs/records/${doc2.id}?expand=author`, { token: bob.token });
  assert.equal(vis.body.expand.author.email, carol.email);
});

test('expand of a hidden relation field is refused for everyone but superusers', async () => {
  for (const token of [null, bob.token]) {
    assertError(await list('docs', { expand: 'reviewer' }, token), 400, 'bad_request');
    assertError(await list('docs', { expand: 'author,reviewer' }, token), 400, 'bad_request');
    assertError(await list('docs', { expand: 'reviewer', filter: "title = 'none'" }, token), 400, 'bad_request');
  }
  const asSu = await list('docs', { expand: 'reviewer', filter: "title = 'd1'" }, su);
  assert.equal(asSu.status, 200, asSu.text);
  assert.equal(asSu.body.items[0].expand.reviewer.id, bob.id);
});

test('one auth identity, one collection: a chosen id taken in another auth collection is refused', async () => {
  const r = await srv.api('POST', '/api/collections/members/records', { body: { id: alice.id, email: 'evil@example.com', password: 'password123', passwordConfirm: 'password123' } });
  assertError(r, 409, 'conflict');
  // the same id in the same collection is refused as before; a fresh chosen id is accepted
  assertError(await srv.api('POST', '/api/collections/users/records', { body: { id: alice.id, email: 'x1@example.com', password: 'password123' } }), 409, 'conflict');
  const ok = await srv.api('POST', '/api/collections/members/records', { body: { id: 'member000000001', email: 'm1@example.com', password: 'password123' } });
  assert.equal(ok.status, 201, ok.text);
  // …and that id is then refused in the other auth collections, _superusers included
  assertError(await srv.api('POST', '/api/collections/users/records', { body: { id: 'member000000001', email: 'x2@example.com', password: 'password123' } }), 409, 'conflict');
  const suId = withDb(srv.dataDir, (db) => db.prepare('SELECT id FROM _superusers LIMIT 1').raw(true).get() as unknown[])[0] as string;
  assertError(await srv.api('POST', '/api/collections/members/records', { body: { id: suId, email: 'x3@example.com', password: 'password123' } }), 409, 'conflict');
  assert.equal((await list('members', { filter: "email ~ 'evil'" }, su)).body.items.length, 0, 'nothing written');
});

test('@request.auth.id matches only records of the collection a relation targets (rules and the owner fast path)', async () => {
  await srv.createCollection({
    name: 'notes', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: users.id } }],
    listRule: 'owner = @request.auth.id', viewRule: 'owner = @request.auth.id',
  });
  const victim = await signup(srv, 'users', 'victim@example.com');
  const evil = await signup(srv, 'members', 'evil2@example.com');
  const note = await seed(srv, 'notes', { title: 'victim note', owner: victim.id });
  // An identity shared across collections (a database from before the id check): the victim's
  // record takes the member's id, as a chosen id used to allow.
  withDb(srv.dataDir, (db) => {
    if (TEST_BACKEND === 'postgres') {
      // PostgreSQL's foreign key from notes.owner to users.id refuses either update alone; both in
      // one statement pass its check, made at the end of the statement.
      db.prepare('WITH "moved" AS (UPDATE "users" SET "id" = ? WHERE "id" = ? RETURNING "id") UPDATE "notes" SET "owner" = ? WHERE "id" = ?').run(evil.id, victim.id, evil.id, note.id);
      return;
    }
    db.prepare('UPDATE users SET id = ? WHERE id = ?').run(evil.id, victim.id);
    db.prepare('UPDATE notes SET owner = ? WHERE id = ?').run(evil.id, note.id);
  });
  assert.equal((await list('notes', {}, evil.token)).body.items.length, 0, 'list: a member is not the users record with the same id');
  assertError(await srv.api('GET', `/api/collections/notes/records/${note.id}`, { token: evil.token }), 404, 'not_found');
  assertError(await srv.api('GET', `/api/collections/notes/records/${note.id}?fields=id`, { token: evil.token }), 404, 'not_found');
  // `!=` keeps its meaning: the member's id is "not" the owner
  const ne = await list('notes', { filter: 'owner != @request.auth.id' }, su);
  assert.equal(ne.status, 200);
  // the users record that now holds the id still matches
  const victimLogin = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'victim@example.com', password: 'password123' } });
  assert.equal(victimLogin.status, 200, victimLogin.text);
  assert.deepEqual(ids(await list('notes', {}, victimLogin.body.token)), [note.id]);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${note.id}`, { token: victimLogin.body.token })).status, 200);
});

test('@request.auth.collectionName and collectionId in rules and filters', async () => {
  const staff = await srv.createCollection({ name: 'staff_board', type: 'base', fields: [{ name: 'title', type: 'text' }], listRule: "@request.auth.collectionName = 'members'", viewRule: '@public' });
  await seed(srv, 'staff_board', { title: 'hello' });
  const m = await signup(srv, 'members', 'staffer@example.com');
  assert.equal((await list('staff_board', {}, m.token)).body.items.length, 1);
  assert.equal((await list('staff_board', {}, bob.token)).body.items.length, 0);
  assert.equal((await list('staff_board', {}, null)).body.items.length, 0);
  const byId = await list('staff_board', { filter: `@request.auth.collectionId = '${users.id}'` }, bob.token);
  assert.equal(byId.status, 200, byId.text);
  assert.ok(staff.id);
});

test('private emails are no oracle in filters, relation paths or sorts', async () => {
  for (const f of [`email = '${alice.email}'`, "email ~ 'zed%'", "email ~ 'alice'", 'email != null', "email > 'a'"]) {
    const r = await list('users', { filter: f }, bob.token);
    assert.equal(r.status, 200, `${f}: ${r.text}`);
    assert.ok(!ids(r).includes(alice.id), `bob's filter ${f} does not see alice's private email`);
    assert.deepEqual(ids(await list('users', { filter: f }, null)).filter((id) => id === alice.id), [], `anonymous: ${f}`);
  }
  // the owner and superusers match on it; a visible email matches for everyone
  assert.deepEqual(ids(await list('users', { filter: `email = '${alice.email}'` }, alice.token)), [alice.id]);
  assert.deepEqual(ids(await list('users', { filter: `email = '${alice.email}'` }, su)), [alice.id]);
  assert.deepEqual(ids(await list('users', { filter: `email = '${carol.email}'` }, bob.token)), [carol.id]);
  // through a relation path
  assert.equal((await list('docs', { filter: `author.email = '${alice.email}'` }, bob.token)).body.items.length, 0);
  assert.equal((await list('docs', { filter: "author.email ~ 'zed'" }, null)).body.items.length, 0);
  assert.equal((await list('docs', { filter: `author.email = '${alice.email}'` }, su)).body.items.length, 1);
  assert.equal((await list('docs', { filter: `author.email = '${carol.email}'` }, bob.token)).body.items.length, 1);
  // a sort by email orders private addresses as if absent (ties by creation), never by their value
  const byEmail = ids(await list('users', { sort: 'email', filter: `id != '${carol.id}'`, perPage: 100 }, bob.token));
  const byRow = ids(await list('users', { sort: '@rowid', filter: `id != '${carol.id}'`, perPage: 100 }, bob.token));
  assert.deepEqual(byEmail, byRow, 'private emails sort as NULL');
  const suOrder = ids(await list('users', { sort: 'email', filter: `id != '${carol.id}'`, perPage: 100 }, su));
  assert.notDeepEqual(suOrder, byRow, 'superusers sort by the real addresses');
});

test('cursor tokens never carry the raw values of a private column', async () => {
  for (const token of [bob.token, su, null]) {
    for (const sort of ['email', '-email', 'nick,email']) {
      const r = await list('users', { limit: 1, sort }, token);
      assert.equal(r.status, 200, r.text);
      const decoded = Buffer.from(String(r.body.nextCursor), 'base64url').toString('utf8');
      assert.ok(!decoded.includes('@'), `token for sort=${sort} carries no address: ${decoded}`);
      // and the walk still works
      const next = await list('users', { limit: 1, sort, cursor: r.body.nextCursor }, token);
      assert.equal(next.status, 200, next.text);
      assert.notEqual(next.body.items[0]?.id, r.body.items[0].id);
    }
  }
});

test('relation paths carry the target view rule (bound for the caller) and expiry at every hop', async () => {
  const vault = await srv.createCollection({ name: 'vault', type: 'base', fields: [{ name: 'content', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: users.id } }], listRule: null, viewRule: 'owner = @request.auth.id' });
  const locked = await srv.createCollection({ name: 'locked_box', type: 'base', fields: [{ name: 'content', type: 'text' }], listRule: null, viewRule: null });
  await srv.createCollection({
    name: 'refs', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [
      { name: 'label', type: 'text' },
      { name: 'box', type: 'relation', options: { collectionId: locked.id } },
      { name: 'vaults', type: 'relation', options: { collectionId: vault.id, maxSelect: 5 } },
    ],
  });
  const box = await seed(srv, 'locked_box', { content: 'xylophone' });
  const va = await seed(srv, 'vault', { content: 'alice-private', owner: alice.id });
  const vb = await seed(srv, 'vault', { content: 'bob-private', owner: bob.id });
  const ref = await seed(srv, 'refs', { label: 'r', box: box.id, vaults: [va.id, vb.id] });
  for (const token of [null, bob.token]) {
    const right = await list('refs', { filter: "box.content ~ 'xy%'" }, token);
    const wrong = await list('refs', { filter: "box.content ~ 'qq%'" }, token);
    assert.equal(right.status, 200, right.text);
    assert.deepEqual(ids(right), ids(wrong), 'a right and a wrong guess answer alike');
    assert.deepEqual(ids(right), []);
    assert.deepEqual(ids(await list('refs', { filter: 'box.content != null' }, token)), []);
  }
  assert.deepEqual(ids(await list('refs', { filter: "box.content ~ 'xy%'" }, su)), [ref.id]);
  // the view rule is bound for the caller: bob sees through the hop into his own vault only
  assert.deepEqual(ids(await list('refs', { filter: "vaults.content = 'bob-private'" }, bob.token)), [ref.id]);
  assert.deepEqual(ids(await list('refs', { filter: "vaults.content = 'alice-private'" }, bob.token)), []);
  assert.deepEqual(ids(await list('refs', { filter: "vaults.content = 'alice-private'" }, alice.token)), [ref.id]);
  // negations do not reveal either: "no vault content equals X" answers for a hidden X as for a wrong guess
  assert.deepEqual(ids(await list('refs', { filter: "vaults.content != 'alice-private'" }, bob.token)), ids(await list('refs', { filter: "vaults.content != 'nothing'" }, bob.token)));
  assert.deepEqual(ids(await list('refs', { filter: "vaults.content != 'bob-private'" }, bob.token)), [], 'his own vault counts');

  // expiry: an expired target is gone for every reader, superusers included, and for rules
  await srv.createCollection({ name: 'ephemeral', type: 'base', fields: [{ name: 'name', type: 'text' }, { name: 'expires', type: 'date' }], listRule: '@public', viewRule: '@public', options: { ttl_field: 'expires' } });
  const eph = await srv.api('GET', '/api/collections/ephemeral');
  void eph;
  await srv.createCollection({
    name: 'pointers', type: 'base', fields: [{ name: 'target', type: 'relation', options: { collectionId: (await srv.api('GET', '/api/collections/ephemeral', { token: su })).body.id } }],
    listRule: '@public', viewRule: '@public', updateRule: "target.name = 'gone'",
  });
  const gone = await seed(srv, 'ephemeral', { name: 'gone', expires: '2001-01-01 00:00:00.000Z' });
  const live = await seed(srv, 'ephemeral', { name: 'live', expires: '2999-01-01 00:00:00.000Z' });
  const p1 = await seed(srv, 'pointers', { target: gone.id });
  const p2 = await seed(srv, 'pointers', { target: live.id });
  for (const token of [null, su]) {
    assert.deepEqual(ids(await list('pointers', { filter: "target.name = 'gone'" }, token)), [], 'expired target hidden');
    assert.deepEqual(ids(await list('pointers', { filter: "target.name = 'live'" }, token)), [p2.id]);
  }
  // a rule crossing into an expired row does not hold
  assertError(await srv.api('PATCH', `/api/collections/pointers/records/${p1.id}`, { token: bob.token, body: {} }), 404, 'not_found');
});

test('secrets in client filters are refused; operator rules keep full access', async () => {
  for (const f of ["@request.auth.passwordHash != ''", "@request.auth.tokenKey ~ 'a%'", '@request.auth.token_epoch = 0', "@request.auth.internal = 'x'", "@request.auth.internal ~ 'secret%'"]) {
    assertError(await list('users', { filter: f }, bob.token), 400, 'bad_request');
  }
  // hidden record fields too
  assertError(await list('users', { filter: "internal ~ 'secret%'" }, bob.token), 400, 'bad_request');
  // a rule written by a superuser may read hidden auth fields
  await srv.createCollection({ name: 'vip_room', type: 'base', fields: [{ name: 'title', type: 'text' }], listRule: `@request.auth.internal = 'secret-of-${bob.email}'` });
  await seed(srv, 'vip_room', { title: 'for bob' });
  assert.equal((await list('vip_room', {}, bob.token)).body.items.length, 1);
  assert.equal((await list('vip_room', {}, alice.token)).body.items.length, 0);
});

test('auth options the server cannot honour are refused with a field error, not stored', async () => {
  const make = (name: string, auth: Record<string, unknown>) => srv.api('POST', '/api/collections', { token: su, body: { name, type: 'auth', fields: [], options: { auth } } });
  const cases: [Record<string, unknown>, string][] = [
    [{ two_factor: 'always' }, 'options.auth.two_factor'],
    [{ methods: { magic_link: { enabled: true, redirect_default: '//evil.example' } } }, 'options.auth.methods.magic_link.redirect_default'],
    [{ methods: { webauthn: { enabled: true } } }, 'options.auth.methods.webauthn.rpId'],
    [{ methods: { webauthn: { enabled: true, rpId: 'example.com', origins: ['https://evil.example'] } } }, 'options.auth.methods.webauthn.origins'],
    [{ methods: { oauth2: { enabled: true, providers: [] } } }, 'options.auth.methods.oauth2.providers'],
    [{ methods: { oauth2: { providers: [{ name: 'x' }] } } }, 'options.auth.methods.oauth2.providers.0.kind'],
    [{ oauth2: { enabled: true } }, 'options.auth.oauth2'],
    [{ methods: { password: { enabled: 'yes' } } }, 'options.auth.methods.password.enabled'],
  ];
  for (const [i, [auth, key]] of cases.entries()) {
    const r = await make(`refused_${i}`, auth);
    assertError(r, 400, 'validation_failed');
    assert.ok(r.body.data[key], `${JSON.stringify(auth)}: field error under ${key}: ${r.text}`);
    assertError(await srv.api('GET', `/api/collections/refused_${i}`, { token: su }), 404, 'not_found');
  }
  const sup = await srv.api('PATCH', '/api/collections/_superusers', { token: su, body: { options: { auth: { two_factor: 'sometimes' } } } });
  assertError(sup, 400, 'validation_failed');
  assert.equal((await srv.api('GET', '/api/collections/_superusers', { token: su })).body.options.auth.two_factor, 'disabled');
  // what the server does honour is accepted: disabled two-factor, a disabled method block, password off
  const ok = await make('honoured', { two_factor: 'disabled', methods: { otp: { enabled: false }, password: { enabled: false } } });
  assert.equal(ok.status, 201, ok.text);
  await srv.api('POST', '/api/collections/honoured/records', { token: su, body: { email: 'h@example.com', password: 'password123' } });
  assertError(await srv.api('POST', '/api/collections/honoured/auth-with-password', { body: { identity: 'h@example.com', password: 'password123' } }), 404, 'not_found');
});
