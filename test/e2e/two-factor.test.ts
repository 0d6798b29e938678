/**
 * Second factors (spec 1-core-api.md "Two-factor ceremonies", "Two-factor limits", the
 * pending rows of "States and transitions"), end to end: TOTP codes computed here from the
 * enrolled secret (otplib), passkeys as a factor through chromium's virtual authenticator,
 * recovery codes, management tokens, the attempt and account limits, and the invalidation rules
 * (factor changes end sessions; a `required` policy refuses primary-only sessions), proofs
 * counted before they are checked (parallel proofs cannot outrun the limits), and a passkey
 * sign-in counting as both factors only with user verification.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { startSvc, type Svc } from '../helpers/server.js';
import { tokenFromLog, withDb } from '../helpers/auth-helpers.js';
import { NO_BROWSER, launchBrowser, pageWithAuthenticator } from '../helpers/browser.js';

const PW = 'second-factor-1';
let srv: Svc;

/** The TOTP code of `secret` `steps` periods from now. */
const totp = (secret: string, steps = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + steps * 30 });

const api = (method: string, path: string, body?: unknown, token?: string) => srv.api(method, path, { body, token: token ?? null });
const tf = (col: string, action: string, body: unknown, token?: string) => api('POST', `/api/collections/${col}/auth/two-factor/${action}`, body, token);
const password = (col: string, email: string) => api('POST', `/api/collections/${col}/auth-with-password`, { identity: email, password: PW });

async function user(col: string, email: string): Promise<string> {
  const r = await srv.api('POST', `/api/collections/${col}/records`, { token: srv.suToken, body: { email, password: PW, passwordConfirm: PW, verified: true } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

/** Enrolls TOTP with a pending enrollment token; answers the secret and the authenticated answer. */
async function enrollTotp(col: string, pendingToken: string): Promise<{ secret: string; done: any }> {
  const begin = await tf(col, 'enroll-begin', { pendingToken, factor: 'totp' });
  assert.equal(begin.status, 200, begin.text);
  const done = await tf(col, 'enroll-complete', { pendingToken, factor: 'totp', ceremonyId: begin.body.ceremonyId, code: totp(begin.body.secret) });
  assert.equal(done.status, 200, done.text);
  return { secret: begin.body.secret, done: done.body };
}

before(async () => {
  srv = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  const open = { createRule: '@public', viewRule: 'id = @request.auth.id' };
  await srv.createCollection({ name: 'off', type: 'auth', fields: [], ...open });
  await srv.createCollection({ name: 'opt', type: 'auth', fields: [], ...open, options: { auth: { two_factor: 'optional' } } });
  await srv.createCollection({
    name: 'req', type: 'auth', fields: [], ...open,
    options: { auth: { two_factor: 'required', methods: { magic_link: { enabled: true } } } },
  });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('policy disabled: every two-factor route is 404 and a password login is a plain session', async () => {
  await user('off', 'off@example.com');
  for (const action of ['enroll', 'enroll-begin', 'enroll-complete', 'initiate', 'complete', 'replace-recovery', 'remove']) {
    assert.equal((await tf('off', action, {})).status, 404, action);
  }
  const r = await password('off', 'off@example.com');
  assert.equal(r.status, 200);
  assert.ok(r.body.token);
  assert.equal((await tf('opt', 'no-such-action', {})).status, 404);
});

test('optional: enroll TOTP from a session; sessions end; logins then need the code; steps are not reused; recovery codes work once', async () => {
  const id = await user('opt', 'tom@example.com');
  const first = await password('opt', 'tom@example.com');
  assert.ok(first.body.token, 'no factors yet: a plain session');
  assert.equal((await tf('opt', 'enroll', {})).status, 401, 'enroll needs a session');
  const start = await tf('opt', 'enroll', {}, first.body.token);
  assert.equal(start.status, 200, start.text);
  assert.equal(start.body.status, 'enrollment_required');
  assert.equal(start.body.expiresIn, 300);
  assert.deepEqual(start.body.factors, ['totp']);

  const begin = await tf('opt', 'enroll-begin', { pendingToken: start.body.pendingToken, factor: 'totp' });
  assert.equal(begin.status, 200, begin.text);
  assert.match(begin.body.secret, /^[A-Z2-7]{16,}$/, 'Base32');
  assert.equal(begin.body.algorithm, 'SHA1');
  assert.equal(begin.body.digits, 6);
  assert.equal(begin.body.period, 30);
  assert.match(begin.body.uri, /^otpauth:\/\/totp\/.*secret=[A-Z2-7]+/);
  const wrong = await tf('opt', 'enroll-complete', { pendingToken: start.body.pendingToken, factor: 'totp', ceremonyId: begin.body.ceremonyId, code: totp(begin.body.secret, 5) });
  assert.equal(wrong.status, 401, 'a code five steps away is wrong');
  const enrolledCode = totp(begin.body.secret);
  const done = await tf('opt', 'enroll-complete', { pendingToken: start.body.pendingToken, factor: 'totp', ceremonyId: begin.body.ceremonyId, code: enrolledCode });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.status, 'authenticated');
  assert.equal(done.body.record.id, id);
  assert.ok(done.body.token && done.body.managementToken);
  assert.equal(done.body.recoveryCodes.length, 10);
  assert.match(done.headers.get('set-cookie') ?? '', /svc_auth=/);
  assert.equal((await api('GET', `/api/collections/opt/records/${id}`, undefined, first.body.token)).status, 401, 'the factor change ended the old session');
  assert.equal((await api('GET', `/api/collections/opt/records/${id}`, undefined, done.body.token)).status, 200);
  // the enrollment token is spent
  assert.equal((await tf('opt', 'enroll-begin', { pendingToken: start.body.pendingToken, factor: 'totp' })).status, 401);
  // a second enrollment from a session is refused: factors exist
  assert.equal((await tf('opt', 'enroll', {}, done.body.token)).status, 409);

  const secret = begin.body.secret;
  // the seed is encrypted at rest; recovery codes are stored hashed
  withDb(srv.dataDir, (db) => {
    const rows = db.prepare('SELECT "secret" FROM "_totpFactors" WHERE "recordId" = ?').raw(true).all(id) as string[][];
    assert.equal(rows.length, 1);
    assert.ok(!rows[0][0].includes(secret), 'no plaintext seed in the database');
    assert.ok(rows[0][0].length > secret.length);
    const hashes = db.prepare('SELECT "hash" FROM "_recoveryCodes" WHERE "recordId" = ?').raw(true).all(id) as string[][];
    assert.equal(hashes.length, 10);
    for (const code of done.body.recoveryCodes) assert.ok(!hashes.some((h) => h[0].includes(code)));
  });
  const login = await password('opt', 'tom@example.com');
  assert.equal(login.status, 200);
  assert.equal(login.body.status, 'factor_required');
  assert.equal(login.body.token, undefined);
  assert.equal(login.headers.get('set-cookie'), null, 'no cookies while pending');
  assert.deepEqual(login.body.factors, ['totp']);
  assert.equal(login.body.recoveryCodes, 10);
  // the enrollment accepted its code's step: that code is still in the window but never accepted again
  const reused = await tf('opt', 'complete', { pendingToken: login.body.pendingToken, factor: 'totp', code: enrolledCode });
  assert.equal(reused.status, 401, 'an accepted step is never accepted again');
  const ok = await tf('opt', 'complete', { pendingToken: login.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.status, 'authenticated');
  assert.match(ok.headers.get('set-cookie') ?? '', /svc_auth=/);
  assert.equal(ok.body.recoveryCodes, undefined, 'codes are shown once, at the first enrollment');
  assert.equal((await tf('opt', 'complete', { pendingToken: login.body.pendingToken, factor: 'totp', code: totp(secret, 1) })).status, 401, 'the attempt is spent');
  // refresh keeps the two-factor session
  const refreshed = await api('POST', '/api/collections/opt/auth-refresh', undefined, ok.body.token);
  assert.equal(refreshed.status, 200);

  const code = done.body.recoveryCodes[3];
  const l2 = await password('opt', 'tom@example.com');
  const rec = await tf('opt', 'complete', { pendingToken: l2.body.pendingToken, factor: 'recovery', code: code.toUpperCase() });
  assert.equal(rec.status, 200, rec.text);
  const l3 = await password('opt', 'tom@example.com');
  assert.equal(l3.body.recoveryCodes, 9);
  assert.equal((await tf('opt', 'complete', { pendingToken: l3.body.pendingToken, factor: 'recovery', code })).status, 401, 'a recovery code works once');
  // recovering did not disable the factor
  assert.equal((await password('opt', 'tom@example.com')).body.status, 'factor_required');
});

test('an attempt allows five tries; the account allows ten proofs per five minutes across new logins (429), with the global limiter off', async () => {
  await user('opt', 'tries@example.com');
  const s = await password('opt', 'tries@example.com');
  const start = await tf('opt', 'enroll', {}, s.body.token);
  const { secret } = await enrollTotp('opt', start.body.pendingToken);
  const l1 = await password('opt', 'tries@example.com');
  for (let i = 0; i < 5; i++) {
    assert.equal((await tf('opt', 'complete', { pendingToken: l1.body.pendingToken, factor: 'totp', code: '000000' })).status, 401);
  }
  const after5 = await tf('opt', 'complete', { pendingToken: l1.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
  assert.equal(after5.status, 401, 'five failures end the attempt');
  assert.match(after5.body.message, /pending token/);
  // proofs so far: the enrollment (1) and five wrong codes (6); the refused sixth never reached a proof
  const l2 = await password('opt', 'tries@example.com');
  for (let i = 0; i < 4; i++) {
    assert.equal((await tf('opt', 'complete', { pendingToken: l2.body.pendingToken, factor: 'recovery', code: 'aaaaa-bbbbb' })).status, 401, `proof ${7 + i}`);
  }
  const eleventh = await tf('opt', 'complete', { pendingToken: l2.body.pendingToken, factor: 'recovery', code: 'aaaaa-bbbbb' });
  assert.equal(eleventh.status, 429, 'ten proofs in five minutes exhaust the account');
  const l3 = await password('opt', 'tries@example.com');
  const limited = await tf('opt', 'complete', { pendingToken: l3.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
  assert.equal(limited.status, 429, `the account limit holds across a new primary login: ${limited.text}`);
  assert.equal(limited.body.code, 'too_many_requests');
});

test('required: a login without factors must enroll; magic-link consume answers the pending JSON; primary-only sessions end when the policy turns on', async () => {
  const id = await user('req', 'rita@example.com');
  const login = await password('req', 'rita@example.com');
  assert.equal(login.body.status, 'enrollment_required');
  assert.equal(login.headers.get('set-cookie'), null);
  assert.deepEqual(login.body.factors, ['totp']);
  // the pending token cannot complete a login, only enroll
  assert.equal((await tf('req', 'complete', { pendingToken: login.body.pendingToken, factor: 'totp', code: '123456' })).status, 401);
  const { secret, done } = await enrollTotp('req', login.body.pendingToken);
  assert.equal(done.status, 'authenticated');
  assert.equal((await api('GET', `/api/collections/req/records/${id}`, undefined, done.token)).status, 200);

  // magic link: the consume route answers JSON, not a redirect
  const mark = srv.stderr().length;
  assert.equal((await api('POST', '/api/collections/req/auth/magic_link/initiate', { identity: 'rita@example.com' })).status, 204);
  const token = await tokenFromLog(srv, 'rita@example.com', mark);
  const consume = await srv.api('GET', `/api/collections/req/auth/magic-link/consume?token=${encodeURIComponent(token)}&redirect=/app`);
  assert.equal(consume.status, 200, consume.text);
  assert.equal(consume.body.status, 'factor_required');
  assert.equal(consume.headers.get('location'), null);
  assert.equal(consume.headers.get('set-cookie'), null);
  const ok = await tf('req', 'complete', { pendingToken: consume.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
  assert.equal(ok.status, 200, ok.text);

  // a primary-only session of an optional collection dies when the policy becomes required
  const id2 = await user('opt', 'late@example.com');
  const plain = await password('opt', 'late@example.com');
  assert.equal((await api('GET', `/api/collections/opt/records/${id2}`, undefined, plain.body.token)).status, 200);
  const patched = await srv.api('PATCH', '/api/collections/opt', { token: srv.suToken, body: { options: { auth: { two_factor: 'required' } } } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal((await api('GET', `/api/collections/opt/records/${id2}`, undefined, plain.body.token)).status, 401);
  assert.equal((await api('POST', '/api/collections/opt/auth-refresh', undefined, plain.body.token)).status, 401, 'refresh re-checks the policy');
  await srv.api('PATCH', '/api/collections/opt', { token: srv.suToken, body: { options: { auth: { two_factor: 'optional' } } } });
});

test('management token: replaces recovery codes once; removes a factor (not the last one under required); removal ends sessions', async () => {
  await user('req', 'mia@example.com');
  const login = await password('req', 'mia@example.com');
  const { done } = await enrollTotp('req', login.body.pendingToken);
  const replaced = await tf('req', 'replace-recovery', { pendingToken: done.managementToken });
  assert.equal(replaced.status, 200, replaced.text);
  assert.equal(replaced.body.recoveryCodes.length, 10);
  assert.notDeepEqual(replaced.body.recoveryCodes, done.recoveryCodes);
  assert.equal((await tf('req', 'replace-recovery', { pendingToken: done.managementToken })).status, 401, 'single use');
  // old codes are void, new ones work
  const l = await password('req', 'mia@example.com');
  assert.equal((await tf('req', 'complete', { pendingToken: l.body.pendingToken, factor: 'recovery', code: done.recoveryCodes[0] })).status, 401);
  const viaNew = await tf('req', 'complete', { pendingToken: l.body.pendingToken, factor: 'recovery', code: replaced.body.recoveryCodes[0] });
  assert.equal(viaNew.status, 200, viaNew.text);
  // the last factor under required stays
  const last = await tf('req', 'remove', { pendingToken: viaNew.body.managementToken, factor: 'totp' });
  assert.equal(last.status, 400, last.text);
  assert.ok(last.body.data.factor);
  // a pending login token is not a management token
  const l2 = await password('req', 'mia@example.com');
  assert.equal((await tf('req', 'remove', { pendingToken: l2.body.pendingToken, factor: 'totp' })).status, 401);

  // optional: removal works, ends sessions, and logins are plain again
  await user('opt', 'oli@example.com');
  const s = await password('opt', 'oli@example.com');
  const start = await tf('opt', 'enroll', {}, s.body.token);
  const e = await enrollTotp('opt', start.body.pendingToken);
  const removed = await tf('opt', 'remove', { pendingToken: e.done.managementToken, factor: 'totp' });
  assert.equal(removed.status, 204, removed.text);
  assert.equal((await api('POST', '/api/collections/opt/auth-refresh', undefined, e.done.token)).status, 401, 'the factor change ended the session');
  const plain = await password('opt', 'oli@example.com');
  assert.ok(plain.body.token, 'no factor left: a plain session');
  assert.equal(plain.body.status, undefined);
});

test('bad bodies: missing or made-up pending token, unknown factor, malformed code; nothing signs in', async () => {
  for (const body of [{}, { pendingToken: 'abc' }, { pendingToken: 'abcdefghijklmno.xyz', factor: 'totp', code: '123456' }]) {
    const r = await tf('opt', 'complete', body);
    assert.ok(r.status === 400 || r.status === 401, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.headers.get('set-cookie'), null);
  }
  await user('opt', 'bad@example.com');
  const s = await password('opt', 'bad@example.com');
  const start = await tf('opt', 'enroll', {}, s.body.token);
  const f = await tf('opt', 'enroll-begin', { pendingToken: start.body.pendingToken, factor: 'sms' });
  assert.equal(f.status, 400);
  assert.ok(f.body.data.factor);
  const begin = await tf('opt', 'enroll-begin', { pendingToken: start.body.pendingToken, factor: 'totp' });
  const badCeremony = await tf('opt', 'enroll-complete', { pendingToken: start.body.pendingToken, factor: 'totp', ceremonyId: 'nope', code: totp(begin.body.secret) });
  assert.equal(badCeremony.status, 400);
  const malformed = await tf('opt', 'enroll-complete', { pendingToken: start.body.pendingToken, factor: 'totp', ceremonyId: begin.body.ceremonyId, code: 'abcdef' });
  assert.equal(malformed.status, 401);
});

test('passkeys as a second factor: enroll through the browser, then complete logins with an assertion', { skip: NO_BROWSER }, async () => {
  const origin = srv.url.replace('127.0.0.1', 'localhost');
  await srv.createCollection({
    name: 'keys', type: 'auth', fields: [], createRule: '@public', viewRule: 'id = @request.auth.id',
    // the relying party is configured, the passkey sign-in method itself stays off
    options: { auth: { two_factor: 'required', methods: { webauthn: { enabled: false, rpId: 'localhost', origins: [origin] } } } },
  });
  const browser: Browser = await launchBrowser();
  try {
    const { page } = await pageWithAuthenticator(browser);
    await page.goto(`${origin}/api/health`);
    const id = await user('keys', 'kim@example.com');
    const login = await password('keys', 'kim@example.com');
    assert.equal(login.body.status, 'enrollment_required');
    assert.deepEqual(login.body.factors, ['totp', 'webauthn']);
    const begin = await tf('keys', 'enroll-begin', { pendingToken: login.body.pendingToken, factor: 'webauthn' });
    assert.equal(begin.status, 200, begin.text);
    assert.ok(begin.body.ceremonyId && begin.body.challenge);
    const cred = await create(page, begin.body);
    const done = await tf('keys', 'enroll-complete', { pendingToken: login.body.pendingToken, factor: 'webauthn', ceremonyId: begin.body.ceremonyId, clientDataJSON: cred.clientDataJSON, attestationObject: cred.attestationObject });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.record.id, id);
    assert.equal(done.body.recoveryCodes.length, 10);

    const l = await password('keys', 'kim@example.com');
    assert.equal(l.body.status, 'factor_required');
    assert.deepEqual(l.body.factors, ['webauthn']);
    const init = await tf('keys', 'initiate', { pendingToken: l.body.pendingToken, factor: 'webauthn' });
    assert.equal(init.status, 200, init.text);
    assert.equal(init.body.allowCredentials.length, 1);
    const a = await get(page, init.body);
    const sig = Buffer.from(a.signature, 'base64url');
    sig[sig.length - 1] ^= 1;
    const forged = await tf('keys', 'complete', { pendingToken: l.body.pendingToken, factor: 'webauthn', ceremonyId: init.body.ceremonyId, ...a, signature: sig.toString('base64url') });
    assert.equal(forged.status, 401, forged.text);
    const init2 = await tf('keys', 'initiate', { pendingToken: l.body.pendingToken, factor: 'webauthn' });
    const a2 = await get(page, init2.body);
    const ok = await tf('keys', 'complete', { pendingToken: l.body.pendingToken, factor: 'webauthn', ceremonyId: init2.body.ceremonyId, ...a2 });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.status, 'authenticated');
    assert.equal((await api('GET', `/api/collections/keys/records/${id}`, undefined, ok.body.token)).status, 200);
  } finally {
    await browser.close();
  }
});

test('parallel wrong proofs cannot outrun the account limit: each proof is counted before it is checked', async () => {
  await user('opt', 'racer@example.com');
  const s = await password('opt', 'racer@example.com');
  const start = await tf('opt', 'enroll', {}, s.body.token);
  const { secret } = await enrollTotp('opt', start.body.pendingToken); // proof 1 of 10
  const logins = [];
  for (let i = 0; i < 5; i++) logins.push((await password('opt', 'racer@example.com')).body.pendingToken);
  // 25 wrong proofs at once, five per pending token (each token allows five)
  const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => tf('opt', 'complete', i % 2
    ? { pendingToken: logins[i % 5], factor: 'totp', code: '000000' }
    : { pendingToken: logins[i % 5], factor: 'recovery', code: 'aaaaa-bbbbb' })));
  const evaluated = answers.filter((r) => r.status === 401 && /second-factor proof/.test(r.body.message)).length;
  const limited = answers.filter((r) => r.status === 429 && r.body.code === 'too_many_requests').length;
  assert.equal(evaluated, 9, `only the nine proofs left in the window are checked: ${answers.map((r) => r.status).join(',')}`);
  assert.equal(limited, 16);
  const l = await password('opt', 'racer@example.com');
  const right = await tf('opt', 'complete', { pendingToken: l.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
  assert.equal(right.status, 429, `the right code is refused while the account is limited: ${right.text}`);
  assert.equal(right.headers.get('set-cookie'), null);

  // one pending token allows five proofs, also when they arrive together
  await user('opt', 'racer2@example.com');
  const s2 = await password('opt', 'racer2@example.com');
  await enrollTotp('opt', (await tf('opt', 'enroll', {}, s2.body.token)).body.pendingToken);
  const one = (await password('opt', 'racer2@example.com')).body.pendingToken;
  const burst = await Promise.all(Array.from({ length: 9 }, () => tf('opt', 'complete', { pendingToken: one, factor: 'totp', code: '000000' })));
  assert.equal(burst.filter((r) => r.status === 401 && /second-factor proof/.test(r.body.message)).length, 5, burst.map((r) => r.body.message).join(' | '));
  assert.equal(burst.filter((r) => r.status === 401 && /pending token/.test(r.body.message)).length, 4);
});

test('required: a passkey sign-in is both factors only with user verification (UV); with presence only a second factor is still asked', { skip: NO_BROWSER }, async () => {
  const origin = srv.url.replace('127.0.0.1', 'localhost');
  await srv.createCollection({
    name: 'uv', type: 'auth', fields: [], createRule: '@public', viewRule: 'id = @request.auth.id',
    options: { auth: { two_factor: 'required', methods: { webauthn: { enabled: true, rpId: 'localhost', origins: [origin] } } } },
  });
  const browser: Browser = await launchBrowser();
  try {
    const id = await user('uv', 'uma@example.com');
    const login = await password('uv', 'uma@example.com');
    const { secret, done } = await enrollTotp('uv', login.body.pendingToken);
    /** Registers a sign-in passkey on `page` with the two-factor session, then signs in with it. */
    const signInWith = async (page: Page) => {
      await page.goto(`${origin}/api/health`);
      const begin = await api('POST', '/api/collections/uv/auth/webauthn/register/begin', {}, done.token);
      assert.equal(begin.status, 200, begin.text);
      const cred = await create(page, begin.body);
      const reg = await api('POST', '/api/collections/uv/auth/webauthn/register/finish', { ceremonyId: begin.body.ceremonyId, id: cred.id, rawId: cred.id, response: { clientDataJSON: cred.clientDataJSON, attestationObject: cred.attestationObject } }, done.token);
      assert.equal(reg.status, 200, reg.text);
      const init = await api('POST', '/api/collections/uv/auth/webauthn/initiate', { identity: 'uma@example.com' });
      const a = await get(page, { ...init.body, allowCredentials: [{ type: 'public-key', id: cred.id }] });
      return api('POST', '/api/collections/uv/auth/webauthn/complete', { ceremonyId: init.body.ceremonyId, ...a });
    };

    const presenceOnly = await signInWith((await pageWithAuthenticator(browser, { userVerification: false })).page);
    assert.equal(presenceOnly.status, 200, presenceOnly.text);
    assert.equal(presenceOnly.body.token, undefined, `no session from presence alone: ${presenceOnly.text}`);
    assert.equal(presenceOnly.body.status, 'factor_required');
    assert.equal(presenceOnly.headers.get('set-cookie'), null);
    assert.deepEqual(presenceOnly.body.factors, ['totp'], 'the passkey just used cannot be the second factor');
    const ok = await tf('uv', 'complete', { pendingToken: presenceOnly.body.pendingToken, factor: 'totp', code: totp(secret, 1) });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await api('GET', `/api/collections/uv/records/${id}`, undefined, ok.body.token)).status, 200);

    const verified = await signInWith((await pageWithAuthenticator(browser)).page);
    assert.equal(verified.status, 200, verified.text);
    assert.ok(verified.body.token, 'user verification: both factors at once');
    assert.equal(verified.body.status, undefined);
    assert.equal((await api('GET', `/api/collections/uv/records/${id}`, undefined, verified.body.token)).status, 200);

    // sign-in passkeys count as factors: with TOTP removed, the owner may delete one of the two
    // passkeys but not the last factor of a collection that requires one
    const l = await password('uv', 'uma@example.com');
    const viaCode = await tf('uv', 'complete', { pendingToken: l.body.pendingToken, factor: 'recovery', code: done.recoveryCodes[0] });
    assert.equal(viaCode.status, 200, viaCode.text);
    assert.equal((await tf('uv', 'remove', { pendingToken: viaCode.body.managementToken, factor: 'totp' })).status, 204);
    const s2 = await password('uv', 'uma@example.com');
    const session = await tf('uv', 'complete', { pendingToken: s2.body.pendingToken, factor: 'recovery', code: done.recoveryCodes[1] });
    assert.equal(session.status, 200, session.text);
    const keysPath = `/api/collections/uv/records/${id}/passkeys`;
    const keys = (await api('GET', keysPath, undefined, session.body.token)).body.items;
    assert.equal(keys.length, 2);
    assert.equal((await api('DELETE', `${keysPath}/${keys[0].id}`, undefined, session.body.token)).status, 204);
    const last = await api('DELETE', `${keysPath}/${keys[1].id}`, undefined, session.body.token);
    assert.equal(last.status, 400, last.text);
    assert.ok(last.body.data.passkeyId);
    assert.equal((await api('GET', keysPath, undefined, session.body.token)).body.items.length, 1);
  } finally {
    await browser.close();
  }
});

test('_superusers take the policy too: a superuser password login then needs enrollment', async () => {
  const r = await srv.api('PATCH', '/api/collections/_superusers', { token: srv.suToken, body: { options: { auth: { two_factor: 'required' } } } });
  assert.equal(r.status, 200, r.text);
  const login = await api('POST', '/api/collections/_superusers/auth-with-password', { identity: 'admin@test.local', password: 'supersecret1' });
  assert.equal(login.body.status, 'enrollment_required');
  assert.equal((await api('GET', '/api/collections', undefined, srv.suToken)).status, 401, 'the primary-only superuser session ended');
});

// Browser code as source text (the test runner's transform would add helpers the page lacks).
const CODEC = `
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));`;

function create(p: Page, o: unknown): Promise<{ id: string; clientDataJSON: string; attestationObject: string }> {
  return p.evaluate(`(async (o) => {${CODEC}
    const cred = await navigator.credentials.create({ publicKey: { ...o, challenge: unb64(o.challenge), user: { ...o.user, id: unb64(o.user.id) }, excludeCredentials: [] } });
    return { id: cred.id, clientDataJSON: b64(cred.response.clientDataJSON), attestationObject: b64(cred.response.attestationObject) };
  })(${JSON.stringify(o)})`);
}

function get(p: Page, o: unknown): Promise<any> {
  return p.evaluate(`(async (o) => {${CODEC}
    const cred = await navigator.credentials.get({ publicKey: { challenge: unb64(o.challenge), rpId: o.rpId, allowCredentials: o.allowCredentials.map((c) => ({ ...c, id: unb64(c.id) })), userVerification: o.userVerification } });
    const r = cred.response;
    return { credentialId: b64(cred.rawId), authenticatorData: b64(r.authenticatorData), clientDataJSON: b64(r.clientDataJSON), signature: b64(r.signature) };
  })(${JSON.stringify(o)})`);
}
