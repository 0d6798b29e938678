/**
 * The benchmark suite: `npm run bench` (full, writes bench/RESULTS.md and bench/RESULTS.json) or
 * `npm run bench -- --quick` (10k rows, short runs; writes bench/results/quick.{md,json}).
 *
 * One run: a real svc server on a temp data dir is seeded through its REST API, the bare uWS
 * ceiling and the Fastify reference start beside it, then every scenario (bench/lib/scenarios.ts)
 * is warmed up and measured with wrk, interleaved with its references; then the micro benchmarks,
 * the server's peak RSS, the targets, and a CPU profile of each scenario whose target was missed.
 *
 * Options: --quick, --runs=N, --duration=S, --warmup=S, --connections=N, --users=N, --no-profile
 * (full runs profile missed targets by default), --profile (quick runs do not by default). Needs `npm run build` (done by the prebench script) and wrk (`bash ci/install-apt.sh wrk wrk`).
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { BENCH_EMAIL, BENCH_PASSWORD, CLI_PATH, REPO_ROOT, SvcClient, newDataDir, startSvc, svcBuilt, type SvcInstance } from './lib/svc.js';
import { freePort, runWrk, startProcess, waitForHttp, wrkAvailable, wrkVersion, type ManagedProcess } from './lib/wrk.js';
import { measureInterleaved, mixedProbe, pairRatios, summarise, wrkProbe, type MeasureSettings, type SeriesResult, type SeriesSpec } from './lib/measure.js';
import * as seed from './lib/seed.js';
import * as sc from './lib/scenarios.js';
import { argon2Probe, commitCheck, deleteProbe, openReadOnly, writeDeleteLists } from './lib/probes.js';
import { RssSampler, settle } from './lib/rss.js';
import { summariseProfiles } from './lib/profile.js';
import { evaluateTargets, renderMarkdown, type RunResult } from './lib/report.js';
import { runMicro } from './micro.js';
import { loadCities, type CitiesData } from './lib/cities.js';

const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
function opt(name: string, fallback: number): number {
  const a = argv.find((x) => x.startsWith(`--${name}=`));
  const n = a ? Number(a.slice(name.length + 3)) : fallback;
  if (!Number.isFinite(n) || n < 0) throw new Error(`bench: invalid --${name}`);
  return n;
}
const settings: MeasureSettings & { connections: number } = {
  warmupS: opt('warmup', QUICK ? 1 : 2),
  durationS: opt('duration', QUICK ? 2 : 3),
  runs: opt('runs', QUICK ? 1 : 3),
  threads: 1,
  connections: opt('connections', 64),
};
const USERS = opt('users', QUICK ? 100 : 1000);
const SETS = QUICK ? { a: { collection: 'posts', rows: 10_000 } } : { a: { collection: 'posts', rows: 10_000 }, b: { collection: 'posts100k', rows: 100_000 } };
const WRITE_COLLECTION = 'posts_w';
const PROFILE = QUICK ? argv.includes('--profile') : !argv.includes('--no-profile');
const USER_INDEX = 1;

const log = (msg: string): void => void process.stderr.write(`bench: ${msg}\n`);
const t0 = performance.now();

async function main(): Promise<number> {
  if (!svcBuilt()) return fail(`${CLI_PATH} not found: run \`npm run build\` first`);
  if (!wrkAvailable()) return fail('wrk is not installed: run `bash ci/install-apt.sh wrk wrk`');
  const loadStart = loadavg();
  // The server runs from a private copy of dist: other work on the machine may rebuild dist while
  // the suite runs, and the profiled server must be the measured one.
  await mkdir(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  const distCopy = await mkdtemp(join(REPO_ROOT, 'bench', 'results', 'dist-'));
  await cp(join(REPO_ROOT, 'dist'), distCopy, { recursive: true });
  const cliPath = join(distCopy, 'cli', 'main.js');
  const server = await buildInfo(distCopy);
  const email = BENCH_EMAIL;
  const password = BENCH_PASSWORD;
  const dataDir = await newDataDir('', email, password, process.env, cliPath).catch(async (err) => {
    await rm(distCopy, { recursive: true, force: true });
    throw err;
  });
  const env = { SERVICE_RATE_LIMIT_MAX: '0' }; // auth-with-password is measured, not rate limited
  let svc: SvcInstance | undefined;
  let hello: ManagedProcess | undefined;
  let fastify: ManagedProcess | undefined;
  const stopAll = async (): Promise<void> => void (await Promise.allSettled([hello?.stop(), fastify?.stop(), svc?.stop()]));
  process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));
  try {
    // the cities of the list scenarios (10) go straight into the file before the server starts
    let cities: CitiesData | undefined;
    if (!process.env.BENCH_SKIP_CITIES) {
      const tc = performance.now();
      cities = await loadCities(dataDir, email, password, QUICK ? 20_000 : undefined, cliPath);
      log(`loaded ${cities.cities} cities of ${cities.countries.length} countries (${((performance.now() - tc) / 1000).toFixed(1)} s)`);
    }
    svc = await startSvc({ dataDir, email, password, env, cliPath });
    const rss = new RssSampler(svc.proc.child.pid!);
    const su = new SvcClient(svc.url);
    await su.loginSuperuser(email, password);

    // ---- seed through the REST API
    rss.phase('seeding');
    const timings: Record<string, number> = {};
    const seeding: Record<string, number> = {};
    const usersId = await seed.createUsersCollection(su);
    for (const info of Object.values(SETS)) await seed.createPostsCollection(su, info.collection, usersId, 'open');
    await seed.createPostsCollection(su, WRITE_COLLECTION, usersId, 'open');
    const t = performance.now();
    await seed.seedUsers(svc.url, su.token, USERS);
    seeding.usersPerSec = (USERS * 1000) / (performance.now() - t);
    log(`seeded ${USERS} users (${seeding.usersPerSec.toFixed(0)}/s)`);
    for (const [set, info] of Object.entries(SETS)) {
      seeding[`${info.collection}PerSec`] = await seed.seedPosts(svc.url, su.token, info.collection, set, 0, info.rows, USERS);
      log(`seeded ${info.rows} posts into ${info.collection} (${seeding[`${info.collection}PerSec`]!.toFixed(0)}/s)`);
    }
    timings.seeding = (performance.now() - t) / 1000;
    const token = await seed.userToken(svc.url, USER_INDEX);
    const own = Array.from({ length: SETS.a.rows }, (_, i) => i).find((i) => seed.authorOf(i, USERS) === USER_INDEX)!;
    const dbPath = join(dataDir, 'data.db');
    const db = openReadOnly(dbPath);

    // ---- references
    const helloPort = await freePort();
    hello = startProcess('hello-uws', process.execPath, [join(REPO_ROOT, 'bench', 'hello-uws.mjs'), String(helloPort)], { cwd: REPO_ROOT });
    const ceilingUrl = `http://127.0.0.1:${helloPort}/`;
    await waitForHttp(ceilingUrl, hello);
    const fastifyPort = await freePort();
    fastify = startProcess('fastify-ref', process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'fastify-ref.ts'), dbPath, String(fastifyPort)], { cwd: REPO_ROOT });
    const fastifyUrl = `http://127.0.0.1:${fastifyPort}`;
    await waitForHttp(`${fastifyUrl}/posts/${seed.postId('a', 0)}`, fastify);

    const ctx: sc.ScenarioContext = {
      svcUrl: svc.url, fastifyUrl, connections: settings.connections, sets: SETS,
      user: { index: USER_INDEX, id: seed.userId(USER_INDEX), token }, ownPostId: seed.postId('a', own), writeCollection: WRITE_COLLECTION,
      ...(cities ? { cities: { codes: cities.countries.map((x) => x.code), rows: cities.cities } } : {}),
    };
    const conns = settings.connections;
    const withConns = (l: sc.Scenario['load']): sc.Scenario['load'] => ({ connections: conns, ...l });
    const rulesNow = new Map<string, seed.RulePreset>(Object.values(SETS).map((i) => [i.collection, 'open']));
    rulesNow.set(WRITE_COLLECTION, 'open');
    const applyRules = async (s: sc.Scenario, client = su): Promise<void> => {
      for (const [col, preset] of Object.entries(s.rules)) {
        if (rulesNow.get(col) === preset) continue;
        await seed.setRules(client, col, preset);
        rulesNow.set(col, preset);
      }
    };
    const scenarioSpec = (s: sc.Scenario): SeriesSpec => ({
      key: s.key, label: s.label, kind: 'svc',
      probe: s.secondary ? mixedProbe(withConns(s.load), s.secondary) : wrkProbe(withConns(s.load)),
    });
    const settleAll = (): Promise<number> => settle([svc!.proc.child.pid!, hello!.child.pid!, fastify!.child.pid!]);
    const fastifyLoads = new Map(sc.fastifyLoads(ctx).map((f) => [f.key, f]));
    const fastifySpec = (key: string): SeriesSpec => {
      const f = fastifyLoads.get(key)!;
      return { key, label: f.label, kind: 'fastify', probe: wrkProbe(withConns(f.load)) };
    };

    // ---- the ceiling runs in every group, interleaved with the series (warmed up once)
    const ceilingProbe = wrkProbe({ url: ceilingUrl, connections: conns });
    const ceiling: SeriesResult = { key: 'ceiling', label: 'uWS hello', kind: 'ceiling', warmups: [], samples: [], summary: undefined as never };
    ceiling.warmups.push(await ceilingProbe(settings.warmupS, 'warmup', 0));
    await settleAll();

    const series: SeriesResult[] = [];
    const scenarios: sc.Scenario[] = [];
    /**
     * Measures `list` (svc scenarios), their Fastify references (except beside the mixed load)
     * and `extra` round-robin with one ceiling run per round; records per-round ratios.
     */
    const group = async (name: string, list: sc.Scenario[], extra: SeriesSpec[] = [], over: Partial<MeasureSettings> = {}): Promise<SeriesResult[]> => {
      log(`${name}`);
      rss.phase(name);
      for (const s of list) await applyRules(s);
      const refs = [...new Set(list.flatMap((s) => (s.fastify && !s.secondary ? [s.fastify] : [])))];
      const specs = [...list.map(scenarioSpec), ...refs.map(fastifySpec), ...extra, { key: 'ceiling', label: 'ceiling', kind: 'ceiling' as const, probe: ceilingProbe, warmup: false }];
      const g0 = performance.now();
      const out = await measureInterleaved(specs, { ...settings, ...over }, log, settleAll);
      const ceil = out.pop()!;
      ceiling.samples.push(...ceil.samples);
      for (const r of out) {
        if (r.kind !== 'svc') continue;
        const sc0 = list.find((s) => s.key === r.key);
        const f = sc0?.fastify ? out.find((x) => x.kind === 'fastify' && x.key === sc0.fastify) : undefined;
        r.roundRatios = { ceiling: pairRatios(r, ceil), ...(f ? { fastify: pairRatios(r, f) } : {}) };
      }
      for (const r of out) r.group = name;
      series.push(...out);
      scenarios.push(...list);
      timings[name] = (performance.now() - g0) / 1000;
      return out;
    };

    const [s1, s2] = sc.getByIdScenarios(ctx);
    const lists = sc.listScenarios(ctx);
    await group('get by id (1)', [s1!]);
    // ---- the node:http adapter beside uWS: a second server on the same data (reads
    // only, so --ignore-lock is safe), measured in the same rounds as the uWS server
    const nodeSvc = process.env.BENCH_SKIP_ENGINE ? null : await startSvc({ dataDir, email, password, env: { ...env, SERVICE_HTTP_ENGINE: 'node' }, cliPath, extra: ['--ignore-lock'] });
    if (nodeSvc) try {
      const nodeCtx = { ...ctx, svcUrl: nodeSvc.url };
      const engineSeries = (c: sc.ScenarioContext, engine: string, tag: string): sc.Scenario[] => {
        const [get] = sc.getByIdScenarios(c);
        const [list] = sc.listScenarios(c);
        return [
          { ...get!, key: `e9-get-${tag}`, number: 9, label: `HTTP engine ${engine}: get by id`, fastify: undefined },
          { ...list!, key: `e9-list-${tag}`, number: 9, label: `HTTP engine ${engine}: ${list!.label}`, fastify: undefined },
        ];
      };
      await group('HTTP engine (9): uWS and node:http', [...engineSeries(ctx, 'uWS', 'uws'), ...engineSeries(nodeCtx, 'node:http', 'node')]);
    } finally {
      await nodeSvc.stop();
    }
    else log('HTTP engine (9): skipped (BENCH_SKIP_ENGINE)');
    for (const info of Object.values(SETS)) await group(`list 20 (3), ${sc.sizeLabel(info.rows)}`, lists.filter((l) => l.key.endsWith(`-${sc.sizeLabel(info.rows)}`)));
    const cityLists = sc.cityScenarios(ctx);
    if (cityLists.length) await group('lists over the cities (10)', cityLists);
    await group('owner rules: get by id (2), list under a rule (4)', [s2!, ...sc.ruleListScenarios(ctx)]);
    await group('mixed (6)', [sc.mixedScenario(ctx)]);
    const phc = String((db.prepare('SELECT passwordHash FROM users WHERE id = ?').raw(true).get([seed.userId(USER_INDEX)]) as unknown[])[0]);
    // Twice the rounds: both sides are CPU-bound on the same cores, so their ratio moves with
    // whatever else the machine runs; more, adjacent pairs give its median more to stand on.
    await group('auth (7) and raw argon2', sc.authScenarios(ctx), [{ key: 'argon2-raw', label: 'raw argon2 verify', kind: 'argon2', probe: argon2Probe(phc, seed.USER_PASSWORD) }], { runs: settings.runs * 2 });
    const creates = await group('create (5)', sc.createScenarios(ctx));

    // ---- every answered create committed?
    const countRows = (): number => Number((db.prepare(`SELECT COUNT(*) FROM "${WRITE_COLLECTION}"`).raw(true).get([]) as unknown[])[0]);
    const createCommitted = countRows();
    const createAnswered = creates.reduce((a, s) => a + [...s.warmups, ...s.samples].reduce((b, x) => b + x.requests - (x.extra?.non2xx ?? 0), 0), 0);
    const createInFlightBound = (settings.runs + 1) * (64 + 500);
    const checked = await commitCheck(svc.url, token, WRITE_COLLECTION, ctx.user.id, db, QUICK ? 500 : 2000);
    log(`commit check: ${checked.notVisible} of ${checked.creates} answered creates not visible; ${createCommitted} rows for ${createAnswered} answers`);

    // ---- delete (8): walks the rows the create runs made. The warm-up walks the whole table and
    // gives the delete rate; the table is topped up (untimed creates) when the measured runs would
    // otherwise run out of ids.
    const readIds = (): string[] => (db.prepare(`SELECT id FROM "${WRITE_COLLECTION}"`).raw(true).all([]) as unknown[][]).map((r) => String(r[0]));
    const del = sc.deleteScenario(ctx, '');
    const delLoad = { ...del, load: withConns(del.load) };
    rss.phase('delete (8)');
    let ids = readIds();
    const deleteStart = ids.length;
    const warm = await deleteProbe(delLoad, writeDeleteLists(ids, dataDir, 1, 0, 0))(settings.warmupS, 'warmup', 0);
    await settleAll();
    ids = readIds();
    const need = Math.ceil(warm.rps * settings.durationS * settings.runs * ((warm.extra?.exhausted ?? 0) > 0 ? 3 : 1.5)) + 1000;
    let toppedUp = 0;
    if (ids.length < need) {
      const rate = Math.max(100, seriesRate(creates, 's5-create-500'));
      const secs = Math.max(1, Math.ceil(((need - ids.length) / rate) * 1.2));
      log(`delete (8): ${ids.length} ids left, ${need} wanted; topping up with ${secs} s of creates`);
      const c500 = sc.createScenarios(ctx)[1]!;
      await runWrk({ ...c500.load, scriptArgs: [ctx.user.id, 'topup'], durationS: secs });
      await settleAll();
      toppedUp = readIds().length - ids.length;
      ids = readIds();
    }
    const delLists = writeDeleteLists(ids, dataDir, 0, settings.durationS, settings.runs);
    const [delResult] = await group('delete (8)', [], [{ key: del.key, label: del.label, kind: 'svc', probe: deleteProbe(delLoad, delLists) }], { warmupS: 0 });
    delResult!.warmups = [warm];
    scenarios.push(del);
    const deleteExhausted = delResult!.samples.reduce((a, s) => a + (s.extra?.exhausted ?? 0), 0);

    // ---- micro benchmarks while the servers idle, then memory
    rss.phase('micro benchmarks (server idle)');
    log('micro benchmarks');
    let g = performance.now();
    const micro = await runMicro(QUICK ? 50 : 300);
    timings['micro benchmarks'] = (performance.now() - g) / 1000;
    const memory = rss.stop();
    ceiling.summary = summarise(ceiling.samples);
    db.close();

    const base: Omit<RunResult, 'targets' | 'profiles'> = {
      mode: QUICK ? 'quick' : 'full',
      date: new Date().toISOString(),
      wallS: 0,
      machine: {
        cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
        node: process.version, platform: `${process.platform}-${process.arch}`, wrk: wrkVersion(),
      },
      server,
      settings: { ...settings, users: USERS, rows: Object.values(SETS).map((s) => s.rows), ...(cities ? { cities: cities.cities } : {}) },
      loadAvg: { start: loadStart, end: loadavg() },
      ceiling, series, seeding,
      scenarios: scenarios.map(({ key, number, label, kind, fastify: f }) => ({ key, number, label, kind, fastify: f })),
      writes: { createAnswered, createCommitted, createInFlightBound, commitCheck: checked, deletePool: deleteStart, deleteToppedUp: toppedUp, deleteExhausted },
      micro, memory, timings,
    };
    const targets = evaluateTargets(base);

    // ---- profiles of the scenarios behind missed targets
    await Promise.allSettled([hello.stop(), fastify.stop()]);
    const profiles: RunResult['profiles'] = {};
    // One profile per scenario number (list 20 at 10k and at 100k look alike), first missed first.
    const byNumber = new Map<number, string>();
    for (const x of targets) {
      const n = scenarios.find((y) => y.key === x.profile)?.number;
      if (!x.met && x.profile && n !== undefined && !byNumber.has(n)) byNumber.set(n, x.profile);
    }
    const toProfile = [...byNumber.values()];
    g = performance.now();
    if (PROFILE && toProfile.length) {
      await svc.stop();
      for (const key of toProfile) {
        const dir = join(REPO_ROOT, 'bench', 'results', 'profiles', `${base.mode}-${key}`);
        await rm(dir, { recursive: true, force: true });
        await mkdir(dir, { recursive: true });
        log(`profiling ${key}`);
        svc = await startSvc({ dataDir, email, password, env, cliPath, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
        const c2 = new SvcClient(svc.url);
        await c2.loginSuperuser(email, password);
        const again = allScenarios({ ...ctx, svcUrl: svc.url }).find((s) => s.key === key)!;
        await applyRules(again, c2);
        const probe = scenarioSpec(again).probe;
        await probe(Math.min(1, settings.warmupS), 'warmup', 0);
        await probe(settings.durationS, 'run', 1);
        await settle([svc.proc.child.pid!]); // queued requests finish before SIGTERM (the profile is written on exit)
        await svc.stop();
        profiles[key] = summariseProfiles(dir, REPO_ROOT, 12, [relative(REPO_ROOT, distCopy), 'dist']);
      }
      timings.profiles = (performance.now() - g) / 1000;
    }

    const result: RunResult = { ...base, targets, profiles, wallS: (performance.now() - t0) / 1000 };
    const md = renderMarkdown(result);
    const [mdPath, jsonPath] = QUICK
      ? [join(REPO_ROOT, 'bench', 'results', 'quick.md'), join(REPO_ROOT, 'bench', 'results', 'quick.json')]
      : [join(REPO_ROOT, 'bench', 'RESULTS.md'), join(REPO_ROOT, 'bench', 'RESULTS.json')];
    await writeFile(mdPath, md);
    await writeFile(jsonPath, JSON.stringify(result, (k, v) => (k === 'raw' ? undefined : v), 2) + '\n');
    console.log(md);
    log(`wrote ${mdPath} and ${jsonPath} in ${Math.round(result.wallS)} s`);
    return 0;
  } catch (err) {
    log(`FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    if (svc?.proc.output().trim()) log(`--- svc output (tail) ---\n${svc.proc.output().slice(-4000)}`);
    return 1;
  } finally {
    await stopAll();
    await rm(dataDir, { recursive: true, force: true });
    await rm(distCopy, { recursive: true, force: true });
  }
}

/** Every scenario that can be re-run by key (delete needs its id lists, so it is left out). */
function allScenarios(ctx: sc.ScenarioContext): sc.Scenario[] {
  return [...sc.getByIdScenarios(ctx), ...sc.listScenarios(ctx), ...sc.cityScenarios(ctx), ...sc.ruleListScenarios(ctx), sc.mixedScenario(ctx), ...sc.authScenarios(ctx), ...sc.createScenarios(ctx)];
}

async function buildInfo(dist: string): Promise<{ commit: string; build: string }> {
  try {
    const j = JSON.parse(await readFile(join(dist, 'build-info.json'), 'utf8')) as { commit?: string; build?: string };
    return { commit: j.commit ?? 'unknown', build: j.build ?? 'unknown' };
  } catch {
    return { commit: 'unknown', build: 'unknown' };
  }
}

/** Median rate of series `key` among `list` (NaN when absent). */
function seriesRate(list: SeriesResult[], key: string): number {
  return list.find((s) => s.key === key)?.summary.rps ?? NaN;
}

function fail(msg: string): number {
  log(msg);
  return 1;
}

/** `--render=FILE.json`: rewrites the Markdown report of a saved run (next to it, or RESULTS.md). */
async function render(file: string): Promise<number> {
  const result = JSON.parse(await readFile(file, 'utf8')) as RunResult;
  result.targets = evaluateTargets(result);
  const out = result.mode === 'quick' ? file.replace(/\.json$/, '.md') : join(REPO_ROOT, 'bench', 'RESULTS.md');
  await writeFile(out, renderMarkdown(result));
  log(`wrote ${out}`);
  return 0;
}

const renderArg = argv.find((a) => a.startsWith('--render='));
process.exitCode = renderArg ? await render(renderArg.slice('--render='.length)) : await main();
