/**
 * The PostgreSQL backend and several svc instances:
 *
 *   npm run build && npm run bench:cluster -- [--rounds=3] [--seconds=3] [--only=lib-vs-pg,realtime,scale]
 *       [--posts=10000] [--users=100] [--events=2000] [--rate=200] [--connections=64]
 *
 * One throw-away PostgreSQL server (test/helpers/postgres.ts) holds one database; instance A (and,
 * for parts 2 and 3, instance B) serve it, each with a data directory of its own. A libsql
 * instance L is seeded identically through the REST API (`users`, 10,000 `posts`, `posts_w` for
 * the creates; bench/lib/seed.ts, as bench/run.ts and bench/paired.ts seed).
 *
 * 1. lib-vs-pg: get by id (`@public` view rule; one hot record, so svc answers it from its record
 *    cache), the same with the record cache bypassed (a `fields` projection: every request reads
 *    the row from the database), list 20 with skipTotal and the page cache bypassed
 *    (wrk/distinct-query.lua), and an authenticated create (wrk/create-post.lua), each run on L and
 *    on A back to back in every round (which goes first alternates); the figure is the median over
 *    rounds of (A's requests/s ÷ L's of the same round). PostgreSQL runs durable (its defaults:
 *    fsync and synchronous_commit on), as libsql commits with synchronous=FULL.
 * 2. realtime: a WebSocket client subscribed to `posts_w` on B while posts are created through
 *    A's REST API at a steady rate (`--rate` a second; 0: one after another); latency of a post =
 *    the time its event arrives from B minus the time A's create response (the commit's
 *    acknowledgement) arrived. The baseline subscribes on A itself (one instance). The two modes
 *    alternate per round, `--events` posts per mode in all.
 * 3. scale: the same four scenarios through nginx (test/helpers/nginx.ts) in
 *    front of A and B, against A directly and A alone behind nginx (nginx's own cost), rotated per
 *    round; ratios per round, medians. CPU seconds per request of the svc processes, of the
 *    PostgreSQL server (the postmaster and all its children, reaped ones included) and of nginx
 *    (master and worker), from /proc/<pid>/stat (utime+stime+cutime+cstime) before and after each
 *    wrk run.
 * 4. A projection from the CPU per request of svc and of PostgreSQL measured on one PG-backed
 *    instance served directly (parts 1 and 3), printed with its assumptions.
 *
 * Prints tables and writes bench/results/cluster.json. The servers run from a private copy of
 * dist (other work may rebuild dist meanwhile), or of `--dist=DIR` (another build's, for a before/after). Every process started here (svc, PostgreSQL,
 * nginx; wrk runs end with their duration) is stopped at the end, on errors and on SIGINT/SIGTERM.
 * Not part of `npm run bench`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import WebSocket from 'ws';
import pg from 'pg';
import { BENCH_EMAIL, BENCH_PASSWORD, CLI_PATH, REPO_ROOT, SvcClient, runCli, startSvc, svcBuilt, type SvcInstance } from './lib/svc.js';
import { median, runWrk, wrkAvailable, wrkVersion, type WrkOptions, type WrkResult } from './lib/wrk.js';
import { settle } from './lib/rss.js';
import { wrkScript } from './lib/scenarios.js';
import { createPostsCollection, createUsersCollection, description, postId, seedPosts, seedUsers, userId, userToken, TAGS } from './lib/seed.js';
import { SvcClient as FastClient } from '../examples/cities/client.js';
import { postgresSkipReason, startPostgres, type Postgres } from '../test/helpers/postgres.js';
import { nginxSkipReason, startNginx, type Nginx } from '../test/helpers/nginx.js';

// ---------------------------------------------------------------- arguments

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const usage = (problem: string): never => {
  console.error(`bench:cluster: ${problem}\nusage: npx tsx bench/cluster.ts [--rounds=3] [--seconds=3] [--only=lib-vs-pg,realtime,scale] [--posts=10000] [--users=100] [--events=2000] [--rate=200] [--connections=64] [--dist=DIR]`);
  process.exit(2);
};
const num = (name: string, dflt: number): number => {
  const v = Number(arg(name) ?? dflt);
  return Number.isFinite(v) && v >= 0 ? v : usage(`--${name} must be a number >= 0`);
};
const PARTS = ['lib-vs-pg', 'realtime', 'scale'] as const;
type Part = (typeof PARTS)[number];
const ROUNDS = Math.max(1, Math.floor(num('rounds', 3)));
const SECONDS = Math.max(1, num('seconds', 3));
const USERS = Math.max(2, Math.floor(num('users', 100)));
const POSTS = Math.max(20, Math.floor(num('posts', 10_000)));
const EVENTS = Math.max(1, Math.floor(num('events', 2000)));
const RATE = num('rate', 200);
const CONNECTIONS = Math.max(1, Math.floor(num('connections', 64)));
const ONLY = (arg('only')?.split(',').filter(Boolean) ?? [...PARTS]) as Part[];
for (const p of ONLY) if (!PARTS.includes(p)) usage(`--only: unknown part ${p} (parts: ${PARTS.join(', ')})`);
/** the signed-in user of the creates (bench/run.ts uses user 1 too) */
const USER_INDEX = 1;
const SCENARIOS = ['get', 'get-db', 'list', 'create'] as const;
type ScenarioKey = (typeof SCENARIOS)[number];
const SCENARIO_LABEL: Record<ScenarioKey, string> = {
  get: 'get by id, @public',
  'get-db': 'get by id, record cache bypassed',
  list: 'list 20, skipTotal, page cache bypassed',
  create: 'create, auth rule',
};

const log = (m: string): void => void process.stderr.write(`bench:cluster: ${m}\n`);
const now = (): number => performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- cleanup of everything started

const cleanups: Array<{ name: string; fn: () => Promise<unknown> }> = [];
let cleaning: Promise<void> | null = null;
let cleaned = false;
/** The signal that interrupted the run, if one did: every later step refuses to start (alive()). */
let interrupted: string | null = null;
/** Throws once the run was interrupted, so that nothing new starts after the cleanup. */
function alive(): void {
  if (interrupted) throw new Error(`interrupted by ${interrupted}`);
}
/**
 * Registers a stop/remove step; steps run last-registered first (servers before the database).
 * A step registered after the cleanup ran (something that was starting meanwhile) runs at once.
 */
function onCleanup(name: string, fn: () => Promise<unknown>): void {
  if (cleaned) {
    void fn().catch((err) => log(`cleanup of ${name} failed: ${err instanceof Error ? err.message : String(err)}`));
    return;
  }
  cleanups.push({ name, fn });
}
function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const c = cleanups.pop()!;
      try {
        await c.fn();
      } catch (err) {
        log(`cleanup of ${c.name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    cleaned = true;
  })();
  return cleaning;
}
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(sig, () => {
    log(`${sig}: stopping everything started`);
    interrupted = sig;
    process.exitCode = code;
    // the run then fails at its next step and writes what it has; exit regardless after 15 s
    void cleanupAll().finally(() => setTimeout(() => process.exit(code), 15_000).unref());
  });
}

// ---------------------------------------------------------------- CPU time from /proc

const CLK_TCK = ((): number => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const v = Number(r.stdout?.trim());
  return Number.isFinite(v) && v > 0 ? v : 100;
})();

interface ProcInfo {
  ppid: number;
  comm: string;
  /** utime + stime + cutime + cstime (clock ticks): the process's CPU and that of its reaped children */
  ticks: number;
}

/** Every process of /proc: parent, name, CPU ticks. */
function procTable(): Map<number, ProcInfo> {
  const out = new Map<number, ProcInfo>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    out.set(Number(name), { ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
  }
  return out;
}

/** CPU ticks of `root` and all its descendants in `table` (0 when `root` is gone). */
function subtreeTicks(table: Map<number, ProcInfo>, root: number): number {
  const children = new Map<number, number[]>();
  for (const [pid, p] of table) {
    const list = children.get(p.ppid);
    if (list) list.push(pid);
    else children.set(p.ppid, [pid]);
  }
  let sum = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    const p = table.get(pid);
    if (!p) continue;
    sum += p.ticks;
    stack.push(...(children.get(pid) ?? []));
  }
  return sum;
}

/** Named groups of process trees whose CPU a run measures, e.g. `{ svcA: [pid], pg: [postmaster] }`. */
type Groups = Record<string, number[]>;
const groupTicks = (groups: Groups): Record<string, number> => {
  const table = procTable();
  return Object.fromEntries(Object.entries(groups).map(([k, roots]) => [k, roots.reduce((s, r) => s + subtreeTicks(table, r), 0)]));
};

/** Children of this process named `comm` (to tell which nginx master a startNginx call made). */
const childrenNamed = (comm: string): number[] => [...procTable()].filter(([, p]) => p.ppid === process.pid && p.comm === comm).map(([pid]) => pid);

/** The postmaster's pid (first line of <data>/postmaster.pid). */
function postmasterPid(pgs: Postgres): number {
  const pid = Number(readFileSync(join(pgs.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('no postmaster pid');
  return pid;
}

/** One wrk run with the CPU each group used meanwhile, as µs per completed request. */
interface Run {
  rps: number;
  requests: number;
  p99Ms: number;
  errors: number;
  /** CPU µs per request, per group */
  cpuUs: Record<string, number>;
}

async function measuredRun(load: WrkOptions, groups: Groups): Promise<Run> {
  alive();
  const before = groupTicks(groups);
  const r: WrkResult = await runWrk({ connections: CONNECTIONS, durationS: SECONDS, ...load });
  const after = groupTicks(groups);
  const cpuUs: Record<string, number> = {};
  for (const k of Object.keys(groups)) cpuUs[k] = r.requests > 0 ? (((after[k]! - before[k]!) / CLK_TCK) * 1e6) / r.requests : NaN;
  return { rps: r.requestsPerSec, requests: r.requests, p99Ms: r.latencyP99Ms, errors: r.errors, cpuUs };
}

// ---------------------------------------------------------------- formatting

const fmt = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : '–');
const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '–');
const med = (xs: number[]): number => {
  const ok = xs.filter(Number.isFinite);
  return ok.length ? median(ok) : NaN;
};
const range = (xs: number[], digits = 2): string => (xs.length ? `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}` : '–');

/** A plain-text table with aligned columns (numbers right-aligned). */
function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = (s: string): boolean => /^[-–+]?[\d,.]+( ?[×%µa-z/]*)?$/.test(s) || s === '–';
  const line = (cells: string[]): string => cells.map((c, i) => (i > 0 && numeric(c) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const latencySummary = (xs: number[]): { n: number; p50: number; p99: number; max: number } => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
};

// ---------------------------------------------------------------- servers and data

interface Target {
  name: string;
  /** base URL of what wrk talks to */
  url: string;
  /** the user token of the creates (valid on every instance of one database) */
  token: string;
  groups: Groups;
}

/** The wrk load of a scenario against `t`; `tag` makes create bodies and list query strings unique per run. */
function load(key: ScenarioKey, t: Target, tag: string): WrkOptions {
  const records = (c: string): string => `${t.url}/api/collections/${c}/records`;
  switch (key) {
    case 'get':
      return { url: `${records('posts')}/${postId('a', Math.floor(POSTS / 2))}` };
    case 'get-db':
      // a fields projection is never answered from the record cache (src/cache/record-cache.ts):
      // every request reads the row from the database
      return { url: `${records('posts')}/${postId('a', Math.floor(POSTS / 3))}?fields=id,title,description,public,tags,author` };
    case 'list':
      // distinct-query.lua appends &run=<n> counting from 1 in every wrk process: the tag keeps
      // the query strings of one run from repeating those of an earlier run
      return { url: `${records('posts')}?page=1&perPage=20&skipTotal=1&tag=${tag}`, script: wrkScript('distinct-query.lua') };
    case 'create':
      return {
        url: records('posts_w'), headers: { Authorization: `Bearer ${t.token}` }, timeoutS: 10,
        script: wrkScript('create-post.lua'), scriptArgs: [userId(USER_INDEX), tag],
      };
  }
}

/** One second of each load, before the measured rounds. */
async function warmUp(targets: Target[]): Promise<void> {
  for (const t of targets) {
    for (const k of SCENARIOS) {
      alive();
      await runWrk({ ...load(k, t, `w${t.name}`), connections: CONNECTIONS, durationS: 1 });
    }
  }
}

/** Seeds a database through an instance; resolves with the user token of the creates. */
async function seed(svc: SvcInstance, what: string): Promise<string> {
  alive();
  const t0 = now();
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(BENCH_EMAIL, BENCH_PASSWORD);
  const usersId = await createUsersCollection(su);
  await createPostsCollection(su, 'posts', usersId, 'open');
  await createPostsCollection(su, 'posts_w', usersId, 'open');
  await seedUsers(svc.url, su.token, USERS);
  const rate = await seedPosts(svc.url, su.token, 'posts', 'a', 0, POSTS, USERS);
  log(`seeded ${what}: ${USERS} users, ${POSTS} posts (${int(rate)} posts/s), ${fmt((now() - t0) / 1000)} s`);
  return userToken(svc.url, USER_INDEX);
}

// ---------------------------------------------------------------- realtime

interface Subscriber {
  /** arrival time (performance.now()) of each created record's event, by record id */
  arrivals: Map<string, number>;
  close(): void;
}

/** A WebSocket client on `baseUrl`'s /api/realtime subscribed to `topic`, collecting create events. */
async function subscribe(baseUrl: string, topic: string): Promise<Subscriber> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/api/realtime`, { perMessageDeflate: false });
  const arrivals = new Map<string, number>();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`realtime subscribe on ${baseUrl}: no ack within 10 s`)), 10_000);
    ws.on('message', (d: Buffer) => {
      const t = now();
      const msg = JSON.parse(d.toString()) as { type?: string; action?: string; record?: { id?: string }; error?: unknown };
      if (msg.type === 'connect') ws.send(JSON.stringify({ action: 'subscribe', topic }));
      else if (msg.type === 'ack') {
        clearTimeout(timer);
        if (msg.error) reject(new Error(`subscribe refused: ${JSON.stringify(msg)}`));
        else resolve();
      } else if (msg.type === 'event' && msg.action === 'create' && msg.record?.id) arrivals.set(msg.record.id, t);
      else if (msg.type === 'error') reject(new Error(`realtime error: ${JSON.stringify(msg)}`));
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
  return { arrivals, close: () => ws.terminate() };
}

interface RealtimeRun {
  /** event arrival − the create's response arrival, ms */
  fromAck: number[];
  /** event arrival − the create's request sent, ms */
  fromSend: number[];
  created: number;
  failed: number;
  missing: number;
  seconds: number;
}

let rtSeq = 0;

/** Creates `n` posts through `writer` (at RATE a second, or one after another) while subscribed on `reader`. */
async function realtimeRun(writer: SvcInstance, reader: SvcInstance, token: string, n: number): Promise<RealtimeRun> {
  alive();
  const sub = await subscribe(reader.url, 'posts_w');
  const client = new FastClient(writer.url, 16);
  client.token = token;
  const acks = new Map<string, { sent: number; acked: number }>();
  let failed = 0;
  const createOne = async (): Promise<void> => {
    const i = rtSeq++;
    const body = { title: `realtime ${i}`, description: description(i), public: true, tags: [TAGS[i % 4], TAGS[(i + 1) % 4]], author: userId(USER_INDEX) };
    const sent = now();
    try {
      const r = await client.request<{ id: string }>('POST', '/api/collections/posts_w/records', body);
      acks.set(r.id, { sent, acked: now() });
    } catch {
      failed++;
    }
  };
  const t0 = now();
  try {
    if (RATE > 0) {
      const inflight: Array<Promise<void>> = [];
      let issued = 0;
      while (issued < n) {
        alive();
        const due = Math.min(n, Math.floor(((now() - t0) / 1000) * RATE) + 1);
        while (issued < due) {
          inflight.push(createOne());
          issued++;
        }
        await sleep(2);
      }
      await Promise.all(inflight);
    } else {
      for (let k = 0; k < n; k++) {
        alive();
        await createOne();
      }
    }
    const seconds = (now() - t0) / 1000;
    // the last events: at most 5 s more
    for (let w = 0; w < 500 && [...acks.keys()].some((id) => !sub.arrivals.has(id)); w++) await sleep(10);
    const fromAck: number[] = [];
    const fromSend: number[] = [];
    let missing = 0;
    for (const [id, a] of acks) {
      const t = sub.arrivals.get(id);
      if (t === undefined) {
        missing++;
        continue;
      }
      fromAck.push(t - a.acked);
      fromSend.push(t - a.sent);
    }
    return { fromAck, fromSend, created: acks.size, failed, missing, seconds };
  } finally {
    sub.close();
    client.close();
  }
}

// ---------------------------------------------------------------- main

interface Result {
  started: string;
  finished?: string;
  machine: { cpus: number; model: string; loadavgStart: number[]; loadavgEnd?: number[] };
  node: string;
  wrk?: string;
  postgres?: { version: string; settings: string };
  args: Record<string, unknown>;
  skipped: Record<string, string>;
  notes: string[];
  libVsPg?: unknown;
  realtime?: unknown;
  scale?: unknown;
  projection?: unknown;
  error?: string;
}

/** CPU µs per request of svc and PostgreSQL on one PG-backed instance served directly (parts 1 and 3). */
const directSamples = Object.fromEntries(SCENARIOS.map((k) => [k, { svc: [] as number[], pg: [] as number[] }])) as Record<ScenarioKey, { svc: number[]; pg: number[] }>;

async function main(result: Result): Promise<void> {
  if (!svcBuilt()) throw new Error(`${CLI_PATH} is missing: run \`npm run build\` first`);
  const pgReason = postgresSkipReason();
  const wrkReason = wrkAvailable() ? null : 'wrk is not installed: run `bash ci/install-apt.sh wrk wrk`';
  const nginxReason = nginxSkipReason();
  const parts = new Set<Part>();
  for (const p of ONLY) {
    const reason = pgReason ?? (p !== 'realtime' ? wrkReason : null) ?? (p === 'scale' ? nginxReason : null);
    if (reason) {
      result.skipped[p] = reason;
      console.log(`skipped ${p}: ${reason}`);
    } else parts.add(p);
  }
  if (parts.size === 0) return;
  if (!wrkReason) result.wrk = wrkVersion();

  // the servers run from a private copy of dist (inside the repository, so packages resolve)
  await mkdir(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  const distCopy = await mkdtemp(join(REPO_ROOT, 'bench', 'results', 'dist-cluster-'));
  onCleanup('the copy of dist', () => rm(distCopy, { recursive: true, force: true }));
  // --dist: another build's dist (a before/after pair: run once with each)
  await cp(arg('dist') ?? join(REPO_ROOT, 'dist'), distCopy, { recursive: true });
  const cliPath = join(distCopy, 'cli', 'main.js');
  const env = { SERVICE_RATE_LIMIT_MAX: '0' };

  alive();
  // durable commits (fsync on), as libsql's are
  const pgs = await startPostgres({ durable: true });
  onCleanup('PostgreSQL', () => pgs.stop());
  const postmaster = postmasterPid(pgs);
  const dbUrl = await pgs.createDatabase('svc_bench');
  {
    const c = new pg.Client({ connectionString: pgs.url });
    await c.connect();
    const v = await c.query<{ v: string; f: string; s: string }>(`SELECT version() AS v, current_setting('fsync') AS f, current_setting('synchronous_commit') AS s`);
    await c.end();
    result.postgres = { version: v.rows[0]!.v, settings: `fsync=${v.rows[0]!.f}, synchronous_commit=${v.rows[0]!.s}` };
    log(`PostgreSQL: ${v.rows[0]!.v.split(',')[0]} (${result.postgres.settings})`);
  }
  result.notes.push(
    `PostgreSQL runs durable (${result.postgres!.settings}), as libsql commits with synchronous=FULL.`,
  );

  // the superuser once, in the shared database, by the CLI; instances get their own data directory
  const pgEnv = { ...env, SERVICE_DATABASE_URL: dbUrl };
  await runCli(['superuser', 'upsert', `--email=${BENCH_EMAIL}`, `--password=${BENCH_PASSWORD}`], { ...process.env, SERVICE_DATABASE_URL: dbUrl }, cliPath);
  const pgInstance = async (name: string): Promise<SvcInstance> => {
    alive();
    const dataDir = await mkdtemp(join(tmpdir(), `svc-bench-cluster-${name}-`));
    onCleanup(`data directory of ${name}`, () => rm(dataDir, { recursive: true, force: true }));
    const svc = await startSvc({ dataDir, cliPath, env: pgEnv });
    onCleanup(`svc ${name}`, () => svc.stop());
    return svc;
  };
  const A = await pgInstance('A');
  const pidA = A.proc.child.pid!;
  const token = await seed(A, 'PostgreSQL (through A)');

  // ------------------------------------------------------------ 1. libsql vs PostgreSQL
  if (parts.has('lib-vs-pg')) {
    console.log(`\n== 1. libsql vs PostgreSQL: one instance each, wrk -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s, interleaved ==`);
    alive();
    const L = await startSvc({ cliPath, env });
    onCleanup('svc L (libsql)', () => L.stop());
    const pidL = L.proc.child.pid!;
    const lToken = await seed(L, 'libsql (L)');
    const lib: Target = { name: 'libsql', url: L.url, token: lToken, groups: { svc: [pidL] } };
    const pgT: Target = { name: 'pg', url: A.url, token, groups: { svc: [pidA], pg: [postmaster] } };
    const pids = [pidL, pidA, postmaster];
    await warmUp([lib, pgT]);
    const runs: Array<{ round: number; scenario: ScenarioKey; side: string } & Run> = [];
    const ratios = Object.fromEntries(SCENARIOS.map((k) => [k, [] as number[]])) as Record<ScenarioKey, number[]>;
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [lib, pgT] : [pgT, lib];
      const line: string[] = [`round ${round + 1}`];
      for (const k of SCENARIOS) {
        const got: Record<string, Run> = {};
        for (const t of order) {
          await settle(pids);
          got[t.name] = await measuredRun(load(k, t, `r${round}${t.name}`), t.groups);
          runs.push({ round: round + 1, scenario: k, side: t.name, ...got[t.name]! });
        }
        ratios[k].push(got.pg!.rps / got.libsql!.rps);
        directSamples[k].svc.push(got.pg!.cpuUs.svc!);
        directSamples[k].pg.push(got.pg!.cpuUs.pg!);
        line.push(`${k}: libsql ${int(got.libsql!.rps)}, pg ${int(got.pg!.rps)} (${fmt(got.pg!.rps / got.libsql!.rps, 3)})`);
      }
      log(line.join(' · '));
    }
    const rows = SCENARIOS.map((k) => {
      const sel = (side: string) => runs.filter((r) => r.scenario === k && r.side === side);
      const l = sel('libsql');
      const p = sel('pg');
      return {
        scenario: k,
        libsqlRps: med(l.map((r) => r.rps)),
        pgRps: med(p.map((r) => r.rps)),
        pgOverLibsql: med(ratios[k]),
        ratioRange: [Math.min(...ratios[k]), Math.max(...ratios[k])],
        cpuUsPerRequest: {
          libsqlSvc: med(l.map((r) => r.cpuUs.svc!)),
          pgSvc: med(p.map((r) => r.cpuUs.svc!)),
          pgServer: med(p.map((r) => r.cpuUs.pg!)),
        },
        errors: { libsql: l.reduce((s, r) => s + r.errors, 0), pg: p.reduce((s, r) => s + r.errors, 0) },
      };
    });
    console.log(table(
      ['scenario', 'libsql req/s', 'PG req/s', 'PG ÷ libsql', 'range', 'CPU µs/req libsql svc', 'PG: svc', 'PG: postgres', 'errors l/pg'],
      rows.map((r) => [SCENARIO_LABEL[r.scenario], int(r.libsqlRps), int(r.pgRps), fmt(r.pgOverLibsql, 3), range(ratios[r.scenario]), fmt(r.cpuUsPerRequest.libsqlSvc), fmt(r.cpuUsPerRequest.pgSvc), fmt(r.cpuUsPerRequest.pgServer), `${r.errors.libsql}/${r.errors.pg}`]),
    ));
    console.log('req/s: medians over rounds; PG ÷ libsql: median of the per-round ratios. CPU µs/req: svc process (all threads) and the PostgreSQL server (all its processes).');
    console.log(`note: ${result.notes[0]}`);
    result.libVsPg = { rows, runs };
    await L.stop(); // frees its memory for the rest (its data directory goes with it)
  }

  // B joins for parts 2 and 3
  const needB = parts.has('realtime') || parts.has('scale');
  const B = needB ? await pgInstance('B') : null;
  const pidB = B?.proc.child.pid;

  // ------------------------------------------------------------ 2. realtime across instances
  if (parts.has('realtime') && B) {
    const perRound = Math.max(1, Math.ceil(EVENTS / ROUNDS));
    console.log(`\n== 2. realtime: create on A, event on B (and on A alone); ${perRound * ROUNDS} creates per mode, ${RATE > 0 ? `${RATE}/s` : 'one after another'} ==`);
    const modes = [
      { key: 'cross', label: 'create on A → subscriber on B', writer: A, reader: B },
      { key: 'same', label: 'create on A → subscriber on A (one instance)', writer: A, reader: A },
    ];
    const all: Record<string, { fromAck: number[]; fromSend: number[]; created: number; failed: number; missing: number; p50PerRound: number[] }> = {};
    for (const m of modes) all[m.key] = { fromAck: [], fromSend: [], created: 0, failed: 0, missing: 0, p50PerRound: [] };
    const p50Ratio: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? modes : [...modes].reverse();
      const p50: Record<string, number> = {};
      for (const m of order) {
        await settle([pidA, pidB!, postmaster]);
        const r = await realtimeRun(m.writer, m.reader, token, perRound);
        const acc = all[m.key]!;
        acc.fromAck.push(...r.fromAck);
        acc.fromSend.push(...r.fromSend);
        acc.created += r.created;
        acc.failed += r.failed;
        acc.missing += r.missing;
        p50[m.key] = latencySummary(r.fromAck).p50;
        acc.p50PerRound.push(p50[m.key]!);
        log(`round ${round + 1} ${m.key}: ${r.created} creates in ${fmt(r.seconds)} s, ack→event p50 ${fmt(p50[m.key]!, 2)} ms, missing ${r.missing}, failed ${r.failed}`);
      }
      p50Ratio.push(p50.cross! / p50.same!);
    }
    const rows = modes.map((m) => {
      const acc = all[m.key]!;
      return { mode: m.key, label: m.label, fromAck: latencySummary(acc.fromAck), fromSend: latencySummary(acc.fromSend), created: acc.created, failed: acc.failed, missing: acc.missing, p50PerRound: acc.p50PerRound };
    });
    console.log(table(
      ['mode', 'events', 'ack→event p50 ms', 'p99', 'max', 'send→event p50', 'p99', 'missing', 'failed'],
      rows.map((r) => [r.label, String(r.fromAck.n), fmt(r.fromAck.p50, 2), fmt(r.fromAck.p99, 2), fmt(r.fromAck.max, 2), fmt(r.fromSend.p50, 2), fmt(r.fromSend.p99, 2), String(r.missing), String(r.failed)]),
    ));
    console.log(`cross ÷ one instance, ack→event p50: median of per-round ratios ${fmt(med(p50Ratio), 2)} (range ${range(p50Ratio)})`);
    console.log('ack→event: the event frame read by the subscriber minus the create response read by the client (same process, same clock); negative when the event came first.');
    result.realtime = { rate: RATE, eventsPerMode: perRound * ROUNDS, rows, crossOverSameP50: { median: med(p50Ratio), perRound: p50Ratio } };
  }

  // ------------------------------------------------------------ 3. two instances vs one
  if (parts.has('scale') && B) {
    console.log(`\n== 3. two instances behind nginx vs one: wrk -c${CONNECTIONS}, ${ROUNDS} rounds of ${SECONDS} s, rotated ==`);
    const hostOf = (s: SvcInstance): string => new URL(s.url).host;
    const lbStart = async (name: string, upstreams: SvcInstance[]): Promise<{ lb: Nginx; pid: number }> => {
      alive();
      const before = new Set(childrenNamed('nginx'));
      const lb = await startNginx(upstreams.map(hostOf));
      onCleanup(`nginx ${name}`, () => lb.stop());
      const pid = childrenNamed('nginx').find((p) => !before.has(p));
      if (!pid) throw new Error(`cannot find the nginx master of ${name}`);
      return { lb, pid };
    };
    const one = await lbStart('→ A', [A]);
    const two = await lbStart('→ A, B', [A, B]);
    const svcGroups = { svcA: [pidA], svcB: [pidB!], pg: [postmaster] };
    const configs: Target[] = [
      { name: 'direct', url: A.url, token, groups: { ...svcGroups } },
      { name: 'nginx1', url: one.lb.url, token, groups: { ...svcGroups, nginx: [one.pid] } },
      { name: 'nginx2', url: two.lb.url, token, groups: { ...svcGroups, nginx: [two.pid] } },
    ];
    const CONFIG_LABEL: Record<string, string> = { direct: 'A directly', nginx1: 'nginx → A', nginx2: 'nginx → A, B' };
    const pids = [pidA, pidB!, postmaster, one.pid, two.pid];
    await warmUp(configs);
    const runs: Array<{ round: number; scenario: ScenarioKey; config: string } & Run> = [];
    type Ratios = { twoOverOne: number[]; nginxOverDirect: number[]; twoOverDirect: number[] };
    const ratios = Object.fromEntries(SCENARIOS.map((k) => [k, { twoOverOne: [], nginxOverDirect: [], twoOverDirect: [] } as Ratios])) as Record<ScenarioKey, Ratios>;
    for (let round = 0; round < ROUNDS; round++) {
      const order = configs.map((_, i) => configs[(i + round) % configs.length]!);
      const line = [`round ${round + 1}`];
      for (const k of SCENARIOS) {
        const got: Record<string, Run> = {};
        for (const c of order) {
          await settle(pids);
          got[c.name] = await measuredRun(load(k, c, `s${round}${c.name}`), c.groups);
          runs.push({ round: round + 1, scenario: k, config: c.name, ...got[c.name]! });
        }
        ratios[k].twoOverOne.push(got.nginx2!.rps / got.nginx1!.rps);
        ratios[k].nginxOverDirect.push(got.nginx1!.rps / got.direct!.rps);
        ratios[k].twoOverDirect.push(got.nginx2!.rps / got.direct!.rps);
        directSamples[k].svc.push(got.direct!.cpuUs.svcA!);
        directSamples[k].pg.push(got.direct!.cpuUs.pg!);
        line.push(`${k}: ${configs.map((c) => `${c.name} ${int(got[c.name]!.rps)}`).join(', ')}`);
      }
      log(line.join(' · '));
    }
    const rows = SCENARIOS.flatMap((k) => configs.map((c) => {
      const sel = runs.filter((r) => r.scenario === k && r.config === c.name);
      const cpu = (g: string): number => med(sel.map((r) => r.cpuUs[g] ?? NaN));
      return {
        scenario: k, config: c.name, rps: med(sel.map((r) => r.rps)), p99Ms: med(sel.map((r) => r.p99Ms)), errors: sel.reduce((s, r) => s + r.errors, 0),
        cpuUsPerRequest: { svcA: cpu('svcA'), svcB: cpu('svcB'), svc: med(sel.map((r) => r.cpuUs.svcA! + r.cpuUs.svcB!)), pg: cpu('pg'), nginx: c.groups.nginx ? cpu('nginx') : 0 },
      };
    }));
    console.log(table(
      ['scenario', 'served by', 'req/s', 'p99 ms', 'CPU µs/req svc A+B', '(A / B)', 'postgres', 'nginx', 'errors'],
      rows.map((r) => [SCENARIO_LABEL[r.scenario], CONFIG_LABEL[r.config]!, int(r.rps), fmt(r.p99Ms, 2), fmt(r.cpuUsPerRequest.svc), `${fmt(r.cpuUsPerRequest.svcA)} / ${fmt(r.cpuUsPerRequest.svcB)}`, fmt(r.cpuUsPerRequest.pg), r.config === 'direct' ? '–' : fmt(r.cpuUsPerRequest.nginx), String(r.errors)]),
    ));
    const ratioRows = SCENARIOS.map((k) => ({ scenario: k, twoOverOneBehindNginx: med(ratios[k].twoOverOne), nginxOverDirect: med(ratios[k].nginxOverDirect), twoOverDirect: med(ratios[k].twoOverDirect), perRound: ratios[k] }));
    console.log('');
    console.log(table(
      ['scenario', 'two ÷ one (both via nginx)', 'range', 'nginx → A ÷ A directly', 'range', 'two via nginx ÷ A directly'],
      ratioRows.map((r) => [SCENARIO_LABEL[r.scenario], fmt(r.twoOverOneBehindNginx, 3), range(r.perRound.twoOverOne), fmt(r.nginxOverDirect, 3), range(r.perRound.nginxOverDirect), fmt(r.twoOverDirect, 3)]),
    ));
    console.log(`ratios: medians of per-round ratios. B runs throughout (in the one-instance rows it only hears A's commits over the cluster feed). wrk, nginx, both svc and PostgreSQL share this machine's ${cpus().length} cores, so a throughput ratio shows contention as much as scaling; the CPU per request is the portable figure.`);
    result.scale = { rows, ratios: ratioRows, runs };
  }

  // ------------------------------------------------------------ 4. projection
  /** below this PostgreSQL did no measurable work for the request (answered from svc's caches) */
  const PG_NONE_US = 0.5;
  const proj = SCENARIOS.filter((k) => directSamples[k].svc.length > 0).map((k) => {
    const s = med(directSamples[k].svc);
    const measuredPg = med(directSamples[k].pg);
    const pgNone = !(measuredPg >= PG_NONE_US);
    const p = pgNone ? 0 : measuredPg;
    const cores = [8, 32].map((n) => ({
      cores: n,
      // one machine of n cores, split between svc instances and PostgreSQL in the measured ratio
      split: { svcCores: (n * s) / (s + p), pgCores: (n * p) / (s + p), requestsPerSec: (n * 1e6) / (s + p) },
      // PostgreSQL alone on n cores, svc instances on as many other cores as they need
      pgOwnCores: pgNone ? null : { requestsPerSec: (n * 1e6) / p, svcCoresNeeded: (n * s) / p },
    }));
    const bottleneck = pgNone ? 'svc' : s >= p ? 'svc' : 'PostgreSQL';
    return { scenario: k, svcUsPerRequest: s, pgUsPerRequest: measuredPg, pgNone, samples: directSamples[k].svc.length, bottleneck, cores };
  });
  if (proj.length > 0) {
    const assumptions = [
      `CPU µs per request: medians of the runs against one PostgreSQL-backed instance served directly (parts 1 and 3), on this machine under wrk -c${CONNECTIONS}, with wrk, nginx and PostgreSQL on the same ${cpus().length} cores;`,
      'svc instances scale linearly (n instances cost n times one; what each instance spends hearing the other instances\' commits is left out); no network cost between clients, svc and PostgreSQL; no load balancer (nginx\'s cost is measured in part 3);',
      'PostgreSQL\'s CPU per request stays constant as the load grows and spreads over its cores (no lock, WAL or single-writer limit; each instance commits through one writer connection in group commits);',
      `PostgreSQL runs durable (${result.postgres!.settings});`,
      '"split": N cores divided between svc instances and PostgreSQL in the measured ratio, so both saturate together; the side that needs more of them is named the bottleneck (more cores for it raise the ceiling most). "PostgreSQL on its own N cores": svc instances on other machines, as many as it takes; PostgreSQL is then the limit.',
    ];
    console.log('\n== 4. projection: throughput ceiling from the CPU per request ==');
    console.log(table(
      ['scenario', 'svc µs/req', 'postgres µs/req', 'N cores', 'split svc : PG cores', 'req/s', 'bottleneck', 'PG on its own N cores: req/s', 'svc cores then'],
      proj.flatMap((r) => r.cores.map((c) => [
        SCENARIO_LABEL[r.scenario], fmt(r.svcUsPerRequest), fmt(r.pgUsPerRequest), String(c.cores), `${fmt(c.split.svcCores)} : ${fmt(c.split.pgCores)}`,
        int(c.split.requestsPerSec), r.bottleneck, c.pgOwnCores ? int(c.pgOwnCores.requestsPerSec) : 'no PG work', c.pgOwnCores ? fmt(c.pgOwnCores.svcCoresNeeded) : '–',
      ])),
    ));
    for (const r of proj) {
      const [c8, c32] = r.cores as [(typeof r.cores)[0], (typeof r.cores)[0]];
      const head = `${SCENARIO_LABEL[r.scenario]}: svc ${fmt(r.svcUsPerRequest)} µs + PostgreSQL ${fmt(r.pgUsPerRequest)} µs a request`;
      if (r.pgNone) {
        console.log(`${head}; PostgreSQL does no measurable work (svc answers from its own caches), so svc instances are the only limit: about ${int(c8.split.requestsPerSec)}/s on 8 cores, ${int(c32.split.requestsPerSec)}/s on 32.`);
      } else {
        console.log(`${head}; 8 cores split ${fmt(c8.split.svcCores)} : ${fmt(c8.split.pgCores)} about ${int(c8.split.requestsPerSec)}/s, 32 cores about ${int(c32.split.requestsPerSec)}/s; ${r.bottleneck} needs the larger share (bottleneck). With PostgreSQL alone on 8 (32) cores it caps at about ${int(c8.pgOwnCores!.requestsPerSec)} (${int(c32.pgOwnCores!.requestsPerSec)})/s, with ${fmt(c8.pgOwnCores!.svcCoresNeeded)} (${fmt(c32.pgOwnCores!.svcCoresNeeded)}) svc cores elsewhere.`);
      }
    }
    console.log('assumptions:');
    for (const a of assumptions) console.log(`- ${a}`);
    result.projection = { rows: proj, assumptions };
  }
}

async function run(): Promise<number> {
  const result: Result = {
    started: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', loadavgStart: loadavg() },
    node: process.version,
    args: { rounds: ROUNDS, seconds: SECONDS, only: ONLY, posts: POSTS, users: USERS, events: EVENTS, rate: RATE, connections: CONNECTIONS, clockTicksPerSecond: CLK_TCK },
    skipped: {},
    notes: [],
  };
  log(`load average at start ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${cpus().length} cores`);
  let code = 0;
  try {
    await main(result);
  } catch (err) {
    code = 1;
    if (interrupted) {
      result.error = `interrupted by ${interrupted}`;
      console.error(`bench:cluster: interrupted by ${interrupted}; results so far are in the JSON`);
    } else {
      result.error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      console.error(err);
    }
  } finally {
    await cleanupAll();
  }
  result.finished = new Date().toISOString();
  result.machine.loadavgEnd = loadavg();
  const file = join(REPO_ROOT, 'bench', 'results', 'cluster.json');
  await mkdir(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(file, `${JSON.stringify(result, null, 1)}\n`);
  console.log(`\nload average ${result.machine.loadavgStart.map((x) => x.toFixed(2)).join(' ')} → ${result.machine.loadavgEnd.map((x) => x.toFixed(2)).join(' ')}; wrote ${file}`);
  return code;
}

run().then((code) => {
  process.exitCode = interrupted ? (interrupted === 'SIGINT' ? 130 : 143) : code;
});
