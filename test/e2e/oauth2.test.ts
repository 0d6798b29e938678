/**
 * OAuth2 sign-in with PKCE (spec 1-core-api.md "OAuth2", "States and transitions": OAuth
 * state), end to end against a real OpenID provider (oidc-provider over HTTPS with a certificate
 * made at test time, trusted by svc through NODE_EXTRA_CA_CERTS): the provider list, initiate,
 * the whole authorization dance, first sign-in creating the record, later sign-ins by link,
 * linking by an authenticated user, unlinking, externalAuths on the record, and every failure
 * path: state missing, replayed, expired, for another provider or disabled; redirect allow-list;
 * PKCE verifier; a refused code; an unreachable provider; https-only provider URLs; an existing
 * email; a locked create rule; require_verified; disabled method 404s. Account safety: an address
 * the provider does not vouch for makes no account; links made under an unproven address (or
 * carried over from an older database, upgraded on start) are dropped by the owner's verification
 * or password reset, which also deletes the sign-in passkeys; a state is bound to whoever started
 * the flow, with server-held state and, for signed-in callers, without it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { oauthDance, startOidc, type TestOidc } from '../helpers/oidc.js';
import { sleep, tokenFromLog, withDb } from '../helpers/auth-helpers.js';

let idp: TestOidc;
let srv: Svc;
let noState: Svc;
let shortState: Svc;
const PW = 'oauth-pass-1';

const verifier = () => randomBytes(32).toString('base64url');
const challenge = (v: string) => createHash('sha256').update(v).digest('base64url');

function providers(o: TestOidc) {
  return [
    { name: 'idp', kind: 'generic', clientId: o.clientId, clientSecret: o.clientSecret, discoveryUrl: `${o.issuer}/.well-known/openid-configuration`, redirectUrls: [o.redirectUris[0]] },
    // a named kind pointed at the same provider through its URL overrides
    { name: 'google', kind: 'google', clientId: o.clientId, clientSecret: o.clientSecret, authUrl: `${o.issuer}/auth`, tokenUrl: `${o.issuer}/token`, userInfoUrl: `${o.issuer}/me`, redirectUrls: [o.redirectUris[0]] },
    // nothing listens there
    { name: 'down', kind: 'generic', clientId: o.clientId, clientSecret: o.clientSecret, authUrl: `${o.issuer}/auth`, tokenUrl: 'https://127.0.0.1:9/token', userInfoUrl: 'https://127.0.0.1:9/me', redirectUrls: [o.redirectUris[0]] },
  ];
}

async function setup(s: Svc, o: TestOidc): Promise<void> {
  await s.createCollection({
    name: 'people', type: 'auth', fields: [{ name: 'name', type: 'text' }],
    createRule: '@public', viewRule: "id = @request.auth.id", updateRule: 'id = @request.auth.id',
    options: { auth: { methods: { oauth2: { enabled: true, providers: providers(o) } } } },
  });
}

/** initiate → the provider's dance as `sub` → the code (test/helpers/oidc.ts, oauthDance); `token` signs the initiate in. */
function dance(s: Svc, sub: string, provider = 'idp', col = 'people', token?: string): Promise<{ code: string; state?: string; codeVerifier: string }> {
  return oauthDance(s, idp, sub, { provider, collection: col, token: token ?? null });
}

function complete(s: Svc, d: { code: string; state?: string; codeVerifier: string }, over: Record<string, unknown> = {}, token?: string) {
  return s.api('POST', '/api/collections/people/auth/oauth2/complete', {
    token: token ?? null,
    body: { provider: 'idp', code: d.code, codeVerifier: d.codeVerifier, redirectUrl: idp.redirectUris[0], state: d.state, ...over },
  });
}

before(async () => {
  idp = await startOidc();
  idp.accounts.set('alice-sub', { email: 'alice@example.com', email_verified: true, name: 'Alice Example' });
  idp.accounts.set('bob-sub', { email: 'bob@example.com', email_verified: true, name: 'Bob' });
  idp.accounts.set('carol-sub', { email: 'carol@example.com', email_verified: false });
  idp.accounts.set('dave-sub', { email: 'dave@example.com', email_verified: true });
  idp.accounts.set('erin-sub', { email: 'erin@example.com', email_verified: true });
  idp.accounts.set('noemail-sub', {});
  const env = { NODE_EXTRA_CA_CERTS: idp.caFile, SERVICE_RATE_LIMIT_MAX: '0' };
  [srv, noState, shortState] = await Promise.all([
    startSvc({ env }),
    startSvc({ env: { ...env, SERVICE_OAUTH_STATE_SERVER: 'false' } }),
    // states live 3 s; a sign-in counts as recent for 5 s (SERVICE_REAUTH_MAX_AGE): short enough
    // to wait out, long enough for a sign-in dance on a loaded machine
    startSvc({ env: { ...env, SERVICE_OAUTH_STATE_TTL: '3', SERVICE_REAUTH_MAX_AGE: '5' } }),
  ]);
  await Promise.all([setup(srv, idp), setup(noState, idp), setup(shortState, idp)]);
  await srv.createCollection({ name: 'closed', type: 'auth', fields: [], createRule: null, options: { auth: { methods: { oauth2: { enabled: true, providers: providers(idp) } } } } });
  await srv.createCollection({ name: 'strict', type: 'auth', fields: [], createRule: '@public', options: { auth: { require_verified: true, methods: { oauth2: { enabled: true, providers: providers(idp) } } } } });
  await srv.createCollection({ name: 'plain', type: 'auth', fields: [] });
});

after(async () => {
  for (const s of [srv, noState, shortState]) {
    await s?.stop();
    if (s) rmSync(s.dataDir, { recursive: true, force: true });
  }
  await idp?.close();
});

test('meta says oauth2; the provider list names each provider with its authorization URL and never a secret', async () => {
  const meta = await srv.api('GET', '/api/meta');
  assert.equal(meta.body.capabilities.oauth2, true);
  const r = await srv.api('GET', '/api/collections/people/auth/oauth2/providers');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.items.map((p: any) => p.name), ['idp', 'google', 'down']);
  const idpItem = r.body.items[0];
  assert.equal(idpItem.authURL, `${idp.issuer}/auth`, 'generic: from the discovery document');
  assert.equal(idpItem.clientId, idp.clientId);
  assert.deepEqual(idpItem.scopes, ['openid', 'email', 'profile']);
  assert.ok(!r.text.includes(idp.clientSecret), 'no client secret in the list');
  assert.ok(!r.text.includes('clientSecret'));
});

test('a disabled method answers 404 on every OAuth2 route', async () => {
  for (const [m, path, body] of [
    ['GET', '/api/collections/plain/auth/oauth2/providers', undefined],
    ['POST', '/api/collections/plain/auth/oauth2/initiate', { provider: 'idp' }],
    ['POST', '/api/collections/plain/auth/oauth2/complete', { provider: 'idp', code: 'x', codeVerifier: verifier(), redirectUrl: idp.redirectUris[0], state: 'a.b' }],
    ['GET', '/api/collections/missing/auth/oauth2/providers', undefined],
  ] as const) {
    const r = await srv.api(m, path, { body });
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.body.code, 'not_found');
  }
});

test('first sign-in creates the record with the verified email and its link; the next finds it by the link', async () => {
  const d = await dance(srv, 'alice-sub');
  const r = await complete(srv, d);
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.token);
  assert.equal(r.body.record.email, 'alice@example.com');
  assert.equal(r.body.record.verified, true, 'the provider vouched for the address');
  assert.equal(r.body.record.name, 'Alice Example');
  assert.deepEqual(r.body.record.externalAuths, [{ provider: 'idp', providerId: 'alice-sub' }]);
  assert.equal(r.body.meta.isNew, true);
  assert.equal(r.body.meta.provider, 'idp');
  assert.equal(r.body.meta.id, 'alice-sub');
  assert.match(r.headers.get('set-cookie') ?? '', /svc_auth=/, 'session cookies set');
  // the session works
  const me = await srv.api('GET', `/api/collections/people/records/${r.body.record.id}`, { token: r.body.token });
  assert.equal(me.status, 200);
  assert.deepEqual(me.body.externalAuths, [{ provider: 'idp', providerId: 'alice-sub' }], 'the owner sees the links');
  // there is no password to sign in with
  const pw = await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'alice@example.com', password: '' } });
  assert.equal(pw.status, 400);

  const again = await complete(srv, await dance(srv, 'alice-sub'));
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.record.id, r.body.record.id, 'found by its link');
  assert.equal(again.body.meta.isNew, false);

  // a named kind (google) against the same provider reaches the same kind of answer
  const g = await dance(srv, 'dave-sub', 'google');
  const gr = await srv.api('POST', '/api/collections/people/auth/oauth2/complete', { body: { provider: 'google', code: g.code, codeVerifier: g.codeVerifier, redirectUrl: idp.redirectUris[0], state: g.state } });
  assert.equal(gr.status, 200, gr.text);
  assert.equal(gr.body.record.email, 'dave@example.com');
  assert.deepEqual(gr.body.record.externalAuths, [{ provider: 'google', providerId: 'dave-sub' }]);
});

test('an address the provider does not vouch for is refused (400) and makes no record; no email at all is 400', async () => {
  const r = await complete(srv, await dance(srv, 'carol-sub'));
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.code, 'validation_failed');
  assert.match(r.body.data.provider.message, /not verified/);
  assert.equal(r.headers.get('set-cookie'), null);
  const held = await srv.api('GET', `/api/collections/people/records?filter=${encodeURIComponent("email = 'carol@example.com'")}`, { token: srv.suToken });
  assert.equal(held.body.items.length, 0, 'no account holds the unverified address');
  // the real owner can still sign up with that address later, and the provider account reaches nothing
  const owner = await srv.api('POST', '/api/collections/people/records', { body: { email: 'carol@example.com', password: PW, passwordConfirm: PW } });
  assert.equal(owner.status, 201, owner.text);
  const again = await complete(srv, await dance(srv, 'carol-sub'));
  assert.equal(again.status, 400, again.text);
  const none = await complete(srv, await dance(srv, 'noemail-sub'));
  assert.equal(none.status, 400, none.text);
  assert.match(none.body.data.provider.message, /email/);
});

test('state: missing, replayed, for another provider, expired or made up is 400 before the provider is contacted', async () => {
  const d = await dance(srv, 'bob-sub');
  const missing = await complete(srv, d, { state: undefined });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.data.state.code, 'validation_required');
  const madeUp = await complete(srv, d, { state: 'abcdefghijklmno.xyz' });
  assert.equal(madeUp.status, 400);
  assert.equal(madeUp.body.data.state.code, 'validation_value');
  // a state issued for the google provider, used with idp
  const other = await srv.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'google' } });
  const cross = await complete(srv, d, { state: other.body.state });
  assert.equal(cross.status, 400, cross.text);
  assert.ok(cross.body.data.state);
  // the code was never sent to the provider: it still signs in with the right state
  const ok = await complete(srv, d);
  assert.equal(ok.status, 200, ok.text);
  // replay
  const d2 = await dance(srv, 'bob-sub');
  const replay = await complete(srv, d2, { state: d.state });
  assert.equal(replay.status, 400);
  assert.ok(replay.body.data.state);
  assert.equal((await complete(srv, d2)).status, 200, 'the fresh code was not spent by the refused attempt');

  // expiry (SERVICE_OAUTH_STATE_TTL=3)
  const e = await dance(shortState, 'bob-sub');
  await sleep(3500);
  const expired = await shortState.api('POST', '/api/collections/people/auth/oauth2/complete', { body: { provider: 'idp', code: e.code, codeVerifier: e.codeVerifier, redirectUrl: idp.redirectUris[0], state: e.state } });
  assert.equal(expired.status, 400, expired.text);
  assert.ok(expired.body.data.state);
});

test('with SERVICE_OAUTH_STATE_SERVER=false initiate has no state and complete needs none; PKCE still applies', async () => {
  const init = await noState.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'idp' } });
  assert.equal(init.status, 200);
  assert.equal(init.body.state, undefined);
  assert.ok(!new URL(init.body.authURL).searchParams.has('state'));
  const v = verifier();
  const clientState = randomBytes(8).toString('hex');
  const out = await idp.authorize(`${init.body.authURL}&state=${clientState}&redirect_uri=${encodeURIComponent(idp.redirectUris[0])}&code_challenge=${challenge(v)}&code_challenge_method=S256`, 'erin-sub');
  assert.equal(out.state, clientState);
  const wrongVerifier = await noState.api('POST', '/api/collections/people/auth/oauth2/complete', { body: { provider: 'idp', code: out.code, codeVerifier: verifier(), redirectUrl: idp.redirectUris[0] } });
  assert.equal(wrongVerifier.status, 400, 'the provider refuses a verifier that does not match the challenge');
  assert.match(wrongVerifier.body.data.code.message, /refused/);
  const out2 = await idp.authorize(`${init.body.authURL}&redirect_uri=${encodeURIComponent(idp.redirectUris[0])}&code_challenge=${challenge(v)}&code_challenge_method=S256`, 'erin-sub');
  const r = await noState.api('POST', '/api/collections/people/auth/oauth2/complete', { body: { provider: 'idp', code: out2.code, codeVerifier: v, redirectUrl: idp.redirectUris[0] } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.record.email, 'erin@example.com');
});

test('bad bodies: unknown provider, redirect outside the allow-list, malformed verifier, missing code; nothing signs in', async () => {
  const d = await dance(srv, 'bob-sub');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ provider: 'nope' }, 'provider'],
    [{ provider: undefined }, 'provider'],
    [{ redirectUrl: 'https://evil.example/cb' }, 'redirectUrl'],
    [{ codeVerifier: 'short' }, 'codeVerifier'],
    [{ code: '' }, 'code'],
  ];
  for (const [over, field] of cases) {
    const r = await complete(srv, d, over);
    assert.equal(r.status, 400, `${JSON.stringify(over)}: ${r.text}`);
    assert.ok(r.body.data[field], `${field}: ${r.text}`);
    assert.equal(r.headers.get('set-cookie'), null);
  }
  const notJson = await srv.api('POST', '/api/collections/people/auth/oauth2/complete', { raw: '{"provider":', headers: { 'content-type': 'application/json' } });
  assert.equal(notJson.status, 400);
  // the state survived the refused attempts (checked before it is consumed)
  assert.equal((await complete(srv, d)).status, 200);
  const init = await srv.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'nope' } });
  assert.equal(init.status, 400);
});

test('a provider that cannot be reached is 502 bad_gateway, not 500', async () => {
  const init = await srv.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'down' } });
  assert.equal(init.status, 200);
  const r = await srv.api('POST', '/api/collections/people/auth/oauth2/complete', { body: { provider: 'down', code: 'abc', codeVerifier: verifier(), redirectUrl: idp.redirectUris[0], state: init.body.state } });
  assert.equal(r.status, 502, r.text);
  assert.equal(r.body.code, 'bad_gateway');
});

test('an existing account with the email is never linked silently; signed in, its owner links the provider, and it then signs in by link', async () => {
  idp.accounts.set('frank-sub', { email: 'frank@example.com', email_verified: true });
  const made = await srv.api('POST', '/api/collections/people/records', { body: { email: 'frank@example.com', password: PW, passwordConfirm: PW } });
  assert.equal(made.status, 201, made.text);
  const refused = await complete(srv, await dance(srv, 'frank-sub'));
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.body.code, 'conflict');

  const login = await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'frank@example.com', password: PW } });
  const linked = await complete(srv, await dance(srv, 'frank-sub', 'idp', 'people', login.body.token), {}, login.body.token);
  assert.equal(linked.status, 200, linked.text);
  assert.equal(linked.body.record.id, made.body.id);
  assert.deepEqual(linked.body.record.externalAuths, [{ provider: 'idp', providerId: 'frank-sub' }]);
  const byLink = await complete(srv, await dance(srv, 'frank-sub'));
  assert.equal(byLink.status, 200);
  assert.equal(byLink.body.record.id, made.body.id);

  // the same provider account cannot be linked to a second record
  const other = await srv.api('POST', '/api/collections/people/records', { body: { email: 'grace@example.com', password: PW, passwordConfirm: PW } });
  const graceLogin = await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'grace@example.com', password: PW } });
  const stolen = await complete(srv, await dance(srv, 'frank-sub', 'idp', 'people', graceLogin.body.token), {}, graceLogin.body.token);
  assert.equal(stolen.status, 409, stolen.text);
  assert.equal(other.status, 201);

  // links are the owner's and superusers' to see; nobody can write them
  const asGrace = await srv.api('GET', `/api/collections/people/records/${made.body.id}`, { token: graceLogin.body.token });
  assert.equal(asGrace.status, 404);
  const asSu = await srv.api('GET', `/api/collections/people/records/${made.body.id}`, { token: srv.suToken });
  assert.deepEqual(asSu.body.externalAuths, [{ provider: 'idp', providerId: 'frank-sub' }]);
  const forged = await srv.api('PATCH', `/api/collections/people/records/${other.body.id}`, { token: graceLogin.body.token, body: { externalAuths: [{ provider: 'idp', providerId: 'frank-sub' }] } });
  assert.equal(forged.status, 200);
  const graceView = await srv.api('GET', `/api/collections/people/records/${other.body.id}`, { token: graceLogin.body.token });
  assert.deepEqual(graceView.body.externalAuths, []);
});

test('unlink: anonymous 401, another user 404, the owner 204, then 404; the unlinked provider account no longer reaches the record', async () => {
  idp.accounts.set('heidi-sub', { email: 'heidi@example.com', email_verified: true });
  const first = await complete(srv, await dance(srv, 'heidi-sub'));
  const id = first.body.record.id;
  const path = `/api/collections/people/records/${id}/external-auths/idp`;
  assert.equal((await srv.api('DELETE', path)).status, 401);
  const bob = await complete(srv, await dance(srv, 'bob-sub'));
  assert.equal((await srv.api('DELETE', path, { token: bob.body.token })).status, 404);
  const del = await srv.api('DELETE', path, { token: first.body.token });
  assert.equal(del.status, 204, del.text);
  assert.equal((await srv.api('DELETE', path, { token: first.body.token })).status, 404);
  const view = await srv.api('GET', `/api/collections/people/records/${id}`, { token: first.body.token });
  assert.deepEqual(view.body.externalAuths, []);
  // unlinked: the provider account no longer reaches the record, and its email is taken
  const again = await complete(srv, await dance(srv, 'heidi-sub'));
  assert.equal(again.status, 409, again.text);
  // a superuser may unlink too
  const bobPath = `/api/collections/people/records/${bob.body.record.id}/external-auths/idp`;
  assert.equal((await srv.api('DELETE', bobPath, { token: srv.suToken })).status, 204);
});

test('a locked create rule refuses the first sign-in (403) and leaves no record; under require_verified an unverified provider address is refused too (400)', async () => {
  idp.accounts.set('ivan-sub', { email: 'ivan@example.com', email_verified: true });
  const d = await dance(srv, 'ivan-sub', 'idp', 'closed');
  const r = await srv.api('POST', '/api/collections/closed/auth/oauth2/complete', { body: { provider: 'idp', code: d.code, codeVerifier: d.codeVerifier, redirectUrl: idp.redirectUris[0], state: d.state } });
  assert.equal(r.status, 403, r.text);
  const list = await srv.api('GET', '/api/collections/closed/records', { token: srv.suToken });
  assert.equal(list.body.items.length, 0);

  // an unverified provider address is refused before require_verified is consulted
  const s = await dance(srv, 'carol-sub', 'idp', 'strict');
  const sr = await srv.api('POST', '/api/collections/strict/auth/oauth2/complete', { body: { provider: 'idp', code: s.code, codeVerifier: s.codeVerifier, redirectUrl: idp.redirectUris[0], state: s.state } });
  assert.equal(sr.status, 400, sr.text);
  assert.ok(sr.body.data.provider, sr.text);
  assert.equal(sr.headers.get('set-cookie'), null);
});

test('provider options: https only, generic needs its URLs, a redirect allow-list, unique names, known kinds', async () => {
  const base = { name: 'x', kind: 'generic', clientId: 'c', clientSecret: 's', authUrl: 'https://idp.example/auth', tokenUrl: 'https://idp.example/token', userInfoUrl: 'https://idp.example/me', redirectUrls: ['https://app.example/cb'] };
  const cases: Array<[Record<string, unknown>[], string]> = [
    [[{ ...base, tokenUrl: 'http://idp.example/token' }], 'providers.0.tokenUrl'],
    [[{ ...base, discoveryUrl: 'http://idp.example/.well-known/openid-configuration' }], 'providers.0.discoveryUrl'],
    [[{ ...base, authUrl: undefined }], 'providers.0.discoveryUrl'],
    [[{ ...base, redirectUrls: [] }], 'providers.0.redirectUrls'],
    [[{ ...base, kind: 'myspace' }], 'providers.0.kind'],
    [[base, base], 'providers.1.name'],
    [[{ ...base, clientId: '' }], 'providers.0.clientId'],
    [[], 'providers'],
  ];
  for (const [list, key] of cases) {
    const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: `o${randomBytes(3).toString('hex')}`, type: 'auth', fields: [], options: { auth: { methods: { oauth2: { enabled: true, providers: list } } } } } });
    assert.equal(r.status, 400, `${key}: ${r.text}`);
    assert.ok(r.body.data[`options.auth.methods.oauth2.${key}`], `${key}: ${r.text}`);
  }
});

/** The links of a record as a superuser sees them. */
async function linksOf(s: Svc, id: string): Promise<{ provider: string; providerId: string }[]> {
  const r = await s.api('GET', `/api/collections/people/records/${id}`, { token: s.suToken });
  assert.equal(r.status, 200, r.text);
  return r.body.externalAuths;
}

/** Runs request-<what> for `email` and redeems the mailed token (the mail goes to the log here). */
async function redeem(s: Svc, what: 'verification' | 'password-reset', email: string): Promise<void> {
  const mark = s.stderr().length;
  assert.equal((await s.api('POST', `/api/collections/people/request-${what}`, { body: { email } })).status, 204);
  const token = await tokenFromLog(s, email, mark);
  const body = what === 'verification' ? { token } : { token, password: 'a-new-pass-99', passwordConfirm: 'a-new-pass-99' };
  const r = await s.api('POST', `/api/collections/people/confirm-${what}`, { body });
  assert.equal(r.status, 204, r.text);
}

async function passwordAccount(s: Svc, email: string): Promise<{ id: string; token: string }> {
  const made = await s.api('POST', '/api/collections/people/records', { body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(made.status, 201, made.text);
  const login = await s.api('POST', '/api/collections/people/auth-with-password', { body: { identity: email, password: PW } });
  assert.equal(login.status, 200, login.text);
  return { id: made.body.id, token: login.body.token };
}

test('a link made while the record\'s address was unproven is dropped when the owner verifies it or resets the password; a link made under a verified address stays', async () => {
  // someone signs up with an address they do not own (unverified) and links their provider account
  idp.accounts.set('mallory-sub', { email: 'mallory@evil.example', email_verified: true });
  idp.accounts.set('mallory2-sub', { email: 'mallory2@evil.example', email_verified: true });
  const squat = await passwordAccount(srv, 'pat@example.com');
  const l = await complete(srv, await dance(srv, 'mallory-sub', 'idp', 'people', squat.token), {}, squat.token);
  assert.equal(l.status, 200, l.text);
  assert.deepEqual(await linksOf(srv, squat.id), [{ provider: 'idp', providerId: 'mallory-sub' }]);
  // the real owner verifies the address: the link made before goes
  await redeem(srv, 'verification', 'pat@example.com');
  assert.deepEqual(await linksOf(srv, squat.id), [], 'verification drops the unconfirmed link');
  const after = await complete(srv, await dance(srv, 'mallory-sub'));
  assert.equal(after.status, 200, after.text);
  assert.notEqual(after.body.record.id, squat.id, 'the provider account no longer reaches the owner\'s record');

  // the same through a password reset
  const squat2 = await passwordAccount(srv, 'quentin@example.com');
  assert.equal((await complete(srv, await dance(srv, 'mallory2-sub', 'idp', 'people', squat2.token), {}, squat2.token)).status, 200);
  await redeem(srv, 'password-reset', 'quentin@example.com');
  assert.deepEqual(await linksOf(srv, squat2.id), [], 'the reset drops the unconfirmed link');

  // a record with a proven address: its owner's link survives both
  idp.accounts.set('rhea-sub', { email: 'rhea@example.com', email_verified: true });
  const rhea = await complete(srv, await dance(srv, 'rhea-sub'));
  assert.equal(rhea.status, 200, rhea.text);
  await redeem(srv, 'password-reset', 'rhea@example.com');
  assert.deepEqual(await linksOf(srv, rhea.body.record.id), [{ provider: 'idp', providerId: 'rhea-sub' }]);
  const back = await complete(srv, await dance(srv, 'rhea-sub'));
  assert.equal(back.body.record.id, rhea.body.record.id);
});

test('a password reset deletes the record\'s sign-in passkeys and its unconfirmed links, keeps its confirmed links and second factors, and ends its sessions', async () => {
  idp.accounts.set('rob-sub', { email: 'rob@example.com', email_verified: true });
  const rob = await complete(srv, await dance(srv, 'rob-sub'));
  assert.equal(rob.status, 200, rob.text);
  const id = rob.body.record.id;
  const cid = (await srv.api('GET', '/api/collections/people', { token: srv.suToken })).body.id;
  const now = new Date().toISOString().replace('T', ' ');
  // a link of unknown provenance (as a database from before links recorded it holds) and a passkey
  withDb(srv.dataDir, (db) => {
    db.prepare('INSERT INTO "_externalAuths" ("id","collectionId","recordId","provider","providerId","created","confirmed") VALUES (?,?,?,?,?,?,0)').run(['extunconfirmed1', cid, id, 'google', 'eve-sub', now]);
    const add = db.prepare('INSERT INTO "_passkeys" ("id","collectionId","recordId","publicKey","counter","transports","factor","created") VALUES (?,?,?,?,0,?,?,?)');
    add.run(['cred-rob-signin', cid, id, 'cHVibGlj', '[]', 0, now]);
    add.run(['cred-rob-factor', cid, id, 'cHVibGlj', '[]', 1, now]);
  });
  assert.deepEqual((await linksOf(srv, id)).map((x) => x.provider).sort(), ['google', 'idp']);
  const passkeys = () => withDb(srv.dataDir, (db) => (db.prepare('SELECT "id" FROM "_passkeys" WHERE "recordId" = ? ORDER BY "id"').raw(true).all([id]) as unknown[][]).map((r) => String(r[0])));
  assert.deepEqual(passkeys(), ['cred-rob-factor', 'cred-rob-signin']);

  await redeem(srv, 'password-reset', 'rob@example.com');
  assert.deepEqual(passkeys(), ['cred-rob-factor'], 'the sign-in passkey is gone; the second factor stays');
  assert.deepEqual(await linksOf(srv, id), [{ provider: 'idp', providerId: 'rob-sub' }], 'only the confirmed link stays');
  assert.equal((await srv.api('GET', `/api/collections/people/records/${id}`, { token: rob.body.token })).status, 401, 'the session from before the reset ended');
  const pw = await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'rob@example.com', password: 'a-new-pass-99' } });
  assert.equal(pw.status, 200, pw.text);
});

test('a database from before links recorded their provenance gets the column; its old links count as unconfirmed', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-oauth-upgrade-'));
  const env = { NODE_EXTRA_CA_CERTS: idp.caFile, SERVICE_RATE_LIMIT_MAX: '0' };
  const old = await startSvc({ env, dataDir });
  try {
    await setup(old, idp);
    const una = await passwordAccount(old, 'una@example.com');
    const cid = (await old.api('GET', '/api/collections/people', { token: old.suToken })).body.id;
    await old.stop();
    // the table as it was: no "confirmed" column, one link
    withDb(dataDir, (db) => {
      db.exec('ALTER TABLE "_externalAuths" DROP COLUMN "confirmed"');
      db.prepare('INSERT INTO "_externalAuths" ("id","collectionId","recordId","provider","providerId","created") VALUES (?,?,?,?,?,?)').run(['extoldshape0001', cid, una.id, 'idp', 'una-old-sub', '2024-01-01 00:00:00.000Z']);
    });
    const again = await startSvc({ env, dataDir });
    try {
      const cols = withDb(dataDir, (db) => db.prepare('SELECT "confirmed" FROM "_externalAuths" WHERE "id" = ?').raw(true).all(['extoldshape0001']) as unknown[][]);
      assert.deepEqual(cols.map((r) => Number(r[0])), [0]);
      assert.deepEqual(await linksOf(again, una.id), [{ provider: 'idp', providerId: 'una-old-sub' }]);
      await redeem(again, 'verification', 'una@example.com');
      assert.deepEqual(await linksOf(again, una.id), []);
    } finally {
      await again.stop();
    }
  } finally {
    await old.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a state is bound to whoever started the flow: another signed-in user, or an anonymous start, cannot complete it to link', async () => {
  idp.accounts.set('oscar-sub', { email: 'oscar@evil.example', email_verified: true });
  const victim = await passwordAccount(srv, 'victor@example.com');
  const other = await passwordAccount(srv, 'wendy@example.com');
  // the attacker starts anonymously and hands the victim the code and state (login CSRF)
  const anon = await dance(srv, 'oscar-sub');
  const r1 = await complete(srv, anon, {}, victim.token);
  assert.equal(r1.status, 400, r1.text);
  assert.equal(r1.body.data.state.code, 'validation_value');
  // started by another signed-in user
  const byOther = await dance(srv, 'oscar-sub', 'idp', 'people', other.token);
  const r2 = await complete(srv, byOther, {}, victim.token);
  assert.equal(r2.status, 400, r2.text);
  assert.ok(r2.body.data.state);
  // started signed in, completed anonymously
  const signedIn = await dance(srv, 'oscar-sub', 'idp', 'people', victim.token);
  const r3 = await complete(srv, signedIn);
  assert.equal(r3.status, 400, r3.text);
  assert.ok(r3.body.data.state);
  assert.deepEqual(await linksOf(srv, victim.id), [], 'nothing was linked');
  assert.deepEqual(await linksOf(srv, other.id), []);
  // a refused state is spent
  assert.equal((await complete(srv, signedIn, {}, victim.token)).status, 400);
  // the victim's own flow links
  const own = await complete(srv, await dance(srv, 'oscar-sub', 'idp', 'people', victim.token), {}, victim.token);
  assert.equal(own.status, 200, own.text);
  assert.equal(own.body.record.id, victim.id);
});

test('with SERVICE_OAUTH_STATE_SERVER=false a signed-in caller still needs a state it started to link', async () => {
  idp.accounts.set('olga-sub', { email: 'olga@evil.example', email_verified: true });
  const victim = await passwordAccount(noState, 'vera@example.com');
  const other = await passwordAccount(noState, 'will@example.com');
  const anonInit = await noState.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'idp' } });
  assert.equal(anonInit.body.state, undefined, 'an anonymous start stays stateless');
  const codeFor = async (init: any) => {
    const v = verifier();
    const out = await idp.authorize(`${init.authURL}${init.state ? '' : '&state=client-held'}&redirect_uri=${encodeURIComponent(idp.redirectUris[0])}&code_challenge=${challenge(v)}&code_challenge_method=S256`, 'olga-sub');
    assert.ok(out.code, out.error);
    return { code: out.code!, codeVerifier: v, state: init.state as string | undefined };
  };
  const done = (d: { code: string; codeVerifier: string; state?: string }, token?: string) =>
    noState.api('POST', '/api/collections/people/auth/oauth2/complete', { token: token ?? null, body: { provider: 'idp', code: d.code, codeVerifier: d.codeVerifier, redirectUrl: idp.redirectUris[0], state: d.state } });
  // no state: refused for a signed-in caller
  const r1 = await done(await codeFor(anonInit.body), victim.token);
  assert.equal(r1.status, 400, r1.text);
  assert.equal(r1.body.data.state.code, 'validation_required');
  // a state another user started
  const otherInit = await noState.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'idp' }, token: other.token });
  assert.ok(otherInit.body.state, 'a signed-in start gets a server-held state');
  const r2 = await done(await codeFor(otherInit.body), victim.token);
  assert.equal(r2.status, 400, r2.text);
  assert.equal(r2.body.data.state.code, 'validation_value');
  assert.deepEqual(await linksOf(noState, victim.id), []);
  // the caller's own signed-in start links
  const ownInit = await noState.api('POST', '/api/collections/people/auth/oauth2/initiate', { body: { provider: 'idp' }, token: victim.token });
  const r3 = await done(await codeFor(ownInit.body), victim.token);
  assert.equal(r3.status, 200, r3.text);
  assert.deepEqual(await linksOf(noState, victim.id), [{ provider: 'idp', providerId: 'olga-sub' }]);
});

test('linking a provider needs a recent primary sign-in: a stolen, refreshed session adds no way in', async () => {
  idp.accounts.set('hank-sub', { email: 'hank-idp@example.com', email_verified: true });
  const made = await shortState.api('POST', '/api/collections/people/records', { body: { email: 'hank@example.com', password: PW, passwordConfirm: PW } });
  assert.equal(made.status, 201, made.text);
  const login = await shortState.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'hank@example.com', password: PW } });
  await sleep(6000);
  const refreshed = await shortState.api('POST', '/api/collections/people/auth-refresh', { token: login.body.token });
  assert.equal(refreshed.status, 200, refreshed.text);
  const old = refreshed.body.token;
  const refused = await complete(shortState, await dance(shortState, 'hank-sub', 'idp', 'people', old), {}, old);
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'reauthentication_required');
  const view = await shortState.api('GET', `/api/collections/people/records/${made.body.id}`, { token: old });
  assert.deepEqual(view.body.externalAuths ?? [], [], 'no link was made');

  const fresh = await shortState.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'hank@example.com', password: PW } });
  const linked = await complete(shortState, await dance(shortState, 'hank-sub', 'idp', 'people', fresh.body.token), {}, fresh.body.token);
  assert.equal(linked.status, 200, linked.text);
  assert.deepEqual(linked.body.record.externalAuths, [{ provider: 'idp', providerId: 'hank-sub' }]);
});
