/**
 * The durable mail queue (2-uploads-and-mail.md "Mail send API": enqueue): every message
 * `app.mail.enqueue` accepted is delivered even when the server is killed with SIGKILL before
 * delivering it (the next start does), through a real SMTP server; a backend that refuses is
 * retried; delivery is at least once (a message the backend took just before the kill may come
 * twice, never more often than the deliveries under way).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { sleep } from '../helpers/auth-helpers.js';

const APP = join(ROOT, 'test', 'fixtures', 'app-ops.mjs');
const dataDir = mkdtempSync(join(tmpdir(), 'svc-mailq-'));
let srv: Svc | undefined;
let smtp: TestSmtp | undefined;

after(async () => {
  if (srv && srv.proc.exitCode === null && srv.proc.signalCode === null) srv.proc.kill('SIGKILL');
  await smtp?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const env = (port: number) => ({ OPS_PLAIN: '1', OPS_MAIL_GROUP: '1', SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'app@example.com' });
const subjectsOf = (s: TestSmtp) => s.messages.map((m) => /^Subject: (.*)$/m.exec(m.raw)?.[1] ?? '');

test('kill -9 with queued mail: every accepted message is delivered after the restart', { timeout: 120_000 }, async () => {
  // a slow SMTP server: 8 deliveries at once, 150 ms each, so most of 200 messages wait in the queue
  smtp = await startSmtp({ delayMs: 150 });
  srv = await startSvc({ args: [`--app=${APP}`], env: env(smtp.port), dataDir });
  const accepted: string[] = [];
  await Promise.all(Array.from({ length: 200 }, async (_, i) => {
    const subject = `queued ${i}`;
    const r = await srv!.api('POST', '/api/enqueue', { body: { message: { to: `user${i}@example.com`, subject, text: `message ${i}` } } });
    if (r.body?.ok) accepted.push(subject);
  }));
  assert.equal(accepted.length, 200, 'every enqueue was accepted');
  await sleep(300);
  srv.proc.kill('SIGKILL');
  await new Promise((r) => (srv!.proc.exitCode !== null || srv!.proc.signalCode !== null ? r(null) : srv!.proc.once('exit', r)));
  const beforeRestart = new Set(subjectsOf(smtp));
  assert.ok(beforeRestart.size < 200, `the kill came before the queue was done (${beforeRestart.size} delivered)`);

  srv = await startSvc({ args: [`--app=${APP}`], env: env(smtp.port), dataDir, superuser: false });
  const deadline = Date.now() + 60_000;
  while (new Set(subjectsOf(smtp)).size < 200 && Date.now() < deadline) await sleep(200);
  const got = subjectsOf(smtp);
  const missing = accepted.filter((s) => !got.includes(s));
  assert.deepEqual(missing, [], 'no accepted message is lost');
  const dupes = got.length - new Set(got).size;
  assert.ok(dupes <= 8, `at most the deliveries under way at the kill come twice (${dupes})`);
  await srv.stop();
  srv = undefined;
});

test('a backend that refuses: the message is retried and delivered once the backend is back', { timeout: 60_000 }, async () => {
  await smtp?.close();
  // no SMTP server on the port: the first attempt fails, the retry (1 s later) succeeds
  const probe = await startSmtp(); // take a free port number, then free it
  const port = probe.port;
  await probe.close();
  srv = await startSvc({ args: [`--app=${APP}`], env: env(port), dataDir, superuser: false });
  const r = await srv.api('POST', '/api/enqueue', { body: { message: { to: 'late@example.com', subject: 'retried', text: 'after a failure' } } });
  assert.deepEqual(r.body, { ok: true, result: null });
  for (let i = 0; i < 200 && !/mail to late@example\.com failed \(attempt 1\)/.test(srv.stderr()); i++) await sleep(50);
  assert.match(srv.stderr(), /mail to late@example\.com failed \(attempt 1\), retrying in 1 s/);
  smtp = await startSmtp({ port });
  const m = await smtp.waitFor((x) => x.to.includes('late@example.com'), 15_000);
  assert.match(m.raw, /Subject: retried/);
  await srv.stop();
  srv = undefined;
});
