/**
 * The change feed inside the running app, through the in-process harness: every write
 * the REST API makes — creates, updates, deletes, relation cascades, a logout-everywhere epoch
 * bump — reaches the feed once per commit, before the request that made it is answered.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type App } from '../../helpers/app.js';
import type { ChangeBatch } from '../../../src/store/change-feed.js';

let app: App;
const batches: ChangeBatch[] = [];
const seen = () => batches.flatMap((b) => b.changes.map((c) => `${c.op} ${c.id}`));

before(async () => {
  app = await startApp();
  app.context.store.writer.changes.subscribe((b) => void batches.push(b));
});
after(async () => {
  await app?.stop();
});

test('REST writes reach the feed before their reply, cascades included', async () => {
  const su = app.suToken;
  const authors = await app.api('POST', '/api/collections', { token: su, body: { name: 'authors', fields: [{ name: 'name', type: 'text' }], listRule: '@public', viewRule: '@public' } });
  assert.equal(authors.status, 201, authors.text);
  const books = await app.api('POST', '/api/collections', {
    token: su, body: { name: 'books', fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: authors.body.id, cascadeDelete: true } }] },
  });
  assert.equal(books.status, 201, books.text);
  batches.length = 0;
  const a = await app.api('POST', '/api/collections/authors/records', { token: su, body: { name: 'Ann' } });
  assert.deepEqual(seen(), [`create ${a.body.id}`], 'the create was delivered before its 201');
  const b = await app.api('POST', '/api/collections/books/records', { token: su, body: { title: 'T', author: a.body.id } });
  await app.api('PATCH', `/api/collections/authors/records/${a.body.id}`, { token: su, body: { name: 'Ann B' } });
  batches.length = 0;
  const del = await app.api('DELETE', `/api/collections/authors/records/${a.body.id}`, { token: su });
  assert.equal(del.status, 204);
  assert.deepEqual(seen().sort(), [`delete ${a.body.id}`, `delete ${b.body.id}`].sort(), 'the cascade came with the delete');
  assert.equal(batches.length, 1, 'one batch per commit');
  assert.equal(batches[0].commit, app.context.store.writer.commits);
  // the record cache was emptied by the feed: the record answers 404 at once
  assert.equal((await app.api('GET', `/api/collections/authors/records/${a.body.id}`)).status, 404);
});

test('an auth record whose epoch is bumped (logout everywhere) is reported as updated', async () => {
  const users = await app.api('POST', '/api/collections', { token: app.suToken, body: { name: 'members', type: 'auth', fields: [], createRule: '@public' } });
  assert.equal(users.status, 201, users.text);
  const u = await app.api('POST', '/api/collections/members/records', { body: { email: 'm@example.com', password: 'password123' } });
  const login = await app.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'm@example.com', password: 'password123' } });
  batches.length = 0;
  const out = await app.api('DELETE', '/api/collections/members/auth/sessions', { token: login.body.token });
  assert.equal(out.status, 204, out.text);
  assert.ok(seen().includes(`update ${u.body.id}`), seen().join(','));
  // the cached caller is gone: the old token no longer authenticates
  assert.equal((await app.api('GET', `/api/collections/members/records/${u.body.id}`, { token: login.body.token })).status, 401);
});
