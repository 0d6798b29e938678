/**
 * The embeddable framework's benchmark: `npm run bench:framework`.
 *
 * Serves bench/apps/framework-app.mjs and measures, as ratios within the same run (alternating,
 * median of rounds):
 * - a custom JSON route (`GET /api/bench/ping`) against the bare uWebSockets.js ceiling
 *   (bench/hello-uws.mjs), target ≥ 0.8;
 * - a record create on a collection with one before- and one after-hook against a create on an
 *   identical collection without hooks, target ≥ 0.8;
 * - `GET /api/state?subject=…` with 10 flags and 5 experiments (2 sticky) over 5,000 subjects
 *   against the ceiling, target ≥ 0.5.
 * Writes bench/results/framework.md and prints it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, startSvc } from './lib/svc.js';
import { freePort, median, runWrk, startProcess, waitForHttp } from './lib/wrk.js';
import { wrkScript } from './lib/scenarios.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const log = (m: string) => console.error(`bench:framework: ${m}`);

async function main(): Promise<void> {
  const helloPort = await freePort();
  const hello = startProcess('hello-uws', process.execPath, [join(REPO_ROOT, 'bench', 'hello-uws.mjs'), String(helloPort)], { cwd: REPO_ROOT });
  const ceilingUrl = `http://127.0.0.1:${helloPort}/`;
  await waitForHttp(ceilingUrl, hello);
  const svc = await startSvc({ extra: [`--app=${join(REPO_ROOT, 'bench', 'apps', 'framework-app.mjs')}`], env: { SERVICE_LOG_REQUESTS: 'false' } });
  const rows: string[] = [];
  try {
    const login = await fetch(`${svc.url}/api/collections/_superusers/auth-with-password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: svc.email, password: svc.password }) });
    const token = ((await login.json()) as { token: string }).token;
    for (const name of ['plain', 'hooked']) {
      const r = await fetch(`${svc.url}/api/collections`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: token },
        body: JSON.stringify({ name, type: 'base', createRule: '@public', fields: [{ name: 'title', type: 'text' }, { name: 'description', type: 'text' }, { name: 'public', type: 'bool' }, { name: 'tags', type: 'json' }, { name: 'author', type: 'text' }] }),
      });
      if (r.status !== 200 && r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${await r.text()}`);
    }
    const series = {
      ceiling: () => runWrk({ url: ceilingUrl, durationS: SECONDS, connections: 64 }),
      route: () => runWrk({ url: `${svc.url}/api/bench/ping`, durationS: SECONDS, connections: 64 }),
      state: () => runWrk({ url: `${svc.url}/api/state`, durationS: SECONDS, connections: 64, script: wrkScript('state-subjects.lua'), scriptArgs: ['5000'] }),
      plain: () => runWrk({ url: `${svc.url}/api/collections/plain/records`, durationS: SECONDS, connections: 64, script: wrkScript('create-post.lua'), scriptArgs: ['author', 'plain'] }),
      hooked: () => runWrk({ url: `${svc.url}/api/collections/hooked/records`, durationS: SECONDS, connections: 64, script: wrkScript('create-post.lua'), scriptArgs: ['author', 'hooked'] }),
    };
    // warm up every series once (the state route's sticky subjects are written on first resolve)
    for (const run of Object.values(series)) await run();
    const ratios: Record<string, number[]> = { route: [], state: [], hooks: [] };
    const rates: Record<string, number[]> = { ceiling: [], route: [], state: [], plain: [], hooked: [] };
    const errors: Record<string, number> = {};
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? (['ceiling', 'route', 'state', 'plain', 'hooked'] as const) : (['hooked', 'plain', 'state', 'route', 'ceiling'] as const);
      const got: Record<string, number> = {};
      for (const k of order) {
        const res = await series[k]();
        got[k] = res.requestsPerSec;
        rates[k].push(res.requestsPerSec);
        errors[k] = (errors[k] ?? 0) + res.errors;
      }
      ratios.route.push(got.route / got.ceiling);
      ratios.state.push(got.state / got.ceiling);
      ratios.hooks.push(got.hooked / got.plain);
      log(`round ${r + 1}: route ${(got.route / got.ceiling).toFixed(2)}, state ${(got.state / got.ceiling).toFixed(2)}, hooks ${(got.hooked / got.plain).toFixed(2)}`);
    }
    const fmt = (n: number) => Math.round(n).toLocaleString('en');
    const verdict = (v: number, t: number) => `${v.toFixed(2)} (target ≥ ${t}: ${v >= t ? 'met' : '**not met**'})`;
    rows.push(`| custom JSON route \`GET /api/bench/ping\` | ${fmt(median(rates.route))} | ceiling ${fmt(median(rates.ceiling))} | ${verdict(median(ratios.route), 0.8)} | ${errors.route ?? 0} |`);
    rows.push(`| \`GET /api/state?subject=…\`, 10 flags, 5 experiments (2 sticky), 5,000 subjects | ${fmt(median(rates.state))} | ceiling ${fmt(median(rates.ceiling))} | ${verdict(median(ratios.state), 0.5)} | ${errors.state ?? 0} |`);
    rows.push(`| create with one before- and one after-hook | ${fmt(median(rates.hooked))} | create without hooks ${fmt(median(rates.plain))} | ${verdict(median(ratios.hooks), 0.8)} | ${(errors.hooked ?? 0) + (errors.plain ?? 0)} |`);
  } finally {
    await svc.stop();
    await hello.stop();
  }
  const md = [
    '# Framework (`npm run bench:framework`)', '',
    `${new Date().toISOString()}, Node ${process.version}; wrk -c64, ${SECONDS} s per run, ${ROUNDS} alternating rounds; ratios are medians of per-round ratios.`, '',
    '| series | req/s (median) | baseline (same run) | ratio | errors |', '| --- | ---: | --- | --- | ---: |', ...rows, '',
  ].join('\n');
  mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(REPO_ROOT, 'bench', 'results', 'framework.md'), md);
  console.log(md);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
