/**
 * Get by id over the 135,233 cities (bench/lib/cities.ts) with random ids, for working on the
 * cold read (bench/README.md, "Random reads over the cities"). Needs a data directory the cities
 * were loaded into once: `npm run bench:lists -- --data=DIR --rounds=1 --only=nocache`.
 *
 *   npm run build && npx tsx bench/random-reads.ts --data=DIR [--baseline=<other>/dist/cli/main.js]
 *       [--rounds=4] [--seconds=3] [--only=floor,cold,warm] [--cpu-prof]
 *
 * Per round, interleaved (builds alternating A B, B A, …), wrk -t1 -c64 over bench/wrk/random-ids.lua:
 * - `ceiling`: bench/hello-uws.mjs;
 * - `floor`: bench/read-floor.mjs, bare uWebSockets.js running the point read through a prepared
 *   libsql statement and sending the same JSON, over the cold ids;
 * - per build, `cold`: ids svc has not read before (a shuffled list of all cities but the warm
 *   ones, each run a fresh window), so nearly every request misses the record cache and reads;
 * - per build, `warm`: a random one of 5,000 ids a request, all in the record cache after warm-up.
 * Each build serves a copy of the data directory of its own. Every run prints requests/s, the
 * ratio to the round's ceiling and each server's CPU µs per request (user + system, all threads,
 * from /proc, as bench/paired-cpu.ts), then the medians and ranges. Before measuring, the floor's
 * bodies are checked against svc's byte for byte. `--cpu-prof` profiles this build's server
 * (bench/results/profiles-random/) and prints its hottest functions. Linux only.
 */
import { cp, mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { wrkScript } from './lib/scenarios.js';
import { REPO_ROOT, startSvc, type SvcInstance } from './lib/svc.js';
import { freePort, median, runWrk, startProcess, waitForHttp, type WrkOptions } from './lib/wrk.js';
import { cpuTicks, settle } from './lib/rss.js';
import { summariseProfiles } from './lib/profile.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const DATA = arg('data');
const BASELINE = arg('baseline');
const ROUNDS = Number(arg('rounds') ?? 4);
const SECONDS = Number(arg('seconds') ?? 3);
const PROF = argv.includes('--cpu-prof');
/** the series to run besides the ceiling (`--only=floor,cold,warm`; all by default) */
const ONLY = new Set(arg('only')?.split(',') ?? ['floor', 'cold', 'warm']);
const WARM_IDS = 5000;
const PATH = '/api/collections/cities/records/';
if (!DATA) {
  console.error('usage: npx tsx bench/random-reads.ts --data=DIR [--baseline=<other build>/dist/cli/main.js] [--rounds=4] [--seconds=3] [--cpu-prof]');
  process.exit(2);
}

/** Fisher–Yates with a fixed seed (mulberry32), so every run draws the same ids. */
function shuffle<T>(xs: T[], seed = 20): T[] {
  let a = seed;
  const rand = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

interface Side { name: string; svc: SvcInstance; dir: string; walked: number }

const work = await mkdtemp(join(tmpdir(), 'svc-random-reads-'));
const db = new Database(join(DATA, 'data.db'), { readonly: true });
const ids = shuffle((db.prepare('SELECT id FROM cities ORDER BY id').raw(true).all() as string[][]).map((r) => r[0]!));
db.close();
const warmFile = join(work, 'warm.txt');
const coldFile = join(work, 'cold.txt');
await writeFile(warmFile, ids.slice(0, WARM_IDS).join('\n'));
await writeFile(coldFile, ids.slice(WARM_IDS).join('\n'));
const coldCount = ids.length - WARM_IDS;

const profDir = join(REPO_ROOT, 'bench', 'results', 'profiles-random');
if (PROF) {
  await rm(profDir, { recursive: true, force: true });
  await mkdir(profDir, { recursive: true });
}
async function side(name: string, cliPath?: string, prof = false): Promise<Side> {
  const dir = join(work, name.replace(/\W/g, ''));
  await cp(DATA!, dir, { recursive: true });
  const svc = await startSvc({ dataDir: dir, cliPath, env: { SERVICE_RATE_LIMIT_MAX: '0' }, nodeArgs: prof ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [] });
  return { name, svc, dir, walked: 0 };
}

const sides = [...(BASELINE ? [await side('baseline', BASELINE)] : []), await side('this build', undefined, PROF)];
const helloPort = await freePort();
const hello = startProcess('hello-uws', process.execPath, [join(REPO_ROOT, 'bench', 'hello-uws.mjs'), String(helloPort)], { cwd: REPO_ROOT });
const floorPort = await freePort();
const floor = startProcess('read-floor', process.execPath, [join(REPO_ROOT, 'bench', 'read-floor.mjs'), String(floorPort), join(DATA, 'data.db')], { cwd: REPO_ROOT });
const floorUrl = `http://127.0.0.1:${floorPort}`;
/** per series key: requests/s ratios to the ceiling, CPU µs per request */
const ratios = new Map<string, number[]>();
const cpus = new Map<string, number[]>();
const push = (m: Map<string, number[]>, k: string, v: number) => (m.get(k) ?? m.set(k, []).get(k)!).push(v);
try {
  await waitForHttp(`http://127.0.0.1:${helloPort}/`, hello);
  await waitForHttp(`${floorUrl}${PATH}x`, floor);
  // the floor must answer svc's bytes: check a few records (and a missing one) against each build
  for (const s of sides) {
    for (const id of [...ids.slice(0, 3), ...ids.slice(-3), 'missing0000000']) {
      const [a, b] = await Promise.all([fetch(`${s.svc.url}${PATH}${id}`), fetch(`${floorUrl}${PATH}${id}`)]);
      const [ta, tb] = [await a.text(), await b.text()];
      if (a.status !== b.status || ta !== tb || a.headers.get('content-type') !== b.headers.get('content-type')) {
        throw new Error(`floor and ${s.name} differ on ${id}: ${a.status} ${ta} / ${b.status} ${tb}`);
      }
    }
  }
  const pids = [hello.child.pid!, floor.child.pid!, ...sides.map((s) => s.svc.proc.child.pid!)];
  const cold = (base: string, s?: Side): WrkOptions => ({ url: base, script: wrkScript('random-ids.lua'), scriptArgs: [PATH, coldFile, 'walk', String(s?.walked ?? 0)] });
  const warm = (base: string): WrkOptions => ({ url: base, script: wrkScript('random-ids.lua'), scriptArgs: [PATH, warmFile, 'random'] });
  // warm-up: the warm ids into each record cache, the JIT of every server
  for (const s of sides) await runWrk({ ...warm(s.svc.url), durationS: 2 });
  await runWrk({ ...warm(floorUrl), durationS: 1 });
  await runWrk({ url: `http://127.0.0.1:${helloPort}/`, durationS: 1 });
  const measure = async (key: string, pid: number, load: WrkOptions, ceiling: number): Promise<number> => {
    await settle(pids);
    const t = cpuTicks(pid);
    const r = await runWrk({ ...load, durationS: SECONDS });
    const cpu = ((cpuTicks(pid) - t) * 1e4) / r.requests; // ticks of 10 ms → µs
    if (ceiling) push(ratios, key, r.requestsPerSec / ceiling);
    push(cpus, key, cpu);
    return r.requests;
  };
  for (let round = 0; round < ROUNDS; round++) {
    await settle(pids);
    const t = cpuTicks(hello.child.pid!);
    const c = await runWrk({ url: `http://127.0.0.1:${helloPort}/`, durationS: SECONDS });
    const ceiling = c.requestsPerSec;
    push(ratios, 'ceiling', 1);
    push(cpus, 'ceiling', ((cpuTicks(hello.child.pid!) - t) * 1e4) / c.requests);
    if (ONLY.has('floor')) await measure('floor', floor.child.pid!, cold(floorUrl), ceiling);
    for (const k of round % 2 ? [...sides.keys()].reverse() : sides.keys()) {
      const s = sides[k]!;
      if (ONLY.has('cold')) s.walked = (s.walked + (await measure(`${s.name} cold`, s.svc.proc.child.pid!, cold(s.svc.url, s), ceiling))) % coldCount;
      if (ONLY.has('warm')) await measure(`${s.name} warm`, s.svc.proc.child.pid!, warm(s.svc.url), ceiling);
    }
    const line = [`round ${round + 1}: ceiling ${Math.round(ceiling)}/s (cpu ${cpus.get('ceiling')!.at(-1)!.toFixed(1)} µs/req)`];
    for (const [k, v] of ratios) if (k !== 'ceiling') line.push(`${k} ${v.at(-1)!.toFixed(3)} (cpu ${cpus.get(k)!.at(-1)!.toFixed(1)} µs/req)`);
    console.log(line.join(' · '));
  }
  const range = (xs: number[], d: number) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;
  for (const [k, v] of ratios) {
    const cpu = cpus.get(k)!;
    console.log(`${k}: ${median(v).toFixed(3)} × ceiling (${range(v, 3)}), cpu ${median(cpu).toFixed(1)} µs/req (${range(cpu, 1)}); medians of ${v.length}`);
  }
  if (sides.length === 2) {
    for (const series of ['cold', 'warm'].filter((k) => ONLY.has(k))) {
      const a = cpus.get(`baseline ${series}`)!;
      const b = cpus.get(`this build ${series}`)!;
      const r = b.map((v, i) => v / a[i]!);
      console.log(`${series}, cpu this ÷ baseline per round: ${r.map((x) => x.toFixed(3)).join(' ')}; median ${median(r).toFixed(3)}`);
    }
  }
} finally {
  await floor.stop();
  await hello.stop();
  for (const s of sides) await s.svc.stop();
  await rm(work, { recursive: true, force: true });
}
if (PROF) {
  const files = (await readdir(profDir)).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) console.log('no profile written');
  for (const p of summariseProfiles(profDir, REPO_ROOT, 30)) console.log(JSON.stringify(p, null, 1));
}
