/**
 * svc against Parse Server on one series (bench/README.md, "Against Parse Server"): the 20 newest
 * articles with `views > N`, N random per request, sorted newest first, neither field given an
 * index by the app, no totals. Three servers over the same 10,000 rows, each started here on
 * this machine: svc on its embedded SQLite, svc on PostgreSQL and Parse Server 8.6 on PostgreSQL
 * (one throw-away PostgreSQL, a database each, durable). wrk -c64 runs them interleaved per
 * round; medians of the rounds and svc ÷ Parse per round.
 *
 *   npm run build && npm run bench:parse -- [--rounds=3] [--seconds=3] [--rows=10000]
 *       [--parse-dir=DIR]
 *
 * Parse Server is not a dependency of this repository: it is installed once with npm into
 * `--parse-dir` (default bench/results/parse-server) when it is not there yet. Needs wrk and
 * PostgreSQL (ci/install-apt.sh); exits saying which is missing. Not part of `npm run bench`.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { BENCH_EMAIL, BENCH_PASSWORD, REPO_ROOT, SvcClient, startSvc, svcBuilt, type SvcInstance } from './lib/svc.js';
import { freePort, median, runWrk, startProcess, waitForHttp, wrkAvailable, type ManagedProcess, type WrkOptions } from './lib/wrk.js';
import { wrkScript } from './lib/scenarios.js';
import { SvcClient as FastClient } from '../examples/cities/client.js';
import { postgresSkipReason, startPostgres } from '../test/helpers/postgres.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROUNDS = Math.max(1, Number(arg('rounds') ?? 3));
const SECONDS = Math.max(1, Number(arg('seconds') ?? 3));
const ROWS = Math.max(100, Number(arg('rows') ?? 10_000));
const PARSE_DIR = arg('parse-dir') ?? join(REPO_ROOT, 'bench', 'results', 'parse-server');
const PARSE_VERSION = '8.6';
/** views are drawn from 0..VIEWS_MAX, and so is each request's N */
const VIEWS_MAX = 100_000;
const APP_ID = 'svc-bench';
const MASTER_KEY = 'svc-bench-master-key';

/** views of row i: spread over 0..VIEWS_MAX, not in creation order */
const viewsOf = (i: number): number => (i * 7919) % (VIEWS_MAX + 1);

interface Target {
  name: string;
  load: WrkOptions;
}

function installParse(): string {
  const bin = join(PARSE_DIR, 'node_modules', 'parse-server', 'bin', 'parse-server');
  if (existsSync(bin)) return bin;
  console.log(`parse-compare: installing parse-server@${PARSE_VERSION} into ${PARSE_DIR} (once)`);
  mkdirSync(PARSE_DIR, { recursive: true });
  if (!existsSync(join(PARSE_DIR, 'package.json'))) writeFileSync(join(PARSE_DIR, 'package.json'), '{"private":true}\n');
  const r = spawnSync('npm', ['install', `parse-server@${PARSE_VERSION}`, '--no-audit', '--no-fund'], { cwd: PARSE_DIR, stdio: 'inherit' });
  if (r.status !== 0 || !existsSync(bin)) throw new Error(`npm install parse-server@${PARSE_VERSION} failed (exit ${r.status})`);
  return bin;
}

/** Runs `work(i)` for i in [0, n) on `concurrency` workers. */
async function pool(n: number, concurrency: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await work(next++);
  }));
}

/** svc: the `articles` collection (title, views; no index of the app's) and its rows. */
async function seedSvc(svc: SvcInstance): Promise<void> {
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(BENCH_EMAIL, BENCH_PASSWORD);
  await su.request('POST', '/api/collections', {
    name: 'articles', type: 'base',
    fields: [{ name: 'title', type: 'text' }, { name: 'views', type: 'number' }],
    listRule: '@public', viewRule: '@public', createRule: null, updateRule: null, deleteRule: null,
  });
  const client = new FastClient(svc.url, 16);
  client.token = su.token;
  try {
    // in creation order, as Parse's are (newest first is then the last rows made)
    for (let from = 0; from < ROWS; from += 200) {
      await pool(Math.min(200, ROWS - from), 16, (k) => client.request('POST', '/api/collections/articles/records', { title: `Article ${from + k}`, views: viewsOf(from + k) }));
    }
  } finally {
    client.close();
  }
}

/** Parse: the `Article` class (title, views) and its rows, one create a request in creation order. */
async function seedParse(url: string): Promise<void> {
  const headers = { 'X-Parse-Application-Id': APP_ID, 'X-Parse-Master-Key': MASTER_KEY, 'Content-Type': 'application/json' };
  const schema = await fetch(`${url}/schemas/Article`, { method: 'POST', headers, body: JSON.stringify({ className: 'Article', fields: { title: { type: 'String' }, views: { type: 'Number' } } }) });
  if (!schema.ok) throw new Error(`Parse schema: ${schema.status} ${await schema.text()}`);
  // (Parse 8.6's /batch answered 500 to creates here: one request a row)
  for (let from = 0; from < ROWS; from += 200) {
    await pool(Math.min(200, ROWS - from), 16, async (k) => {
      const r = await fetch(`${url}/classes/Article`, { method: 'POST', headers, body: JSON.stringify({ title: `Article ${from + k}`, views: viewsOf(from + k) }) });
      if (!r.ok) throw new Error(`Parse create: ${r.status} ${await r.text()}`);
    });
  }
}

async function main(): Promise<void> {
  if (!svcBuilt()) throw new Error('dist is missing: run `npm run build` first');
  const missing = postgresSkipReason() ?? (wrkAvailable() ? null : 'wrk is not installed: run `bash ci/install-apt.sh wrk wrk`');
  if (missing) {
    console.log(`parse-compare: skipped: ${missing}`);
    return;
  }
  const parseBin = installParse();
  const stops: Array<() => Promise<void>> = [];
  try {
    const pgs = await startPostgres({ durable: true });
    stops.push(() => pgs.stop());
    const env = { SERVICE_RATE_LIMIT_MAX: '0' };
    const lib = await startSvc({ env });
    stops.push(() => lib.stop());
    const onPg = await startSvc({ env: { ...env, SERVICE_DATABASE_URL: await pgs.createDatabase('svc_articles') } });
    stops.push(() => onPg.stop());
    const parsePort = await freePort();
    const parseUrl = `http://127.0.0.1:${parsePort}/parse`;
    const parse: ManagedProcess = startProcess('parse-server', process.execPath, [
      parseBin, '--appId', APP_ID, '--masterKey', MASTER_KEY, '--databaseURI', await pgs.createDatabase('parse'),
      '--port', String(parsePort), '--mountPath', '/parse', '--serverURL', parseUrl, '--logLevel', 'error',
    ], { cwd: PARSE_DIR, env: { ...process.env, NODE_ENV: 'production' } });
    stops.push(() => parse.stop());
    await waitForHttp(`${parseUrl}/health`, parse, 60_000);

    const t0 = performance.now();
    await Promise.all([seedSvc(lib), seedSvc(onPg), seedParse(parseUrl)]);
    console.log(`parse-compare: seeded ${ROWS} rows in each of three servers, ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const svcPath = (s: SvcInstance): string => `${s.url}/api/collections/articles/records?perPage=20&skipTotal=1&sort=-created`;
    const svcLoad = (s: SvcInstance): WrkOptions => ({ url: svcPath(s), script: wrkScript('random-threshold.lua'), scriptArgs: ['&filter=views%20%3E%20', '-', String(VIEWS_MAX)] });
    const parseLoad: WrkOptions = {
      url: `${parseUrl}/classes/Article?limit=20&order=-createdAt`, headers: { 'X-Parse-Application-Id': APP_ID },
      script: wrkScript('random-threshold.lua'), scriptArgs: ['&where=%7B%22views%22%3A%7B%22%24gt%22%3A', '%7D%7D', String(VIEWS_MAX)],
    };
    const targets: Target[] = [
      { name: 'svc on SQLite', load: svcLoad(lib) },
      { name: 'svc on PostgreSQL', load: svcLoad(onPg) },
      { name: 'Parse Server on PostgreSQL', load: parseLoad },
    ];

    // the same threshold on each: 20 rows, every one above it, newest first (the rows were made
    // 16 at a time, so the three need not agree on the order of rows made in the same instant)
    const n = 50_000;
    const svcRows = async (s: SvcInstance): Promise<Array<[number, string]>> => {
      const r = await fetch(`${svcPath(s)}&filter=${encodeURIComponent(`views > ${n}`)}`);
      if (!r.ok) throw new Error(`svc list: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { items: Array<{ views: number; created: string }> }).items.map((x) => [x.views, x.created]);
    };
    const parseAnswer = await fetch(`${parseUrl}/classes/Article?limit=20&order=-createdAt&where=${encodeURIComponent(JSON.stringify({ views: { $gt: n } }))}`, { headers: { 'X-Parse-Application-Id': APP_ID } });
    if (!parseAnswer.ok) throw new Error(`Parse list: ${parseAnswer.status} ${await parseAnswer.text()}`);
    const parseRows = ((await parseAnswer.json()) as { results: Array<{ views: number; createdAt: string }> }).results.map((x): [number, string] => [x.views, x.createdAt.replace('T', ' ')]);
    for (const [name, got] of [['svc on SQLite', await svcRows(lib)], ['svc on PostgreSQL', await svcRows(onPg)], ['Parse', parseRows]] as const) {
      const ok = got.length === 20 && got.every(([v], k) => v > n && (k === 0 || got[k - 1][1] >= got[k][1]));
      if (!ok) throw new Error(`${name} answered ${JSON.stringify(got)}: expected 20 rows with views > ${n}, newest first`);
    }

    for (const t of targets) await runWrk({ ...t.load, connections: 64, durationS: 1 }); // warm-up
    const rates: Record<string, number[]> = Object.fromEntries(targets.map((t) => [t.name, []]));
    const errors: Record<string, number> = Object.fromEntries(targets.map((t) => [t.name, 0]));
    for (let round = 1; round <= ROUNDS; round++) {
      const line: string[] = [];
      for (const t of round % 2 ? targets : [...targets].reverse()) {
        const r = await runWrk({ ...t.load, connections: 64, durationS: SECONDS, timeoutS: 10 });
        rates[t.name].push(r.requestsPerSec);
        errors[t.name] += r.errors;
        line.push(`${t.name} ${Math.round(r.requestsPerSec)}`);
      }
      console.log(`parse-compare: round ${round} · ${line.join(' · ')}`);
    }
    const parseRates = rates['Parse Server on PostgreSQL'];
    console.log('\nseries: 20 newest with views > N (random N), no totals; wrk -c64');
    console.log('server                        req/s (median)  ÷ Parse (median of rounds)  errors');
    for (const t of targets) {
      const ratio = median(rates[t.name].map((v, k) => v / parseRates[k]));
      console.log(`${t.name.padEnd(30)}${Math.round(median(rates[t.name])).toLocaleString('en-US').padStart(14)}  ${ratio.toFixed(2).padStart(26)}  ${errors[t.name]}`);
    }
    await mkdir(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    await writeFile(join(REPO_ROOT, 'bench', 'results', 'parse-compare.json'), JSON.stringify({ rows: ROWS, rounds: ROUNDS, seconds: SECONDS, rates, errors }, null, 2));
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
