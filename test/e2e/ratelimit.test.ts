/**
 * E2E: auth rate limits (spec 1-core-api.md, "Rate limiting"; 0-conventions.md: every request to
 * a limited endpoint counts, successful or not).
 *
 * Server A: SERVICE_RATE_LIMIT_MAX=3 per SERVICE_RATE_LIMIT_WINDOW=5 s, client key = submitted
 * identity (forwarded headers ignored). Server B: --trust-proxy and SERVICE_RATE_LIMIT_MAX=0
 * (global limiter off; per-method custom limits still apply; key = first forwarded hop or X-Real-IP).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc, type ApiResponse } from '../helpers/server.js';
import { assertError, login, sleep } from '../helpers/auth-helpers.js';

const PW = 'ratelimit-pass-1';
let a: Svc;
let b: Svc;

function assert429(r: ApiResponse, ctx: string): void {
  assertError(r, 429, 'too_many_requests', ctx);
  assert.equal(r.body.message, 'Too many requests. Try again later.', ctx);
}

async function signup(s: Svc, col: string, email: string): Promise<string> {
  const r = await s.api('POST', `/api/collections/${col}/records`, { body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

const own = { createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' };

before(async () => {
  [a, b] = await Promise.all([
    // a 5 s window: the attempts a test counts (argon2id sign-ins among them) fall in one window
    // even on a slow machine
    startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '3', SERVICE_RATE_LIMIT_WINDOW: '5' } }),
    startSvc({ args: ['--trust-proxy'], env: { SERVICE_RATE_LIMIT_MAX: '0' } }),
  ]);
  for (const s of [a, b]) {
    await s.createCollection({ name: 'users', type: 'auth', fields: [], ...own });
    await s.createCollection({ name: 'tight', type: 'auth', fields: [], ...own, options: { auth: { methods: { password: { rate_limit: { max: 2, window_s: 60 } } } } } });
    await s.createCollection({ name: 'open', type: 'auth', fields: [], ...own, options: { auth: { methods: { password: { rate_limit: 'off' } } } } });
  }
});

after(async () => {
  await a?.stop();
  await b?.stop();
});

test('auth-with-password: 429 past the budget per identity (case-insensitive), failed and successful attempts alike; forwarded headers ignored', async () => {
  await signup(a, 'users', 'rl1@example.com');
  await signup(a, 'users', 'rl2@example.com');
  for (let i = 0; i < 3; i++) {
    const r = await login(a, 'users', 'rl1@example.com', 'wrong-password', { 'x-forwarded-for': `198.51.100.${i}` });
    assert.equal(r.status, 400, `attempt ${i + 1}: ${r.text}`);
  }
  assert429(await login(a, 'users', 'rl1@example.com', PW), 'fourth attempt, right password');
  assert429(await login(a, 'users', 'RL1@Example.COM', PW, { 'x-forwarded-for': '203.0.113.99' }), 'other case, other forwarded address');
  assert.equal((await login(a, 'users', 'rl2@example.com', PW)).status, 200, 'another identity has its own budget');
  assert.equal((await login(a, 'tight', 'rl1@example.com', PW)).status, 400, 'another collection has its own budget (no such user: 400)');

  for (let i = 0; i < 2; i++) assert.equal((await login(a, 'users', 'rl2@example.com', PW)).status, 200, 'successful logins');
  assert429(await login(a, 'users', 'rl2@example.com', PW), 'successful logins count too');
  await sleep(5_100);
  assert.equal((await login(a, 'users', 'rl1@example.com', PW)).status, 200, 'a new window');
});

test('request-verification and request-password-reset: 429 past the budget, counted per endpoint, for existing and missing addresses alike', async () => {
  await signup(a, 'users', 'mailrl@example.com');
  for (const email of ['mailrl@example.com', 'not-registered@example.com']) {
    for (let i = 0; i < 3; i++) assert.equal((await a.api('POST', '/api/collections/users/request-verification', { body: { email } })).status, 204);
    assert429(await a.api('POST', '/api/collections/users/request-verification', { body: { email } }), `request-verification ${email}`);
    assert.equal((await a.api('POST', '/api/collections/users/request-password-reset', { body: { email } })).status, 204, 'the other endpoint has its own counter');
    for (let i = 0; i < 2; i++) await a.api('POST', '/api/collections/users/request-password-reset', { body: { email } });
    assert429(await a.api('POST', '/api/collections/users/request-password-reset', { body: { email } }), `request-password-reset ${email}`);
  }
  for (let i = 0; i < 3; i++) assertError(await a.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'not-an-address' } }), 400, 'validation_failed', 'invalid bodies count');
  assert429(await a.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'not-an-address' } }), 'past the budget even when invalid');
});

test('password change: scope pwchange limits the owner; superusers are exempt; refresh is not limited', async () => {
  const id = await signup(a, 'users', 'pwc@example.com');
  const s = await login(a, 'users', 'pwc@example.com', PW);
  assert.equal(s.status, 200, s.text);
  const path = `/api/collections/users/records/${id}`;
  for (let i = 0; i < 3; i++) {
    const r = await a.api('PATCH', path, { token: s.body.token, body: { password: 'next-pass-123', oldPassword: 'wrong-old-pass' } });
    assert.equal(r.status, 400, r.text);
  }
  assert429(await a.api('PATCH', path, { token: s.body.token, body: { password: 'next-pass-123', oldPassword: PW } }), 'fourth change');
  const plain = await a.api('PATCH', path, { token: s.body.token, body: {} });
  assert.equal(plain.status, 200, 'an update without password is not limited');
  for (let i = 0; i < 5; i++) {
    const pw = `su-pass-${i}-long`;
    assert.equal((await a.api('PATCH', path, { token: a.suToken, body: { password: pw } })).status, 200, `superuser change ${i}`);
  }
  const fresh = await login(a, 'users', 'pwc@example.com', 'su-pass-4-long');
  for (let i = 0; i < 6; i++) assert.equal((await a.api('POST', '/api/collections/users/auth-refresh', { token: fresh.body.token })).status, 200, `refresh ${i}`);
});

test('per-method rate_limit: custom max overrides the global budget, off disables it; invalid values are rejected', async () => {
  await signup(a, 'tight', 'tt@example.com');
  for (let i = 0; i < 2; i++) assert.equal((await login(a, 'tight', 'tt@example.com', PW)).status, 200);
  assert429(await login(a, 'tight', 'tt@example.com', PW), 'custom max 2');
  await signup(a, 'open', 'oo@example.com');
  for (let i = 0; i < 8; i++) assert.equal((await login(a, 'open', 'oo@example.com', 'bad-password')).status, 400, `off: attempt ${i + 1}`);
  // the override is for the password method only: request-* keep the global budget
  for (let i = 0; i < 3; i++) assert.equal((await a.api('POST', '/api/collections/open/request-password-reset', { body: { email: 'oo@example.com' } })).status, 204);
  assert429(await a.api('POST', '/api/collections/open/request-password-reset', { body: { email: 'oo@example.com' } }), 'request-* use the global budget');

  for (const bad of ['on', { max: 0, window_s: 60 }, { max: 5 }, 7]) {
    const r = await a.api('POST', '/api/collections', { token: a.suToken, body: { name: 'badrl', type: 'auth', fields: [], options: { auth: { methods: { password: { rate_limit: bad } } } } } });
    assertError(r, 400, 'validation_failed', `rate_limit ${JSON.stringify(bad)}`);
    assert.equal(r.body.data['options.auth.methods.password.rate_limit']?.code, 'validation_value');
  }
});

test('SERVICE_RATE_LIMIT_MAX=0 disables the global limiter only; with --trust-proxy the key is the first forwarded hop or X-Real-IP', async () => {
  await signup(b, 'users', 'free@example.com');
  for (let i = 0; i < 15; i++) assert.equal((await login(b, 'users', 'free@example.com', 'bad-password')).status, 400, `global off: attempt ${i + 1}`);
  for (let i = 0; i < 12; i++) assert.equal((await b.api('POST', '/api/collections/users/request-password-reset', { body: { email: 'free@example.com' } })).status, 204);

  // custom limit 2 on `tight`, keyed by address: different identities from one client share it
  const hop = { 'x-forwarded-for': '203.0.113.5, 10.0.0.1' };
  assert.equal((await login(b, 'tight', 'one@example.com', PW, hop)).status, 400);
  assert.equal((await login(b, 'tight', 'two@example.com', PW, hop)).status, 400);
  assert429(await login(b, 'tight', 'three@example.com', PW, hop), 'same first hop, third identity');
  assert.equal((await login(b, 'tight', 'three@example.com', PW, { 'x-forwarded-for': '203.0.113.6, 10.0.0.1' })).status, 400, 'another first hop');
  const real = { 'x-real-ip': '198.51.100.7' };
  await login(b, 'tight', 'r1@example.com', PW, real);
  await login(b, 'tight', 'r2@example.com', PW, real);
  assert429(await login(b, 'tight', 'r3@example.com', PW, real), 'X-Real-IP');
  for (let i = 0; i < 5; i++) assert.equal((await login(b, 'open', 'x@example.com', PW, hop)).status, 400, 'rate_limit off');
});

test('with --trust-proxy a rotating X-Forwarded-For does not lift the identity\'s budget (password and one-time code)', async () => {
  for (let i = 0; i < 2; i++) assert.equal((await login(b, 'tight', 'rotating@example.com', PW, { 'x-forwarded-for': `192.0.2.${10 + i}` })).status, 400, `attempt ${i + 1}`);
  assert429(await login(b, 'tight', 'Rotating@Example.com', PW, { 'x-forwarded-for': '192.0.2.99' }), 'a fresh forwarded address, same identity');
  assert.equal((await login(b, 'tight', 'steady@example.com', PW, { 'x-forwarded-for': '192.0.2.100' })).status, 400, 'another identity from a fresh address');

  await b.createCollection({ name: 'otpers', type: 'auth', fields: [], ...own, options: { auth: { methods: { otp: { enabled: true, rate_limit: { max: 2, window_s: 60 } } } } } });
  const complete = (ip: string) => b.api('POST', '/api/collections/otpers/auth/otp/complete', { body: { identity: 'otp-rot@example.com', code: '000000' }, headers: { 'x-forwarded-for': ip } });
  for (let i = 0; i < 2; i++) assert.equal((await complete(`192.0.2.${20 + i}`)).status, 400, `otp attempt ${i + 1}`);
  assert429(await complete('192.0.2.98'), 'one-time code: a fresh forwarded address, same identity');
  const initiate = (ip: string) => b.api('POST', '/api/collections/otpers/auth/otp/initiate', { body: { identity: 'otp-rot@example.com' }, headers: { 'x-forwarded-for': ip } });
  for (let i = 0; i < 2; i++) assert.equal((await initiate(`192.0.2.${30 + i}`)).status, 204, `otp initiate ${i + 1}`);
  assert429(await initiate('192.0.2.97'), 'one-time code initiate: a fresh forwarded address, same identity');
});
