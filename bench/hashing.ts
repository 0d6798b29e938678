/**
 * Password hashing beside file serving: `npm run bench:hashing [-- --baseline=<dist/cli/main.js>
 * --rounds=N --seconds=S]`.
 *
 * - File GETs during sign-ins: wrk on a 64 KiB stored file (16 connections), alone and while six
 *   connections sign in with a password without pause (a second wrk); the ratio of the two.
 * - Sign-ins against raw argon2: auth-with-password (two connections a hashing thread) against
 *   `@node-rs/argon2` verify of the same stored hash in this process (bench/lib/probes.ts), with
 *   as many verifications in flight as svc has hashing threads, and with every core busy.
 *
 * With `--baseline`, the same series run against that build too, alternating builds round by
 * round. Rate limits off. Writes bench/results/hashing.md and prints it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, SvcClient, startSvc, type SvcInstance } from './lib/svc.js';
import { median, runWrk } from './lib/wrk.js';
import { wrkScript } from './lib/scenarios.js';
import { argon2Probe, openReadOnly } from './lib/probes.js';
import { availableParallelism } from 'node:os';
import { DEFAULT_HASH_THREADS } from '../src/auth/passwords.js';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const ROUNDS = Number(arg('rounds') ?? 3);
const SECONDS = Number(arg('seconds') ?? 3);
const BASELINE = arg('baseline');
const PASSWORD = 'bench-pass-123';
const SIGN_IN_CONNECTIONS = 6;
const log = (m: string) => console.error(`bench:hashing: ${m}`);

/** A server with one user and one stored file; answers what the series need. */
async function prepare(cliPath?: string): Promise<{ svc: SvcInstance; fileUrl: string; signIn: string; phc: string }> {
  const svc = await startSvc({ cliPath, env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(svc.email, svc.password);
  await su.request('POST', '/api/collections', { name: 'members', type: 'auth', fields: [], createRule: null });
  const user = await su.request<{ id: string }>('POST', '/api/collections/members/records', { email: 'm@bench.test', password: PASSWORD, passwordConfirm: PASSWORD });
  await su.request('POST', '/api/collections', { name: 'docs', type: 'base', viewRule: '@public', createRule: '@public', fields: [{ name: 'doc', type: 'file', options: { maxSize: 1 << 20 } }] });
  const fd = new FormData();
  fd.append('doc', new Blob([Buffer.alloc(64 * 1024, 7)]), 'data.bin');
  const rec = (await (await fetch(`${svc.url}/api/collections/docs/records`, { method: 'POST', body: fd })).json()) as { id: string; doc: string };
  const db = openReadOnly(join(svc.dataDir, 'data.db'));
  const phc = String((db.prepare('SELECT passwordHash FROM members WHERE id = ?').raw(true).get([user.id]) as unknown[])[0]);
  db.close();
  const signIn = JSON.stringify({ identity: 'm@bench.test', password: PASSWORD });
  return { svc, fileUrl: `${svc.url}/api/files/docs/${rec.id}/${rec.doc}`, signIn, phc };
}

interface Round { filesAlone: number; filesDuring: number; signIns: number; raw: number; rawAllCores: number }

async function round(s: Awaited<ReturnType<typeof prepare>>): Promise<Round> {
  const files = () => runWrk({ url: s.fileUrl, connections: 16, durationS: SECONDS });
  const signIns = (connections: number, durationS: number) => runWrk({ url: `${s.svc.url}/api/collections/members/auth-with-password`, connections, durationS, timeoutS: 10, script: wrkScript('static.lua'), scriptArgs: ['POST', s.signIn] });
  const filesAlone = (await files()).requestsPerSec;
  // the sign-ins start first and end after the file load
  const during = signIns(SIGN_IN_CONNECTIONS, SECONDS + 2);
  await new Promise((r) => setTimeout(r, 1000));
  const filesDuring = (await files()).requestsPerSec;
  await during;
  const signed = (await signIns(2 * DEFAULT_HASH_THREADS, SECONDS)).requestsPerSec;
  const raw = (await argon2Probe(s.phc, PASSWORD)(SECONDS)).rps;
  const rawAllCores = (await argon2Probe(s.phc, PASSWORD, availableParallelism() + 1)(SECONDS)).rps;
  return { filesAlone, filesDuring, signIns: signed, raw, rawAllCores };
}

async function main(): Promise<void> {
  const builds: Array<{ name: string; cli?: string }> = [{ name: 'this build' }, ...(BASELINE ? [{ name: 'baseline', cli: BASELINE }] : [])];
  const results = new Map<string, Round[]>(builds.map((b) => [b.name, []]));
  const servers = new Map<string, Awaited<ReturnType<typeof prepare>>>();
  try {
    for (const b of builds) servers.set(b.name, await prepare(b.cli));
    for (let r = 0; r < ROUNDS; r++) {
      for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
        const got = await round(servers.get(b.name)!);
        results.get(b.name)!.push(got);
        log(`round ${r + 1}, ${b.name}: ${JSON.stringify(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, Math.round(v)])))}`);
      }
    }
  } finally {
    for (const s of servers.values()) await s.svc.stop();
  }
  const rows = builds.map((b) => {
    const rs = results.get(b.name)!;
    const m = (f: (x: Round) => number) => median(rs.map(f));
    return `| ${b.name} | ${Math.round(m((x) => x.filesAlone)).toLocaleString('en')} | ${Math.round(m((x) => x.filesDuring)).toLocaleString('en')} | ${m((x) => x.filesDuring / x.filesAlone).toFixed(2)} | ${Math.round(m((x) => x.signIns))} | ${Math.round(m((x) => x.raw))} | ${m((x) => x.signIns / x.raw).toFixed(2)} | ${Math.round(m((x) => x.rawAllCores))} | ${m((x) => x.signIns / x.rawAllCores).toFixed(2)} |`;
  });
  const md = [
    '# Password hashing beside file serving (`npm run bench:hashing`)', '',
    `${new Date().toISOString()}, Node ${process.version}; ${ROUNDS} rounds of ${SECONDS} s, medians; file GETs: wrk -c16 on a 64 KiB file; during: while ${SIGN_IN_CONNECTIONS} connections sign in; sign-ins: wrk -c${2 * DEFAULT_HASH_THREADS}; raw: @node-rs/argon2 verify, ${DEFAULT_HASH_THREADS} in flight (svc's hashing threads) and ${availableParallelism() + 1} (every core).`, '',
    '| build | file GETs/s alone | during sign-ins | ratio (target ≥ 0.9) | sign-ins/s | raw verify/s, same threads | ratio (target ≥ 0.95) | raw verify/s, every core | ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |', ...rows, '',
  ].join('\n');
  mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(REPO_ROOT, 'bench', 'results', 'hashing.md'), md);
  console.log(md);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
