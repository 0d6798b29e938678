/**
 * Sign-in methods benchmark: `npm run bench:auth-methods`.
 *
 * - Initiations of magic link and one-time code answer without waiting for mail: requests/s of
 *   `…/auth/magic_link/initiate` and `…/auth/otp/initiate` for existing identities (each queues a
 *   token and a mail), against the target of 2,000/s.
 * - A magic-link completion costs no more than a password sign-in minus the hash: requests/s of
 *   `…/auth/magic_link/complete` (each consumes a distinct mailed token and issues a session)
 *   beside `auth-refresh` (a session issued for a bearer token, no hash) in the same run,
 *   alternating rounds.
 *
 * Mail goes to a real SMTP server in this process (the tokens are read from it). Rate limits off.
 * Writes bench/results/auth-methods.md and prints it.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO_ROOT, SvcClient, startSvc } from './lib/svc.js';
import { median, runWrk } from './lib/wrk.js';
import { wrkScript } from './lib/scenarios.js';
import { startSmtp } from '../test/helpers/smtp.js';

const USERS = 200;
const ROUNDS = 3;
const TOKEN_RE = /\b[a-z0-9]{15}\.[A-Za-z0-9_-]{43}\b/;
const log = (m: string) => console.error(`bench:auth-methods: ${m}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const smtp = await startSmtp();
  const svc = await startSvc({
    env: { SERVICE_RATE_LIMIT_MAX: '0', SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'bench@svc.test' },
  });
  const rows: string[] = [];
  try {
    const su = new SvcClient(svc.url);
    await su.loginSuperuser(svc.email, svc.password);
    await su.request('POST', '/api/collections', {
      name: 'members', type: 'auth', fields: [], createRule: null,
      options: { auth: { methods: { magic_link: { enabled: true }, otp: { enabled: true } } } },
    });
    log(`creating ${USERS} users`);
    for (let i = 0; i < USERS; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, USERS - i) }, (_, k) => su.request('POST', '/api/collections/members/records', { email: `m${i + k}@bench.test`, password: 'bench-pass-123', passwordConfirm: 'bench-pass-123' })));
    }
    const user = new SvcClient(svc.url);
    const signed = await user.request<{ token: string }>('POST', '/api/collections/members/auth-with-password', { identity: 'm0@bench.test', password: 'bench-pass-123' });

    // ---- initiations (existing identities: each queues a token and a mail). Counted: the answers,
    // and the mails that arrived once the queue drained (past 10,000 waiting tasks the queue drops
    // a task with a warning).
    const delivered = () => smtp.messages.length;
    const settleMail = async () => {
      let last = -1;
      while (delivered() !== last) {
        last = delivered();
        await sleep(1500);
      }
    };
    for (const slug of ['magic_link', 'otp']) {
      const rates: number[] = [];
      let errors = 0;
      let requests = 0;
      await settleMail();
      const before = delivered();
      for (let r = 0; r < ROUNDS; r++) {
        const res = await runWrk({ url: `${svc.url}/api/collections/members/auth/${slug}/initiate`, durationS: 1, connections: 64, script: wrkScript('post-identities.lua'), scriptArgs: ['m', 'bench.test', String(USERS)] });
        rates.push(res.requestsPerSec);
        errors += res.errors;
        requests += res.requests;
        await settleMail();
      }
      const mailed = delivered() - before;
      rows.push(`| ${slug} initiate (existing identities; token and mail queued) | ${Math.round(median(rates)).toLocaleString('en')} | ≥ 2,000/s: ${median(rates) >= 2000 ? 'met' : '**not met**'}; ${errors} errors; ${mailed.toLocaleString('en')} of ${requests.toLocaleString('en')} mails sent (${((100 * mailed) / requests).toFixed(0)}%; the rest dropped past the 10,000-task queue) |`);
      log(rows[rows.length - 1]);
    }

    // ---- magic-link completions beside auth-refresh
    const have = () => smtp.messages.filter((m) => /sign-in link/.test(m.raw)).length;
    const want = have() + 45_000;
    log('minting up to 45,000 magic-link tokens (at most 150 s: mail delivery is the slow part)');
    const mintUntil = Date.now() + 150_000;
    for (let i = 0; have() < want && i < 40 && Date.now() < mintUntil; i++) {
      await runWrk({ url: `${svc.url}/api/collections/members/auth/magic_link/initiate`, durationS: 1, connections: 8, script: wrkScript('post-identities.lua'), scriptArgs: ['m', 'bench.test', String(USERS)] });
      await settleMail();
    }
    const tokens = smtp.messages.map((m) => TOKEN_RE.exec(m.raw.replace(/=\r?\n/g, ''))?.[0]).filter((t): t is string => !!t && smtp.messages.length > 0);
    const unique = [...new Set(tokens)];
    log(`${unique.length} tokens`);
    const per = Math.floor(unique.length / ROUNDS);
    const complete: number[] = [];
    const refresh: number[] = [];
    const ratios: number[] = [];
    let completeErrors = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const file = join(tmpdir(), `auth-methods-${process.pid}-${r}.txt`);
      writeFileSync(file, unique.slice(r * per, (r + 1) * per).map((t) => JSON.stringify({ token: t })).join('\n'));
      const order = r % 2 === 0 ? ['complete', 'refresh'] : ['refresh', 'complete'];
      const got: Record<string, number> = {};
      for (const which of order) {
        const res = which === 'complete'
          ? await runWrk({ url: `${svc.url}/api/collections/members/auth/magic_link/complete`, durationS: 1, connections: 64, script: wrkScript('post-lines.lua'), scriptArgs: [file] })
          : await runWrk({ url: `${svc.url}/api/collections/members/auth-refresh`, durationS: 1, connections: 64, script: wrkScript('post-lines.lua'), scriptArgs: [writeBodies(file)], headers: { Authorization: `Bearer ${signed.token}` } });
        got[which] = res.requestsPerSec;
        if (which === 'complete') completeErrors += res.errors;
      }
      complete.push(got.complete);
      refresh.push(got.refresh);
      ratios.push(got.complete / got.refresh);
    }
    rows.push(`| magic_link complete (a distinct token each; consumes it and issues a session) | ${Math.round(median(complete)).toLocaleString('en')} | ${median(ratios).toFixed(2)} × auth-refresh (${Math.round(median(refresh)).toLocaleString('en')}/s, same run, alternating); ${completeErrors} errors (an exhausted token list would show here) |`);
    log(rows[rows.length - 1]);
  } finally {
    await svc.stop();
    await smtp.close();
  }
  const md = ['# Sign-in methods (`npm run bench:auth-methods`)', '', `${new Date().toISOString()}, Node ${process.version}; wrk -c64; ${USERS} users; mail to a real SMTP server in the bench process; rate limits off.`, '', '| series | req/s (median of rounds) | verdict |', '| --- | ---: | --- |', ...rows, ''].join('\n');
  mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(REPO_ROOT, 'bench', 'results', 'auth-methods.md'), md);
  console.log(md);
}

/** A bodies file of `{}` lines as long as another (auth-refresh reads no body). */
function writeBodies(like: string): string {
  const out = `${like}.refresh`;
  writeFileSync(out, Array.from({ length: 20_000 }, () => '{}').join('\n'));
  return out;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
