/**
 * Pluggable sign-in methods (first part), end to end with a real SMTP server: the
 * initiate/complete framework (404 for a missing, non-auth or disabled method), magic link (204
 * for every identity, single-use token, replay and missing token 400, consume with the redirect
 * rules of the spec, require_verified 403) and one-time codes (six digits, wrong code 400, void
 * after five wrong tries, single use, only the newest code counts).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startSvc, type Svc } from '../helpers/server.js';
import { startSmtp, type TestSmtp, type Captured } from '../helpers/smtp.js';
import { MAIL_TOKEN_RE, sleep, tokenFromLog } from '../helpers/auth-helpers.js';
import { jsonLogLines } from '../helpers/server.js';

const PW = 'methods-pass-1';
let smtp: TestSmtp;
let srv: Svc;

const text = (m: Captured) => m.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
const to = (addr: string) => (m: Captured) => m.to.includes(addr);
const post = (path: string, body: unknown, headers?: Record<string, string>) => srv.api('POST', path, { body, headers });

async function signup(col: string, email: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await srv.api('POST', `/api/collections/${col}/records`, { token: srv.suToken, body: { email, password: PW, passwordConfirm: PW, ...extra } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

/** The next mail to `addr` after `count` earlier ones. */
async function nextMail(addr: string, count: number): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mine = smtp.messages.filter(to(addr));
    if (mine.length > count) return text(mine[count]);
    if (Date.now() > deadline) throw new Error(`no mail to ${addr}`);
    await sleep(20);
  }
}
const mails = (addr: string) => smtp.messages.filter(to(addr)).length;

before(async () => {
  smtp = await startSmtp();
  srv = await startSvc({
    env: { SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'accounts@svc.test', SERVICE_RATE_LIMIT_MAX: '0' },
  });
  await srv.createCollection({
    name: 'members', type: 'auth', fields: [],
    options: { auth: { methods: {
      magic_link: { enabled: true, ttl_s: 600, redirect_default: '/welcome', redirect_allow: ['/app/', '/exact'] },
      otp: { enabled: true },
    } } },
  });
  await srv.createCollection({ name: 'plain', type: 'auth', fields: [] });
  await srv.createCollection({ name: 'strict', type: 'auth', fields: [], options: { auth: { require_verified: true, methods: { magic_link: { enabled: true } } } } });
  await srv.createCollection({ name: 'posts', type: 'base', fields: [{ name: 'title', type: 'text' }] });
});

after(async () => {
  await srv?.stop();
  await smtp?.close();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('methods that are off, unknown, or on a collection that is missing or not an auth collection answer 404', async () => {
  for (const [path, body] of [
    ['/api/collections/plain/auth/magic_link/initiate', { identity: 'x@example.com' }],
    ['/api/collections/plain/auth/magic_link/complete', { token: 'a.b' }],
    ['/api/collections/plain/auth/otp/initiate', { identity: 'x@example.com' }],
    ['/api/collections/plain/auth/otp/complete', { identity: 'x@example.com', code: '123456' }],
    ['/api/collections/members/auth/webauthn/initiate', {}],
    ['/api/collections/members/auth/nope/complete', {}],
    ['/api/collections/posts/auth/otp/initiate', { identity: 'x@example.com' }],
    ['/api/collections/missing/auth/otp/initiate', { identity: 'x@example.com' }],
  ] as const) {
    const r = await post(path, body);
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.body.code, 'not_found');
  }
  const consume = await srv.api('GET', '/api/collections/plain/auth/magic-link/consume?token=a.b');
  assert.equal(consume.status, 404);
});

test('password through the framework: complete signs in; it has no initiate step', async () => {
  await signup('plain', 'pw-user@example.com');
  const ok = await post('/api/collections/plain/auth/password/complete', { identity: 'pw-user@example.com', password: PW });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(typeof ok.body.token, 'string');
  assert.match(ok.headers.get('set-cookie') ?? '', /svc_auth=/);
  const bad = await post('/api/collections/plain/auth/password/complete', { identity: 'pw-user@example.com', password: 'wrong-password' });
  assert.equal(bad.status, 400);
  const init = await post('/api/collections/plain/auth/password/initiate', {});
  assert.equal(init.status, 400);
});

test('magic link: 204 for every identity, a mail only for a real one; the token signs in once', async () => {
  await signup('members', 'ml@example.com');
  const before = mails('ml@example.com');
  const unknown = await post('/api/collections/members/auth/magic_link/initiate', { identity: 'nobody@example.com' });
  assert.equal(unknown.status, 204);
  const known = await post('/api/collections/members/auth/magic_link/initiate', { identity: 'ml@example.com' });
  assert.equal(known.status, 204);
  const mail = await nextMail('ml@example.com', before);
  assert.ok(!smtp.messages.some(to('nobody@example.com')), 'no mail to an unknown identity');
  const token = MAIL_TOKEN_RE.exec(mail)?.[0];
  assert.ok(token, mail);
  assert.match(mail, /\/api\/collections\/members\/auth\/magic-link\/consume\?token=/);
  const r = await post('/api/collections/members/auth/magic_link/complete', { token });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.record.email, 'ml@example.com');
  const me = await srv.api('GET', '/api/collections/members/auth/sessions', { token: r.body.token });
  assert.notEqual(me.status, 401, 'the token works');
  const replay = await post('/api/collections/members/auth/magic_link/complete', { token });
  assert.equal(replay.status, 400);
  const missing = await post('/api/collections/members/auth/magic_link/complete', {});
  assert.equal(missing.status, 400);
  const forged = await post('/api/collections/members/auth/magic_link/complete', { token: `${token!.split('.')[0]}.${'A'.repeat(43)}` });
  assert.equal(forged.status, 400);
  const noIdentity = await post('/api/collections/members/auth/magic_link/initiate', {});
  assert.equal(noIdentity.status, 400);
});

/** A fresh magic-link token for `email` of `members`. */
async function magicToken(email: string, col = 'members'): Promise<string> {
  const n = mails(email);
  assert.equal((await post(`/api/collections/${col}/auth/magic_link/initiate`, { identity: email })).status, 204);
  return MAIL_TOKEN_RE.exec(await nextMail(email, n))![0];
}

test('magic-link consume: cookies and a 302 to a safe, allowed target; everything else falls back', async () => {
  await signup('members', 'consume@example.com');
  const consume = async (redirect?: string) => {
    const token = await magicToken('consume@example.com');
    const qs = `token=${encodeURIComponent(token)}${redirect === undefined ? '' : `&redirect=${encodeURIComponent(redirect)}`}`;
    const r = await fetch(`${srv.url}/api/collections/members/auth/magic-link/consume?${qs}`, { redirect: 'manual' });
    return { status: r.status, location: r.headers.get('location'), cookie: r.headers.get('set-cookie') ?? '', token };
  };
  const ok = await consume('/app/inbox?x=1');
  assert.equal(ok.status, 302);
  assert.equal(ok.location, '/app/inbox?x=1');
  assert.match(ok.cookie, /svc_auth=/);
  assert.equal((await consume('/exact')).location, '/exact');
  assert.equal((await consume()).location, '/welcome', 'absent: the default');
  for (const bad of ['/exact/more', '/other', 'https://evil.example/', '//evil.example/x', '/\\evil', '\\\\evil', '/app/../admin', '/app/./x', '/app/%2e%2e/x', '/app%2fx', '/app/%5cx', '/app/\r\nSet-Cookie:x', 'javascript:alert(1)', 'app/relative']) {
    const r = await consume(bad);
    assert.equal(r.status, 302, bad);
    assert.equal(r.location, '/welcome', `${JSON.stringify(bad)} falls back to the default`);
  }
  // replay and missing token
  const replay = await fetch(`${srv.url}/api/collections/members/auth/magic-link/consume?token=${encodeURIComponent(ok.token)}`, { redirect: 'manual' });
  assert.equal(replay.status, 400);
  const none = await fetch(`${srv.url}/api/collections/members/auth/magic-link/consume`, { redirect: 'manual' });
  assert.equal(none.status, 400);
});

test('magic-link consume: unsafe defaults are refused by the API; require_verified answers 403', async () => {
  for (const dflt of ['//evil.example', '/../up', 'https://evil.example/', '/a%2fb']) {
    const bad = await srv.api('PATCH', '/api/collections/members', { token: srv.suToken, body: { options: { auth: { methods: { magic_link: { enabled: true, redirect_default: dflt } } } } } });
    assert.equal(bad.status, 400, `${dflt} refused`);
  }
  await signup('strict', 'unverified@example.com');
  const t2 = await magicToken('unverified@example.com', 'strict');
  const denied = await post('/api/collections/strict/auth/magic_link/complete', { token: t2 });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'email_not_verified');
});

/** The code of the newest OTP mail to `email` after `n` earlier mails. */
async function otpCode(email: string): Promise<string> {
  const n = mails(email);
  assert.equal((await post('/api/collections/members/auth/otp/initiate', { identity: email })).status, 204);
  const m = /sign-in code is (\d{6})/.exec(await nextMail(email, n));
  assert.ok(m);
  return m[1];
}

test('one-time code: six digits by mail, single use, wrong codes 400, void after five wrong tries, only the newest counts', async () => {
  await signup('members', 'otp@example.com');
  const unknown = await post('/api/collections/members/auth/otp/initiate', { identity: 'nobody-otp@example.com' });
  assert.equal(unknown.status, 204);
  const code = await otpCode('otp@example.com');
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  const w = await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code: wrong });
  assert.equal(w.status, 400);
  const ok = await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.record.email, 'otp@example.com');
  assert.match(ok.headers.get('set-cookie') ?? '', /svc_auth=/);
  const replay = await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code });
  assert.equal(replay.status, 400);

  // five wrong tries void the code, even the right one after them
  const c2 = await otpCode('otp@example.com');
  const wrong2 = String((Number(c2) + 7) % 1_000_000).padStart(6, '0');
  for (let i = 0; i < 5; i++) assert.equal((await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code: wrong2 })).status, 400);
  assert.equal((await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code: c2 })).status, 400, 'void after five wrong tries');

  // a newer code replaces the older one
  const old = await otpCode('otp@example.com');
  const fresh = await otpCode('otp@example.com');
  if (old !== fresh) assert.equal((await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code: old })).status, 400);
  assert.equal((await post('/api/collections/members/auth/otp/complete', { identity: 'otp@example.com', code: fresh })).status, 200);

  // malformed input
  for (const body of [{ identity: 'otp@example.com' }, { identity: 'otp@example.com', code: '12345' }, { identity: 'otp@example.com', code: 'abcdef' }, { code: '123456' }, { identity: 'nobody-otp@example.com', code: '123456' }]) {
    const r = await post('/api/collections/members/auth/otp/complete', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.code, 'validation_failed');
  }
});

test('method options are validated', async () => {
  for (const methods of [{ magic_link: { enabled: true, ttl_s: 5 } }, { otp: { enabled: true, ttl_s: 'long' } }, { magic_link: { enabled: true, redirect_allow: ['https://x'] } }, { magic_link: { enabled: 'yes' } }]) {
    const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: `bad_${Math.random().toString(36).slice(2, 8)}`, type: 'auth', options: { auth: { methods } } } });
    assert.equal(r.status, 400, JSON.stringify(methods));
  }
});

test('without a mail transport the link and the code are written to the log, and work', async () => {
  const bare = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  try {
    await bare.createCollection({ name: 'members', type: 'auth', fields: [], options: { auth: { methods: { magic_link: { enabled: true }, otp: { enabled: true } } } } });
    const r = await bare.api('POST', '/api/collections/members/records', { token: bare.suToken, body: { email: 'logged@example.com', password: PW, passwordConfirm: PW } });
    assert.equal(r.status, 201, r.text);
    let mark = bare.stderr().length;
    assert.equal((await bare.api('POST', '/api/collections/members/auth/magic_link/initiate', { body: { identity: 'logged@example.com' } })).status, 204);
    const token = await tokenFromLog(bare, 'logged@example.com', mark);
    const ok = await bare.api('POST', '/api/collections/members/auth/magic_link/complete', { body: { token } });
    assert.equal(ok.status, 200, ok.text);

    mark = bare.stderr().length;
    assert.equal((await bare.api('POST', '/api/collections/members/auth/otp/initiate', { body: { identity: 'logged@example.com' } })).status, 204);
    let code = '';
    for (let i = 0; i < 200 && !code; i++) {
      for (const rec of jsonLogLines(bare.stderr().slice(mark))) {
        const m = rec.scope === 'mail' && typeof rec.msg === 'string' ? /sign-in code is (\d{6})/.exec(rec.msg) : null;
        if (m) code = m[1];
      }
      if (!code) await sleep(25);
    }
    assert.match(code, /^\d{6}$/, 'the code is in the log');
    const ok2 = await bare.api('POST', '/api/collections/members/auth/otp/complete', { body: { identity: 'logged@example.com', code } });
    assert.equal(ok2.status, 200, ok2.text);
  } finally {
    await bare.stop();
    rmSync(bare.dataDir, { recursive: true, force: true });
  }
});

test('initiate and complete are rate limited per identity; a method may turn its limit off', async () => {
  const limited = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '3', SERVICE_RATE_LIMIT_WINDOW: '60' } });
  try {
    await limited.createCollection({ name: 'members', type: 'auth', fields: [], options: { auth: { methods: { magic_link: { enabled: true }, otp: { enabled: true, rate_limit: 'off' } } } } });
    const hit = (path: string, body: unknown) => limited.api('POST', `/api/collections/members/auth/${path}`, { body });
    for (let i = 0; i < 3; i++) assert.equal((await hit('magic_link/initiate', { identity: 'a@example.com' })).status, 204);
    const over = await hit('magic_link/initiate', { identity: 'a@example.com' });
    assert.equal(over.status, 429);
    assert.equal(over.body.code, 'too_many_requests');
    assert.equal((await hit('magic_link/initiate', { identity: 'b@example.com' })).status, 204, 'another identity has its own budget');
    for (let i = 0; i < 3; i++) assert.equal((await hit('magic_link/complete', { token: `aaaaaaaaaaaaaaa.${'B'.repeat(43)}` })).status, 400);
    assert.equal((await hit('magic_link/complete', { token: `aaaaaaaaaaaaaaa.${'B'.repeat(43)}` })).status, 429, 'complete is limited too');
    for (let i = 0; i < 6; i++) assert.equal((await hit('otp/initiate', { identity: 'a@example.com' })).status, 204, 'rate_limit off');
  } finally {
    await limited.stop();
    rmSync(limited.dataDir, { recursive: true, force: true });
  }
});
