/**
 * Batch route benchmark (docs/api.md, "Batch"): N creates in one `POST /api/batch` against N
 * single `POST /api/collections/posts/records`, on one real svc server, in alternating rounds
 * (a paired series: both see the same machine load). Each series keeps `--concurrency` requests
 * in flight for `--duration` seconds; the figure is records created per second (and HTTP
 * requests per second), the median over the rounds.
 *
 *   npm run build && npm run bench:batch
 *
 * Options (flags or env): --rounds=N (BENCH_ROUNDS, 3), --duration=S (BENCH_DURATION, 3),
 * --size=N (BENCH_BATCH_SIZE, creates per batch, 50), --concurrency=N (BENCH_CONCURRENCY, 16).
 * SERVICE_DATABASE_URL in the environment runs it on PostgreSQL. Figures: bench/README.md, "Batch".
 */
import { cpus, loadavg } from 'node:os';
import { startSvc, SvcClient } from './lib/svc.js';
import { median } from './lib/wrk.js';

/** `--name=N` or the variable: a positive integer, else `fallback`. */
const opt = (name: string, variable: string, fallback: number): number => {
  const raw = process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? process.env[variable];
  const n = raw ? Number(raw) : fallback;
  if (!Number.isInteger(n) || n <= 0) throw new Error(`bench: --${name} / ${variable} must be a positive integer, not ${raw}`);
  return n;
};

const ROUNDS = opt('rounds', 'BENCH_ROUNDS', 3);
const DURATION_S = opt('duration', 'BENCH_DURATION', 3);
const SIZE = opt('size', 'BENCH_BATCH_SIZE', 50);
const CONCURRENCY = opt('concurrency', 'BENCH_CONCURRENCY', 16);

interface Round {
  records: number;
  requests: number;
  seconds: number;
}

/** Keeps CONCURRENCY calls of `send` (each creating `perCall` records) going for DURATION_S. */
async function drive(send: (i: number) => Promise<void>, perCall: number): Promise<Round> {
  const until = performance.now() + DURATION_S * 1000;
  let requests = 0;
  let n = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < until) {
      await send(n++);
      requests++;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  return { records: requests * perCall, requests, seconds };
}

async function main(): Promise<void> {
  const srv = await startSvc({ env: { SERVICE_BATCH_MAX_REQUESTS: String(Math.max(50, SIZE)) } });
  try {
    const su = new SvcClient(srv.url);
    await su.loginSuperuser(srv.email, srv.password);
    await su.request('POST', '/api/collections', {
      name: 'posts', type: 'base', createRule: '@public',
      fields: [{ name: 'title', type: 'text' }, { name: 'n', type: 'number' }],
    });
    const anon = new SvcClient(srv.url);
    const single = (i: number) => anon.request('POST', '/api/collections/posts/records', { title: `single ${i}`, n: i }).then(() => undefined);
    const body = (i: number) => ({
      requests: Array.from({ length: SIZE }, (_, k) => ({ method: 'POST', url: '/api/collections/posts/records', body: { title: `batch ${i}.${k}`, n: k } })),
    });
    const batch = (i: number) => anon.request('POST', '/api/batch', body(i)).then((out: unknown[]) => {
      if (out.length !== SIZE) throw new Error(`a batch answered ${out.length} results`);
    });
    // warm-up: both paths once
    await drive(single, 1);
    await drive(batch, SIZE);
    const singles: Round[] = [];
    const batches: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      singles.push(await drive(single, 1));
      batches.push(await drive(batch, SIZE));
    }
    const rate = (rs: Round[], k: 'records' | 'requests') => median(rs.map((x) => x[k] / x.seconds));
    const rows = [
      [`single creates`, rate(singles, 'records'), rate(singles, 'requests')],
      [`batches of ${SIZE} creates`, rate(batches, 'records'), rate(batches, 'requests')],
    ] as const;
    console.log(`batch bench: ${ROUNDS} paired rounds of ${DURATION_S} s, ${CONCURRENCY} requests in flight, ${cpus().length} cores, load ${loadavg()[0].toFixed(2)}, ${process.env.SERVICE_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}`);
    console.log('| series | records/s | requests/s |');
    console.log('| --- | --- | --- |');
    for (const [label, rec, req] of rows) console.log(`| ${label} | ${Math.round(rec).toLocaleString('en-US')} | ${Math.round(req).toLocaleString('en-US')} |`);
    console.log(`ratio (records/s, batch / single): ${(rows[1][1] / rows[0][1]).toFixed(2)}`);
  } finally {
    await srv.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
