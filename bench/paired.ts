/**
 * Paired comparison of two builds ("no loss of speed"):
 *
 *   npm run bench:paired -- --baseline=/path/to/other/dist/cli/main.js [--rounds=8] [--seconds=3] [--only=delete,create]
 *
 * Starts the baseline build and this build (dist/) side by side, each on its own data directory
 * seeded identically through the REST API (100 users, 10,000 posts, 200,000 posts to delete),
 * and runs every scenario as alternating wrk runs, A B B A A B …, so that neither build is always
 * second on a shared machine. A scenario's figure is the median over rounds of (this build's
 * requests/s ÷ the baseline's of the same round). Writes bench/results/paired.md.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO_ROOT, SvcClient, startSvc, type SvcInstance } from './lib/svc.js';
import { median, runWrk, type WrkOptions } from './lib/wrk.js';
import { createPostsCollection, createUsersCollection, postId, seedPosts, seedUsers, userId, userToken } from './lib/seed.js';
import { wrkScript } from './lib/scenarios.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BASELINE = arg('baseline');
const ROUNDS = Number(arg('rounds') ?? 8);
const SECONDS = Number(arg('seconds') ?? 3);
/** `--only=delete,update`: scenarios whose label contains any of these words */
const ONLY = (arg('only') ?? '').split(',').filter(Boolean);
const USERS = 100;
const POSTS = 10_000;
const DELETES = Number(arg("deletes") ?? 200_000);
if (!BASELINE) {
  console.error('usage: npm run bench:paired -- --baseline=<other build>/dist/cli/main.js');
  process.exit(2);
}
const log = (m: string) => console.error(`bench:paired: ${m}`);

interface Side {
  name: string;
  svc: SvcInstance;
  token: string;
  su: string;
  /** next delete index per round */
  nextDelete: number;
}

async function prepare(name: string, cliPath?: string): Promise<Side> {
  const svc = await startSvc({ cliPath, env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  const su = new SvcClient(svc.url);
  await su.loginSuperuser(svc.email, svc.password);
  const usersId = await createUsersCollection(su);
  await createPostsCollection(su, 'posts', usersId, 'open');
  await createPostsCollection(su, 'doomed', usersId, 'open');
  await seedUsers(svc.url, su.token, USERS);
  await seedPosts(svc.url, su.token, 'posts', 'a', 0, POSTS, USERS);
  await seedPosts(svc.url, su.token, 'doomed', 'd', 0, DELETES, USERS);
  return { name, svc, token: await userToken(svc.url, 0), su: su.token, nextDelete: 0 };
}

interface Scenario {
  label: string;
  load(side: Side, round: number): WrkOptions;
}

const scenarios: Scenario[] = [
  { label: 'get by id, @public', load: (s) => ({ url: `${s.svc.url}/api/collections/posts/records/${postId('a', POSTS / 2)}` }) },
  // an error answer: the record does not exist (404 not_found)
  { label: 'get by id, missing (404)', load: (s) => ({ url: `${s.svc.url}/api/collections/posts/records/nosuchrecord00` }) },
  { label: 'list 20 with totals', load: (s) => ({ url: `${s.svc.url}/api/collections/posts/records?perPage=20&sort=-created` }) },
  {
    label: 'list 20, skipTotal, page cache bypassed',
    load: (s) => ({ url: `${s.svc.url}/api/collections/posts/records?perPage=20&skipTotal=1`, script: wrkScript('distinct-query.lua') }),
  },
  {
    // the newest first under a filter on an unindexed field: walks the `created` index where there
    // is one, else reads and sorts every matching row
    label: 'list 20 newest, unindexed filter, skipTotal, page cache bypassed',
    load: (s) => ({ url: `${s.svc.url}/api/collections/posts/records?perPage=20&skipTotal=1&sort=-created&filter=${encodeURIComponent("description != ''")}`, script: wrkScript('distinct-query.lua') }),
  },
  {
    label: 'create, 64 connections',
    load: (s, r) => ({ url: `${s.svc.url}/api/collections/posts/records`, headers: { Authorization: `Bearer ${s.token}` }, script: wrkScript('create-post.lua'), scriptArgs: [userId(0), `${s.name}${r}`], timeoutS: 10 }),
  },
  {
    label: 'update by id, 16 connections',
    load: (s) => ({ url: s.svc.url, connections: 16, timeoutS: 10, headers: { Authorization: `Bearer ${s.token}` }, script: wrkScript('update-post.lua'), scriptArgs: ['/api/collections/posts/records/', 'posta', String(POSTS)] }),
  },
  {
    label: 'delete by id (superuser)',
    load: (s) => {
      // a fresh slice of seeded ids per run, more than a run can delete
      const from = s.nextDelete;
      s.nextDelete += Math.floor(DELETES / (ROUNDS + 1));
      const file = join(tmpdir(), `paired-delete-${s.name}-${from}.txt`);
      writeFileSync(file, Array.from({ length: Math.floor(DELETES / (ROUNDS + 1)) }, (_, k) => postId('d', from + k)).join('\n'));
      return { url: s.svc.url, durationS: 1, headers: { Authorization: `Bearer ${s.su}` }, script: wrkScript('delete-ids.lua'), scriptArgs: ['/api/collections/doomed/records/', file] };
    },
  },
];

async function main(): Promise<void> {
  log(`seeding the baseline (${BASELINE}) and this build`);
  const base = await prepare('base', BASELINE);
  const mine = await prepare('this');
  const rows: string[] = [];
  try {
    for (const sc of scenarios.filter((x) => ONLY.length === 0 || ONLY.some((w) => x.label.includes(w)))) {
      const ratios: number[] = [];
      const a: number[] = [];
      const b: number[] = [];
      const errors = { base: 0, this: 0 };
      for (let r = 0; r < ROUNDS; r++) {
        // A B B A A B …: each build goes first in half of the rounds
        const order = r % 2 === 0 ? [base, mine] : [mine, base];
        const got: Record<string, number> = {};
        for (const side of order) {
          const res = await runWrk({ durationS: SECONDS, connections: 64, ...sc.load(side, r) });
          got[side.name] = res.requestsPerSec;
          errors[side.name as 'base' | 'this'] += res.errors;
        }
        a.push(got.base);
        b.push(got.this);
        ratios.push(got.this / got.base);
      }
      const line = `| ${sc.label} | ${Math.round(median(a)).toLocaleString('en')} | ${Math.round(median(b)).toLocaleString('en')} | ${median(ratios).toFixed(3)} | ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} | ${errors.base} / ${errors.this} |`;
      log(line);
      rows.push(line);
    }
  } finally {
    await base.svc.stop();
    await mine.svc.stop();
  }
  const md = [
    `# Paired run: this build against ${BASELINE}`,
    '',
    `${new Date().toISOString()}, Node ${process.version}; ${ROUNDS} rounds of ${SECONDS} s per build and scenario (deletes 1 s), alternating which build runs first; wrk -c64 unless noted.`,
    '',
    '| scenario | baseline req/s (median) | this build req/s (median) | this ÷ baseline (median of rounds) | range of rounds | errors (baseline / this) |',
    '| --- | ---: | ---: | ---: | --- | --- |',
    ...rows,
    '',
  ].join('\n');
  mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(REPO_ROOT, 'bench', 'results', 'paired.md'), md);
  console.log(md);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
