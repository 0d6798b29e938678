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
