/**
 * Vector fields with declared dimensions and libsql's native vector index, end to end (spec
 * 1-core-api.md "Search" vector; vector-sql.ts): the `dimensions` / `vectorIndex` options and
 * their validation, the F32_BLOB shadow column kept by triggers (insert, update, delete,
 * backfill on schema changes), nearest-first answers through the index and through the exact
 * scan (rules, filters, l2), rows without embeddings last across pages, the malformed-stored
 * rule, and the index following collection updates (rename, toggle, dimension change).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'libsql';
import { startSvc, type Svc } from '../helpers/server.js';
import { CITIES, LISBON, PARIS, dot, unit } from '../helpers/cities.js';
import { assertError, dumpServerLog, qs, seed } from '../helpers/records-fixtures.js';
import { TEST_BACKEND } from '../helpers/backend.js';

/** On PostgreSQL vector queries need the pgvector extension, which Debian 12 does not package (not installed here). */
const NO_PGVECTOR = TEST_BACKEND === 'postgres'
  ? 'on PostgreSQL vectors need the pgvector extension, which Debian 12 does not package (without it the server turns vector search off)'
  : false;

const emb = (c: (typeof CITIES)[number]) => unit(c.loc.coordinates[1], c.loc.coordinates[0]);
/** City names by exact cosine distance to `p`. */
const byCosine = (p: number[]) => CITIES.map((c) => ({ n: c.name, d: 1 - dot(emb(c), p) })).sort((a, b) => a.d - b.d).map((x) => x.n);

let srv: Svc;
let places: any;
const URL = '/api/collections/places/records';

before(async () => {
  if (NO_PGVECTOR) return;
  srv = await startSvc({ args: ['--features=vector'] });
  places = await srv.createCollection({
    name: 'places', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'text' }, { name: 'embedding', type: 'json', options: { dimensions: 3, vectorIndex: true } }],
  });
  for (let i = 0; i < CITIES.length; i += 8) {
    await Promise.all(CITIES.slice(i, i + 8).map((c) => seed(srv, 'places', { name: c.name, country: c.country, embedding: emb(c) })));
  }
  await seed(srv, 'places', { name: 'No embedding', country: 'FR', embedding: null });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

const near = (vector: string, extra: Record<string, string | number> = {}, path = URL) =>
  srv.api('GET', `${path}${qs({ vector, perPage: 50, ...extra })}`);
const names = (r: any): string[] => r.body.items.map((x: any) => x.name);

/** Runs `fn` on a read-only connection to the server's database file. */
function inDb<T>(fn: (db: InstanceType<typeof Database>) => T): T {
  const db = new Database(join(srv.dataDir, 'data.db'), { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
const schemaNames = (type: string, prefix: string): string[] =>
  inDb((db) => db.prepare(`SELECT name FROM sqlite_master WHERE type = ? AND name LIKE ? AND name NOT LIKE '%shadow%'`).raw().all([type, `${prefix}%`]).map((r: any) => String(r[0])));

test('dimensions and vectorIndex options are validated', { skip: NO_PGVECTOR }, async () => {
  const field = (options: Record<string, unknown>, name = 'e') => srv.api('POST', '/api/collections', {
    token: srv.suToken, body: { name: `v${Math.random().toString(36).slice(2, 8)}`, type: 'base', fields: [{ name, type: 'json', options }] },
  });
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ dimensions: 'three' }, 'fields.0.dimensions', 'validation_type'],
    [{ dimensions: 2.5 }, 'fields.0.dimensions', 'validation_type'],
    [{ dimensions: 0 }, 'fields.0.dimensions', 'validation_min'],
    [{ dimensions: 65537 }, 'fields.0.dimensions', 'validation_max'],
    [{ vectorIndex: true }, 'fields.0.vectorIndex', 'validation_value'],
    [{ vectorIndex: 'yes', dimensions: 3 }, 'fields.0.vectorIndex', 'validation_type'],
    [{ dimensions: 3, encrypted: true }, 'fields.0.encrypted', 'validation_encrypted_index'],
  ];
  for (const [options, key, code] of cases) {
    const r = await field(options);
    assertError(r, 400, 'validation_failed');
    assert.equal(r.body.data[key]?.code, code, `${JSON.stringify(options)}: ${r.text}`);
  }
  const reserved = await field({}, '_vec_x');
  assertError(reserved, 400, 'validation_failed');
  assert.equal(reserved.body.data['fields.0.name']?.code, 'validation_reserved_name');
  // the options round-trip on the collection
  const got = await srv.api('GET', `/api/collections/${places.id}`, { token: srv.suToken });
  const e = got.body.schema.find((f: any) => f.name === 'embedding');
  assert.equal(e.options?.dimensions ?? e.dimensions, 3);
  assert.equal(e.options?.vectorIndex ?? e.vectorIndex, true);
});

test('the shadow column, its triggers and the DiskANN index exist and follow writes', { skip: NO_PGVECTOR }, async () => {
  const fid = places.schema.find((f: any) => f.name === 'embedding').id;
  assert.deepEqual(schemaNames('index', `_vidx_${places.id}_`), [`_vidx_${places.id}_${fid}`]);
  assert.equal(schemaNames('trigger', `_vec_${places.id}_`).length, 2);
  const topK = (p: number[]): string[] => inDb((db) => db.prepare(
    `SELECT r."name" FROM vector_top_k('_vidx_${places.id}_${fid}', ?, 3) v JOIN "places" r ON r.rowid = v.id ORDER BY vector_distance_cos(r."_vec_${fid}", ?)`,
  ).raw().all([Buffer.from(new Float32Array(p).buffer), Buffer.from(new Float32Array(p).buffer)]).map((r: any) => String(r[0])));
  assert.equal(topK(PARIS)[0], 'Paris');
  // an update moves the row in the index, a delete removes it
  const tmp = await seed(srv, 'places', { name: 'Mover', country: 'XX', embedding: [0, 0, -1] });
  assert.equal(topK([0, 0, -1])[0], 'Mover');
  const patched = await srv.api('PATCH', `${URL}/${tmp.id}`, { token: srv.suToken, body: { embedding: PARIS } });
  assert.equal(patched.status, 200, patched.text);
  assert.ok(topK(PARIS).includes('Mover'));
  assert.ok(!topK([0, 0, -1]).includes('Mover'));
  assert.equal((await srv.api('DELETE', `${URL}/${tmp.id}`, { token: srv.suToken })).status, 204);
  assert.ok(!topK(PARIS).includes('Mover'));
  // a stored non-embedding is kept as written (never a failed write) and leaves the blob NULL
  const odd = await seed(srv, 'places', { name: 'Odd', country: 'XX', embedding: { not: 'a vector' } });
  assert.equal((await srv.api('GET', `${URL}/${odd.id}`)).body.embedding.not, 'a vector');
  assertError(await near(`embedding:${JSON.stringify(PARIS)}`), 400, 'bad_request');
  assert.equal((await srv.api('DELETE', `${URL}/${odd.id}`, { token: srv.suToken })).status, 204);
});

test('cosine through the index orders nearest first; exact answers agree; rows without an embedding come last', { skip: NO_PGVECTOR }, async () => {
  const r = await near(`embedding:${JSON.stringify(PARIS)}`, { perPage: 10 });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(names(r), byCosine(PARIS).slice(0, 10));
  assert.equal(r.body.totalItems, CITIES.length + 1);
  // a filter narrows the rows: the exact scan over the blobs answers the same order
  const filtered = await near(`embedding:${JSON.stringify(PARIS)}`, { perPage: 10, filter: "country != 'ZZ'" });
  assert.equal(filtered.status, 200, filtered.text);
  assert.deepEqual(names(filtered), names(r));
  // l2 (no index for it) and scaled queries
  const l2 = await near(`embedding:l2:${JSON.stringify(LISBON)}`, { filter: "country = 'PT'", perPage: 3 });
  assert.equal(l2.status, 200, l2.text);
  assert.equal(names(l2)[0], 'Lisbon');
  assert.equal(names(await near(`embedding:${JSON.stringify(PARIS.map((x) => x * 1000))}`, { perPage: 1 }))[0], 'Paris');
  // every page, including the ones past the last embedding, without repeats or gaps
  const seen: string[] = [];
  for (let page = 1; page <= 5; page++) seen.push(...names(await near(`embedding:${JSON.stringify(LISBON)}`, { perPage: 9, page })));
  assert.equal(seen.length, CITIES.length + 1);
  assert.equal(new Set(seen).size, seen.length);
  assert.deepEqual(seen.slice(0, -1), byCosine(LISBON));
  assert.equal(seen.at(-1), 'No embedding');
});

test('query dimensions must match the declared ones; stored values of another length are malformed', { skip: NO_PGVECTOR }, async () => {
  const r = await near('embedding:[1,0]');
  assertError(r, 400, 'bad_request');
  assert.match(r.body.message, /2 dimensions but "embedding" holds 3/);
  const short = await seed(srv, 'places', { name: 'Short', country: 'XX', embedding: [1, 0] });
  const bad = await near(`embedding:${JSON.stringify(PARIS)}`);
  assertError(bad, 400, 'bad_request');
  assert.match(bad.body.message, /stored "embedding" embedding is not an array of 3 numbers/);
  for (const e of [['x', 1, 2], [1e39, 0, 0], 'text', 5]) {
    await srv.api('PATCH', `${URL}/${short.id}`, { token: srv.suToken, body: { embedding: e } });
    assertError(await near(`embedding:${JSON.stringify(PARIS)}`), 400, 'bad_request');
  }
  await srv.api('PATCH', `${URL}/${short.id}`, { token: srv.suToken, body: { embedding: null } });
  assert.equal((await near(`embedding:${JSON.stringify(PARIS)}`)).status, 200);
  assert.equal((await srv.api('DELETE', `${URL}/${short.id}`, { token: srv.suToken })).status, 204);
});

test('rules still apply: a narrowing list rule is answered by the exact scan, never by the index', { skip: NO_PGVECTOR }, async () => {
  const col = await srv.createCollection({
    name: 'secrets', type: 'base', listRule: 'visible = true',
    fields: [{ name: 'name', type: 'text' }, { name: 'visible', type: 'bool' }, { name: 'embedding', type: 'json', options: { dimensions: 3, vectorIndex: true } }],
  });
  await seed(srv, 'secrets', { name: 'hidden twin', visible: false, embedding: PARIS });
  await seed(srv, 'secrets', { name: 'far', visible: true, embedding: [0, 0, -1] });
  const r = await near(`embedding:${JSON.stringify(PARIS)}`, {}, '/api/collections/secrets/records');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(names(r), ['far']);
  assert.ok(col.id);
});

test('schema changes: backfill on rebuild, rename, toggling the index, changing or dropping dimensions', { skip: NO_PGVECTOR }, async () => {
  const col = await srv.createCollection({
    name: 'later', type: 'base', listRule: '@public',
    fields: [{ name: 'name', type: 'text' }, { name: 'vec', type: 'json' }],
  });
  for (const c of CITIES.slice(0, 12)) await seed(srv, 'later', { name: c.name, vec: emb(c) });
  const L = '/api/collections/later/records';
  const expected = CITIES.slice(0, 12).map((c) => ({ n: c.name, d: 1 - dot(emb(c), PARIS) })).sort((a, b) => a.d - b.d).map((x) => x.n);
  const patch = async (fields: unknown[], name = 'later') => {
    const r = await srv.api('PATCH', `/api/collections/${col.id}`, { token: srv.suToken, body: { name, fields } });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const fields = (await srv.api("GET", `/api/collections/${col.id}`, { token: srv.suToken })).body.schema;
  const [nameF, vecF] = [fields.find((f: any) => f.name === 'name'), fields.find((f: any) => f.name === 'vec')];
  // adding dimensions and an index to existing rows fills the blobs (json scan before, index after)
  assert.deepEqual(names(await near(`vec:${JSON.stringify(PARIS)}`, {}, L)), expected);
  await patch([nameF, { id: vecF.id, name: 'vec', type: 'json', options: { dimensions: 3, vectorIndex: true } }]);
  assert.deepEqual(schemaNames('index', `_vidx_${col.id}_`), [`_vidx_${col.id}_${vecF.id}`]);
  assert.deepEqual(names(await near(`vec:${JSON.stringify(PARIS)}`, {}, L)), expected);
  // rename the field and the collection: rebuilt table, same answers
  await patch([nameF, { id: vecF.id, name: 'where', type: 'json', options: { dimensions: 3, vectorIndex: true } }], 'later2');
  const L2 = '/api/collections/later2/records';
  assert.deepEqual(names(await near(`where:${JSON.stringify(PARIS)}`, {}, L2)), expected);
  assert.equal(schemaNames('index', `_vidx_${col.id}_`).length, 1);
  // index off: dropped, the exact blob scan answers
  await patch([nameF, { id: vecF.id, name: 'where', type: 'json', options: { dimensions: 3, vectorIndex: false } }], 'later2');
  assert.deepEqual(schemaNames('index', `_vidx_${col.id}_`), []);
  assert.deepEqual(names(await near(`where:${JSON.stringify(PARIS)}`, {}, L2)), expected);
  // index on again without a rebuild
  await patch([nameF, { id: vecF.id, name: 'where', type: 'json', options: { dimensions: 3, vectorIndex: true } }], 'later2');
  assert.equal(schemaNames('index', `_vidx_${col.id}_`).length, 1);
  assert.deepEqual(names(await near(`where:${JSON.stringify(PARIS)}`, {}, L2)), expected);
  // other dimensions: every stored 3-number value is now malformed
  await patch([nameF, { id: vecF.id, name: 'where', type: 'json', options: { dimensions: 2 } }], 'later2');
  assertError(await near('where:[1,0]', {}, L2), 400, 'bad_request');
  // no dimensions: back to the json scan, which reads them again
  await patch([nameF, { id: vecF.id, name: 'where', type: 'json', options: {} }], 'later2');
  assert.deepEqual(names(await near(`where:${JSON.stringify(PARIS)}`, {}, L2)), expected);
  assert.deepEqual(schemaNames('trigger', `_vec_${col.id}_`), []);
  // deleting the collection leaves nothing behind
  assert.equal((await srv.api('DELETE', `/api/collections/${col.id}`, { token: srv.suToken })).status, 204);
  assert.deepEqual(inDb((db) => db.prepare(`SELECT name FROM sqlite_master WHERE name LIKE ?`).raw().all([`%${col.id}%`])), []);
});
