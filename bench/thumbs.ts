/**
 * Image thumbnail benchmark (docs/files.md, "Thumbnails"): one real svc server, a public
 * collection whose file field lists `100x100` and `400x0`, and RECORDS records each holding its
 * own 1600×1200 JPEG made with sharp. Measures, with sequential requests over one keep-alive
 * connection:
 *
 * 1. the first `?thumb=100x100` of each record (the thumbnail is generated and stored);
 * 2. the same URL again (served from storage), against a plain GET of the original;
 * 3. `/api/health` latency while RECORDS first `?thumb=400x0` requests run at once (the
 *    generation must not block the JavaScript thread; at most two run at a time), against the
 *    same probes for 300 ms before, idle;
 * 4. throughput (requests/s, CONCURRENCY in flight for DURATION seconds) of stored thumbnails
 *    against originals, in alternating rounds (a paired series), medians of ROUNDS.
 *
 *   npm run build && npm run bench:thumbs
 *
 * Options (env): BENCH_RECORDS (20), BENCH_ROUNDS (3), BENCH_DURATION (3), BENCH_CONCURRENCY (8).
 * Figures: bench/README.md, "Thumbnails".
 */
import { loadavg } from 'node:os';
import sharp from 'sharp';
import { startSvc, SvcClient } from './lib/svc.js';
import { median } from './lib/wrk.js';

const num = (v: string | undefined, d: number) => (v ? Number(v) : d);
const RECORDS = num(process.env.BENCH_RECORDS, 20);
const ROUNDS = num(process.env.BENCH_ROUNDS, 3);
const DURATION_S = num(process.env.BENCH_DURATION, 3);
const CONCURRENCY = num(process.env.BENCH_CONCURRENCY, 8);

/** A 1600×1200 JPEG: a gradient with noise (a photo-like size), different per seed. */
async function photo(seed: number): Promise<Buffer> {
  const w = 1600;
  const h = 1200;
  const raw = Buffer.alloc(w * h * 3);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < raw.length; i += 3) {
    x = (x * 1103515245 + 12345) >>> 0;
    const p = i / 3;
    raw[i] = ((p % w) * 255 / w + (x & 31)) & 255;
    raw[i + 1] = ((p / w) * 255 / h + ((x >> 5) & 31)) & 255;
    raw[i + 2] = (seed * 37 + ((x >> 10) & 31)) & 255;
  }
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
}

/** Milliseconds of one GET, the body read whole. */
async function timed(url: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return performance.now() - t;
}

const ms = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${median(s).toFixed(1)} ms, p90 ${s[Math.floor(s.length * 0.9)]!.toFixed(1)} ms`;
};

/** Requests per second of `urls` (round robin), CONCURRENCY in flight for DURATION_S. */
async function throughput(urls: string[]): Promise<number> {
  const until = performance.now() + DURATION_S * 1000;
  let n = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < until) await timed(urls[n++ % urls.length]!);
  }));
  return n / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const srv = await startSvc();
  try {
    const su = new SvcClient(srv.url);
    await su.loginSuperuser(srv.email, srv.password);
    await su.request('POST', '/api/collections', {
      name: 'photos', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public',
      fields: [{ name: 'image', type: 'file', options: { maxSize: 10 * 1024 * 1024, thumbs: ['100x100', '400x0'] } }],
    });
    const files: string[] = [];
    let bytes = 0;
    for (let i = 0; i < RECORDS; i++) {
      const img = await photo(i);
      bytes += img.length;
      const fd = new FormData();
      fd.append('image', new Blob([img]), `photo${i}.jpg`);
      const res = await fetch(`${srv.url}/api/collections/photos/records`, { method: 'POST', body: fd });
      const rec = (await res.json()) as { id: string; image: string };
      files.push(`${srv.url}/api/files/photos/${rec.id}/${rec.image}`);
    }
    console.log(`${RECORDS} JPEGs of 1600×1200, ${(bytes / RECORDS / 1024).toFixed(0)} KiB each on average; load average ${loadavg()[0]!.toFixed(1)}`);

    const first: number[] = [];
    for (const f of files) first.push(await timed(`${f}?thumb=100x100`));
    const again: number[] = [];
    const original: number[] = [];
    for (let r = 0; r < 5; r++) for (const f of files) {
      again.push(await timed(`${f}?thumb=100x100`));
      original.push(await timed(f));
    }
    console.log(`first ?thumb=100x100 (generation): ${ms(first)}`);
    console.log(`later ?thumb=100x100 (stored):     ${ms(again)}`);
    console.log(`original GET:                      ${ms(original)}`);

    // the JavaScript thread stays free while generations run (against the same probes idle)
    const idle: number[] = [];
    for (const until = performance.now() + 300; performance.now() < until;) idle.push(await timed(`${srv.url}/api/health`));
    let done = false;
    const health: number[] = [];
    const probe = (async () => {
      while (!done) health.push(await timed(`${srv.url}/api/health`));
    })();
    const t = performance.now();
    await Promise.all(files.map((f) => timed(`${f}?thumb=400x0`)));
    const wall = performance.now() - t;
    done = true;
    await probe;
    console.log(`${RECORDS} first ?thumb=400x0 at once: ${wall.toFixed(0)} ms wall; /api/health meanwhile: ${ms(health)} (${health.length} probes); idle: ${ms(idle)}`);

    const thumbRps: number[] = [];
    const origRps: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      thumbRps.push(await throughput(files.map((f) => `${f}?thumb=100x100`)));
      origRps.push(await throughput(files));
    }
    console.log(`throughput, ${CONCURRENCY} in flight, median of ${ROUNDS} × ${DURATION_S} s: stored thumbnail ${median(thumbRps.sort((a, b) => a - b)).toFixed(0)} req/s, original ${median(origRps.sort((a, b) => a - b)).toFixed(0)} req/s; load average ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    await srv.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
