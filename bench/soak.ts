/**
 * Soak: `npm run soak -- --minutes=N [--out=FILE] [--rate=R]`. Drives a steady mixed
 * load against a real `svc` (started as the launcher starts it, on loopback only): reads by id,
 * filtered and sorted lists, creates, updates, deletes, password sign-ins, multipart uploads and
 * downloads. Every 10 s it samples the server's RSS and open file descriptors (/proc/<pid>) and
 * the event-loop lag seen from outside (the latency of GET /api/health, which does no database
 * work: a blocked loop shows up there first), with request counts and errors by kind.
 *
 * Verdict (exit 1 when any fails): no error and no 5xx; after warm-up (the first 40% of the run,
 * at most 5 minutes) RSS never drifts more than 15% from its post-warm-up baseline (the median of
 * the first three samples after warm-up). The warm-up is that long because the server's bounded
 * caches (rendered records 16 MiB, list rows 8 MiB, pages 8 MiB of text, two to three times that
 * in heap) fill while the clients visit a growing set of records: measured, RSS rises for about
 * five minutes of this load and then holds. The report is Markdown (bench/SOAK.md by default).
 */
import { writeFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO_ROOT, SvcClient, startSvc, type SvcInstance } from './lib/svc.js';

const argv = process.argv.slice(2);
const arg = (name: string, dflt: string): string => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const MINUTES = Number(arg('minutes', '10'));
const OUT = arg('out', join(REPO_ROOT, 'bench', 'SOAK.md'));
/** Target requests per second over all kinds (a moderate, steady load, not a stress test). */
const RATE = Number(arg('rate', '400'));
const SAMPLE_MS = 10_000;
const WORKERS = 8;
const PASSWORD = 'soak-user-password-1';

type Kind = 'view' | 'list' | 'create' | 'update' | 'delete' | 'signin' | 'upload' | 'download';
const KINDS: Kind[] = ['view', 'list', 'create', 'update', 'delete', 'signin', 'upload', 'download'];
/**
 * Share of each kind in the mix (sums to 1). Sign-ins are argon2-bound, so rare. Deletes match
 * creates and uploads, so the table holds a steady few hundred records: a table that grows for
 * the whole run grows every bounded cache (and SQLite's page caches) with it, which says nothing
 * about leaks.
 */
const MIX: Record<Kind, number> = { view: 0.35, list: 0.25, create: 0.08, update: 0.1, delete: 0.12, signin: 0.02, upload: 0.04, download: 0.04 };
/**
 * `--without=signin,upload`: leave kinds out of the mix, to tell which load grows memory; the
 * kinds left keep their proportions (their shares scaled back up to 1).
 */
const WITHOUT = (process.argv.find((a) => a.startsWith('--without='))?.slice(10) ?? '').split(',').filter(Boolean) as Kind[];
for (const k of WITHOUT) {
  if (!(k in MIX)) throw new Error(`--without: unknown kind ${k}`);
  MIX[k] = 0;
}
const kept = Object.values(MIX).reduce((a, b) => a + b, 0);
if (kept <= 0) throw new Error('--without left no kind in the mix');
for (const k of Object.keys(MIX) as Kind[]) MIX[k] /= kept;

interface Sample {
  t: number;
  rssMb: number;
  /** anonymous (heap, native allocations) and file-backed (mapped files) parts of RSS */
  anonMb: number;
  fileMb: number;
  fds: number;
  lagMs: number;
  requests: number;
  errors: number;
}

const counts = Object.fromEntries(KINDS.map((k) => [k, { ok: 0, err: 0, s5xx: 0 }])) as Record<Kind, { ok: number; err: number; s5xx: number }>;
const errorSamples: string[] = [];

function pick(): Kind {
  let r = Math.random();
  for (const k of KINDS) {
    r -= MIX[k];
    if (r <= 0) return k;
  }
  return 'view';
}

async function rss(pid: number): Promise<{ rss: number; anon: number; file: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') };
}

async function fds(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

async function main(): Promise<number> {
  const svc: SvcInstance = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0', ...(process.env.SOAK_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SOAK_SERVER_NODE_OPTIONS } : {}) } });
  const pid = svc.proc.child.pid!;
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(svc.email, svc.password);
  const base = svc.url;
  const json = (method: string, path: string, body?: unknown, token?: string) =>
    fetch(base + path, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });

  // ---- schema and seed
  const users = await su.request('POST', '/api/collections', { name: 'soak_users', type: 'auth', fields: [], createRule: '@public', listRule: 'id = @request.auth.id', viewRule: 'id = @request.auth.id' });
  await su.request('POST', '/api/collections', {
    name: 'soak_posts', listRule: '@public', viewRule: '@public', createRule: "@request.auth.id != ''", updateRule: 'author = @request.auth.id', deleteRule: 'author = @request.auth.id',
    fields: [
      { name: 'title', type: 'text', options: { max: 200 } }, { name: 'n', type: 'number' }, { name: 'body', type: 'editor' },
      { name: 'author', type: 'relation', options: { collectionId: (users as { id: string }).id } },
      { name: 'doc', type: 'file', options: { maxSelect: 1, maxSize: 1024 * 1024 } },
    ],
    indexes: [{ name: 'by_n', fields: ['n'] }],
  });
  const tokens: Array<{ id: string; token: string; email: string }> = [];
  for (let i = 0; i < 5; i++) {
    const email = `soak${i}@example.com`;
    const c = await json('POST', '/api/collections/soak_users/records', { email, password: PASSWORD });
    const id = ((await c.json()) as { id: string }).id;
    const l = await json('POST', '/api/collections/soak_users/auth-with-password', { identity: email, password: PASSWORD });
    tokens.push({ id, email, token: ((await l.json()) as { token: string }).token });
  }
  const live: Array<{ id: string; owner: number }> = [];
  /** records a client deleted: another client's update of one may race it and answer 404 */
  const gone = new Set<string>();
  const withFile: string[] = [];
  const payload = Buffer.alloc(32 * 1024, 7);
  for (let i = 0; i < 200; i++) {
    const u = i % tokens.length;
    const r = await json('POST', '/api/collections/soak_posts/records', { title: `seed ${i}`, n: i, body: 'x'.repeat(300), author: tokens[u].id }, tokens[u].token);
    live.push({ id: ((await r.json()) as { id: string }).id, owner: u });
  }

  /** the record an update answered for (to tell a race with a delete from an error) */
  const updated = new WeakMap<Response, string>();
  const one = async (kind: Kind): Promise<Response> => {
    const u = Math.floor(Math.random() * tokens.length);
    const me = tokens[u];
    const rec = live[Math.floor(Math.random() * live.length)];
    switch (kind) {
      case 'view':
        return fetch(`${base}/api/collections/soak_posts/records/${rec?.id ?? 'missing00000000'}`);
      case 'list': {
        const lo = Math.floor(Math.random() * 1000);
        return fetch(`${base}/api/collections/soak_posts/records?filter=${encodeURIComponent(`n >= ${lo} && title ~ 'seed'`)}&sort=-n&perPage=20`);
      }
      case 'create': {
        const r = await json('POST', '/api/collections/soak_posts/records', { title: 'soak', n: Math.floor(Math.random() * 1000), body: 'y'.repeat(300), author: me.id }, me.token);
        if (r.status === 201) live.push({ id: ((await r.clone().json()) as { id: string }).id, owner: u });
        return r;
      }
      case 'update': {
        const mine = live.find((x) => x.owner === u) ?? rec;
        const r = await json('PATCH', `/api/collections/soak_posts/records/${mine.id}`, { n: Math.floor(Math.random() * 1000) }, tokens[mine.owner].token);
        updated.set(r, mine.id);
        return r;
      }
      case 'delete': {
        if (live.length < 300) return fetch(`${base}/api/health`); // keep a steady table
        const i = live.findIndex((x) => !withFile.includes(x.id));
        const [victim] = live.splice(i < 0 ? 0 : i, 1);
        gone.add(victim.id);
        return json('DELETE', `/api/collections/soak_posts/records/${victim.id}`, undefined, tokens[victim.owner].token);
      }
      case 'signin':
        return json('POST', '/api/collections/soak_users/auth-with-password', { identity: me.email, password: PASSWORD });
      case 'upload': {
        const form = new FormData();
        form.set('title', 'with file');
        form.set('n', '1');
        form.set('author', me.id);
        form.set('doc', new Blob([payload], { type: 'application/octet-stream' }), 'blob.bin');
        const r = await fetch(`${base}/api/collections/soak_posts/records`, { method: 'POST', headers: { authorization: `Bearer ${me.token}` }, body: form });
        if (r.status === 201) {
          const rec2 = (await r.clone().json()) as { id: string; doc: string };
          withFile.push(`${rec2.id}/${rec2.doc}`);
          if (withFile.length > 200) withFile.shift();
        }
        return r;
      }
      case 'download': {
        const f = withFile[Math.floor(Math.random() * withFile.length)];
        return f ? fetch(`${base}/api/files/soak_posts/${f}`) : fetch(`${base}/api/health`);
      }
    }
  };

  const started = Date.now();
  const endAt = started + MINUTES * 60_000;
  let requests = 0;
  let errors = 0;
  const interval = (WORKERS * 1000) / RATE;
  const worker = async (): Promise<void> => {
    let next = Date.now();
    while (Date.now() < endAt) {
      const kind = pick();
      try {
        const r = await one(kind);
        const target = updated.get(r) ?? '';
        await r.arrayBuffer();
        requests++;
        const raced = r.status === 404 && (kind === 'view' || (kind === 'update' && gone.has(target)));
        const bad = r.status >= 500 || (r.status >= 400 && !raced);
        if (r.status >= 500) counts[kind].s5xx++;
        if (bad) {
          counts[kind].err++;
          errors++;
          if (errorSamples.length < 20) errorSamples.push(`${kind}: ${r.status}`);
        } else counts[kind].ok++;
      } catch (err) {
        counts[kind].err++;
        errors++;
        if (errorSamples.length < 20) errorSamples.push(`${kind}: ${(err as Error).message}`);
      }
      next += interval;
      const wait = next - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else next = Date.now();
    }
  };

  const samples: Sample[] = [];
  const sampler = (async () => {
    while (Date.now() < endAt) {
      await new Promise((r) => setTimeout(r, Math.min(SAMPLE_MS, Math.max(0, endAt - Date.now()))));
      const t0 = performance.now();
      await (await fetch(`${base}/api/health`)).arrayBuffer();
      const lagMs = performance.now() - t0;
      const mem = await rss(pid);
      samples.push({ t: Math.round((Date.now() - started) / 1000), rssMb: mem.rss, anonMb: mem.anon, fileMb: mem.file, fds: await fds(pid), lagMs, requests, errors });
      const s = samples[samples.length - 1];
      process.stderr.write(`soak: ${s.t}s rss ${s.rssMb.toFixed(1)} MB (anon ${s.anonMb.toFixed(1)}, file ${s.fileMb.toFixed(1)}), fds ${s.fds}, health ${s.lagMs.toFixed(1)} ms, ${s.requests} requests, ${s.errors} errors\n`);
    }
  })();
  await Promise.all([...Array.from({ length: WORKERS }, worker), sampler]);
  await svc.stop();

  // ---- verdict
  const warmupS = Math.min(300, MINUTES * 60 * 0.4);
  const after = samples.filter((s) => s.t > warmupS);
  const baseline = median(after.slice(0, 3).map((s) => s.rssMb));
  const drift = after.length ? Math.max(...after.map((s) => Math.abs(s.rssMb - baseline) / baseline)) : 0;
  const fives = KINDS.reduce((a, k) => a + counts[k].s5xx, 0);
  const verdicts = [
    { name: 'no errors', ok: errors === 0, measured: `${errors} errors of ${requests} requests` },
    { name: 'no 5xx', ok: fives === 0, measured: `${fives}` },
    { name: 'RSS within 15% of its post-warm-up baseline', ok: drift <= 0.15, measured: `baseline ${baseline.toFixed(1)} MB, largest drift ${(drift * 100).toFixed(1)}%` },
  ];
  const commit = gitCommit();
  const L: string[] = [];
  L.push('# Soak run', '');
  L.push(`\`npm run soak -- --minutes=${MINUTES}\` on ${new Date(started).toISOString()}, commit ${commit}, Node ${process.version}. ` +
    `${WORKERS} clients at about ${RATE} requests/s in all (a steady moderate load, not a stress test), on loopback. ` +
    'The machine is shared with other work (2 cores): latencies move with it.', '');
  L.push(`Mix: ${KINDS.map((k) => `${k} ${Math.round(MIX[k] * 100)}%`).join(', ')}. Event-loop lag is read from outside as the latency of \`GET /api/health\` (no database work).`, '');
  L.push('## Verdict', '');
  L.push('| check | measured | met |', '| --- | --- | --- |');
  for (const v of verdicts) L.push(`| ${v.name} | ${v.measured} | ${v.ok ? 'yes' : '**NO**'} |`);
  L.push('');
  L.push(`Requests: ${requests} (${(requests / (MINUTES * 60)).toFixed(0)}/s). Warm-up: first ${warmupS} s.`, '');
  L.push('| kind | ok | errors | 5xx |', '| --- | ---: | ---: | ---: |');
  for (const k of KINDS) L.push(`| ${k} | ${counts[k].ok} | ${counts[k].err} | ${counts[k].s5xx} |`);
  if (errorSamples.length) L.push('', `Errors seen: ${errorSamples.join('; ')}`);
  L.push('', '## Samples (every 10 s)', '');
  L.push('| t (s) | RSS (MB) | anonymous | file-backed | open fds | health latency (ms) | requests so far | errors so far |', '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of samples) L.push(`| ${s.t} | ${s.rssMb.toFixed(1)} | ${s.anonMb.toFixed(1)} | ${s.fileMb.toFixed(1)} | ${s.fds} | ${s.lagMs.toFixed(1)} | ${s.requests} | ${s.errors} |`);
  L.push('');
  await writeFile(OUT, L.join('\n'));
  process.stderr.write(`soak: wrote ${OUT}\n`);
  return verdicts.every((v) => v.ok) ? 0 : 1;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return 0;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

process.exitCode = await main();
