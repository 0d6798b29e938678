/**
 * The rendered-record cache (src/cache/record-cache.ts) must never serve a stale record: each
 * scenario reads a record twice (the second read is a cache hit), changes it by every path that
 * can change it, and reads it again.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';

let srv: Svc;
let authors: any;

before(async () => {
  srv = await startSvc();
  authors = await srv.createCollection({ name: 'authors', fields: [{ name: 'name', type: 'text' }], viewRule: '@public', listRule: '@public' });
  await srv.createCollection({
    name: 'notes',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'author', type: 'relation', options: { collectionId: authors.id, maxSelect: 1 } },
      { name: 'owner', type: 'relation', options: { collectionId: authors.id, maxSelect: 1, cascadeDelete: true } },
    ],
    viewRule: '@public',
    updateRule: '@public',
    deleteRule: '@public',
  });
});
after(async () => { await srv?.stop(); });

async function make(col: string, body: Record<string, unknown>) {
  const r = await srv.api('POST', `/api/collections/${col}/records`, { body, token: srv.suToken });
  assert.equal(r.status, 201, r.text);
  return r.body;
}
async function viewTwice(col: string, id: string) {
  const a = await srv.api('GET', `/api/collections/${col}/records/${id}`);
  const b = await srv.api('GET', `/api/collections/${col}/records/${id}`);
  assert.equal(a.text, b.text);
  return b;
}

test('an update is visible at once to anonymous and superuser reads', async () => {
  const n = await make('notes', { title: 'v1' });
  assert.equal((await viewTwice('notes', n.id)).body.title, 'v1');
  const u = await srv.api('PATCH', `/api/collections/notes/records/${n.id}`, { body: { title: 'v2' } });
  assert.equal(u.status, 200);
  assert.equal((await viewTwice('notes', n.id)).body.title, 'v2');
  const su = await srv.api('GET', `/api/collections/notes/records/${n.id}`, { token: srv.suToken });
  assert.equal(su.body.title, 'v2');
});

test('a delete answers 404 at once', async () => {
  const n = await make('notes', { title: 'gone soon' });
  await viewTwice('notes', n.id);
  assert.equal((await srv.api('DELETE', `/api/collections/notes/records/${n.id}`)).status, 204);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${n.id}`)).status, 404);
});

test('deleting a relation target clears the reference and cascades, as reads show at once', async () => {
  const a = await make('authors', { name: 'Ann' });
  const b = await make('authors', { name: 'Bob' });
  const ref = await make('notes', { title: 'ref', author: a.id });
  const owned = await make('notes', { title: 'owned', owner: b.id });
  assert.equal((await viewTwice('notes', ref.id)).body.author, a.id);
  assert.equal((await viewTwice('notes', owned.id)).status, 200);
  assert.equal((await srv.api('DELETE', `/api/collections/authors/records/${a.id}`, { token: srv.suToken })).status, 204);
  assert.equal((await srv.api('DELETE', `/api/collections/authors/records/${b.id}`, { token: srv.suToken })).status, 204);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${ref.id}`)).body.author, null);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${owned.id}`)).status, 404);
});

test('a schema change (field rename, rule change) is visible at once', async () => {
  const n = await make('notes', { title: 'schema' });
  await viewTwice('notes', n.id);
  const col = (await srv.api('GET', '/api/collections/notes', { token: srv.suToken })).body;
  const fields = col.schema.map((f: any) => (f.name === 'title' ? { ...f, name: 'heading' } : f));
  const p = await srv.api('PATCH', '/api/collections/notes', { token: srv.suToken, body: { fields } });
  assert.equal(p.status, 200, p.text);
  const after = await viewTwice('notes', n.id);
  assert.equal(after.body.heading, 'schema');
  assert.equal(after.body.title, undefined);
  const locked = await srv.api('PATCH', '/api/collections/notes', { token: srv.suToken, body: { viewRule: null } });
  assert.equal(locked.status, 200);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${n.id}`)).status, 404);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${n.id}`, { token: srv.suToken })).status, 200);
});

test('owner rules (`field = @request.auth.id`, both orders) decided from the cache match the rule', async () => {
  const users = await srv.createCollection({ name: 'members', type: 'auth', createRule: '@public' });
  const tokens: Record<string, { id: string; token: string }> = {};
  for (const who of ['ann', 'bob']) {
    const made = await srv.api('POST', '/api/collections/members/records', { body: { email: `${who}@example.com`, password: 'password123' } });
    assert.equal(made.status, 201, made.text);
    const login = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: `${who}@example.com`, password: 'password123' } });
    tokens[who] = { id: made.body.id, token: login.body.token };
  }
  for (const rule of ['owner = @request.auth.id', '@request.auth.id = owner']) {
    const name = rule.startsWith('owner') ? 'diary_a' : 'diary_b';
    await srv.createCollection({ name, fields: [{ name: 'text', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: users.id, maxSelect: 1 } }], viewRule: rule });
    const entry = (await srv.api('POST', `/api/collections/${name}/records`, { token: srv.suToken, body: { text: 'dear diary', owner: tokens.ann.id } })).body;
    const orphan = (await srv.api('POST', `/api/collections/${name}/records`, { token: srv.suToken, body: { text: 'nobody' } })).body;
    const view = (id: string, token: string | null) => srv.api('GET', `/api/collections/${name}/records/${id}`, { token });
    for (let i = 0; i < 2; i++) {
      assert.equal((await view(entry.id, tokens.ann.token)).body.text, 'dear diary', `${rule}: owner reads (${i})`);
      assert.equal((await view(entry.id, tokens.bob.token)).status, 404, `${rule}: another user gets 404`);
      assert.equal((await view(entry.id, null)).status, 404, `${rule}: anonymous gets 404`);
      assert.equal((await view(entry.id, srv.suToken)).status, 200, `${rule}: superuser reads`);
      assert.equal((await view(orphan.id, null)).status, 404, `${rule}: no owner, anonymous: 404`);
      assert.equal((await view(orphan.id, tokens.ann.token)).status, 404);
    }
    assert.equal((await srv.api('PATCH', `/api/collections/${name}/records/${entry.id}`, { token: srv.suToken, body: { owner: tokens.bob.id } })).status, 200);
    assert.equal((await view(entry.id, tokens.ann.token)).status, 404, `${rule}: after the owner changed, the old owner gets 404 at once`);
    assert.equal((await view(entry.id, tokens.bob.token)).body.owner, tokens.bob.id);
    assert.equal((await view('x'.repeat(15), tokens.bob.token)).status, 404);
  }
});
