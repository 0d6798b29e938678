/**
 * Record read benchmark: `GET /api/collections/posts/records/<id>` on a real svc server against a
 * bare uWebSockets.js hello-world, same wrk settings, same machine, one run.
 *
 *   bash ci/install-apt.sh wrk wrk && npm run build && npm run bench:read
 *
 * Options (flags or env): --runs=N (BENCH_RUNS, default 3), --duration=S (BENCH_DURATION, 5),
 * --warmup=S (BENCH_WARMUP, 2), --connections=N (BENCH_CONNECTIONS, 64), --records=N (1000),
 * --enforce (exit 1 when the ratio is below the 0.5 target).
 *
 * Writes bench/results/read-by-id.json. See bench/README.md.
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startSvc, svcBuilt, CLI_PATH, REPO_ROOT, type SvcInstance } from './lib/svc.js';
import { readPostId, seedReadPosts } from './lib/seed.js';
import {
  freePort,
  median,
  runWrk,
  startProcess,
  waitForHttp,
  wrkAvailable,
  wrkVersion,
  type ManagedProcess,
  type WrkResult,
} from './lib/wrk.js';

/** The ratio svc/hello the project aims for. */
const TARGET_RATIO = 0.5;
const THREADS = 1;

function option(name: string, envName: string, fallback: number): number {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  const raw = flag ? flag.slice(name.length + 3) : process.env[envName];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`bench: invalid --${name} / ${envName}: ${raw}`);
    process.exit(2);
  }
  return n;
}

const RUNS = option('runs', 'BENCH_RUNS', 3);
const DURATION_S = option('duration', 'BENCH_DURATION', 5);
const WARMUP_S = option('warmup', 'BENCH_WARMUP', 2);
const CONNECTIONS = option('connections', 'BENCH_CONNECTIONS', 64);
const RECORDS = option('records', 'BENCH_RECORDS', 1000);
const ENFORCE = process.argv.includes('--enforce') || process.env.BENCH_ENFORCE === '1';

/** Fixed record id measured by the benchmark (15 lowercase alphanumerics). */
const FIXED_INDEX = Math.floor(RECORDS / 2);

interface Series {
  label: string;
  url: string;
  runs: WrkResult[];
}

function log(msg: string): void {
  process.stderr.write(`bench: ${msg}\n`);
}

async function seedPosts(svc: SvcInstance): Promise<string> {
  await seedReadPosts(svc.url, svc.email, svc.password, RECORDS);
  return readPostId(FIXED_INDEX);
}

async function checkOk(url: string, expect: (body: any) => boolean, what: string): Promise<void> {
  const res = await fetch(url);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  if (res.status !== 200 || !expect(body)) {
    throw new Error(`${what}: GET ${url} answered ${res.status} ${text.slice(0, 500)}`);
  }
}

function fmt(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

function summarise(s: Series): { rps: number; p50: number; p99: number; errors: number; requests: number } {
  return {
    rps: median(s.runs.map((r) => r.requestsPerSec)),
    p50: median(s.runs.map((r) => r.latencyP50Ms)),
    p99: median(s.runs.map((r) => r.latencyP99Ms)),
    errors: s.runs.reduce((a, r) => a + r.errors, 0),
    requests: s.runs.reduce((a, r) => a + r.requests, 0),
  };
}

async function main(): Promise<number> {
  if (!svcBuilt()) {
    console.error(`bench: ${CLI_PATH} not found. Build the server first:\n\n    npm run build\n`);
    return 1;
  }
  if (!wrkAvailable()) {
    console.error('bench: wrk is not installed. Install it with:\n\n    bash ci/install-apt.sh wrk wrk\n');
    return 1;
  }

  let svc: SvcInstance | undefined;
  let hello: ManagedProcess | undefined;
  const stopAll = async (): Promise<void> => {
    await Promise.allSettled([hello?.stop(), svc?.stop()]);
  };
  const onSignal = (): void => {
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const loadAtStart = loadavg()[0]!;
  if (loadAtStart > 0.5 * cpus().length) {
    log(`warning: load average is ${loadAtStart.toFixed(2)} on ${cpus().length} CPUs; other work will skew the figures`);
  }
  try {
    log('starting svc (temp data dir, superuser via CLI)');
    svc = await startSvc();
    log(`svc listening at ${svc.url}; seeding ${RECORDS} posts`);
    const id = await seedPosts(svc);
    const recordUrl = `${svc.url}/api/collections/posts/records/${id}`;
    await checkOk(recordUrl, (b) => b?.id === id, 'record read sanity check');

    const helloPort = await freePort();
    hello = startProcess('hello-uws', process.execPath, [join(REPO_ROOT, 'bench', 'hello-uws.mjs'), String(helloPort)], {
      cwd: REPO_ROOT,
    });
    const helloUrl = `http://127.0.0.1:${helloPort}/`;
    await waitForHttp(helloUrl, hello);
    await checkOk(helloUrl, (b) => b?.hello === 'world', 'hello-world sanity check');

    const series: Series[] = [
      { label: 'uWS hello-world', url: helloUrl, runs: [] },
      { label: 'svc GET record by id', url: recordUrl, runs: [] },
    ];
    const wrkOpts = { threads: THREADS, connections: CONNECTIONS };

    for (const s of series) {
      log(`warm-up ${WARMUP_S}s: ${s.label}`);
      await runWrk({ ...wrkOpts, url: s.url, durationS: WARMUP_S });
    }
    // Interleave the measured runs so slow drift of the machine affects both sides alike.
    for (let i = 1; i <= RUNS; i++) {
      for (const s of series) {
        const r = await runWrk({ ...wrkOpts, url: s.url, durationS: DURATION_S });
        s.runs.push(r);
        log(
          `run ${i}/${RUNS} ${s.label}: ${fmt(r.requestsPerSec, 0)} req/s, p50 ${fmt(r.latencyP50Ms)} ms, ` +
            `p99 ${fmt(r.latencyP99Ms)} ms, errors ${r.errors}`,
        );
      }
    }

    const [h, v] = series.map(summarise) as [ReturnType<typeof summarise>, ReturnType<typeof summarise>];
    const ratio = v.rps / h.rps;
    const pass = ratio >= TARGET_RATIO;

    const rows = [
      ['target', 'req/s (median)', 'p50 ms', 'p99 ms', 'errors'],
      ...series.map((s, i) => {
        const m = i === 0 ? h : v;
        return [s.label, fmt(m.rps, 0), fmt(m.p50), fmt(m.p99), String(m.errors)];
      }),
    ];
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    const line = (r: string[]): string => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
    console.log(
      `\nwrk -t${THREADS} -c${CONNECTIONS} -d${DURATION_S}s --latency, warm-up ${WARMUP_S}s, median of ${RUNS} runs` +
        ` (${cpus().length} CPUs, node ${process.version})\n`,
    );
    console.log(line(rows[0]!));
    console.log(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const r of rows.slice(1)) console.log(line(r));
    console.log(`\nratio svc / hello: ${fmt(ratio, 3)} (target ≥ ${TARGET_RATIO}) ${pass ? 'PASS' : 'BELOW TARGET'}`);
    if (v.errors > 0 || h.errors > 0) {
      console.log('WARNING: errors during measurement (socket errors or non-2xx); the figures are not valid.');
    }

    const result = {
      benchmark: 'read-by-id',
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        wrk: wrkVersion(),
        loadAvg1mAtStart: Math.round(loadAtStart * 100) / 100,
      },
      settings: { threads: THREADS, connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S, runs: RUNS, records: RECORDS },
      targetRatio: TARGET_RATIO,
      ratio,
      pass,
      series: series.map((s, i) => ({
        label: s.label,
        path: new URL(s.url).pathname,
        median: i === 0 ? h : v,
        runs: s.runs.map(({ raw: _raw, ...rest }) => rest),
      })),
    };
    const outDir = join(REPO_ROOT, 'bench', 'results');
    await mkdir(outDir, { recursive: true });
    const outFile = join(outDir, 'read-by-id.json');
    await writeFile(outFile, JSON.stringify(result, null, 2) + '\n');
    console.log(`results written to ${outFile}`);

    if (v.errors > 0 || h.errors > 0) return 1;
    if (ENFORCE && !pass) return 1;
    return 0;
  } catch (err) {
    console.error(`bench: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    if (svc && svc.proc.output().trim()) console.error(`--- svc output (tail) ---\n${svc.proc.output().slice(-4000)}`);
    return 1;
  } finally {
    await stopAll();
  }
}

process.exitCode = await main();
