/**
 * The rendered-page cache of offset lists (src/cache/page-cache.ts) never shows a stale or
 * someone else's page: every committed write, in the listed collection or in one its filter,
 * rule or expand reads, ends the cached pages; pages differ by caller (owner rules, email
 * visibility of auth records, superusers); schema changes (rules, fields) apply at once; expiring
 * rows and random sorts are never served from the cache.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { createUsers, dumpServerLog, qs, seed, signup, type User } from '../helpers/records-fixtures.js';

let srv: Svc;
let users: any;
let posts: any;
let alice: User;
let bob: User;
const P = '/api/collections/posts/records';

before(async () => {
  srv = await startSvc();
  users = await createUsers(srv);
  alice = await signup(srv, 'users', 'alice@example.com', 'password123', { nick: 'alice' });
  bob = await signup(srv, 'users', 'bob@example.com', 'password123', { nick: 'bob' });
  posts = await srv.createCollection({
    name: 'posts', type: 'base', listRule: 'public = true || author = @request.auth.id', viewRule: '@public',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'public', type: 'bool' },
      { name: 'author', type: 'relation', options: { collectionId: users.id, maxSelect: 1 } },
    ],
  });
  await seed(srv, 'posts', { title: 'open', public: true, author: alice.id });
  await seed(srv, 'posts', { title: 'alice private', public: false, author: alice.id });
  await seed(srv, 'posts', { title: 'bob private', public: false, author: bob.id });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

/**
 * GETs a URL three times (the page cache keeps a page on its second request at one commit and
 * serves it from the third), asserts the answers are identical, and returns the first. A stale
 * cached page after a write therefore shows up in the first answer of the next call.
 */
async function get3(path: string, token: string | null = null): Promise<any> {
  const rs = [];
  for (let i = 0; i < 3; i++) rs.push(await srv.api('GET', path, { token }));
  for (const r of rs) assert.equal(r.status, 200, r.text);
  assert.equal(rs[1].text, rs[0].text);
  assert.equal(rs[2].text, rs[0].text);
  return rs[0].body;
}

const titles = async (query: Record<string, string | number>, token: string | null = null): Promise<string[]> =>
  (await get3(`${P}${qs({ sort: 'title', ...query })}`, token)).items.map((x: any) => x.title);

test('each caller gets its own page under an owner rule, repeatedly', async () => {
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await titles({}), ['open']);
    assert.deepEqual(await titles({}, alice.token), ['alice private', 'open']);
    assert.deepEqual(await titles({}, bob.token), ['bob private', 'open']);
    assert.deepEqual(await titles({}, srv.suToken), ['alice private', 'bob private', 'open']);
  }
});

test('creates, updates and deletes show on the next read of a cached page, totals too', async () => {
  const before = await get3(`${P}${qs({ sort: 'title' })}`);
  assert.equal(before.totalItems, 1);
  const made = await seed(srv, 'posts', { title: 'new', public: true, author: bob.id });
  let r = await get3(`${P}${qs({ sort: 'title' })}`);
  assert.deepEqual(r.items.map((x: any) => x.title), ['new', 'open']);
  assert.equal(r.totalItems, 2);
  assert.equal((await srv.api('PATCH', `${P}/${made.id}`, { token: srv.suToken, body: { title: 'renamed' } })).status, 200);
  assert.deepEqual(await titles({}), ['open', 'renamed']);
  assert.equal((await srv.api('PATCH', `${P}/${made.id}`, { token: srv.suToken, body: { public: false } })).status, 200);
  assert.deepEqual(await titles({}), ['open']);
  assert.deepEqual(await titles({}, bob.token), ['bob private', 'open', 'renamed']);
  assert.equal((await srv.api('DELETE', `${P}/${made.id}`, { token: srv.suToken })).status, 204);
  r = await get3(`${P}${qs({ sort: 'title' })}`, bob.token);
  assert.deepEqual(r.items.map((x: any) => x.title), ['bob private', 'open']);
  assert.equal(r.totalItems, 2);
});

test('a write to another collection ends pages whose filter or expand reads it', async () => {
  const byNick = { filter: "author.nick = 'alice'" };
  assert.deepEqual(await titles(byNick, srv.suToken), ['alice private', 'open']);
  const expanded = async () => (await get3(`${P}${qs({ sort: 'title', expand: 'author', filter: "title = 'open'" })}`)).items[0].expand.author.nick;
  assert.equal(await expanded(), 'alice');
  assert.equal((await srv.api('PATCH', `/api/collections/users/records/${alice.id}`, { token: srv.suToken, body: { nick: 'alicia' } })).status, 200);
  assert.deepEqual(await titles(byNick, srv.suToken), []);
  assert.equal(await expanded(), 'alicia');
  assert.equal((await srv.api('PATCH', `/api/collections/users/records/${alice.id}`, { token: srv.suToken, body: { nick: 'alice' } })).status, 200);
  assert.deepEqual(await titles(byNick, srv.suToken), ['alice private', 'open']);
});

test('auth records: email visibility follows the caller, not the cached page', async () => {
  const list = async (token: string | null) => (await get3(`/api/collections/users/records${qs({ sort: 'email' })}`, token)).items;
  for (let i = 0; i < 2; i++) {
    const anon = await list(null);
    assert.ok(anon.every((u: any) => u.email === undefined), JSON.stringify(anon));
    const mine = await list(alice.token);
    assert.equal(mine.find((u: any) => u.id === alice.id).email, 'alice@example.com');
    assert.equal(mine.find((u: any) => u.id === bob.id).email, undefined);
  }
});

test('rule and schema changes apply to the next read', async () => {
  assert.deepEqual(await titles({}), ['open']);
  const r = await srv.api('PATCH', `/api/collections/${posts.id}`, { token: srv.suToken, body: { listRule: '@public' } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(await titles({}), ['alice private', 'bob private', 'open']);
  assert.equal((await srv.api('PATCH', `/api/collections/${posts.id}`, { token: srv.suToken, body: { listRule: 'public = true || author = @request.auth.id' } })).status, 200);
  assert.deepEqual(await titles({}), ['open']);
});

test('expiring rows leave a page when their time comes; random sorts are not repeated from a cache', async () => {
  await srv.createCollection({
    name: 'notes', type: 'base', listRule: '@public', options: { ttl_field: 'expires' },
    fields: [{ name: 'title', type: 'text' }, { name: 'expires', type: 'date' }],
  });
  // 3 s to live: the seed and the first reads fit in it with room to spare on a slow machine
  const expiresAt = Date.now() + 3000;
  const soon = new Date(expiresAt).toISOString().replace('T', ' ');
  await seed(srv, 'notes', { title: 'short-lived', expires: soon });
  const list = async () => (await get3('/api/collections/notes/records')).items.length;
  assert.equal(await list(), 1);
  await new Promise((r) => setTimeout(r, expiresAt + 300 - Date.now()));
  assert.equal(await list(), 0);

  await srv.createCollection({ name: 'dice', type: 'base', listRule: '@public', fields: [{ name: 'n', type: 'number' }] });
  for (let i = 0; i < 12; i++) await seed(srv, 'dice', { n: i });
  const orders = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const r = await srv.api('GET', `/api/collections/dice/records${qs({ sort: '@random' })}`);
    assert.equal(r.status, 200, r.text);
    orders.add(r.body.items.map((x: any) => x.n).join(','));
  }
  assert.ok(orders.size > 1, 'six random orders of 12 rows were all the same');
});

test('rows changed by a relation trigger (a deleted author) are never served from cached renderings', async () => {
  // unsorted and unfiltered (a superuser): a cheap page, assembled from cached renderings
  const authorOf = async () => Object.fromEntries((await get3(`${P}${qs({ perPage: 50 })}`, srv.suToken)).items.map((x: any) => [x.title, x.author]));
  // the same rows under different queries share cached renderings (Store.listRows)
  for (const q of [{ perPage: 10 }, { perPage: 11 }, { perPage: 12 }]) await get3(`${P}${qs(q)}`, srv.suToken);
  assert.equal((await authorOf())['bob private'], bob.id);
  const carol = await signup(srv, 'users', 'carol@example.com', 'password123', { nick: 'carol' });
  await seed(srv, 'posts', { title: 'carol post', public: true, author: carol.id });
  assert.equal((await authorOf())['carol post'], carol.id);
  assert.equal((await srv.api('DELETE', `/api/collections/users/records/${carol.id}`, { token: srv.suToken })).status, 204);
  // the trigger emptied the relation: lists show what a view shows
  const post = (await get3(`${P}${qs({ filter: "title = 'carol post'" })}`, srv.suToken)).items[0];
  const view = await srv.api('GET', `${P}/${post.id}`, { token: srv.suToken });
  assert.equal(view.body.author, null);
  assert.deepEqual(post, view.body);
  assert.equal((await authorOf())['carol post'], null);
  // an update of the row itself
  assert.equal((await srv.api('PATCH', `${P}/${post.id}`, { token: srv.suToken, body: { title: 'carol renamed' } })).status, 200);
  const titlesNow = Object.keys(await authorOf());
  assert.ok(titlesNow.includes('carol renamed') && !titlesNow.includes('carol post'), titlesNow.join());
});
