/**
 * Server CPU time per request of two builds, for costs too small for throughput to show on a
 * shared, noisy machine (bench/README.md, "Metrics"):
 *
 *   npx tsx bench/paired-cpu.ts --baseline=/path/to/other/dist/cli/main.js [--rounds=6] [--seconds=3]
 *
 * Starts the baseline build and this build (dist/) side by side, each seeded with 1,000 posts,
 * and loads `GET /api/collections/posts/records/:id` (a record-cache hit) with wrk -c16 in
 * alternating rounds, A B B A …. Each run's figure is the server process's CPU time (user +
 * system, all its threads, from /proc/<pid>/stat) over the requests wrk completed: unlike
 * requests per second it hardly moves when other processes take the cores. Prints the medians
 * and the per-round ratios (this ÷ baseline). Linux only.
 */
import { SvcClient, startSvc, type SvcInstance } from './lib/svc.js';
import { median, runWrk } from './lib/wrk.js';
import { cpuTicks, settle } from './lib/rss.js';
import { createPostsCollection, createUsersCollection, postId, seedPosts, seedUsers } from './lib/seed.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BASELINE = arg('baseline');
const ROUNDS = Number(arg('rounds') ?? 6);
const SECONDS = Number(arg('seconds') ?? 3);
/** clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux) */
const TICKS_PER_S = 100;
if (!BASELINE) {
  console.error('usage: npx tsx bench/paired-cpu.ts --baseline=<other build>/dist/cli/main.js');
  process.exit(2);
}

async function prepare(cliPath?: string): Promise<SvcInstance> {
  const svc = await startSvc({ cliPath, env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(svc.email, svc.password);
  const users = await createUsersCollection(su);
  await createPostsCollection(su, 'posts', users, 'open');
  await seedUsers(svc.url, su.token, 10);
  await seedPosts(svc.url, su.token, 'posts', 'a', 0, 1000, 10);
  return svc;
}

const sides = [{ name: 'baseline', svc: await prepare(BASELINE) }, { name: 'this build', svc: await prepare() }];
/** µs of server CPU per request, per side, one entry a round */
const perRequest = sides.map(() => [] as number[]);
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 ? [1, 0] : [0, 1]) {
      const pid = sides[k].svc.proc.child.pid!;
      await settle([pid]);
      const before = cpuTicks(pid);
      const res = await runWrk({ url: `${sides[k].svc.url}/api/collections/posts/records/${postId('a', 500)}`, durationS: SECONDS, connections: 16 });
      perRequest[k].push(((cpuTicks(pid) - before) / TICKS_PER_S) * 1e6 / res.requests);
    }
  }
} finally {
  for (const s of sides) await s.svc.proc.stop();
}
const ratios = perRequest[1].map((v, i) => v / perRequest[0][i]);
for (const [k, s] of sides.entries()) console.log(`${s.name}: ${median(perRequest[k]).toFixed(2)} µs of server CPU per request (median of ${ROUNDS})`);
console.log(`this ÷ baseline per round: ${ratios.map((x) => x.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
