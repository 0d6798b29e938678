/**
 * The official PocketBase JavaScript SDK (npm `pocketbase`) against the real server
 * (docs/pocketbase.md): collections with `fields` as PocketBase names them, and the list surface
 * (`getList`, `getFullList` with its `batch` paging, `getFirstListItem`) with PocketBase's query
 * parameters (`page`, `perPage`, `sort`, `filter`, `expand`, `fields`, `skipTotal`) over a
 * collection of a few hundred records. Runs on PostgreSQL too (`npx tsx test/pg-suite.ts FILE`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import PocketBase from 'pocketbase';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';

let srv: Svc;
let pb: PocketBase;
/** records in `items`: n = 0…COUNT-1, author = the author of index n % 3 */
const COUNT = 620;
const authorIds: string[] = [];

before(async () => {
  srv = await startSvc();
  pb = new PocketBase(srv.url);
  await pb.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  const authors = await pb.collections.create({
    name: 'authors', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'name', type: 'text' }],
  });
  await pb.collections.create({
    name: 'items', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public',
    fields: [{ name: 'n', type: 'number' }, { name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: authors.id } }],
  });
  for (const name of ['ann', 'bob', 'cid']) authorIds.push((await pb.collection('authors').create({ name })).id);
  for (let i = 0; i < COUNT; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, COUNT - i) }, (_, k) => {
      const n = i + k;
      return srv.api('POST', '/api/collections/items/records', { body: { n, title: `t${n % 7}`, author: authorIds[n % 3] } }).then((r) => assert.equal(r.status, 201, r.text));
    }));
  }
});

after(async () => {
  await srv?.stop();
});

test('a collection answers its fields under `fields` beside the spec\'s `schema`, and takes either on write', async () => {
  const made = await pb.collections.create({ name: 'pbnotes', type: 'base', fields: [{ name: 'body', type: 'text' }] });
  assert.deepEqual(made.fields.map((f: { name: string }) => f.name), made.schema.map((f: { name: string }) => f.name));
  assert.ok(made.fields.some((f: { name: string }) => f.name === 'body'));
  const one = await pb.collections.getOne('pbnotes');
  assert.deepEqual(one.fields, one.schema);
  // the keys keep the spec's order, `fields` right after `schema`
  const keys = Object.keys(one);
  assert.equal(keys.indexOf('fields'), keys.indexOf('schema') + 1);
  // an update with `fields` (PocketBase) and one with `schema` (the older name) both land
  const body = one.fields.find((f: { name: string }) => f.name === 'body');
  const withFields = await pb.collections.update('pbnotes', { fields: [...one.fields, { name: 'extra', type: 'number' }] });
  assert.ok(withFields.fields.some((f: { name: string }) => f.name === 'extra'));
  const withSchema = await pb.collections.update('pbnotes', { schema: [body] });
  assert.deepEqual(withSchema.fields.filter((f: { system?: boolean }) => !f.system).map((f: { name: string }) => f.name), ['body']);
  const listed = (await pb.collections.getFullList()).find((c) => c.name === 'pbnotes')!;
  assert.deepEqual(listed.fields, listed.schema);
  await pb.collections.delete('pbnotes');
});

test('getList: page, perPage, sort, filter, fields, expand and skipTotal', async () => {
  const anon = new PocketBase(srv.url);
  const p = await anon.collection('items').getList(3, 40, { sort: '-n', filter: 'n >= 100 && title = "t1"' });
  const expected = Array.from({ length: COUNT }, (_, n) => n).filter((n) => n >= 100 && n % 7 === 1).sort((a, b) => b - a);
  assert.equal(p.page, 3);
  assert.equal(p.perPage, 40);
  assert.equal(p.totalItems, expected.length);
  assert.equal(p.totalPages, Math.ceil(expected.length / 40));
  assert.deepEqual(p.items.map((r) => r.n), expected.slice(80, 120));

  const shaped = await anon.collection('items').getList(1, 5, { sort: 'n', expand: 'author', fields: 'id,n,expand.author.name', skipTotal: true });
  assert.equal(shaped.totalItems, -1);
  assert.equal(shaped.totalPages, -1);
  assert.deepEqual(shaped.items.map((r) => [Object.keys(r).sort().join(','), r.n, r.expand?.author?.name]), [
    ['expand,id,n', 0, 'ann'], ['expand,id,n', 1, 'bob'], ['expand,id,n', 2, 'cid'], ['expand,id,n', 3, 'ann'], ['expand,id,n', 4, 'bob'],
  ]);
  assert.deepEqual(Object.keys(shaped.items[0].expand!.author), ['name']);

  // past the last page: an empty page, the totals still right
  const past = await anon.collection('items').getList(99, 50);
  assert.equal(past.items.length, 0);
  assert.equal(past.totalItems, COUNT);
  // a malformed filter is PocketBase's 400
  await assert.rejects(anon.collection('items').getList(1, 10, { filter: 'n >>> 1' }), (e: { status: number }) => e.status === 400);
});

test('getFullList walks every page in its `batch` size (also past the largest page)', async () => {
  const anon = new PocketBase(srv.url);
  const small = await anon.collection('items').getFullList({ batch: 70, sort: 'n', filter: 'n < 400', fields: 'id,n' });
  assert.deepEqual(small.map((r) => r.n), Array.from({ length: 400 }, (_, n) => n));
  assert.ok(small.every((r) => Object.keys(r).length === 2));
  // the SDK's default batch (500 records a page) and a batch over the largest page svc serves
  // (500): the answer's `perPage` says what was used, so the SDK walks on correctly
  const dflt = await anon.collection('items').getFullList({ sort: '-n' });
  assert.deepEqual(dflt.map((r) => r.n), Array.from({ length: COUNT }, (_, n) => COUNT - 1 - n));
  const big = await anon.collection('items').getFullList({ batch: 1000, sort: 'n', expand: 'author' });
  assert.equal(big.length, COUNT);
  assert.equal(new Set(big.map((r) => r.id)).size, COUNT);
  assert.equal(big[COUNT - 1].expand?.author?.name, ['ann', 'bob', 'cid'][(COUNT - 1) % 3]);
});

test('getFirstListItem: the first match by filter (with sort and expand), a 404 when none', async () => {
  const anon = new PocketBase(srv.url);
  const first = await anon.collection('items').getFirstListItem('title = "t3" && n > 500', { sort: 'n', expand: 'author' });
  const n = Array.from({ length: COUNT }, (_, i) => i).find((i) => i > 500 && i % 7 === 3)!;
  assert.equal(first.n, n);
  assert.equal(first.expand?.author?.name, ['ann', 'bob', 'cid'][n % 3]);
  await assert.rejects(anon.collection('items').getFirstListItem('n = 100000'), (e: { status: number }) => e.status === 404);
});
