/**
 * `POST /api/batch` (docs/api.md, "Batch") through the official PocketBase JS SDK's
 * `pb.createBatch()` against the real server: creates that reference each other's client-chosen
 * ids, update, delete and upsert in one transaction; each request under its own rule; one failing
 * request answers 400 `batch_failed` and writes nothing; the request-count and body-size limits;
 * malformed bodies; files in a multipart batch; record events firing as for single writes (a
 * second server with test/fixtures/app-events.mjs). Runs on PostgreSQL too
 * (`npx tsx test/pg-suite.ts FILE`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import PocketBase, { ClientResponseError } from 'pocketbase';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';

let srv: Svc;
let events: Svc;
/** the SDK signed in as `ann` (and `bob`) */
let ann: PocketBase;
let bob: PocketBase;
let annId = '';
const MAX_BODY = 256 * 1024;

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(15 - prefix.length, '0')}`);
const count = async (col: string, filter = ''): Promise<number> => {
  const r = await srv.api('GET', `/api/collections/${col}/records?perPage=1${filter ? `&filter=${encodeURIComponent(filter)}` : ''}`, { token: srv.suToken });
  assert.equal(r.status, 200, r.text);
  return r.body.totalItems;
};
/** The error a batch answered, from the SDK's rejection. */
const batchError = async (p: Promise<unknown>): Promise<{ status: number; body: any }> => {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ClientResponseError, String(e));
    return { status: e.status, body: e.response };
  }
  assert.fail('the batch was expected to fail');
};

async function signIn(email: string): Promise<PocketBase> {
  const pb = new PocketBase(srv.url);
  await pb.collection('users').create({ email, password: 'pass-word-1', passwordConfirm: 'pass-word-1' });
  await pb.collection('users').authWithPassword(email, 'pass-word-1');
  return pb;
}

before(async () => {
  srv = await startSvc({ env: { SERVICE_BATCH_MAX_BODY: String(MAX_BODY), SERVICE_RATE_LIMIT_MAX: '0' } });
  const users = await srv.createCollection({ name: 'users', type: 'auth', createRule: '@public', viewRule: 'id = @request.auth.id', fields: [] });
  const authors = await srv.createCollection({
    name: 'authors', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@request.auth.id != ""',
    fields: [{ name: 'name', type: 'text', options: { required: true } }],
  });
  await srv.createCollection({
    name: 'books', type: 'base', listRule: '@public', viewRule: '@public',
    createRule: '@request.auth.id != "" && owner = @request.auth.id', updateRule: 'owner = @request.auth.id', deleteRule: 'owner = @request.auth.id',
    fields: [
      { name: 'title', type: 'text', options: { required: true } },
      { name: 'author', type: 'relation', options: { collectionId: authors.id } },
      { name: 'owner', type: 'relation', options: { collectionId: users.id } },
    ],
  });
  await srv.createCollection({
    name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@request.auth.id != ""',
    fields: [{ name: 'name', type: 'text' }, { name: 'file', type: 'file', options: { maxSelect: 1 } }],
  });
  ann = await signIn('ann@example.com');
  bob = await signIn('bob@example.com');
  annId = ann.authStore.record!.id;
});

after(async () => {
  await srv?.stop();
  await events?.stop();
});

test('creates referencing each other\'s chosen ids, update, delete and upsert: one transaction, answers in order', async () => {
  const [a1, b1, b2, b3, b4, b5] = ids('bt', 6);
  // records the batch updates and deletes
  const seed = ann.createBatch();
  seed.collection('authors').create({ id: a1, name: 'Ursula' });
  seed.collection('books').create({ id: b2, title: 'old', owner: annId });
  seed.collection('books').create({ id: b3, title: 'doomed', owner: annId });
  seed.collection('books').create({ id: b4, title: 'upsert me', owner: annId });
  assert.deepEqual((await seed.send()).map((r) => r.status), [201, 201, 201, 201]);

  const [a2] = ids('bu', 1);
  const batch = ann.createBatch();
  batch.collection('authors').create({ id: a2, name: 'Octavia' });
  batch.collection('books').create({ id: b1, title: 'Kindred', author: a2, owner: annId }, { expand: 'author', fields: 'id,title,expand.author.name' });
  batch.collection('books').update(b2, { title: 'new', author: a1 });
  batch.collection('books').delete(b3);
  batch.collection('books').upsert({ id: b4, title: 'upserted' });
  batch.collection('books').upsert({ id: b5, title: 'inserted', owner: annId });
  const out = await batch.send();
  assert.deepEqual(out.map((r) => r.status), [201, 201, 200, 204, 200, 201]);
  assert.equal(out[0].body.id, a2);
  assert.deepEqual(out[1].body, { id: b1, title: 'Kindred', expand: { author: { name: 'Octavia' } } });
  assert.equal(out[2].body.title, 'new');
  assert.equal(out[2].body.author, a1);
  assert.equal(out[3].body, null);
  assert.equal(out[4].body.id, b4);
  assert.equal(out[4].body.title, 'upserted');
  assert.equal(out[5].body.id, b5);

  const view = (id: string) => srv.api('GET', `/api/collections/books/records/${id}`);
  assert.equal((await view(b1)).body.author, a2);
  assert.equal((await view(b3)).status, 404);
  assert.equal((await view(b4)).body.title, 'upserted');
  assert.equal((await view(b5)).body.owner, annId);
});

test('one request its rule refuses: 400 batch_failed naming it, and nothing written', async () => {
  const [mine] = ids('rf', 1);
  const seed = ann.createBatch();
  seed.collection('books').create({ id: mine, title: 'ann\'s', owner: annId });
  await seed.send();
  const before = await count('books');
  const [n1, n2] = ids('rg', 2);
  const batch = bob.createBatch();
  batch.collection('books').create({ id: n1, title: 'bob\'s', owner: bob.authStore.record!.id });
  batch.collection('books').update(mine, { title: 'taken over' }); // bob may not update ann's book
  batch.collection('books').create({ id: n2, title: 'bob\'s too', owner: bob.authStore.record!.id });
  const err = await batchError(batch.send());
  assert.equal(err.status, 400);
  assert.equal(err.body.code, 'batch_failed');
  assert.equal(err.body.message, 'Batch transaction failed.');
  assert.deepEqual(Object.keys(err.body.data.requests), ['1']);
  const failed = err.body.data.requests['1'];
  assert.equal(failed.code, 'not_found');
  assert.deepEqual(failed.response, { status: 404, code: 'not_found', message: failed.message, data: {} });
  assert.equal(await count('books'), before);
  assert.equal((await srv.api('GET', `/api/collections/books/records/${mine}`)).body.title, 'ann\'s');

  // a create rule that reads the record (owner = the caller) refused in the last request
  const late = bob.createBatch();
  late.collection('books').create({ title: 'fine', owner: bob.authStore.record!.id });
  late.collection('books').create({ title: 'as ann', owner: annId });
  const denied = await batchError(late.send());
  assert.equal(denied.body.data.requests['1'].response.status, 403);
  // a validation error, and an anonymous caller under a create rule that needs auth
  const invalid = await batchError((() => { const b = ann.createBatch(); b.collection('authors').create({ name: '' }); return b.send(); })());
  assert.equal(invalid.body.data.requests['0'].response.data.name.code, 'validation_required');
  const anon = new PocketBase(srv.url).createBatch();
  anon.collection('authors').create({ name: 'nobody' });
  assert.equal((await batchError(anon.send())).body.data.requests['0'].response.status, 403);
  assert.equal(await count('books'), before);
  assert.equal(await count('authors', 'name = "nobody"'), 0);
  // a chosen id already taken: the conflict fails the batch
  const dup = ann.createBatch();
  dup.collection('books').create({ id: mine, title: 'again', owner: annId });
  assert.equal((await batchError(dup.send())).body.data.requests['0'].response.status, 409);
});

test('limits: over the request count is 400, over the body size 413, nothing written', async () => {
  const before = await count('authors');
  const many = ann.createBatch();
  for (let i = 0; i < 51; i++) many.collection('authors').create({ name: `n${i}` });
  const err = await batchError(many.send());
  assert.equal(err.status, 400);
  assert.equal(err.body.code, 'validation_failed');
  assert.equal(err.body.data.requests.code, 'validation_max');
  const fifty = ann.createBatch();
  for (let i = 0; i < 50; i++) fifty.collection('authors').create({ name: `f${i}` });
  assert.equal((await fifty.send()).length, 50);
  assert.equal(await count('authors'), before + 50);

  const big = ann.createBatch();
  big.collection('authors').create({ name: 'x'.repeat(MAX_BODY) });
  const tooBig = await batchError(big.send());
  assert.equal(tooBig.status, 413);
  assert.equal(tooBig.body.code, 'payload_too_large');
  assert.equal(await count('authors'), before + 50);
});

test('malformed bodies and requests answer 400 with a clear message', async () => {
  const post = (raw: string, type = 'application/json') => srv.api('POST', '/api/batch', { token: ann.authStore.token, raw, headers: { 'content-type': type } });
  let r = await post('{not json');
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'bad_request');
  r = await post('[]');
  assert.equal(r.body.code, 'bad_request');
  r = await post('{"requests":[]}');
  assert.deepEqual([r.status, r.body.data.requests.code], [400, 'validation_required']);
  r = await post('{"requests":"x"}');
  assert.deepEqual([r.status, r.body.data.requests.code], [400, 'validation_required']);
  const one = (req: unknown) => post(JSON.stringify({ requests: [{ method: 'POST', url: '/api/collections/authors/records', body: { name: 'ok' } }, req] }));
  for (const [req, status, pattern] of [
    [{ method: 'GET', url: '/api/collections/authors/records' }, 400, /PATCH and DELETE/],
    [{ method: 'POST', url: '/api/collections/authors/records/abc' }, 400, /PATCH and DELETE/],
    [{ method: 'POST', url: '/api/settings' }, 400, /url must be/],
    [{ method: 'POST', url: '/api/collections/nope/records', body: {} }, 404, /collection/],
    [{ method: 'POST', url: '/api/collections/authors/records', body: [1] }, 400, /JSON object/],
    [{ method: 'POST', url: '/api/collections/authors/records', body: {}, headers: { Authorization: 'other' } }, 400, /Authorization/],
    ['text', 400, /must be an object/],
  ] as const) {
    r = await one(req);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'batch_failed');
    const f = r.body.data.requests['1'];
    assert.equal(f.response.status, status, r.text);
    assert.match(f.message, pattern);
  }
  assert.equal(await count('authors', 'name = "ok"'), 0);
  // a multipart body with a file that names no request, or a stray form value
  const form = new FormData();
  form.append('@jsonPayload', JSON.stringify({ requests: [{ method: 'POST', url: '/api/collections/docs/records', body: {} }] }));
  form.append('requests.3.file', new Blob(['x']), 'x.txt');
  const res = await fetch(`${srv.url}/api/batch`, { method: 'POST', body: form, headers: { authorization: ann.authStore.token } });
  assert.equal(res.status, 400);
  assert.match(((await res.json()) as { message: string }).message, /requests\.3/);
});

test('files in a multipart batch go to their request; a file under a non-file field fails the batch', async () => {
  const batch = ann.createBatch();
  batch.collection('docs').create({ name: 'with file', file: new File(['hello batch'], 'hello.txt', { type: 'text/plain' }) });
  batch.collection('docs').create({ name: 'plain' });
  const out = await batch.send();
  assert.deepEqual(out.map((r) => r.status), [201, 201]);
  const stored = out[0].body.file as string;
  assert.match(stored, /^hello_\w+\.txt$/);
  const file = await fetch(`${srv.url}/api/files/docs/${out[0].body.id}/${stored}`);
  assert.equal(await file.text(), 'hello batch');
  assert.ok(!out[1].body.file);

  const bad = ann.createBatch();
  bad.collection('docs').create({ name: 'fine' });
  bad.collection('docs').create({ name: new File(['x'], 'x.txt') });
  const err = await batchError(bad.send());
  assert.equal(err.body.data.requests['1'].response.data.name.code, 'validation_type');
  assert.equal(await count('docs', 'name = "fine"'), 0);
});

test('record events fire for each request as for single writes; a refusing hook fails the batch', async () => {
  events = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-events.mjs')}`] });
  await events.createCollection({ name: 'audit', type: 'base', fields: [{ name: 'action', type: 'text' }, { name: 'target', type: 'text' }] });
  await events.createCollection({ name: 'posts', type: 'base', createRule: '@public', updateRule: '@public', fields: [{ name: 'title', type: 'text' }, { name: 'slug', type: 'text' }] });
  const pb = new PocketBase(events.url);
  const batch = pb.createBatch();
  batch.collection('posts').create({ title: 'Hello World' });
  batch.collection('posts').create({ title: 'Second One' });
  const out = await batch.send();
  assert.deepEqual(out.map((r) => r.body.slug), ['hello-world', 'second-one']);
  const audit = async () => (await events.api('GET', '/api/collections/audit/records?perPage=100', { token: events.suToken })).body.items.map((i: { action: string; target: string }) => `${i.action} ${i.target}`).sort();
  assert.deepEqual(await audit(), [`create:posts ${out[0].body.id}`, `create:posts ${out[1].body.id}`].sort());

  const refused = pb.createBatch();
  refused.collection('posts').create({ title: 'fine' });
  refused.collection('posts').create({ title: 'forbidden' });
  const err = await batchError(refused.send());
  assert.equal(err.body.data.requests['1'].response.message, 'No forbidden posts.');
  const posts = await events.api('GET', '/api/collections/posts/records', { token: events.suToken });
  assert.equal(posts.body.totalItems, 2);
  assert.equal((await audit()).length, 2);
});
