/**
 * PocketBase's JS SDK (package `pocketbase`) against svc's PocketBase auth routes
 * (docs/pocketbase.md, "The JS SDK's auth calls"): listAuthMethods, authWithOAuth2Code with the
 * verifier auth-methods handed out (a real OpenID provider, test/helpers/oidc.ts), requestOTP /
 * authWithOTP (mail through a real SMTP server, test/helpers/smtp.ts), impersonate,
 * requestEmailChange / confirmEmailChange and listExternalAuths / unlinkExternalAuth, with their
 * failure paths: a replayed, foreign or someone else's verifier; a wrong code; a forged, expired
 * or foreign otpId; an unknown address that still gets an otpId and no mail; a method that is
 * off; a required second factor the SDK routes do not skip, not even with PocketBase's `mfaId`
 * and a mailed code (svc's TOTP completion through `pb.send` finishes); impersonation by anyone but a
 * superuser, and refreshing its token; a wrong password, a replayed token and a taken address on
 * an email change; another user's or nobody's look at a record's links.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { startOidc, type TestOidc } from '../helpers/oidc.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { MAIL_TOKEN_RE, sleep, tokenSecret } from '../helpers/auth-helpers.js';
import { generateSync } from 'otplib';
import { tamperBase64url } from '../helpers/tamper.js';

let idp: TestOidc;
let smtp: TestSmtp;
let srv: Svc;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let PocketBase: any;

/** A fresh SDK client (no auto-cancellation: the tests run requests side by side). */
function sdk() {
  const pb = new PocketBase(srv.url);
  pb.autoCancellation(false);
  return pb;
}

/** The SDK's error as `{status, code}` (its ClientResponseError keeps svc's envelope in `response`). */
async function failure(p: Promise<unknown>): Promise<{ status: number; code: string; data: any }> {
  try {
    await p;
  } catch (err: any) {
    return { status: err.status, code: err.response?.code, data: err.response?.data };
  }
  assert.fail('expected the call to fail');
}

before(async () => {
  ({ default: PocketBase } = await import('pocketbase'));
  idp = await startOidc();
  idp.accounts.set('ann-sub', { email: 'ann@example.com', email_verified: true, name: 'Ann' });
  idp.accounts.set('ben-sub', { email: 'ben@example.com', email_verified: true });
  smtp = await startSmtp();
  srv = await startSvc({
    env: { NODE_EXTRA_CA_CERTS: idp.caFile, SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'accounts@svc.test', SERVICE_RATE_LIMIT_MAX: '0' },
  });
  const provider = (name: string) => ({ name, kind: 'generic', clientId: idp.clientId, clientSecret: idp.clientSecret, discoveryUrl: `${idp.issuer}/.well-known/openid-configuration`, redirectUrls: [idp.redirectUris[0]] });
  await srv.createCollection({
    name: 'people', type: 'auth', fields: [{ name: 'name', type: 'text' }],
    createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id',
    options: { auth: { methods: { oauth2: { enabled: true, providers: [provider('idp'), provider('other')] }, otp: { enabled: true, ttl_s: 300 } } } },
  });
  await srv.createCollection({ name: 'plain', type: 'auth', fields: [], options: { auth: { methods: { password: { enabled: false } } } } });
  await srv.createCollection({ name: 'coders', type: 'auth', fields: [], options: { auth: { methods: { otp: { enabled: true } } } } });
  await srv.createCollection({ name: 'guarded', type: 'auth', fields: [], options: { auth: { two_factor: 'required', methods: { otp: { enabled: true } } } } });
  await srv.createCollection({ name: 'tabled', type: 'auth', fields: [], viewRule: 'id = @request.auth.id', options: { auth: { session: { store: 'table' } } } });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
  await idp?.close();
  await smtp?.close();
});

/** An otpId as svc seals one (docs/api.md, "PocketBase SDK routes"), with the server's own key. */
function sealOtpId(collectionId: string, identity: string, expiresMs: number): string {
  const key = createHmac('sha256', tokenSecret(srv.dataDir)).update('svc otp id v1').digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify([collectionId, identity, expiresMs])), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/** listAuthMethods → the provider's authorization as `sub` → what authWithOAuth2Code needs. */
async function oauthViaSdk(pb: any, sub: string, name = 'idp'): Promise<{ code: string; codeVerifier: string; redirect: string }> {
  const methods = await pb.collection('people').listAuthMethods();
  const p = methods.oauth2.providers.find((x: any) => x.name === name);
  const redirect = idp.redirectUris[0];
  const out = await idp.authorize(p.authURL + encodeURIComponent(redirect), sub);
  assert.ok(out.code, `no code: ${out.error}`);
  assert.equal(out.state, p.state, 'the provider hands back the state auth-methods gave');
  return { code: out.code!, codeVerifier: p.codeVerifier, redirect };
}

test('listAuthMethods answers PocketBase\'s shape from the collection\'s methods', async () => {
  const pb = sdk();
  const m = await pb.collection('people').listAuthMethods();
  assert.deepEqual(Object.keys(m).sort(), ['mfa', 'oauth2', 'otp', 'password']);
  assert.deepEqual(m.password, { enabled: true, identityFields: ['email'] });
  assert.deepEqual(m.otp, { enabled: true, duration: 300 });
  assert.deepEqual(m.mfa, { enabled: false, duration: 0 });
  assert.equal(m.oauth2.enabled, true);
  assert.deepEqual(m.oauth2.providers.map((p: any) => p.name), ['idp', 'other']);
  for (const p of m.oauth2.providers) {
    assert.deepEqual(Object.keys(p).sort(), ['authURL', 'codeChallenge', 'codeChallengeMethod', 'codeVerifier', 'displayName', 'name', 'state']);
    assert.equal(p.codeChallengeMethod, 'S256');
    assert.equal(p.codeChallenge, createHash('sha256').update(p.codeVerifier).digest('base64url'));
    assert.match(p.codeVerifier, /^[A-Za-z0-9\-._~]{43,128}$/);
    assert.ok(p.authURL.startsWith(`${idp.issuer}/auth?`) && p.authURL.endsWith('&redirect_uri='), p.authURL);
    const q = new URL(p.authURL).searchParams;
    assert.equal(q.get('state'), p.state);
    assert.equal(q.get('code_challenge'), p.codeChallenge);
    assert.equal(q.get('client_id'), idp.clientId);
    assert.ok(!p.authURL.includes(p.codeVerifier) && p.state !== p.codeVerifier, 'the verifier never rides the redirect');
  }
  const raw = await srv.api('GET', '/api/collections/people/auth-methods');
  assert.ok(!raw.text.includes(idp.clientSecret), 'no client secret');
  const plain = await pb.collection('plain').listAuthMethods();
  assert.deepEqual(plain, { password: { enabled: false, identityFields: ['email'] }, oauth2: { enabled: false, providers: [] }, otp: { enabled: false, duration: 600 }, mfa: { enabled: false, duration: 0 } });
  assert.equal((await failure(pb.collection('missing').listAuthMethods())).status, 404);
});

test('authWithOAuth2Code signs up with createData, then signs in by the link; the verifier works once', async () => {
  const pb = sdk();
  const d = await oauthViaSdk(pb, 'ann-sub');
  const res = await pb.collection('people').authWithOAuth2Code('idp', d.code, d.codeVerifier, d.redirect, { name: 'Ann from SDK', verified: false });
  assert.equal(res.record.email, 'ann@example.com');
  assert.equal(res.record.name, 'Ann from SDK', 'createData fills the new record');
  assert.equal(res.record.verified, true, 'createData cannot unset what the provider vouched for');
  assert.equal(res.meta.isNew, true);
  assert.equal(pb.authStore.isValid, true);
  assert.equal(pb.authStore.record.id, res.record.id);
  assert.equal((await pb.collection('people').getOne(res.record.id)).id, res.record.id, 'the token works');
  // the same verifier again: spent, refused before the provider is asked
  const again = await failure(sdk().collection('people').authWithOAuth2Code('idp', d.code, d.codeVerifier, d.redirect));
  assert.equal(again.status, 400);
  assert.equal(again.code, 'validation_failed');
  assert.ok(again.data.state, JSON.stringify(again.data));
  const next = await oauthViaSdk(sdk(), 'ann-sub');
  const res2 = await sdk().collection('people').authWithOAuth2Code('idp', next.code, next.codeVerifier, next.redirect);
  assert.equal(res2.record.id, res.record.id);
  assert.equal(res2.meta.isNew, false);
});

test('authWithOAuth2Code refuses a verifier it did not hand out, one for another provider, one someone else started, and a bad redirect', async () => {
  const d = await oauthViaSdk(sdk(), 'ben-sub');
  const own = randomBytes(32).toString('base64url');
  for (const [provider, verifier, redirect, field] of [
    ['idp', own, d.redirect, 'state'],
    ['idp', 'x'.repeat(10), d.redirect, 'codeVerifier'],
    ['idp', d.codeVerifier, 'https://evil.example/cb', 'redirectUrl'],
  ] as const) {
    const r = await failure(sdk().collection('people').authWithOAuth2Code(provider, d.code, verifier, redirect));
    assert.equal(r.status, 400);
    assert.ok(r.data[field], `${field}: ${JSON.stringify(r.data)}`);
  }
  // idp's verifier given for "other": spent and refused
  const methods = await sdk().collection('people').listAuthMethods();
  const idpVerifier = methods.oauth2.providers[0].codeVerifier;
  const cross = await failure(sdk().collection('people').authWithOAuth2Code('other', d.code, idpVerifier, d.redirect));
  assert.equal(cross.status, 400);
  // a flow a signed-in user started cannot be completed anonymously
  const ann = sdk();
  await oauthViaSdk(ann, 'ann-sub').then((x) => ann.collection('people').authWithOAuth2Code('idp', x.code, x.codeVerifier, x.redirect));
  const theirs = await ann.collection('people').listAuthMethods();
  const stolen = await failure(sdk().collection('people').authWithOAuth2Code('idp', d.code, theirs.oauth2.providers[0].codeVerifier, d.redirect));
  assert.equal(stolen.status, 400);
  // the untouched verifier of the first dance still signs ben up
  const ok = await sdk().collection('people').authWithOAuth2Code('idp', d.code, d.codeVerifier, d.redirect);
  assert.equal(ok.record.email, 'ben@example.com');
  // off: 404
  const off = await failure(sdk().collection('plain').authWithOAuth2Code('idp', 'c', own, d.redirect));
  assert.equal(off.status, 404);
});

test('requestOTP mails a code and answers an otpId; authWithOTP signs in once; wrong codes, expired and bad ids are 400', async () => {
  const created = await srv.api('POST', '/api/collections/people/records', { token: srv.suToken, body: { email: 'otp@example.com', password: 'otp-pass-123', passwordConfirm: 'otp-pass-123' } });
  assert.equal(created.status, 201, created.text);
  const pb = sdk();
  const since = smtp.messages.length;
  const { otpId } = await pb.collection('people').requestOTP('otp@example.com');
  assert.equal(typeof otpId, 'string');
  const mail = await smtp.waitFor((m) => m.to.includes('otp@example.com') && smtp.messages.indexOf(m) >= since);
  const code = /Your sign-in code: (\d{6})/.exec(mail.raw)![1];
  const wrong = await failure(pb.collection('people').authWithOTP(otpId, code === '000000' ? '111111' : '000000'));
  assert.equal(wrong.status, 400);
  assert.equal(wrong.code, 'validation_failed');
  const forged = await failure(pb.collection('people').authWithOTP(tamperBase64url(otpId), code));
  assert.equal(forged.status, 400);
  assert.ok(forged.data.otpId);
  const foreign = await failure(pb.collection('coders').authWithOTP(otpId, code));
  assert.equal(foreign.status, 400, 'an otpId of another collection');
  const people = (await srv.api('GET', '/api/collections/people', { token: srv.suToken })).body.id;
  const expired = await failure(pb.collection('people').authWithOTP(sealOtpId(people, 'otp@example.com', Date.now() - 1000), code));
  assert.equal(expired.status, 400, 'an expired otpId');
  assert.ok(expired.data.otpId);
  // the same seal, unexpired, is good: expiry alone refused the one above
  const res = await pb.collection('people').authWithOTP(sealOtpId(people, 'otp@example.com', Date.now() + 60_000), code);
  assert.equal(res.record.email, 'otp@example.com');
  assert.equal(pb.authStore.isValid, true);
  const replay = await failure(sdk().collection('people').authWithOTP(otpId, code));
  assert.equal(replay.status, 400, 'a code works once');
});

test('requestOTP for an unknown address answers an otpId just the same and mails nothing; off is 404', async () => {
  const since = smtp.messages.length;
  const { otpId } = await sdk().collection('people').requestOTP('nobody@example.com');
  assert.equal(typeof otpId, 'string');
  const r = await failure(sdk().collection('people').authWithOTP(otpId, '123456'));
  assert.equal(r.status, 400);
  await sleep(500);
  assert.equal(smtp.messages.slice(since).filter((m) => m.to.includes('nobody@example.com')).length, 0);
  assert.equal((await failure(sdk().collection('plain').requestOTP('a@example.com'))).status, 404);
  assert.equal((await failure(sdk().collection('plain').authWithOTP(otpId, '123456'))).status, 404);
  const missing = await srv.api('POST', '/api/collections/people/request-otp', { body: {} });
  assert.equal(missing.status, 400);
  assert.deepEqual(Object.keys(missing.body.data), ['email']);
});

test('a collection that requires a second factor gets svc\'s pending answer through authWithOTP, never a session', async () => {
  const made = await srv.api('POST', '/api/collections/guarded/records', { token: srv.suToken, body: { email: 'guard@example.com', password: 'guard-pass-123', passwordConfirm: 'guard-pass-123' } });
  assert.equal(made.status, 201, made.text);
  const m = await sdk().collection('guarded').listAuthMethods();
  assert.deepEqual(m.mfa, { enabled: true, duration: 300 });
  const since = smtp.messages.length;
  const pb = sdk();
  const { otpId } = await pb.collection('guarded').requestOTP('guard@example.com');
  const mail = await smtp.waitFor((x) => x.to.includes('guard@example.com') && smtp.messages.indexOf(x) >= since);
  const code = /Your sign-in code: (\d{6})/.exec(mail.raw)![1];
  const raw = await srv.api('POST', '/api/collections/guarded/auth-with-otp', { body: { otpId, password: code } });
  assert.equal(raw.status, 200, raw.text);
  assert.equal(raw.body.status, 'enrollment_required');
  assert.equal(typeof raw.body.pendingToken, 'string');
  assert.equal(raw.body.token, undefined, 'no session before the second factor');
  assert.equal(raw.headers.get('set-cookie'), null);
});

test('PocketBase\'s mfaId round trip is not a second factor: a mailed code with mfaId answers a new pending sign-in; TOTP through pb.send finishes', async () => {
  const PW = 'guard-pass-456';
  const made = await srv.api('POST', '/api/collections/guarded/records', { token: srv.suToken, body: { email: 'mfa@example.com', password: PW, passwordConfirm: PW } });
  assert.equal(made.status, 201, made.text);
  // enroll TOTP from the first (enrollment_required) pending sign-in, as docs/auth.md shows
  const first = await sdk().collection('guarded').authWithPassword('mfa@example.com', PW);
  assert.equal(first.status, 'enrollment_required');
  const tf = (action: string, body: unknown) => srv.api('POST', `/api/collections/guarded/auth/two-factor/${action}`, { body });
  const begin = await tf('enroll-begin', { pendingToken: first.pendingToken, factor: 'totp' });
  assert.equal(begin.status, 200, begin.text);
  const secret = begin.body.secret as string;
  const totp = (steps: number) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + steps * 30 });
  assert.equal((await tf('enroll-complete', { pendingToken: first.pendingToken, factor: 'totp', ceremonyId: begin.body.ceremonyId, code: totp(0) })).status, 200);

  // the first sign-in resolves (no 401 {mfaId}) with svc's pending answer and leaves the store empty
  const pb = sdk();
  const pending = await pb.collection('guarded').authWithPassword('mfa@example.com', PW);
  assert.equal(pending.status, 'factor_required');
  assert.deepEqual(pending.factors, ['totp']);
  assert.equal(pending.token, '');
  assert.equal(pb.authStore.isValid, false);
  // a second primary method carrying mfaId (the SDK sends it as a query parameter; here also in
  // the body) is one factor again: a new pending answer, never a session
  const since = smtp.messages.length;
  const { otpId } = await pb.collection('guarded').requestOTP('mfa@example.com');
  const mail = await smtp.waitFor((x) => x.to.includes('mfa@example.com') && smtp.messages.indexOf(x) >= since);
  const code = /Your sign-in code: (\d{6})/.exec(mail.raw)![1];
  const viaOtp = await pb.collection('guarded').authWithOTP(otpId, code, { mfaId: pending.pendingToken, body: { otpId, password: code, mfaId: pending.pendingToken } });
  assert.equal(viaOtp.status, 'factor_required');
  assert.equal(viaOtp.token, '');
  assert.notEqual(viaOtp.pendingToken, pending.pendingToken);
  assert.equal(pb.authStore.isValid, false);
  // svc's own completion signs in
  const done = await pb.send('/api/collections/guarded/auth/two-factor/complete', { method: 'POST', body: { pendingToken: viaOtp.pendingToken, factor: 'totp', code: totp(1) } });
  assert.equal(done.status, 'authenticated');
  pb.authStore.save(done.token, done.record);
  assert.equal(pb.authStore.isValid, true);
  assert.equal(pb.authStore.record.email, 'mfa@example.com');
});

test('impersonate gives a superuser a short non-refreshable token for the record; anyone else is refused', async () => {
  const user = await srv.api('POST', '/api/collections/people/records', { token: srv.suToken, body: { email: 'imp@example.com', password: 'imp-pass-123', passwordConfirm: 'imp-pass-123' } });
  assert.equal(user.status, 201, user.text);
  const su = sdk();
  await su.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  const as = await su.collection('people').impersonate(user.body.id, 120);
  assert.equal(as.authStore.record.id, user.body.id);
  const claims = JSON.parse(Buffer.from(as.authStore.token.split('.')[1], 'base64url').toString());
  assert.ok(claims.exp - claims.iat === 120, JSON.stringify(claims));
  assert.equal((await as.collection('people').getOne(user.body.id)).email, 'imp@example.com');
  const refresh = await failure(as.collection('people').authRefresh());
  assert.equal(refresh.status, 403);
  assert.equal(su.authStore.record.collectionName, '_superusers', 'the superuser\'s own session is untouched');
  // anonymous 401, a user 403, an unknown record 404, a bad duration 400
  assert.equal((await failure(sdk().collection('people').impersonate(user.body.id, 60))).status, 401);
  const self = sdk();
  await self.collection('people').authWithPassword('imp@example.com', 'imp-pass-123');
  const denied = await failure(self.collection('people').impersonate(user.body.id, 60));
  assert.equal(denied.status, 403);
  assert.equal(denied.code, 'forbidden');
  assert.equal((await failure(su.collection('people').impersonate('zzzzzzzzzzzzzzz', 60))).status, 404);
  assert.equal((await failure(su.collection('people').impersonate(user.body.id, -1))).status, 400);
  const raw = await srv.api('POST', `/api/collections/people/impersonate/${user.body.id}`, { token: srv.suToken, body: {} });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('set-cookie'), null, 'no cookies');
  assert.equal(claims.auth_time, undefined, 'never a recent sign-in');
});

test('an impersonation stands for both factors, and in the table store shows as a session its owner can end', async () => {
  const su = sdk();
  await su.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  const guard = await srv.api('POST', '/api/collections/guarded/records', { token: srv.suToken, body: { email: 'guard2@example.com', password: 'guard-pass-123', passwordConfirm: 'guard-pass-123' } });
  const asGuard = await su.collection('guarded').impersonate(guard.body.id, 60);
  // resolved under `two_factor: required` (else 401), then refused as an impersonation
  assert.equal((await failure(asGuard.collection('guarded').authRefresh())).status, 403);
  const t = await srv.api('POST', '/api/collections/tabled/records', { token: srv.suToken, body: { email: 'tab@example.com', password: 'tab-pass-1234', passwordConfirm: 'tab-pass-1234' } });
  assert.equal(t.status, 201, t.text);
  const asTab = await su.collection('tabled').impersonate(t.body.id, 60);
  assert.equal((await asTab.collection('tabled').getOne(t.body.id)).id, t.body.id);
  const owner = await srv.api('POST', '/api/collections/tabled/auth-with-password', { body: { identity: 'tab@example.com', password: 'tab-pass-1234' } });
  const list = await srv.api('GET', '/api/collections/tabled/auth/sessions', { token: owner.body.token });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.body.items.length, 2, 'the impersonation and the owner\'s own');
  const other = list.body.items.find((x: any) => !x.is_current);
  assert.equal((await srv.api('DELETE', `/api/collections/tabled/auth/sessions/${other.id}`, { token: owner.body.token })).status, 204);
  assert.equal((await failure(asTab.collection('tabled').getOne(t.body.id))).status, 401, 'the owner ended it');
});

test('requestEmailChange mails a token to the new address; confirmEmailChange with the password moves the account and ends its sessions', async () => {
  const made = await srv.api('POST', '/api/collections/people/records', { token: srv.suToken, body: { email: 'old@example.com', password: 'move-pass-123', passwordConfirm: 'move-pass-123' } });
  assert.equal(made.status, 201, made.text);
  const pb = sdk();
  await pb.collection('people').authWithPassword('old@example.com', 'move-pass-123');
  const oldToken = pb.authStore.token;
  assert.equal((await failure(sdk().collection('people').requestEmailChange('new@example.com'))).status, 401, 'anonymous');
  const bad = await failure(pb.collection('people').requestEmailChange('not-an-address'));
  assert.equal(bad.status, 400);
  assert.ok(bad.data.newEmail);
  const since = smtp.messages.length;
  assert.equal(await pb.collection('people').requestEmailChange('new@example.com'), true);
  const mail = await smtp.waitFor((m) => m.to.includes('new@example.com') && smtp.messages.indexOf(m) >= since);
  const token = MAIL_TOKEN_RE.exec(mail.raw)![0];
  const wrong = await failure(pb.collection('people').confirmEmailChange(token, 'not-the-password'));
  assert.equal(wrong.status, 400);
  assert.equal(wrong.code, 'bad_request');
  assert.equal((await failure(pb.collection('coders').confirmEmailChange(token, 'move-pass-123'))).status, 400, 'another collection\'s token');
  assert.equal(await pb.collection('people').confirmEmailChange(token, 'move-pass-123'), true);
  assert.equal((await failure(pb.collection('people').confirmEmailChange(token, 'move-pass-123'))).status, 400, 'a token works once');
  const stale = await srv.api('POST', '/api/collections/people/auth-refresh', { token: oldToken });
  assert.equal(stale.status, 401, 'every session ended');
  const moved = await sdk().collection('people').authWithPassword('new@example.com', 'move-pass-123');
  assert.equal(moved.record.id, made.body.id);
  assert.equal(moved.record.verified, true, 'the token proved the new address');
  assert.equal((await failure(sdk().collection('people').authWithPassword('old@example.com', 'move-pass-123'))).status, 400);
});

test('confirmEmailChange to an address taken meanwhile is 409 and leaves the token usable', async () => {
  for (const email of ['first@example.com', 'second@example.com']) {
    const r = await srv.api('POST', '/api/collections/people/records', { token: srv.suToken, body: { email, password: 'take-pass-123', passwordConfirm: 'take-pass-123' } });
    assert.equal(r.status, 201, r.text);
  }
  const pb = sdk();
  await pb.collection('people').authWithPassword('first@example.com', 'take-pass-123');
  const since = smtp.messages.length;
  await pb.collection('people').requestEmailChange('second@example.com');
  const mail = await smtp.waitFor((m) => m.to.includes('second@example.com') && smtp.messages.indexOf(m) >= since);
  const token = MAIL_TOKEN_RE.exec(mail.raw)![0];
  const taken = await failure(pb.collection('people').confirmEmailChange(token, 'take-pass-123'));
  assert.equal(taken.status, 409);
  const gone = await srv.api('DELETE', `/api/collections/people/records/${(await sdk().collection('people').authWithPassword('second@example.com', 'take-pass-123')).record.id}`, { token: srv.suToken });
  assert.equal(gone.status, 204);
  assert.equal(await pb.collection('people').confirmEmailChange(token, 'take-pass-123'), true);
});

test('listExternalAuths shows a record\'s links to its owner and superusers only; unlinkExternalAuth removes one', async () => {
  idp.accounts.set('cleo-sub', { email: 'cleo@example.com', email_verified: true });
  const cleo = sdk();
  const d = await oauthViaSdk(cleo, 'cleo-sub');
  const { record } = await cleo.collection('people').authWithOAuth2Code('idp', d.code, d.codeVerifier, d.redirect);
  const mine = await cleo.collection('people').listExternalAuths(record.id);
  assert.equal(mine.length, 1);
  assert.equal(mine[0].provider, 'idp');
  assert.equal(mine[0].recordRef, record.id);
  assert.equal(typeof mine[0].providerId, 'string');
  const su = sdk();
  await su.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  assert.equal((await su.collection('people').listExternalAuths(record.id)).length, 1, 'a superuser sees them');
  // someone else, or nobody, sees none and cannot unlink
  const other = sdk();
  const d2 = await oauthViaSdk(other, 'ann-sub');
  await other.collection('people').authWithOAuth2Code('idp', d2.code, d2.codeVerifier, d2.redirect);
  assert.deepEqual(await other.collection('people').listExternalAuths(record.id), []);
  assert.deepEqual(await sdk().collection('people').listExternalAuths(record.id), []);
  assert.equal((await failure(other.collection('people').unlinkExternalAuth(record.id, 'idp'))).status, 404);
  const forged = await srv.api('DELETE', `/api/collections/_externalAuths/records/${mine[0].id}`, { token: other.authStore.token });
  assert.equal(forged.status, 404, 'a link id is no capability');
  assert.equal((await srv.api('DELETE', `/api/collections/_externalAuths/records/${mine[0].id}`)).status, 401);
  const badFilter = await srv.api('GET', `/api/collections/_externalAuths/records?filter=${encodeURIComponent("provider = 'idp'")}`, { token: srv.suToken });
  assert.equal(badFilter.status, 400);
  assert.equal(await cleo.collection('people').unlinkExternalAuth(record.id, 'idp'), true);
  assert.deepEqual(await cleo.collection('people').listExternalAuths(record.id), []);
  assert.equal((await failure(cleo.collection('people').unlinkExternalAuth(record.id, 'idp'))).status, 404);
  const view = await cleo.collection('people').getOne(record.id);
  assert.deepEqual(view.externalAuths, [], 'the record\'s own field agrees');
});
