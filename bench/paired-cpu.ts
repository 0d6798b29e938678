/**
 * Server CPU time per request of two builds, for costs too small for throughput to show on a
 * shared, noisy machine (bench/README.md, "Metrics"):
 *
 *   npx tsx bench/paired-cpu.ts --baseline=/path/to/other/dist/cli/main.js [--series=read|create] [--rounds=6] [--seconds=3]
 *
 * Starts the baseline build and this build (dist/) side by side, each seeded with 1,000 posts,
 * and loads them in alternating rounds, A B B A …, with one of two series:
 * - `read` (the default): `GET /api/collections/posts/records/:id` (a record-cache hit), wrk -c16;
 * - `create`: `POST /api/collections/posts/records` as a signed-in user with
 *   bench/wrk/create-post.lua, wrk -t1 -c64 (the paired bench's create series).
 * Each run's figures are the server process's CPU time (user + system, all its threads, from
 * /proc/<pid>/stat) and its main thread's alone (/proc/<pid>/task/<pid>/stat) over the requests
 * wrk completed: unlike requests per second they hardly move when other processes take the
 * cores. Prints every run, the medians and the per-round ratios (this ÷ baseline). Linux only.
 */
import { SvcClient, startSvc, type SvcInstance } from './lib/svc.js';
import { median, runWrk, type WrkOptions } from './lib/wrk.js';
import { cpuTicks, settle } from './lib/rss.js';
import { createPostsCollection, createUsersCollection, postId, seedPosts, seedUsers, userId, userToken } from './lib/seed.js';
import { wrkScript } from './lib/scenarios.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BASELINE = arg('baseline');
const SERIES = arg('series') ?? 'read';
const ROUNDS = Number(arg('rounds') ?? 6);
const SECONDS = Number(arg('seconds') ?? 3);
/** clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux) */
const TICKS_PER_S = 100;
if (!BASELINE || (SERIES !== 'read' && SERIES !== 'create')) {
  console.error('usage: npx tsx bench/paired-cpu.ts --baseline=<other build>/dist/cli/main.js [--series=read|create]');
  process.exit(2);
}

interface Side {
  name: string;
  svc: SvcInstance;
  /** a signed-in user's token (the create series) */
  token: string;
}

async function prepare(name: string, cliPath?: string): Promise<Side> {
  const svc = await startSvc({ cliPath, env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(svc.email, svc.password);
  const users = await createUsersCollection(su);
  await createPostsCollection(su, 'posts', users, 'open');
  await seedUsers(svc.url, su.token, 10);
  await seedPosts(svc.url, su.token, 'posts', 'a', 0, 1000, 10);
  return { name, svc, token: SERIES === 'create' ? await userToken(svc.url, 0) : '' };
}

/** The wrk run of one round on one side. */
function load(side: Side, round: number): WrkOptions {
  if (SERIES === 'read') return { url: `${side.svc.url}/api/collections/posts/records/${postId('a', 500)}`, durationS: SECONDS, connections: 16 };
  return {
    url: `${side.svc.url}/api/collections/posts/records`, durationS: SECONDS, connections: 64, threads: 1, timeoutS: 10,
    headers: { Authorization: `Bearer ${side.token}` }, script: wrkScript('create-post.lua'), scriptArgs: [userId(0), `${side.name.replace(/\W/g, '')}${round}`],
  };
}

const sides = [await prepare('baseline', BASELINE), await prepare('this build')];
/** per side, one entry a round: µs of server CPU per request (all threads, main thread), requests/s */
const perRequest = sides.map(() => [] as number[]);
const mainPerRequest = sides.map(() => [] as number[]);
const rates = sides.map(() => [] as number[]);
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 ? [1, 0] : [0, 1]) {
      const pid = sides[k].svc.proc.child.pid!;
      const mainTask = `${pid}/task/${pid}`;
      await settle([pid]);
      const before = cpuTicks(pid);
      const mainBefore = cpuTicks(mainTask);
      const res = await runWrk(load(sides[k], r));
      const us = (ticks: number) => ((ticks / TICKS_PER_S) * 1e6) / res.requests;
      perRequest[k].push(us(cpuTicks(pid) - before));
      mainPerRequest[k].push(us(cpuTicks(mainTask) - mainBefore));
      rates[k].push(res.requestsPerSec);
      console.log(`round ${r} ${sides[k].name}: ${perRequest[k].at(-1)!.toFixed(2)} µs/request (main thread ${mainPerRequest[k].at(-1)!.toFixed(2)}), ${Math.round(res.requestsPerSec)} requests/s, ${res.errors} errors`);
    }
  }
} finally {
  for (const s of sides) await s.svc.proc.stop();
}
const range = (xs: number[], d = 3) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;
for (const [k, s] of sides.entries()) {
  console.log(`${s.name}: ${median(perRequest[k]).toFixed(2)} µs of server CPU per request (${range(perRequest[k], 2)}), main thread ${median(mainPerRequest[k]).toFixed(2)} (${range(mainPerRequest[k], 2)}), ${Math.round(median(rates[k]))} requests/s; medians of ${ROUNDS}`);
}
for (const [label, xs] of [['all threads', perRequest], ['main thread', mainPerRequest]] as const) {
  const ratios = xs[1].map((v, i) => v / xs[0][i]);
  console.log(`${label}, this ÷ baseline per round: ${ratios.map((x) => x.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)} (${range(ratios)})`);
}
