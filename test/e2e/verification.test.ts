/**
 * E2E: email verification and password reset with real delivery (spec 1-core-api.md, "Auth
 * endpoints", "States and transitions"): SMTP to a real SMTP server in the test process, the
 * local mail command winning over SMTP, identical 204s (status and timing) for existing and
 * missing addresses, single-use tokens stored hashed.
 *
 * Server A: SMTP (transport none, with credentials), global rate limit off (the timing test sends
 * many requests for one address). Server B: SERVICE_SENDMAIL_COMMAND and SMTP both set.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { startSmtp, type TestSmtp, type Captured } from '../helpers/smtp.js';
import { assertError, login, MAIL_TOKEN_RE, median, sleep, withDb } from '../helpers/auth-helpers.js';
import { tamperBase64url } from '../helpers/tamper.js';

const PW = 'verify-pass-1';
let smtp: TestSmtp;
let srv: Svc;
let cmdSrv: Svc;
let mailDir = '';

/** The token of a captured message (quoted-printable soft breaks removed). */
function tokenOf(m: Captured): string {
  const hit = MAIL_TOKEN_RE.exec(m.raw.replace(/=\r?\n/g, ''));
  assert.ok(hit, `message carries a token:\n${m.raw}`);
  return hit[0];
}

const to = (addr: string) => (m: Captured) => m.to.includes(addr);

async function signup(s: Svc, email: string): Promise<string> {
  const r = await s.api('POST', '/api/collections/users/records', { body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

/** Waits until the queue processed everything sent so far: a marker mail to an existing address arrives. */
async function flush(marker: string): Promise<void> {
  const before = smtp.messages.filter(to(marker)).length;
  assert.equal((await srv.api('POST', '/api/collections/users/request-password-reset', { body: { email: marker } })).status, 204);
  const deadline = Date.now() + 10_000;
  while (smtp.messages.filter(to(marker)).length <= before) {
    if (Date.now() > deadline) throw new Error('marker mail never arrived');
    await sleep(20);
  }
}

before(async () => {
  smtp = await startSmtp({ users: { mailer: 'pw-for-smtp' } });
  mailDir = mkdtempSync(join(tmpdir(), 'svc-mailcmd-'));
  const smtpEnv = {
    SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none',
    SERVICE_SMTP_USERNAME: 'mailer', SERVICE_SMTP_PASSWORD: 'pw-for-smtp', SERVICE_SMTP_FROM: 'accounts@svc.test',
  };
  [srv, cmdSrv] = await Promise.all([
    startSvc({ env: { ...smtpEnv, SERVICE_RATE_LIMIT_MAX: '0' } }),
    startSvc({ env: { ...smtpEnv, SERVICE_SENDMAIL_COMMAND: `cat > "${mailDir}/part-$$" && mv "${mailDir}/part-$$" "${mailDir}/mail-$$.eml"` } }),
  ]);
  for (const s of [srv, cmdSrv]) {
    await s.createCollection({ name: 'users', type: 'auth', fields: [], createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' });
  }
  await srv.createCollection({ name: 'others', type: 'auth', fields: [], createRule: '@public' });
  await srv.createCollection({ name: 'posts', type: 'base', fields: [] });
  await signup(srv, 'marker@example.com');
});

after(async () => {
  await srv?.stop();
  await cmdSrv?.stop();
  await smtp?.close();
  rmSync(mailDir, { recursive: true, force: true });
});

test('request-verification: 204, a mail over SMTP (authenticated, from SERVICE_SMTP_FROM); confirm marks verified; second use 400', async () => {
  const id = await signup(srv, 'vera@example.com');
  const r = await srv.api('POST', '/api/collections/users/request-verification', { body: { email: 'Vera@Example.com' } });
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  const m = await smtp.waitFor(to('vera@example.com'));
  assert.equal(m.user, 'mailer', 'SMTP credentials were used');
  assert.equal(m.from, 'accounts@svc.test');
  assert.match(m.raw, /^Subject: Verify your email\r?$/m);
  assert.match(m.raw.replace(/=\r?\n/g, ''), /confirm-verification/);
  const token = tokenOf(m);

  assertError(await srv.api('POST', '/api/collections/others/confirm-verification', { body: { token } }), 400, 'validation_failed', 'token of another collection');
  assertError(await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token, password: 'whatever-long-1' } }), 400, 'validation_failed', 'verification token used for a reset');
  const ok = await srv.api('POST', '/api/collections/users/confirm-verification', { body: { token } });
  assert.equal(ok.status, 204, ok.text);
  const v = await srv.api('GET', `/api/collections/users/records/${id}`, { token: srv.suToken });
  assert.equal(v.body.verified, true);
  const again = await srv.api('POST', '/api/collections/users/confirm-verification', { body: { token } });
  assertError(again, 400, 'validation_failed', 'second use');
  assert.equal(again.body.data.token.code, 'validation_value');

  // a verified record gets no further verification mail; an unknown address gets none at all
  await srv.api('POST', '/api/collections/users/request-verification', { body: { email: 'vera@example.com' } });
  await srv.api('POST', '/api/collections/users/request-verification', { body: { email: 'nobody-here@example.com' } });
  await flush('marker@example.com');
  assert.equal(smtp.messages.filter(to('vera@example.com')).length, 1);
  assert.equal(smtp.messages.filter(to('nobody-here@example.com')).length, 0);
});

test('request-* input: 400 for a missing or malformed email (same for every address), 404 for a base or unknown collection', async () => {
  for (const path of ['request-verification', 'request-password-reset']) {
    const cases: Array<[string, unknown, string]> = [
      ['no email', {}, 'validation_required'],
      ['empty email', { email: '' }, 'validation_required'],
      ['not a string', { email: 42 }, 'validation_required'],
      ['malformed', { email: 'not-an-address' }, 'validation_invalid_email'],
    ];
    for (const [name, body, code] of cases) {
      const r = await srv.api('POST', `/api/collections/users/${path}`, { body });
      assertError(r, 400, 'validation_failed', `${path} ${name}`);
      assert.equal(r.body.data.email.code, code, `${path} ${name}`);
    }
    assertError(await srv.api('POST', `/api/collections/posts/${path}`, { body: { email: 'a@example.com' } }), 404, 'not_found', `${path} base collection`);
    assertError(await srv.api('POST', `/api/collections/nope/${path}`, { body: { email: 'a@example.com' } }), 404, 'not_found', `${path} unknown collection`);
  }
  for (const path of ['confirm-verification', 'confirm-password-reset']) {
    assertError(await srv.api('POST', `/api/collections/users/${path}`, { body: { password: 'long-enough-pass' } }), 400, 'validation_failed', `${path} without token`);
    assertError(await srv.api('POST', `/api/collections/users/${path}`, { body: { token: 'garbage', password: 'long-enough-pass' } }), 400, 'validation_failed', `${path} garbage token`);
    assertError(await srv.api('POST', `/api/collections/users/${path}`, { body: { token: 'abcdefghijklmno.' + 'A'.repeat(43), password: 'long-enough-pass' } }), 400, 'validation_failed', `${path} well-formed unknown token`);
  }
});

test('password reset: short password leaves the token usable; success ends every session; reuse and expiry 400; tokens stored hashed', async () => {
  const id = await signup(srv, 'rita@example.com');
  const s1 = await login(srv, 'users', 'rita@example.com', PW);
  const s2 = await login(srv, 'users', 'rita@example.com', PW);
  assert.equal(s2.status, 200, s2.text);
  assert.equal((await srv.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'rita@example.com' } })).status, 204);
  const m = await smtp.waitFor(to('rita@example.com'));
  assert.match(m.raw, /^Subject: Reset your password\r?$/m);
  const token = tokenOf(m);
  const verifier = token.split('.')[1];
  const stored = withDb(srv.dataDir, (db) => db.prepare('SELECT * FROM "_authTokens"').all() as any[]);
  assert.ok(stored.length > 0);
  assert.ok(!JSON.stringify(stored).includes(verifier), 'the token is stored hashed only');

  const short = await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token, password: 'short', passwordConfirm: 'short' } });
  assertError(short, 400, 'validation_failed', 'short password');
  assert.equal(short.body.data.password.code, 'validation_min');
  const ok = await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token, password: 'rita-new-pass-1', passwordConfirm: 'rita-new-pass-1' } });
  assert.equal(ok.status, 204, `the token survived the rejected attempt: ${ok.text}`);
  for (const s of [s1, s2]) assertError(await srv.api('GET', `/api/collections/users/records/${id}`, { token: s.body.token }), 401, 'unauthorized', 'session from before the reset');
  assert.equal((await login(srv, 'users', 'rita@example.com', PW)).status, 400, 'old password refused');
  assert.equal((await login(srv, 'users', 'rita@example.com', 'rita-new-pass-1')).status, 200);
  assertError(await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token, password: 'rita-new-pass-2' } }), 400, 'validation_failed', 'second use');

  // an expired token is refused too
  await srv.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'rita@example.com' } });
  const deadline = Date.now() + 10_000;
  while (smtp.messages.filter(to('rita@example.com')).length < 2 && Date.now() < deadline) await sleep(20);
  const t2 = tokenOf(smtp.messages.filter(to('rita@example.com'))[1]);
  withDb(srv.dataDir, (db) => db.prepare('UPDATE "_authTokens" SET "expires" = ? WHERE "id" = ?').run([Date.now() - 1000, t2.split('.')[0]]));
  assertError(await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token: t2, password: 'rita-new-pass-3' } }), 400, 'validation_failed', 'expired token');
  // a tampered verifier with a valid selector
  await srv.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'rita@example.com' } });
  while (smtp.messages.filter(to('rita@example.com')).length < 3 && Date.now() < deadline) await sleep(20);
  const t3 = tokenOf(smtp.messages.filter(to('rita@example.com'))[2]);
  const tampered = tamperBase64url(t3);
  assertError(await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token: tampered, password: 'rita-new-pass-3' } }), 400, 'validation_failed', 'tampered verifier');
  assert.equal((await srv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token: t3, password: 'rita-new-pass-3' } })).status, 204, 'the genuine token still works');
});

test('request-password-reset timing: existing and missing addresses are indistinguishable (medians over 60 requests each)', async () => {
  await signup(srv, 'timing@example.com');
  const send = async (email: string) => {
    const t0 = process.hrtime.bigint();
    const r = await fetch(`${srv.url}/api/collections/users/request-password-reset`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }),
    });
    await r.arrayBuffer();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.equal(r.status, 204);
    return ms;
  };
  for (let i = 0; i < 10; i++) {
    await send('timing@example.com');
    await send(`warm-missing-${i}@example.com`);
  }
  const existing: number[] = [];
  const missing: number[] = [];
  for (let i = 0; i < 60; i++) {
    // alternate the order so background work after an existing address burdens both series alike
    if (i % 2) {
      existing.push(await send('timing@example.com'));
      missing.push(await send(`missing-${i}@example.com`));
    } else {
      missing.push(await send(`missing-${i}@example.com`));
      existing.push(await send('timing@example.com'));
    }
  }
  const [me, mm] = [median(existing), median(missing)];
  const bound = Math.max(5, 0.25 * Math.max(me, mm));
  assert.ok(Math.abs(me - mm) < bound, `median existing ${me.toFixed(2)} ms vs missing ${mm.toFixed(2)} ms (bound ${bound.toFixed(2)} ms)`);
  await flush('marker@example.com');
});

test('SERVICE_SENDMAIL_COMMAND wins over SMTP: the message goes to the command, not the SMTP server', async () => {
  await signup(cmdSrv, 'cmd@example.com');
  assert.equal((await cmdSrv.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'cmd@example.com' } })).status, 204);
  const deadline = Date.now() + 10_000;
  let files: string[] = [];
  // the command writes a part file and renames it when complete
  while ((files = readdirSync(mailDir).filter((f) => f.endsWith('.eml'))).length === 0 && Date.now() < deadline) await sleep(25);
  assert.equal(files.length, 1, 'one message written by the command');
  const raw = readFileSync(join(mailDir, files[0]), 'utf8');
  assert.match(raw, /^To: cmd@example\.com$/m);
  assert.match(raw, /^From: accounts@svc\.test$/m);
  const token = MAIL_TOKEN_RE.exec(raw.replace(/=\r?\n/g, ''))![0];
  assert.ok(!smtp.messages.some(to('cmd@example.com')), 'nothing went over SMTP');
  const ok = await cmdSrv.api('POST', '/api/collections/users/confirm-password-reset', { body: { token, password: 'cmd-new-pass-1' } });
  assert.equal(ok.status, 204, ok.text);
  assert.equal((await login(cmdSrv, 'users', 'cmd@example.com', 'cmd-new-pass-1')).status, 200);
});
