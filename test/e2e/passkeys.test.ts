/**
 * Passkeys (spec 1-core-api.md "Pluggable auth methods" webauthn row, "Passkey
 * registration"), end to end with a real browser: Debian chromium driven by playwright-core, its
 * CDP virtual authenticator making the credentials and signatures. Registration (authenticated),
 * discoverable sign-in, sign-in bound to an identity, and the failure paths: disabled method 404,
 * unauthenticated registration 401, malformed bodies, replayed and made-up ceremonies, a foreign
 * origin, a bad signature, an unknown credential, another identity's ceremony and a cloned
 * authenticator whose signature counter went backwards; none of them leaves a session.
 * Registration needs a recent primary sign-in (a refreshed old session is refused), and the
 * owner lists and deletes the record's sign-in passkeys (docs/api.md, "Passkeys (WebAuthn)").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startSvc, type Svc } from '../helpers/server.js';
import { NO_BROWSER, createInPage, getInPage, launchBrowser, pageWithAuthenticator } from '../helpers/browser.js';
import { sleep } from '../helpers/wait.js';

const PW = 'passkey-pass-1';
let srv: Svc;
let browser: Browser;
let page: Page;
let origin: string;

async function user(email: string, col = 'members'): Promise<{ id: string; token: string }> {
  const made = await srv.api('POST', `/api/collections/${col}/records`, { body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(made.status, 201, made.text);
  const login = await srv.api('POST', `/api/collections/${col}/auth-with-password`, { body: { identity: email, password: PW } });
  return { id: made.body.id, token: login.body.token };
}

/** Registers a passkey for the signed-in user through the page's authenticator. */
async function register(token: string, p: Page = page, col = 'members') {
  const begin = await srv.api('POST', `/api/collections/${col}/auth/webauthn/register/begin`, { token, body: {} });
  assert.equal(begin.status, 200, begin.text);
  const cred = await createInPage(p, begin.body);
  return { begin: begin.body, finish: { ceremonyId: begin.body.ceremonyId, ...cred } };
}

async function assertion(identity?: string, col = 'members', p: Page = page) {
  const init = await srv.api('POST', `/api/collections/${col}/auth/webauthn/initiate`, { body: identity ? { identity } : {} });
  assert.equal(init.status, 200, init.text);
  return { ceremonyId: init.body.ceremonyId, ...(await getInPage(p, init.body)) };
}

const complete = (body: unknown, col = 'members') => srv.api('POST', `/api/collections/${col}/auth/webauthn/complete`, { body });

before(async () => {
  if (NO_BROWSER) return;
  srv = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  // WebAuthn needs a secure context and a domain RP id: http://localhost is both
  origin = srv.url.replace('127.0.0.1', 'localhost');
  const methods = (origins: string[]) => ({ auth: { methods: { webauthn: { enabled: true, rpId: 'localhost', rpName: 'svc test', origins } } } });
  await srv.createCollection({ name: 'members', type: 'auth', fields: [], createRule: '@public', viewRule: 'id = @request.auth.id', options: methods([origin]) });
  await srv.createCollection({ name: 'foreign', type: 'auth', fields: [], createRule: '@public', options: methods([origin]) });
  await srv.createCollection({ name: 'plain', type: 'auth', fields: [], createRule: '@public' });
  browser = await launchBrowser();
  ({ page } = await pageWithAuthenticator(browser));
  await page.goto(`${origin}/api/health`);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('meta says webauthn; a disabled method answers 404 on every passkey route; registration needs a session', { skip: NO_BROWSER }, async () => {
  assert.equal((await srv.api('GET', '/api/meta')).body.capabilities.webauthn, true);
  const u = await user('plain@example.com', 'plain');
  for (const [path, token] of [
    ['/api/collections/plain/auth/webauthn/register/begin', u.token],
    ['/api/collections/plain/auth/webauthn/register/finish', u.token],
    ['/api/collections/plain/auth/webauthn/initiate', null],
    ['/api/collections/plain/auth/webauthn/complete', null],
  ] as const) {
    const r = await srv.api('POST', path, { token, body: {} });
    assert.equal(r.status, 404, `${path}: ${r.text}`);
  }
  const anon = await srv.api('POST', '/api/collections/members/auth/webauthn/register/begin', { body: {} });
  assert.equal(anon.status, 401);
});

test('register a passkey, then sign in with it (discoverable: no identity) and with an identity', { skip: NO_BROWSER }, async () => {
  const u = await user('ann@example.com');
  const { begin, finish } = await register(u.token);
  assert.equal(begin.rpId, 'localhost');
  assert.equal(begin.rpName, 'svc test');
  assert.match(begin.challenge, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(begin.authenticatorSelection.residentKey, 'required');
  const done = await srv.api('POST', '/api/collections/members/auth/webauthn/register/finish', { token: u.token, body: finish });
  assert.equal(done.status, 200, done.text);
  assert.deepEqual(done.body, {});

  const a = await assertion();
  const r = await complete(a);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.record.id, u.id);
  assert.ok(r.body.token);
  assert.match(r.headers.get('set-cookie') ?? '', /svc_auth=/);
  const me = await srv.api('GET', `/api/collections/members/records/${u.id}`, { token: r.body.token });
  assert.equal(me.status, 200, 'the session works');

  const withIdentity = await complete(await assertion('ann@example.com'));
  assert.equal(withIdentity.status, 200, withIdentity.text);
  assert.equal(withIdentity.body.record.id, u.id);

  // the same credential cannot be registered twice: the browser is told to exclude it
  const again = await srv.api('POST', '/api/collections/members/auth/webauthn/register/begin', { token: u.token, body: {} });
  assert.equal(again.body.excludeCredentials.length, 1);
  assert.equal(again.body.excludeCredentials[0].id, a.credentialId);
});

test('a ceremony is single use: a replayed assertion, a made-up ceremony and a registration ceremony are refused', { skip: NO_BROWSER }, async () => {
  const a = await assertion();
  assert.equal((await complete(a)).status, 200);
  const replay = await complete(a);
  assert.equal(replay.status, 400, replay.text);
  assert.ok(replay.body.data.ceremonyId);
  assert.equal(replay.headers.get('set-cookie'), null);
  const madeUp = await complete({ ...(await assertion()), ceremonyId: 'abcdefghijklmno.bogus' });
  assert.equal(madeUp.status, 400);
  // a registration ceremony cannot finish a sign-in
  const u = await user('reg-cer@example.com');
  const begin = await srv.api('POST', '/api/collections/members/auth/webauthn/register/begin', { token: u.token, body: {} });
  const cross = await complete({ ...(await assertion()), ceremonyId: begin.body.ceremonyId });
  assert.equal(cross.status, 400);
});

test('a bad signature, an unknown credential, another identity\'s ceremony and malformed bodies give 400 and no session', { skip: NO_BROWSER }, async () => {
  const a = await assertion();
  const sig = Buffer.from(a.signature, 'base64url');
  sig[sig.length - 1] ^= 1;
  const bad = await complete({ ...a, signature: sig.toString('base64url') });
  assert.equal(bad.status, 400, bad.text);
  assert.ok(bad.body.data.signature);
  assert.equal(bad.headers.get('set-cookie'), null);
  // the failed attempt spent the ceremony: the genuine assertion cannot follow it
  assert.equal((await complete(a)).status, 400);

  const unknown = await complete({ ...(await assertion()), credentialId: Buffer.from('not-a-registered-credential').toString('base64url') });
  assert.equal(unknown.status, 400);
  assert.ok(unknown.body.data.credentialId);

  // a ceremony bound to another identity refuses ann's passkey
  await user('bea@example.com');
  const bound = await complete(await assertion('bea@example.com'));
  assert.equal(bound.status, 400, bound.text);
  // an unknown identity gets the same answer shape as a known one
  const init = await srv.api('POST', '/api/collections/members/auth/webauthn/initiate', { body: { identity: 'nobody@example.com' } });
  assert.equal(init.status, 200);
  assert.deepEqual(Object.keys(init.body).sort(), ['allowCredentials', 'ceremonyId', 'challenge', 'rpId', 'timeout', 'userVerification'].sort());

  for (const body of [{}, { ceremonyId: 'x' }, { ...a, authenticatorData: 'not base64url!' }, { ...a, signature: 42 }, { ...a, clientDataJSON: 'x'.repeat(70_000) }]) {
    const r = await complete(body);
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
    assert.equal(r.body.code, 'validation_failed');
  }
  const finishBad = await srv.api('POST', '/api/collections/members/auth/webauthn/register/finish', { token: (await user('mal@example.com')).token, body: { ceremonyId: 'a', id: 'b' } });
  assert.equal(finishBad.status, 400);
});

test('a foreign origin is refused at registration and at sign-in', { skip: NO_BROWSER }, async () => {
  // a passkey registered while collection "foreign" trusted the page's origin...
  const p4 = await pageWithAuthenticator(browser);
  await p4.page.goto(`${origin}/api/health`);
  const u = await user('far@example.com', 'foreign');
  const first = await register(u.token, p4.page, 'foreign');
  assert.equal((await srv.api('POST', '/api/collections/foreign/auth/webauthn/register/finish', { token: u.token, body: first.finish })).status, 200);
  // ...then the collection trusts only https://app.localhost
  const patched = await srv.api('PATCH', '/api/collections/foreign', { token: srv.suToken, body: { options: { auth: { methods: { webauthn: { enabled: true, rpId: 'localhost', origins: ['https://app.localhost'] } } } } } });
  assert.equal(patched.status, 200, patched.text);
  const s = await complete(await assertion(undefined, 'foreign', p4.page), 'foreign');
  assert.equal(s.status, 400, s.text);
  assert.ok(s.body.data.signature);
  assert.equal(s.headers.get('set-cookie'), null);
  const v = await user('near@example.com', 'foreign');
  const { finish } = await register(v.token, p4.page, 'foreign');
  const r = await srv.api('POST', '/api/collections/foreign/auth/webauthn/register/finish', { token: v.token, body: finish });
  assert.equal(r.status, 400, r.text);
  assert.match(r.body.data.response.message, /origin/i);
  await p4.page.close();
});

test('a cloned authenticator whose signature counter goes backwards is refused', { skip: NO_BROWSER }, async () => {
  const u = await user('clone@example.com');
  const p2 = await pageWithAuthenticator(browser);
  await p2.page.goto(`${origin}/api/health`);
  const { finish } = await register(u.token, p2.page);
  assert.equal((await srv.api('POST', '/api/collections/members/auth/webauthn/register/finish', { token: u.token, body: finish })).status, 200);
  // export the credential before it is used, as a cloner would
  const { credentials } = await p2.cdp.send('WebAuthn.getCredentials', { authenticatorId: p2.authenticatorId });
  const mine = credentials.find((c) => c.userHandle === Buffer.from(u.id).toString('base64'));
  assert.ok(mine, 'the new credential is on the authenticator');
  for (let i = 0; i < 2; i++) assert.equal((await complete(await assertion('clone@example.com', 'members', p2.page))).status, 200);
  await p2.page.close();

  // the clone: the same key on another authenticator, its counter back at 0
  const p3 = await pageWithAuthenticator(browser);
  await p3.page.goto(`${origin}/api/health`);
  await p3.cdp.send('WebAuthn.addCredential', { authenticatorId: p3.authenticatorId, credential: { ...mine!, signCount: 0 } });
  const r = await complete(await assertion('clone@example.com', 'members', p3.page));
  assert.equal(r.status, 400, r.text);
  assert.match(r.body.data.signature.message, /counter/);
  assert.equal(r.headers.get('set-cookie'), null);
  await p3.page.close();
});

test('registration needs a recent primary sign-in: a refreshed old session is refused at begin and finish (403 reauthentication_required), and so is a first two-factor enrollment', { skip: NO_BROWSER }, async () => {
  // a server whose sign-ins count as recent for 3 seconds (SERVICE_REAUTH_MAX_AGE)
  const short = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0', SERVICE_REAUTH_MAX_AGE: '3' } });
  const p = await pageWithAuthenticator(browser);
  try {
    const shortOrigin = short.url.replace('127.0.0.1', 'localhost');
    await short.createCollection({ name: 'members', type: 'auth', fields: [], createRule: '@public', options: { auth: { two_factor: 'optional', methods: { webauthn: { enabled: true, rpId: 'localhost', origins: [shortOrigin] } } } } });
    await p.page.goto(`${shortOrigin}/api/health`);
    const made = await short.api('POST', '/api/collections/members/records', { body: { email: 'old@example.com', password: PW, passwordConfirm: PW } });
    assert.equal(made.status, 201, made.text);
    const signIn = () => short.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'old@example.com', password: PW } });
    const begin = (token: string) => short.api('POST', '/api/collections/members/auth/webauthn/register/begin', { token, body: {} });
    const finish = (token: string, body: unknown) => short.api('POST', '/api/collections/members/auth/webauthn/register/finish', { token, body });

    const first = await signIn();
    const signedInAt = Date.now();
    const fresh = await begin(first.body.token);
    assert.equal(fresh.status, 200, `a fresh sign-in may begin: ${fresh.text}`);
    const cred = await createInPage(p.page, fresh.body);
    // a refresh inside the window renews the token but not the sign-in time
    await sleep(1500);
    const refreshed = await short.api('POST', '/api/collections/members/auth-refresh', { token: first.body.token });
    assert.equal(refreshed.status, 200, refreshed.text);
    // past the window: the sign-in time is in whole seconds, so wait a second more than its 3
    await sleep(Math.max(0, signedInAt + 4500 - Date.now()));
    const lateFinish = await finish(refreshed.body.token, { ceremonyId: fresh.body.ceremonyId, ...cred });
    assert.equal(lateFinish.status, 403, lateFinish.text);
    assert.equal(lateFinish.body.code, 'reauthentication_required');
    const lateBegin = await begin(refreshed.body.token);
    assert.equal(lateBegin.status, 403, lateBegin.text);
    assert.equal(lateBegin.body.code, 'reauthentication_required');
    assert.match(lateBegin.body.message, /sign in again/i);
    assert.equal((await begin(first.body.token)).status, 403, 'the original token is as old');
    // a first second factor (a passkey factor also signs in) needs a recent sign-in too
    const enroll = await short.api('POST', '/api/collections/members/auth/two-factor/enroll', { token: refreshed.body.token, body: {} });
    assert.equal(enroll.status, 403, enroll.text);
    assert.equal(enroll.body.code, 'reauthentication_required');
    const listed = await short.api('GET', `/api/collections/members/records/${made.body.id}/passkeys`, { token: refreshed.body.token });
    assert.deepEqual(listed.body?.items, [], 'nothing was registered');

    // signing in again allows it
    const again = await signIn();
    const enrollAgain = await short.api('POST', '/api/collections/members/auth/two-factor/enroll', { token: again.body.token, body: {} });
    assert.equal(enrollAgain.status, 200, enrollAgain.text);
    assert.equal(enrollAgain.body.status, 'enrollment_required');
    const b2 = await begin(again.body.token);
    assert.equal(b2.status, 200, b2.text);
    const c2 = await createInPage(p.page, b2.body);
    const ok = await finish(again.body.token, { ceremonyId: b2.body.ceremonyId, ...c2 });
    assert.equal(ok.status, 200, ok.text);
  } finally {
    await p.page.close();
    await short.stop();
    rmSync(short.dataDir, { recursive: true, force: true });
  }
});

test('the owner lists and deletes the record\'s sign-in passkeys; others get 404, anonymous 401; no key material is shown', { skip: NO_BROWSER }, async () => {
  const p = await pageWithAuthenticator(browser);
  await p.page.goto(`${origin}/api/health`);
  const u = await user('lister@example.com');
  const other = await user('other-lister@example.com');
  const path = `/api/collections/members/records/${u.id}/passkeys`;
  assert.deepEqual((await srv.api('GET', path, { token: u.token })).body, { items: [] });
  const { finish } = await register(u.token, p.page);
  assert.equal((await srv.api('POST', '/api/collections/members/auth/webauthn/register/finish', { token: u.token, body: finish })).status, 200);

  const list = await srv.api('GET', path, { token: u.token });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.body.items.length, 1);
  const key = list.body.items[0];
  assert.deepEqual(Object.keys(key).sort(), ['created', 'id', 'lastUsed']);
  assert.equal(key.id, finish.id);
  assert.match(key.created, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(key.lastUsed, '');
  assert.ok(!list.text.includes('publicKey') && !list.text.includes('counter'));

  // a sign-in with it shows as its last use
  const signedIn = await complete(await assertion('lister@example.com', 'members', p.page));
  assert.equal(signedIn.status, 200, signedIn.text);
  const used = (await srv.api('GET', path, { token: u.token })).body.items[0];
  assert.match(used.lastUsed, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);

  assert.equal((await srv.api('GET', path)).status, 401);
  assert.equal((await srv.api('GET', path, { token: other.token })).status, 404, 'another record: hidden');
  assert.equal((await srv.api('GET', path, { token: srv.suToken })).body.items.length, 1, 'superusers see any record');
  assert.equal((await srv.api('GET', '/api/collections/members/records/nosuchrecord123/passkeys', { token: srv.suToken })).status, 404);
  assert.equal((await srv.api('DELETE', `${path}/${key.id}`)).status, 401);
  assert.equal((await srv.api('DELETE', `${path}/${key.id}`, { token: other.token })).status, 404);
  assert.equal((await srv.api('DELETE', `/api/collections/members/records/${other.id}/passkeys/${key.id}`, { token: other.token })).status, 404, 'not the caller\'s passkey');
  assert.equal((await srv.api('DELETE', `${path}/not-a-passkey`, { token: u.token })).status, 404);

  const del = await srv.api('DELETE', `${path}/${key.id}`, { token: u.token });
  assert.equal(del.status, 204, del.text);
  assert.deepEqual((await srv.api('GET', path, { token: u.token })).body, { items: [] });
  assert.equal((await srv.api('DELETE', `${path}/${key.id}`, { token: u.token })).status, 404, 'gone');
  // the deleted passkey no longer signs in
  const refused = await complete(await assertion('lister@example.com', 'members', p.page));
  assert.equal(refused.status, 400, refused.text);
  assert.ok(refused.body.data.credentialId);
  await p.page.close();
});
