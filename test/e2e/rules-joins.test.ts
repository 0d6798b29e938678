/**
 * `@collection.<name>[:alias].<field>` joins and `<collection>_via_<field>` back-relations end to
 * end (docs/rules.md, "Joining other collections", "Back-relations"; docs/api.md, "Expand"):
 * through rules, client filters, `expand` and the official `pocketbase` SDK. Runs on SQLite, and
 * on PostgreSQL with `npx tsx test/pg-suite.ts test/e2e/rules-joins.test.ts`.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import PocketBase from 'pocketbase';
import { startSvc, type Svc } from '../helpers/server.js';
import { openRealtime } from '../helpers/realtime-socket.js';
import { MAX_BACK_RELATION_EXPAND } from '../../src/records/records-read.js';
import { assertError, dumpServerLog, qs, seed, signup, type User } from '../helpers/records-fixtures.js';

let srv: Svc;
let alice: User;
let bob: User;
const id = new Map<string, string>();

before(async () => {
  srv = await startSvc({ env: { SERVICE_BATCH_MAX_REQUESTS: '600' } });
  const people = await srv.createCollection({ name: 'people', type: 'auth', createRule: '@public', listRule: '@public', viewRule: '@public', fields: [{ name: 'nick', type: 'text' }] });
  const teams = await srv.createCollection({ name: 'teams', type: 'base', fields: [{ name: 'name', type: 'text' }] });
  // locked: only rules (written by a superuser) read it
  await srv.createCollection({
    name: 'memberships', type: 'base',
    fields: [{ name: 'user', type: 'relation', options: { collectionId: people.id } }, { name: 'team', type: 'relation', options: { collectionId: teams.id } }, { name: 'role', type: 'text' }],
  });
  const gate = '@collection.memberships:m.user ?= @request.auth.id && @collection.memberships:m.team ?= id';
  const r = await srv.api('PATCH', '/api/collections/teams', { body: { listRule: gate, viewRule: gate }, token: srv.suToken });
  assert.equal(r.status, 200, r.text);
  const posts = await srv.createCollection({
    name: 'posts', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'title', type: 'text' }, { name: 'team', type: 'relation', options: { collectionId: teams.id } }],
  });
  await srv.createCollection({
    name: 'comments', type: 'base', listRule: 'secret = false', viewRule: 'secret = false',
    fields: [{ name: 'message', type: 'text' }, { name: 'secret', type: 'bool' }, { name: 'post', type: 'relation', options: { collectionId: posts.id } }],
  });
  await srv.createCollection({ name: 'notes', type: 'base', fields: [{ name: 'text', type: 'text' }, { name: 'post', type: 'relation', options: { collectionId: posts.id } }] });
  await srv.createCollection({
    name: 'labels', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'name', type: 'text' }, { name: 'posts', type: 'relation', options: { collectionId: posts.id, maxSelect: 5 } }],
  });

  alice = await signup(srv, 'people', 'alice@example.com');
  bob = await signup(srv, 'people', 'bob@example.com');
  for (const name of ['red', 'blue']) id.set(name, (await seed(srv, 'teams', { name })).id);
  await seed(srv, 'memberships', { user: alice.id, team: id.get('red'), role: 'owner' });
  await seed(srv, 'memberships', { user: bob.id, team: id.get('blue'), role: 'guest' });
  // bob also joined red's membership collection without a team: never a match on its own
  await seed(srv, 'memberships', { user: bob.id, role: 'owner' });
  for (const [title, team] of [['p1', 'red'], ['p2', 'red'], ['p3', 'blue'], ['p4', null]] as const) {
    id.set(title, (await seed(srv, 'posts', { title, team: team ? id.get(team) : '' })).id);
  }
  for (const [message, secret, post] of [['hello x', false, 'p1'], ['second', false, 'p1'], ['hidden x', true, 'p2'], ['plain', false, 'p3']] as const) {
    await seed(srv, 'comments', { message, secret, post: id.get(post) });
  }
  await seed(srv, 'notes', { text: 'internal', post: id.get('p3') });
  await seed(srv, 'labels', { name: 'hot', posts: [id.get('p2'), id.get('p4')] });
  await seed(srv, 'labels', { name: 'cold', posts: [id.get('p4')] });
});

after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
});

async function list(col: string, params: Record<string, string>, token: string | null): Promise<Array<Record<string, any>>> {
  const r = await srv.api('GET', `/api/collections/${col}/records${qs({ sort: 'created', perPage: 100, ...params })}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.body.items;
}
const titles = async (filter: string, token: string | null = null, col = 'posts') =>
  (await list(col, { filter }, token)).map((x) => x.title ?? x.name);

test('a rule joins a locked membership collection (same alias: the same row)', async () => {
  assert.deepEqual(await titles('', alice.token, 'teams'), ['red']);
  assert.deepEqual(await titles('', bob.token, 'teams'), ['blue']);
  assert.deepEqual(await titles('', null, 'teams'), []);
  assert.deepEqual(await titles('', srv.suToken, 'teams'), ['red', 'blue']);
  assert.equal((await srv.api('GET', `/api/collections/teams/records/${id.get('red')}`, { token: alice.token })).status, 200);
  assertError(await srv.api('GET', `/api/collections/teams/records/${id.get('red')}`, { token: bob.token }), 404);
  // a relation hop into teams carries its (joining) view rule for a client
  assert.deepEqual(await titles('team.name > ""', alice.token), ['p1', 'p2']);
  assert.deepEqual(await titles('team.name > ""', bob.token), ['p3']);
});

test('a create rule reading only a join and the request is decided without the record', async () => {
  await srv.createCollection({
    name: 'owner_notes', type: 'base', fields: [{ name: 'text', type: 'text' }],
    createRule: '@collection.memberships.user ?= @request.auth.id && @collection.memberships.role = "owner" && @collection.memberships.team != null',
  });
  const carol = await signup(srv, 'people', 'carol@example.com');
  const create = (token: string | null) => srv.api('POST', '/api/collections/owner_notes/records', { body: { text: 'x' }, token });
  assert.equal((await create(alice.token)).status, 201);
  // bob owns no team: his owner membership has none, his team membership is a guest's
  assertError(await create(bob.token), 403);
  assertError(await create(carol.token), 403);
  assertError(await create(null), 403);
});

test('separate aliases are separate rows; a join read in one term only', async () => {
  // bob has an owner membership (without a team) and a blue membership (as guest): with one alias
  // no single row is both, with two aliases each condition finds its own row
  const f = (a: string, b: string) => `@collection.memberships:${a}.user ?= @request.auth.id && @collection.memberships:${a}.role = "owner" && @collection.memberships:${b}.user ?= @request.auth.id && @collection.memberships:${b}.team = team`;
  assert.deepEqual(await titles(f('m', 'm'), srv.suToken), []);
  const r = await srv.api('GET', `/api/collections/posts/records${qs({ filter: f('m', 'n').replaceAll('@request.auth.id', JSON.stringify(bob.id)), sort: 'created' })}`, { token: srv.suToken });
  assert.deepEqual(r.body.items.map((x: { title: string }) => x.title), ['p3']);
  assert.deepEqual(await titles('title = "p4" || @collection.teams.name = "red" && @collection.teams.id = team', srv.suToken), ['p1', 'p2', 'p4']);
  assert.deepEqual(await titles('@collection.teams.name ?= "nope" || title = "p3"', srv.suToken), ['p3']);
});

test('a client filter honours the joined collection\'s view rule: no oracle into locked rows', async () => {
  const member = `@collection.memberships.user ?= ${JSON.stringify(alice.id)}`;
  assert.deepEqual(await titles(member, srv.suToken), ['p1', 'p2', 'p3', 'p4']);
  assert.deepEqual(await titles(member, alice.token), []);
  assert.deepEqual(await titles(`title = "p1" || ${member}`, alice.token), ['p1']);
  // teams: alice sees red only, so a join through teams finds red only
  assert.deepEqual(await titles('@collection.teams:t.id = team', alice.token), ['p1', 'p2']);
  assert.deepEqual(await titles('@collection.teams:t.id = team', null), []);
  assert.deepEqual(await titles('@collection.teams:t.id = team', srv.suToken), ['p1', 'p2', 'p3']);
});

test('unknown collections and fields: the 400 of unknown fields; a rule naming one is refused', async () => {
  for (const filter of ['@collection.nope.x = 1', '@collection.memberships.nope = 1', '@collection.memberships = 1', 'nope_via_post.x = 1', 'comments_via_nope.x = 1', 'comments_via_post.nope = 1']) {
    const r = await srv.api('GET', `/api/collections/posts/records${qs({ filter })}`, { token: srv.suToken });
    assertError(r, 400, 'bad_request');
    assert.match(r.body.message, /^Invalid filter: /, filter);
  }
  const r = await srv.api('GET', `/api/collections/posts/records${qs({ filter: '@collection.nope.x = 1' })}`, { token: null });
  assert.equal(r.body.message, 'Invalid filter: unknown collection "nope" in "@collection.nope".');
  const bad = await srv.api('PATCH', '/api/collections/posts', { body: { listRule: '@collection.ghosts.user ?= @request.auth.id' }, token: srv.suToken });
  assertError(bad, 400, 'validation_failed');
  assert.match(bad.text, /unknown collection \\"ghosts\\"/);
  const bad2 = await srv.api('PATCH', '/api/collections/posts', { body: { viewRule: 'comments_via_post.nope = 1' }, token: srv.suToken });
  assertError(bad2, 400);
  // a collection another collection's rule joins can be neither deleted nor renamed
  const del = await srv.api('DELETE', '/api/collections/memberships', { token: srv.suToken });
  assertError(del, 400);
  assert.match(del.text, /retained collection \\"teams\\" listRule: Invalid filter: unknown collection \\"memberships\\"/);
  assertError(await srv.api('PATCH', '/api/collections/memberships', { body: { name: 'members2' }, token: srv.suToken }), 400);
  assert.equal((await srv.api('GET', '/api/collections/memberships', { token: srv.suToken })).status, 200);
});

test('back-relations in filters honour the related collection\'s view rule', async () => {
  assert.deepEqual(await titles('comments_via_post.message ?~ "x"'), ['p1']);
  assert.deepEqual(await titles('comments_via_post.message ?~ "x"', srv.suToken), ['p1', 'p2']);
  assert.deepEqual(await titles('comments_via_post:length > 1'), ['p1']);
  assert.deepEqual(await titles('comments_via_post:length = 0'), ['p2', 'p4']);
  assert.deepEqual(await titles('comments_via_post = null'), ['p2', 'p4']);
  // a multi-valued relation pointing back
  assert.deepEqual(await titles('labels_via_posts.name = "hot"'), ['p2', 'p4']);
  assert.deepEqual(await titles('labels_via_posts.name != "hot"'), ['p1', 'p3']);
  // locked notes: nothing to a client, the row to a superuser
  assert.deepEqual(await titles('notes_via_post.text = "internal"'), []);
  assert.deepEqual(await titles('notes_via_post.text = "internal"', srv.suToken), ['p3']);
  // from the other side and through a relation
  const messages = async (token: string | null) => (await list('comments', { filter: 'post.labels_via_posts.name ?= "hot"' }, token)).map((x) => x.message);
  assert.deepEqual(await messages(srv.suToken), ['hidden x']);
  assert.deepEqual(await messages(null), []);
});

test('expand of a back-relation answers the list of related records the caller may view', async () => {
  const anon = await list('posts', { expand: 'comments_via_post,notes_via_post,labels_via_posts' }, null);
  const p1 = anon.find((x) => x.title === 'p1')!;
  assert.deepEqual(p1.expand.comments_via_post.map((c: { message: string }) => c.message), ['hello x', 'second']);
  assert.equal(p1.expand.comments_via_post[0].collectionName, 'comments');
  // the secret comment of p2 and every note are not viewable: nothing expanded
  const p2 = anon.find((x) => x.title === 'p2')!;
  assert.deepEqual(Object.keys(p2.expand ?? {}), ['labels_via_posts']);
  assert.equal(anon.find((x) => x.title === 'p3')!.expand.notes_via_post, undefined);
  assert.deepEqual(anon.find((x) => x.title === 'p4')!.expand.labels_via_posts.map((l: { name: string }) => l.name), ['hot', 'cold']);
  const su = await list('posts', { expand: 'comments_via_post,notes_via_post' }, srv.suToken);
  assert.deepEqual(su.find((x) => x.title === 'p2')!.expand.comments_via_post.map((c: { message: string }) => c.message), ['hidden x']);
  assert.deepEqual(su.find((x) => x.title === 'p3')!.expand.notes_via_post.map((n: { text: string }) => n.text), ['internal']);
  // nested, and on a view
  const one = await srv.api('GET', `/api/collections/posts/records/${id.get('p1')}${qs({ expand: 'comments_via_post.post' })}`, { token: null });
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.expand.comments_via_post[1].expand.post.title, 'p1');
});

test('the pocketbase SDK: getList with joins, back-relations and expand', async () => {
  const pb = new PocketBase(srv.url);
  await pb.collection('people').authWithPassword('alice@example.com', 'password123');
  const teams = await pb.collection('teams').getList(1, 10);
  assert.deepEqual(teams.items.map((t) => t.name), ['red']);
  const page = await pb.collection('posts').getList(1, 10, {
    filter: pb.filter('comments_via_post.message ?~ {:q} && @collection.teams:t.id = team', { q: 'x' }), expand: 'comments_via_post', sort: 'created',
  });
  assert.deepEqual(page.items.map((p) => p.title), ['p1']);
  assert.deepEqual(page.items[0].expand?.comments_via_post.map((c: { message: string }) => c.message), ['hello x', 'second']);
  await assert.rejects(pb.collection('posts').getList(1, 10, { filter: '@collection.nope.x = 1' }), (e: { status: number }) => e.status === 400);
});

test('realtime: a joining list rule and a back-relation filter decide which events a subscriber gets', async () => {
  const { ws, frames, waitFor } = await openRealtime(srv.url);
  try {
    await waitFor((f) => f.type === 'connect');
    ws.send(JSON.stringify({ action: 'auth', token: alice.token }));
    await waitFor((f) => f.type === 'auth');
    ws.send(JSON.stringify({ action: 'subscribe', topic: 'teams' }));
    ws.send(JSON.stringify({ action: 'subscribe', topic: 'posts', filter: 'comments_via_post.message ?~ "x"' }));
    await waitFor((f) => f.type === 'ack' && f.topic === 'posts');
    for (const team of ['blue', 'red']) await srv.api('PATCH', `/api/collections/teams/records/${id.get(team)}`, { body: { name: team }, token: srv.suToken });
    for (const post of ['p3', 'p2', 'p1']) await srv.api('PATCH', `/api/collections/posts/records/${id.get(post)}`, { body: { title: post }, token: srv.suToken });
    // the last change of each topic arrived: every earlier one was sent before it
    await waitFor((f) => f.type === 'event' && f.topic === 'teams' && f.record.id === id.get('red'));
    await waitFor((f) => f.type === 'event' && f.topic === 'posts' && f.record.id === id.get('p1'));
    const events = frames.filter((f) => f.type === 'event').map((f) => `${f.topic}:${f.record.name ?? f.record.title}`);
    // blue is not alice's team; p2's only "x" comment is secret and p3 has none
    assert.deepEqual(events.sort(), ['posts:p1', 'teams:red']);
  } finally {
    ws.close();
  }
});

test('a back-relation expand answers at most 1000 records per record, the first ones', async () => {
  const threads = await srv.createCollection({ name: 'threads', type: 'base', listRule: '@public', viewRule: '@public', fields: [{ name: 'title', type: 'text' }] });
  await srv.createCollection({
    name: 'replies', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'n', type: 'number' }, { name: 'thread', type: 'relation', options: { collectionId: threads.id } }],
  });
  const t = await seed(srv, 'threads', { title: 'busy' });
  const count = MAX_BACK_RELATION_EXPAND + 1;
  for (let from = 0; from < count; from += 600) {
    const requests = Array.from({ length: Math.min(600, count - from) }, (_, k) => ({ method: 'POST', url: '/api/collections/replies/records', body: { n: from + k, thread: t.id } }));
    const r = await srv.api('POST', '/api/batch', { body: { requests }, token: srv.suToken });
    assert.equal(r.status, 200, r.text.slice(0, 300));
  }
  const one = await srv.api('GET', `/api/collections/threads/records/${t.id}${qs({ expand: 'replies_via_thread', fields: 'id,expand.replies_via_thread.n' })}`, { token: null });
  assert.equal(one.status, 200, one.text.slice(0, 300));
  const ns = one.body.expand.replies_via_thread.map((x: { n: number }) => x.n);
  assert.equal(ns.length, MAX_BACK_RELATION_EXPAND);
  assert.deepEqual(ns.slice(0, 3), [0, 1, 2]);
  assert.equal(ns.at(-1), MAX_BACK_RELATION_EXPAND - 1);
  // the filter counts them all
  assert.deepEqual(await titles(`replies_via_thread:length = ${count}`, null, 'threads'), ['busy']);
});
