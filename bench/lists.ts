/**
 * The list scenarios (group 10 of `npm run bench`) on their own, for working on them:
 * loads the 135,233 cities once into a data directory (kept with `--data=DIR` for the next run),
 * starts `svc serve` on it and the bare uWebSockets.js ceiling, and runs, interleaved per round,
 * the ceiling and the three series (relation filter + indexed sort, random deep pages, list 20
 * with the page cache bypassed), printing each run and the median ratio to the ceiling.
 * `literals` (only in `--only`) is the relation series with a threshold drawn from 0..999999, so
 * nearly every filter text is new to the server (bench/README.md, "Filters compiled per shape").
 * Each svc run also prints svc's CPU time per request (user + system, all its threads, from
 * /proc: bench/paired-cpu.ts), which moves far less than throughput when other processes take
 * the cores.
 *
 * Reference series for the bypassed list (in `--only`, or all without it), on the same URL and
 * wrk script:
 * - `cached`: svc answering the same page from its page cache (the query string repeats);
 * - `floor`: bench/list-floor.mjs, bare uWebSockets.js doing only the one libsql read of a
 *   bypassed page and sending the same 5 KB body: the most a bypassed list could reach here;
 * - `bare`: the same server sending the body without the read.
 * From them: what svc adds to a page it has cached (bare vs cached), what the read costs (bare
 * vs floor), and the estimate of a cached page plus the read, printed as `cached+read`.
 *
 *   npm run build && npx tsx bench/lists.ts [--data=DIR] [--rounds=3] [--seconds=3]
 *       [--only=relation,literals,deep,nocache,cached,floor,bare] [--cpu-prof] [--posts]
 *
 * `--posts` runs the bypassed-list references on the quick suite's 10,000 posts instead (seeded
 * through the REST API as `npm run bench -- --quick` does, a 15 KB page): `nocache` there is the
 * suite's "list 20, no rule, skipTotal, page cache bypassed (10k rows)". The city series are
 * left out.
 *
 * `--cpu-prof` runs the server under `node --cpu-prof` (profiles in bench/results/profiles-lists/)
 * and prints the hottest functions of the main thread. The committed figures come from
 * `npm run bench`; this runner is not part of it.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadCities } from './lib/cities.js';
import { CITY_THRESHOLDS, wrkScript } from './lib/scenarios.js';
import { BENCH_EMAIL, BENCH_PASSWORD, REPO_ROOT, SvcClient, newDataDir, runCli, startSvc } from './lib/svc.js';
import * as seed from './lib/seed.js';
import { freePort, median, runWrk, startProcess, waitForHttp, type WrkOptions } from './lib/wrk.js';
import { cpuTicks, settle } from './lib/rss.js';
import { summariseProfiles } from './lib/profile.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROUNDS = Number(arg('rounds') ?? 3);
const SECONDS = Number(arg('seconds') ?? 3);
const ONLY = arg('only')?.split(',');
const PROF = argv.includes('--cpu-prof');
const POSTS = argv.includes('--posts');
const CITY_SERIES = ['relation', 'literals', 'deep'];

async function main(): Promise<void> {
  let dataDir = arg('data');
  const keep = dataDir !== undefined;
  let codes: string[] = [];
  let rows = 0;
  if (POSTS) {
    if (dataDir) await mkdir(dataDir, { recursive: true });
    dataDir ??= await newDataDir('lists-posts');
    if (!existsSync(join(dataDir, 'posts.json'))) {
      if (keep) await runCli(['superuser', 'create', `--email=${BENCH_EMAIL}`, `--password=${BENCH_PASSWORD}`, `--data-dir=${dataDir}`]);
      await seedQuickPosts(dataDir);
      await writeFile(join(dataDir, 'posts.json'), JSON.stringify({ rows: POST_ROWS }));
    }
  } else if (dataDir && existsSync(join(dataDir, 'cities.json'))) {
    ({ codes, rows } = JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(join(dataDir!, 'cities.json'), 'utf8'))));
  } else {
    if (dataDir) {
      await mkdir(dataDir, { recursive: true });
      await runCli(['superuser', 'create', `--email=${BENCH_EMAIL}`, `--password=${BENCH_PASSWORD}`, `--data-dir=${dataDir}`]);
    } else dataDir = await newDataDir('lists');
    const data = await loadCities(dataDir, BENCH_EMAIL, BENCH_PASSWORD);
    codes = data.countries.map((c) => c.code);
    rows = data.cities;
    await writeFile(join(dataDir, 'cities.json'), JSON.stringify({ codes, rows }));
  }
  const profDir = join(REPO_ROOT, 'bench', 'results', 'profiles-lists');
  if (PROF) {
    await rm(profDir, { recursive: true, force: true });
    await mkdir(profDir, { recursive: true });
  }
  const svc = await startSvc({ dataDir, nodeArgs: PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [] });
  const helloPort = await freePort();
  const hello = startProcess('hello-uws', process.execPath, [join(REPO_ROOT, 'bench', 'hello-uws.mjs'), String(helloPort)], { cwd: REPO_ROOT });
  const ceilingUrl = `http://127.0.0.1:${helloPort}/`;
  const url = `${svc.url}/api/collections/${POSTS ? 'posts' : 'cities'}/records`;
  const bypassed = `${url}?page=1&perPage=20&skipTotal=1`;
  let floor: ReturnType<typeof startProcess> | null = null;
  const bodyFile = join(tmpdir(), `svc-list-floor-${process.pid}.json`);
  try {
    await waitForHttp(ceilingUrl, hello);
    const floorPort = await freePort();
    if (!ONLY || ONLY.includes('floor') || ONLY.includes('bare')) {
      // the floor sends the very page svc answers
      await writeFile(bodyFile, Buffer.from(await (await fetch(bypassed)).arrayBuffer()));
      floor = startProcess('list-floor', process.execPath, [join(REPO_ROOT, 'bench', 'list-floor.mjs'), String(floorPort), join(dataDir, 'data.db'), bodyFile, POSTS ? 'posts' : 'cities'], { cwd: REPO_ROOT });
      await waitForHttp(`http://127.0.0.1:${floorPort}/`, floor);
    }
    const series: Array<{ key: string; load: WrkOptions }> = [
      { key: 'relation', load: { url, script: wrkScript('cities-lists.lua'), scriptArgs: ['relation', codes.join(','), CITY_THRESHOLDS.join(',')] } },
      { key: 'literals', load: { url, script: wrkScript('cities-lists.lua'), scriptArgs: ['literals', codes.join(',')] } },
      { key: 'deep', load: { url, script: wrkScript('cities-lists.lua'), scriptArgs: ['deep', String(Math.floor(rows / 20))] } },
      { key: 'nocache', load: { url: bypassed, script: wrkScript('distinct-query.lua') } },
      // distinct-query.lua's twin with a constant `run`: svc's page cache answers all but the first
      { key: 'cached', load: { url: bypassed, script: wrkScript('same-query.lua') } },
      { key: 'floor', load: { url: `http://127.0.0.1:${floorPort}/?page=1&perPage=20&skipTotal=1`, script: wrkScript('distinct-query.lua') } },
      { key: 'bare', load: { url: `http://127.0.0.1:${floorPort}/bare?page=1&perPage=20&skipTotal=1`, script: wrkScript('distinct-query.lua') } },
    ].filter((s) => (ONLY ? ONLY.includes(s.key) : s.key !== 'literals') && !(POSTS && CITY_SERIES.includes(s.key)));
    const pids = [svc.proc.child.pid!, hello.child.pid!, ...(floor ? [floor.child.pid!] : [])];
    for (const s of series) await runWrk({ ...s.load, durationS: 1 }); // warm-up
    const ratios = new Map<string, number[]>(series.map((s) => [s.key, []]));
    const cpus = new Map<string, number[]>(series.map((s) => [s.key, []]));
    const svcPid = svc.proc.child.pid!;
    for (let round = 0; round < ROUNDS; round++) {
      await settle(pids);
      const ceiling = (await runWrk({ url: ceilingUrl, durationS: SECONDS })).requestsPerSec;
      const line = [`round ${round + 1}: ceiling ${Math.round(ceiling)}`];
      for (const s of series) {
        await settle(pids);
        const ticks = cpuTicks(svcPid);
        const r = await runWrk({ ...s.load, durationS: SECONDS });
        // svc's CPU µs per request (clock ticks of 10 ms); not for the floor and bare servers
        const cpu = s.key === 'floor' || s.key === 'bare' ? NaN : ((cpuTicks(svcPid) - ticks) * 1e4) / r.requests;
        ratios.get(s.key)!.push(r.requestsPerSec / ceiling);
        cpus.get(s.key)!.push(cpu);
        line.push(`${s.key} ${Math.round(r.requestsPerSec)} (${(r.requestsPerSec / ceiling).toFixed(3)}, p99 ${r.latencyP99Ms} ms${Number.isNaN(cpu) ? '' : `, cpu ${Math.round(cpu)} µs/req`}${r.errors ? `, ${r.errors} errors` : ''})`);
      }
      console.log(line.join(' · '));
    }
    console.log(series.map((s) => {
      const cpu = median(cpus.get(s.key)!);
      return `${s.key}: median ${median(ratios.get(s.key)!).toFixed(3)} × ceiling${Number.isNaN(cpu) ? '' : `, svc cpu ${Math.round(cpu)} µs/req`}`;
    }).join('\n'));
    const m = (k: string): number | undefined => (ratios.has(k) ? median(ratios.get(k)!) : undefined);
    const [cached, floorRatio, bare] = [m('cached'), m('floor'), m('bare')];
    if (cached && floorRatio && bare) {
      // costs in ceiling-request times: a page cached by svc, plus what the read adds to a bare send
      console.log(`cached+read: ${(1 / (1 / cached + 1 / floorRatio - 1 / bare)).toFixed(3)} × ceiling (svc's cached page plus the one read, estimated)`);
    }
  } finally {
    await floor?.stop();
    await rm(bodyFile, { force: true });
    await hello.stop();
    await svc.stop();
    if (!keep) await rm(dataDir, { recursive: true, force: true });
  }
  if (PROF) {
    const files = (await readdir(profDir)).filter((f) => f.endsWith('.cpuprofile'));
    if (files.length === 0) console.log('no profile written');
    for (const p of summariseProfiles(profDir, REPO_ROOT, 25)) console.log(JSON.stringify(p, null, 1));
  }
}

const POST_ROWS = 10_000;
const POST_USERS = 100;

/** The quick suite's posts (bench/run.ts, set `a`): 100 users, 10,000 posts, the `open` rules. */
async function seedQuickPosts(dataDir: string): Promise<void> {
  const svc = await startSvc({ dataDir });
  try {
    const su = new SvcClient(svc.url);
    await su.loginSuperuser(BENCH_EMAIL, BENCH_PASSWORD);
    const usersId = await seed.createUsersCollection(su);
    await seed.createPostsCollection(su, 'posts', usersId, 'open');
    await seed.seedUsers(svc.url, su.token, POST_USERS);
    await seed.seedPosts(svc.url, su.token, 'posts', 'a', 0, POST_ROWS, POST_USERS);
  } finally {
    await svc.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
