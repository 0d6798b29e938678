/**
 * E2E: password authentication, tokens, cookies + CSRF, password change and session invalidation
 * (spec 1-core-api.md: "Authentication", "Auth endpoints", "Record", "Password change", "Errors";
 * 0-conventions.md: statuses the spec leaves open).
 *
 * Two servers: the harness one (--insecure-cookies) for everything, and one started without
 * --insecure-cookies only to check that cookies are Secure by default.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt } from 'jose';
import { tokenSecret, withDb } from '../helpers/auth-helpers.js';
import { startSvc, runCli, SU_EMAIL, SU_PASSWORD, type Svc, type ApiResponse } from '../helpers/server.js';
import { freePort, spawnSvc, waitHealthy, setCookies, type RawServe } from '../helpers/proc.js';

const ENVELOPE_KEYS = ['status', 'code', 'message', 'data'];
const HIDDEN_KEYS = ['password', 'passwordHash', 'tokenKey', 'token_epoch', 'passwordConfirm', 'oldPassword'];
const PW = 'correct-horse-1';

let srv: Svc;
let secureSrv: RawServe;
let secureUrl = '';
let secureDir = '';

let usersId = '';
const ids: Record<string, string> = {};
const tokens: Record<string, string> = {};

/** Asserts an error envelope: keys exactly status, code, message, data (in that order). */
function assertEnvelope(r: ApiResponse, status: number, code?: string | string[], ctx = ''): void {
  assert.equal(r.status, status, `${ctx}: status (body ${r.text})`);
  assert.ok(r.body && typeof r.body === 'object', `${ctx}: JSON body expected, got ${JSON.stringify(r.text)}`);
  assert.deepEqual(Object.keys(r.body), ENVELOPE_KEYS, `${ctx}: envelope keys`);
  assert.equal(r.body.status, status, `${ctx}: body.status`);
  assert.equal(typeof r.body.code, 'string', `${ctx}: code is a string`);
  assert.equal(typeof r.body.message, 'string', `${ctx}: message is a string`);
  assert.ok(r.body.data && typeof r.body.data === 'object' && !Array.isArray(r.body.data), `${ctx}: data is an object`);
  if (typeof code === 'string') assert.equal(r.body.code, code, `${ctx}: code`);
  else if (code) assert.ok(code.includes(r.body.code), `${ctx}: code ${r.body.code} not in ${code.join(',')}`);
}

function assertNoHidden(rec: Record<string, unknown>, ctx: string): void {
  for (const k of HIDDEN_KEYS) assert.ok(!(k in rec), `${ctx}: record must not carry ${k}`);
}

async function signup(col: string, email: string, extra: Record<string, unknown> = {}): Promise<ApiResponse> {
  return srv.api('POST', `/api/collections/${col}/records`, { body: { email, password: PW, passwordConfirm: PW, ...extra } });
}

async function login(col: string, identity: string, password = PW, base = srv): Promise<ApiResponse> {
  return base.api('POST', `/api/collections/${col}/auth-with-password`, { body: { identity, password } });
}

const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/**
 * Signs a token the way the server does (implementation knowledge, used only to build a *validly
 * signed* expired token): key = HMAC-SHA256(token_secret, record tokenKey).
 */
function forge(claims: Record<string, unknown>, table: string, recordId: string): Promise<string> {
  const secret = tokenSecret(srv.dataDir);
  const tokenKey = withDb(srv.dataDir, (db) => String((db.prepare(`SELECT "tokenKey" FROM "${table}" WHERE "id" = ?`).get([recordId]) as { tokenKey: string }).tokenKey));
  const key = createHmac('sha256', secret).update(tokenKey).digest();
  const { iat: _iat, exp: _exp, ...rest } = claims;
  return new SignJWT(rest)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(Number(claims.iat))
    .setExpirationTime(Number(claims.exp))
    .sign(key);
}

before(async () => {
  secureDir = mkdtempSync(join(tmpdir(), 'svc-test-secure-'));
  const [s, port] = await Promise.all([startSvc(), freePort()]);
  srv = s;
  const su = runCli(['superuser', 'upsert', `--email=${SU_EMAIL}`, `--password=${SU_PASSWORD}`, `--data-dir=${secureDir}`]);
  assert.equal(su.status, 0, su.stderr);
  // No --insecure-cookies: auth cookies must be Secure by default.
  secureSrv = spawnSvc(['serve', `--http=127.0.0.1:${port}`, `--data-dir=${secureDir}`], { SERVICE_LOG_FORMAT: 'json' });
  secureUrl = `http://127.0.0.1:${port}`;

  const users = await srv.createCollection({
    name: 'users', type: 'auth', fields: [{ name: 'name', type: 'text' }],
    createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id', listRule: 'id = @request.auth.id',
  });
  usersId = users.id;
  await srv.createCollection({ name: 'members', type: 'auth', fields: [], createRule: '@public', viewRule: 'id = @request.auth.id' });
  await srv.createCollection({
    name: 'people', type: 'auth', fields: [], createRule: '@public',
    viewRule: "@request.auth.id != ''", listRule: "@request.auth.id != ''",
  });
  await srv.createCollection({
    name: 'notes', type: 'base', fields: [{ name: 'title', type: 'text' }],
    createRule: "@request.auth.id != ''", deleteRule: "@request.auth.id != ''", listRule: '@public', viewRule: '@public',
  });
  await srv.createCollection({ name: 'posts', type: 'base', fields: [{ name: 'title', type: 'text' }], listRule: '@public', createRule: '@public' });

  for (const u of ['alice', 'bob', 'erin', 'frank', 'gina', 'hank']) {
    const r = await signup('users', `${u}@example.com`, { name: u });
    assert.equal(r.status, 201, `signup ${u}: ${r.text}`);
    ids[u] = r.body.id;
  }
  const m = await signup('members', 'mia@example.com');
  assert.equal(m.status, 201, m.text);
  ids.mia = m.body.id;
  await waitHealthy(secureUrl, secureSrv);
});

after(async () => {
  await srv?.stop();
  await secureSrv?.stop();
  rmSync(secureDir, { recursive: true, force: true });
});

test('signup: auth system fields (verified forced false, password write-only, externalAuths stripped, short password 400, duplicate 409)', async () => {
  const r = await signup('users', 'ivy@example.com', { verified: true, name: 'ivy', externalAuths: [{ provider: 'evilprov', providerId: 'evil-1' }] });
  assert.equal(r.status, 201, r.text);
  assert.equal(typeof r.body.id, 'string');
  assert.equal(r.body.verified, false, 'verified is forced to false on signup');
  assertNoHidden(r.body, 'signup response');
  assert.ok(!r.text.includes(PW), 'plaintext password never echoed');
  assert.ok(!r.text.includes('evilprov') && !r.text.includes('evil-1'), 'externalAuths stripped from create payload');

  const short = await srv.api('POST', '/api/collections/users/records', { body: { email: 'shorty@example.com', password: 'short7x', passwordConfirm: 'short7x' } });
  assertEnvelope(short, 400, 'validation_failed', 'short password');
  assert.equal(short.body.data.password?.code, 'validation_min', 'a minimum violation yields validation_min');

  const dup = await signup('users', 'alice@example.com');
  assertEnvelope(dup, 409, 'conflict', 'duplicate email signup');

  // hidden fields cannot be used in a client filter or sort, even by a superuser
  for (const [label, qs] of [
    ['filter passwordHash', `filter=${encodeURIComponent("passwordHash != ''")}`],
    ['filter tokenKey', `filter=${encodeURIComponent("tokenKey != ''")}`],
    ['filter token_epoch', `filter=${encodeURIComponent('token_epoch = 0')}`],
    ['sort tokenKey', 'sort=tokenKey'],
    ['sort -passwordHash', 'sort=-passwordHash'],
  ] as const) {
    const l = await srv.api('GET', `/api/collections/users/records?${qs}`, { token: srv.suToken });
    assertEnvelope(l, 400, undefined, label);
  }
});

test('read-your-writes across auth: after list requests, a fresh signup can log in at once and sees its update', async () => {
  // A list with a new query shape first (as in any admin UI), then signup → login → update → view.
  const warm = await srv.api('GET', `/api/collections/users/records?perPage=7&filter=${encodeURIComponent("name != 'zz'")}`, { token: srv.suToken });
  assert.equal(warm.status, 200, warm.text);
  for (let i = 0; i < 3; i++) {
    const email = `raw${i}@example.com`;
    const s = await signup('users', email, { name: `raw${i}` });
    assert.equal(s.status, 201, `round ${i}: signup ${s.text}`);
    const l = await login('users', email);
    assert.equal(l.status, 200, `round ${i}: login right after a 201 signup: ${l.text}`);
    const u = await srv.api('PATCH', `/api/collections/users/records/${s.body.id}`, { token: l.body.token, body: { name: `raw${i}-renamed` } });
    assert.equal(u.status, 200, `round ${i}: update own record: ${u.text}`);
    const v = await srv.api('GET', `/api/collections/users/records/${s.body.id}`, { token: l.body.token });
    assert.equal(v.status, 200, `round ${i}: view own record: ${v.text}`);
    assert.equal(v.body.name, `raw${i}-renamed`, `round ${i}: the acknowledged update is visible`);
    const list = await srv.api('GET', `/api/collections/users/records?perPage=${20 + i}`, { token: srv.suToken });
    assert.equal(list.status, 200);
  }
});

test('auth-with-password: 200 {token, record} with svc_auth (HttpOnly, SameSite=Strict) and svc_csrf (readable) cookies', async () => {
  const r = await login('users', 'alice@example.com');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['record', 'token']);
  assert.equal(typeof r.body.token, 'string');
  assert.equal(r.body.token.split('.').length, 3, 'token is a JWT');
  assert.equal(r.body.record.id, ids.alice);
  assert.equal(r.body.record.email, 'alice@example.com', 'the owner sees its own email');
  assert.equal(r.body.record.name, 'alice');
  assertNoHidden(r.body.record, 'login record');
  tokens.alice = r.body.token;

  const c = setCookies(r.headers);
  const auth = c.get('svc_auth');
  const csrf = c.get('svc_csrf');
  assert.ok(auth, 'svc_auth cookie set');
  assert.ok(csrf, 'svc_csrf cookie set');
  assert.equal(auth.value, r.body.token, 'svc_auth carries the token');
  assert.ok(auth.attrs.has('httponly'), 'svc_auth is HttpOnly');
  assert.equal(auth.attrs.get('samesite')?.toLowerCase(), 'strict');
  assert.ok(csrf.value.length > 0, 'svc_csrf has a value');
  assert.ok(!csrf.attrs.has('httponly'), 'svc_csrf is readable (not HttpOnly)');
  assert.equal(csrf.attrs.get('samesite')?.toLowerCase(), 'strict');
  assert.ok(!auth.attrs.has('secure') && !csrf.attrs.has('secure'), '--insecure-cookies drops Secure');

  const b = await login('users', 'bob@example.com');
  assert.equal(b.status, 200, b.text);
  tokens.bob = b.body.token;
});

test('cookies are Secure by default (server started without --insecure-cookies)', async () => {
  const r = await fetch(`${secureUrl}/api/collections/_superusers/auth-with-password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: SU_EMAIL, password: SU_PASSWORD }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  const c = setCookies(r.headers);
  for (const name of ['svc_auth', 'svc_csrf']) {
    assert.ok(c.get(name), `${name} set`);
    assert.ok(c.get(name)!.attrs.has('secure'), `${name} is Secure by default`);
    assert.equal(c.get(name)!.attrs.get('samesite')?.toLowerCase(), 'strict');
  }
  assert.ok(c.get('svc_auth')!.attrs.has('httponly'));
  assert.ok(!c.get('svc_csrf')!.attrs.has('httponly'));
  const token = (await r.json()).token;
  const lo = await fetch(`${secureUrl}/api/collections/_superusers/auth-logout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  assert.equal(lo.status, 204);
  const lc = setCookies(lo.headers);
  for (const name of ['svc_auth', 'svc_csrf']) {
    assert.equal(lc.get(name)?.attrs.get('max-age'), '0', `${name} cleared`);
    assert.ok(lc.get(name)!.attrs.has('secure'), `cleared ${name} keeps Secure`);
  }
});

test('auth-with-password failures: same 400 "Invalid credentials." for a wrong password and an unknown identity', async () => {
  const cases = [
    { name: 'wrong password', body: { identity: 'alice@example.com', password: 'not-the-password' } },
    { name: 'unknown identity', body: { identity: 'nobody@example.com', password: PW } },
    { name: 'identity in other case, wrong password', body: { identity: 'ALICE@example.com', password: 'nope-nope-nope' } },
  ];
  const bodies: string[] = [];
  for (const c of cases) {
    const r = await srv.api('POST', '/api/collections/users/auth-with-password', { body: c.body });
    assertEnvelope(r, 400, ['bad_request', 'validation_failed'], c.name);
    assert.equal(r.body.message, 'Invalid credentials.', `${c.name}: message`);
    assert.equal(r.headers.getSetCookie().length, 0, `${c.name}: no cookies on failure`);
    bodies.push(r.text);
  }
  assert.equal(new Set(bodies).size, 1, 'failures are indistinguishable (no account enumeration)');
});

test('auth-with-password validation and routing: missing fields 400 validation_failed; base or unknown collection 404', async () => {
  const cases: Array<{ name: string; col: string; body: unknown; status: number; code: string; fields?: string[] }> = [
    { name: 'empty object', col: 'users', body: {}, status: 400, code: 'validation_failed', fields: ['identity', 'password'] },
    { name: 'missing password', col: 'users', body: { identity: 'alice@example.com' }, status: 400, code: 'validation_failed', fields: ['password'] },
    { name: 'missing identity', col: 'users', body: { password: PW }, status: 400, code: 'validation_failed', fields: ['identity'] },
    { name: 'base collection', col: 'posts', body: { identity: 'alice@example.com', password: PW }, status: 404, code: 'not_found' },
    { name: 'unknown collection', col: 'nope', body: { identity: 'alice@example.com', password: PW }, status: 404, code: 'not_found' },
  ];
  for (const c of cases) {
    const r = await srv.api('POST', `/api/collections/${c.col}/auth-with-password`, { body: c.body });
    assertEnvelope(r, c.status, c.code, c.name);
    for (const f of c.fields ?? []) {
      assert.ok(r.body.data[f], `${c.name}: data.${f} present`);
      assert.deepEqual(Object.keys(r.body.data[f]).sort(), ['code', 'message'], `${c.name}: data.${f} is {code, message}`);
      assert.equal(r.body.data[f].code, 'validation_required', `${c.name}: data.${f}.code`);
    }
    if (c.fields) assert.deepEqual(Object.keys(r.body.data).sort(), [...c.fields].sort(), `${c.name}: only the offending fields`);
  }
});

test('Authorization header: "Bearer <jwt>" and raw "<jwt>" both authenticate', async () => {
  const cases = [
    { name: 'no credentials', headers: {} as Record<string, string>, view: 404, listIds: [] as string[] },
    { name: 'Bearer', headers: { authorization: `Bearer ${tokens.alice}` }, view: 200, listIds: [ids.alice] },
    { name: 'raw token', headers: { authorization: tokens.alice }, view: 200, listIds: [ids.alice] },
  ];
  for (const c of cases) {
    const v = await srv.api('GET', `/api/collections/users/records/${ids.alice}`, { headers: c.headers });
    assert.equal(v.status, c.view, `${c.name}: view own record (${v.text})`);
    if (c.view === 200) assert.equal(v.body.id, ids.alice);
    const l = await srv.api('GET', '/api/collections/users/records', { headers: c.headers });
    assert.equal(l.status, 200, `${c.name}: list (${l.text})`);
    assert.deepEqual(l.body.items.map((i: any) => i.id), c.listIds, `${c.name}: list rule scopes to own record`);
  }
});

test('invalid, garbage, tampered, wrongly signed and expired tokens answer 401 on every endpoint', async () => {
  const claims = decodeJwt(tokens.alice) as Record<string, unknown>;
  const [h, p, s] = tokens.alice.split('.');
  const now = Math.floor(Date.now() / 1000);
  // Control: a token forged with the server's own key derivation and unchanged claims is accepted,
  // so the expired variant below is rejected for its expiry alone.
  const control = await forge(claims, 'users', ids.alice);
  const ctl = await srv.api('GET', `/api/collections/users/records/${ids.alice}`, { token: control });
  assert.equal(ctl.status, 200, `forging precondition: a validly signed token must be accepted (${ctl.text})`);
  const expired = await forge({ ...claims, iat: now - 7200, exp: now - 3600 }, 'users', ids.alice);
  const flip = (c: string) => (c === 'A' ? 'B' : 'A');
  const mid = Math.floor(s.length / 2);

  const bad: Record<string, string> = {
    garbage: 'garbage',
    'three dots': 'a.b.c',
    'alg none': `${b64url({ alg: 'none', typ: 'JWT' })}.${p}.`,
    'payload swapped to another user': `${h}.${b64url({ ...claims, id: ids.bob })}.${s}`,
    'payload with later exp': `${h}.${b64url({ ...claims, exp: now + 999_999 })}.${s}`,
    'signature altered': `${h}.${p}.${s.slice(0, mid)}${flip(s[mid])}${s.slice(mid + 1)}`,
    'signed with another key': await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(randomBytes(32)),
    expired,
  };
  const endpoints: Array<[string, string, unknown?]> = [
    ['GET', '/api/collections/users/records'],
    ['GET', `/api/collections/users/records/${ids.alice}`],
    ['GET', '/api/collections'],
    ['GET', '/api/collections/users'],
    ['GET', '/api/collections/posts/records'],
    ['POST', '/api/collections/notes/records', { title: 'x' }],
    ['PATCH', `/api/collections/users/records/${ids.alice}`, { name: 'hacked' }],
    ['POST', '/api/collections/users/auth-refresh'],
  ];
  for (const [label, tok] of Object.entries(bad)) {
    for (const form of ['Bearer', 'raw'] as const) {
      for (const [method, path, body] of endpoints) {
        const r = await srv.api(method, path, { body, headers: { authorization: form === 'Bearer' ? `Bearer ${tok}` : tok } });
        assertEnvelope(r, 401, 'unauthorized', `${label} (${form}) ${method} ${path}`);
      }
    }
  }
  const still = await srv.api('GET', `/api/collections/users/records/${ids.alice}`, { token: srv.suToken });
  assert.equal(still.body.name, 'alice', 'no tampered request changed the record');
});

test('collections API: 401 without auth, 403 with a user token', async () => {
  const cases = [
    { name: 'anonymous list', method: 'GET', path: '/api/collections', token: null as string | null, status: 401, code: 'unauthorized' },
    { name: 'user list', method: 'GET', path: '/api/collections', token: tokens.alice, status: 403, code: 'forbidden' },
    { name: 'user view', method: 'GET', path: '/api/collections/users', token: tokens.alice, status: 403, code: 'forbidden' },
    { name: 'user create', method: 'POST', path: '/api/collections', token: tokens.alice, status: 403, code: 'forbidden', body: { name: 'evil', type: 'base', fields: [] } },
    { name: 'member list', method: 'GET', path: '/api/collections', token: null, status: 403, code: 'forbidden', member: true },
  ];
  const mia = await login('members', 'mia@example.com');
  assert.equal(mia.status, 200, mia.text);
  tokens.mia = mia.body.token;
  for (const c of cases) {
    const r = await srv.api(c.method, c.path, { token: c.member ? tokens.mia : c.token, body: (c as any).body });
    assertEnvelope(r, c.status, c.code, c.name);
  }
});

test('auth-refresh: new token + record and re-set cookies; 401 without a token or for another collection', async () => {
  const r = await srv.api('POST', '/api/collections/users/auth-refresh', { token: tokens.alice });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['record', 'token']);
  assert.equal(r.body.record.id, ids.alice);
  assertNoHidden(r.body.record, 'refresh record');
  assert.equal(r.body.token.split('.').length, 3);
  assert.notEqual(r.body.token, tokens.alice, 'a new token');
  const c = setCookies(r.headers);
  assert.equal(c.get('svc_auth')?.value, r.body.token, 'svc_auth re-set to the new token');
  assert.ok(c.get('svc_auth')!.attrs.has('httponly'));
  assert.ok(c.get('svc_csrf')?.value, 'svc_csrf re-set');
  assert.ok(!c.get('svc_csrf')!.attrs.has('httponly'));
  const v = await srv.api('GET', `/api/collections/users/records/${ids.alice}`, { token: r.body.token });
  assert.equal(v.status, 200, 'the refreshed token works');

  const cases = [
    { name: 'no token', col: 'users', token: null as string | null, status: 401, code: 'unauthorized' },
    { name: 'users token on members', col: 'members', token: tokens.alice, status: 401, code: 'unauthorized' },
    { name: 'members token on users', col: 'users', token: tokens.mia, status: 401, code: 'unauthorized' },
    { name: 'superuser token on users', col: 'users', token: srv.suToken, status: 401, code: 'unauthorized' },
  ];
  for (const k of cases) {
    const x = await srv.api('POST', `/api/collections/${k.col}/auth-refresh`, { token: k.token });
    assertEnvelope(x, k.status, k.code, k.name);
    assert.equal(x.headers.getSetCookie().length, 0, `${k.name}: no cookies`);
  }
});

test('auth-logout: 204 and both cookies cleared with Max-Age=0', async () => {
  const r = await srv.api('POST', '/api/collections/users/auth-logout', { token: tokens.alice });
  assert.equal(r.status, 204, r.text);
  assert.equal(r.text, '');
  const c = setCookies(r.headers);
  for (const name of ['svc_auth', 'svc_csrf']) {
    const k = c.get(name);
    assert.ok(k, `${name} Set-Cookie present`);
    assert.equal(k.value, '', `${name} emptied`);
    assert.equal(k.attrs.get('max-age'), '0', `${name} Max-Age=0`);
  }
});

test('cookie credentials: GET authenticated by svc_auth alone; unsafe methods need X-CSRF-Token equal to svc_csrf', async () => {
  const fl = await login('users', 'frank@example.com');
  assert.equal(fl.status, 200, fl.text);
  const fc = setCookies(fl.headers);
  const authCookie = fc.get('svc_auth')!.value;
  const csrf = fc.get('svc_csrf')!.value;
  const bobCsrf = decodeJwt(tokens.bob).csrf as string; // a real CSRF value, but of another session
  assert.ok(bobCsrf && bobCsrf !== csrf);
  const jar = `svc_auth=${authCookie}; svc_csrf=${csrf}`;

  // GET: the cookie alone authenticates
  for (const cookie of [jar, `svc_auth=${authCookie}`]) {
    const v = await srv.api('GET', `/api/collections/users/records/${ids.frank}`, { headers: { cookie } });
    assert.equal(v.status, 200, `GET with cookie "${cookie.slice(0, 12)}…": ${v.text}`);
    assert.equal(v.body.id, ids.frank);
  }
  const anon = await srv.api('GET', `/api/collections/users/records/${ids.frank}`);
  assert.equal(anon.status, 404, 'anonymous view is hidden (control)');

  const note = await srv.api('POST', '/api/collections/notes/records', { token: tokens.bob, body: { title: 'to delete' } });
  assert.equal(note.status, 201, note.text);
  const note2 = await srv.api('POST', '/api/collections/notes/records', { token: tokens.bob, body: { title: 'to delete 2' } });
  assert.equal(note2.status, 201, note2.text);

  const csrfHeader = { none: undefined, wrong: 'not-the-csrf-value', other: bobCsrf, right: csrf } as const;
  const cases: Array<{ name: string; method: string; path: string; body?: unknown; csrf: keyof typeof csrfHeader; status: number }> = [
    { name: 'PATCH own record, no header', method: 'PATCH', path: `/api/collections/users/records/${ids.frank}`, body: { name: 'nocsrf' }, csrf: 'none', status: 404 },
    { name: 'PATCH own record, wrong header', method: 'PATCH', path: `/api/collections/users/records/${ids.frank}`, body: { name: 'wrong' }, csrf: 'wrong', status: 404 },
    { name: 'PATCH own record, csrf of another session', method: 'PATCH', path: `/api/collections/users/records/${ids.frank}`, body: { name: 'other' }, csrf: 'other', status: 404 },
    { name: 'POST create (auth rule), no header', method: 'POST', path: '/api/collections/notes/records', body: { title: 'c1' }, csrf: 'none', status: 403 },
    { name: 'POST create (auth rule), wrong header', method: 'POST', path: '/api/collections/notes/records', body: { title: 'c2' }, csrf: 'wrong', status: 403 },
    { name: 'DELETE (auth rule), no header', method: 'DELETE', path: `/api/collections/notes/records/${note.body.id}`, csrf: 'none', status: 404 },
    { name: 'auth-refresh, no header', method: 'POST', path: '/api/collections/users/auth-refresh', csrf: 'none', status: 401 },
    { name: 'PATCH own record, right header', method: 'PATCH', path: `/api/collections/users/records/${ids.frank}`, body: { name: 'via-cookie' }, csrf: 'right', status: 200 },
    { name: 'POST create, right header', method: 'POST', path: '/api/collections/notes/records', body: { title: 'c3' }, csrf: 'right', status: 201 },
    { name: 'DELETE, right header', method: 'DELETE', path: `/api/collections/notes/records/${note2.body.id}`, csrf: 'right', status: 204 },
    { name: 'auth-refresh, right header', method: 'POST', path: '/api/collections/users/auth-refresh', csrf: 'right', status: 200 },
  ];
  for (const c of cases) {
    const headers: Record<string, string> = { cookie: jar };
    const h = csrfHeader[c.csrf];
    if (h !== undefined) headers['x-csrf-token'] = h;
    const r = await srv.api(c.method, c.path, { body: c.body, headers });
    assert.equal(r.status, c.status, `${c.name}: ${r.text}`);
    if (c.status >= 400) assertEnvelope(r, c.status, undefined, c.name);
  }
  const v = await srv.api('GET', `/api/collections/users/records/${ids.frank}`, { token: srv.suToken });
  assert.equal(v.body.name, 'via-cookie', 'only the request with the right CSRF header changed the record');
  const stillThere = await srv.api('GET', `/api/collections/notes/records/${note.body.id}`);
  assert.equal(stillThere.status, 200, 'the delete without CSRF header did not delete');
  const gone = await srv.api('GET', `/api/collections/notes/records/${note2.body.id}`);
  assert.equal(gone.status, 404, 'the delete with the CSRF header deleted');

  // Bearer requests skip the CSRF check
  const fb = await srv.api('PATCH', `/api/collections/users/records/${ids.frank}`, { token: fl.body.token, body: { name: 'via-bearer' } });
  assert.equal(fb.status, 200, fb.text);
  assert.equal(fb.body.name, 'via-bearer');
});

test('password change by the owner: oldPassword required; success invalidates every other session and sets fresh cookies', async () => {
  const NEW = 'brand-new-pass-2';
  const s0 = await login('users', 'erin@example.com');
  const s1 = await login('users', 'erin@example.com');
  assert.equal(s0.status, 200, s0.text);
  assert.equal(s1.status, 200, s1.text);
  const path = `/api/collections/users/records/${ids.erin}`;

  const failures = [
    { name: 'missing oldPassword', body: { password: NEW, passwordConfirm: NEW } },
    { name: 'wrong oldPassword', body: { password: NEW, passwordConfirm: NEW, oldPassword: 'wrong-old-pass' } },
    { name: 'empty oldPassword', body: { password: NEW, passwordConfirm: NEW, oldPassword: '' } },
  ];
  for (const f of failures) {
    const r = await srv.api('PATCH', path, { token: s1.body.token, body: f.body });
    assertEnvelope(r, 400, undefined, f.name);
    assert.equal(r.body.message, 'Invalid credentials.', `${f.name}: message`);
    assert.equal(r.headers.getSetCookie().length, 0, `${f.name}: no cookies`);
  }
  const stillOk = await srv.api('GET', path, { token: s0.body.token });
  assert.equal(stillOk.status, 200, 'failed attempts leave sessions intact');

  const other = await srv.api('PATCH', path, { token: tokens.bob, body: { password: NEW, passwordConfirm: NEW, oldPassword: PW } });
  assertEnvelope(other, 404, 'not_found', "another user changing erin's password (update rule denial)");

  const short = await srv.api('PATCH', path, { token: s1.body.token, body: { password: 'short', passwordConfirm: 'short', oldPassword: PW } });
  assertEnvelope(short, 400, undefined, 'short new password');

  const ok = await srv.api('PATCH', path, { token: s1.body.token, body: { password: NEW, passwordConfirm: NEW, oldPassword: PW } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.id, ids.erin, 'body is the plain updated record');
  assert.ok(!('token' in ok.body), 'body is the plain record, not {token, record}');
  assertNoHidden(ok.body, 'password change response');
  assert.ok(!ok.text.includes(NEW) && !ok.text.includes(PW), 'no plaintext password in the response');
  const c = setCookies(ok.headers);
  assert.ok(c.get('svc_auth')?.value, 'fresh svc_auth cookie');
  assert.ok(c.get('svc_csrf')?.value, 'fresh svc_csrf cookie');
  assert.ok(c.get('svc_auth')!.attrs.has('httponly'));
  const fresh = await srv.api('GET', path, { headers: { cookie: `svc_auth=${c.get('svc_auth')!.value}` } });
  assert.equal(fresh.status, 200, 'the fresh cookie session works');
  const freshPatch = await srv.api('PATCH', path, {
    headers: { cookie: `svc_auth=${c.get('svc_auth')!.value}; svc_csrf=${c.get('svc_csrf')!.value}`, 'x-csrf-token': c.get('svc_csrf')!.value },
    body: { name: 'erin2' },
  });
  assert.equal(freshPatch.status, 200, `the fresh CSRF cookie matches the fresh token: ${freshPatch.text}`);

  for (const [label, tok] of [['session used for the change', s1.body.token], ['other outstanding session', s0.body.token]]) {
    const v = await srv.api('GET', path, { token: tok });
    assertEnvelope(v, 401, 'unauthorized', `old token (${label}) after password change`);
    const l = await srv.api('GET', '/api/collections/users/records', { token: tok });
    assertEnvelope(l, 401, 'unauthorized', `old token (${label}) on list`);
  }
  const oldLogin = await login('users', 'erin@example.com', PW);
  assertEnvelope(oldLogin, 400, undefined, 'login with the old password');
  assert.equal(oldLogin.body.message, 'Invalid credentials.');
  const newLogin = await login('users', 'erin@example.com', NEW);
  assert.equal(newLogin.status, 200, newLogin.text);
});

test("a superuser changes a user's password without oldPassword; the user's old token answers 401", async () => {
  const NEW = 'set-by-admin-3';
  const g = await login('users', 'gina@example.com');
  assert.equal(g.status, 200, g.text);
  const r = await srv.api('PATCH', `/api/collections/users/records/${ids.gina}`, { token: srv.suToken, body: { password: NEW, passwordConfirm: NEW } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, ids.gina);
  assertNoHidden(r.body, 'superuser password change response');
  assert.ok(!setCookies(r.headers).has('svc_auth'), "the user's session cookie is not handed to the superuser");
  const old = await srv.api('GET', `/api/collections/users/records/${ids.gina}`, { token: g.body.token });
  assertEnvelope(old, 401, 'unauthorized', "gina's old token");
  const nl = await login('users', 'gina@example.com', NEW);
  assert.equal(nl.status, 200, nl.text);
  const su = await srv.api('GET', '/api/collections', { token: srv.suToken });
  assert.equal(su.status, 200, 'the superuser session is unaffected');
});

test('record responses never leak the superuser token or hidden auth fields', async () => {
  const su = await login('_superusers', SU_EMAIL, SU_PASSWORD);
  assert.equal(su.status, 200, su.text);
  assertNoHidden(su.body.record, 'superuser login record');
  const t = su.body.token as string;
  const responses: Array<[string, ApiResponse]> = [
    ['view user', await srv.api('GET', `/api/collections/users/records/${ids.hank}`, { token: t })],
    ['list users', await srv.api('GET', '/api/collections/users/records?perPage=500', { token: t })],
    ['create user', await srv.api('POST', '/api/collections/users/records', { token: t, body: { email: 'made-by-su@example.com', password: PW, passwordConfirm: PW } })],
    ['patch user', await srv.api('PATCH', `/api/collections/users/records/${ids.hank}`, { token: t, body: { name: 'hank2' } })],
    ['refresh superuser', await srv.api('POST', '/api/collections/_superusers/auth-refresh', { token: t })],
  ];
  for (const [label, r] of responses) {
    assert.ok(r.status >= 200 && r.status < 300, `${label}: ${r.status} ${r.text}`);
    for (const secret of [t, srv.suToken]) assert.ok(!r.text.includes(secret), `${label}: body contains a superuser token`);
    const recs = r.body.items ?? [r.body.record ?? r.body];
    for (const rec of recs) assertNoHidden(rec, label);
  }
  const sl = await srv.api('GET', '/api/collections/_superusers/records', { token: t });
  assert.ok(!sl.text.includes(t) && !sl.text.includes(srv.suToken), 'superusers list never carries a token');
  for (const rec of sl.body?.items ?? []) assertNoHidden(rec, '_superusers list');
});

test('email is shown to its owner, hidden from another user unless emailVisibility', async () => {
  const p1 = await signup('people', 'p1-private@example.com');
  const p2 = await signup('people', 'p2-public@example.com', { emailVisibility: true });
  const p3 = await signup('people', 'p3-viewer@example.com');
  for (const r of [p1, p2, p3]) assert.equal(r.status, 201, r.text);
  const l1 = await login('people', 'p1-private@example.com');
  const l3 = await login('people', 'p3-viewer@example.com');
  assert.equal(l1.status, 200, `login right after signup (p1): ${l1.text}`);
  assert.equal(l3.status, 200, `login right after signup (p3): ${l3.text}`);
  const t1 = l1.body.token;
  const t3 = l3.body.token;
  const cases = [
    { name: 'owner views own (private)', token: t1, id: p1.body.id, email: 'p1-private@example.com', shown: true },
    { name: 'other views private', token: t3, id: p1.body.id, email: 'p1-private@example.com', shown: false },
    { name: 'other views emailVisibility', token: t3, id: p2.body.id, email: 'p2-public@example.com', shown: true },
  ];
  for (const c of cases) {
    const v = await srv.api('GET', `/api/collections/people/records/${c.id}`, { token: c.token });
    assert.equal(v.status, 200, `${c.name}: ${v.text}`);
    if (c.shown) assert.equal(v.body.email, c.email, `${c.name}: email shown`);
    else assert.ok(!v.text.includes(c.email), `${c.name}: email hidden, got ${v.text}`);
  }
  const l = await srv.api('GET', '/api/collections/people/records?perPage=500', { token: t3 });
  assert.equal(l.status, 200, l.text);
  const byId = new Map(l.body.items.map((i: any) => [i.id, i]));
  assert.ok(!JSON.stringify(byId.get(p1.body.id)).includes('p1-private@example.com'), 'list hides a private email from others');
  assert.equal((byId.get(p2.body.id) as any).email, 'p2-public@example.com', 'list shows an emailVisibility email');
  assert.equal((byId.get(p3.body.id) as any).email, 'p3-viewer@example.com', "list shows the caller's own email");
});

test('`svc superuser upsert` with a new password (while serving) ends the admin\'s old token', async () => {
  const before = await srv.api('GET', '/api/collections', { token: srv.suToken });
  assert.equal(before.status, 200);
  const NEW = 'rotated-admin-pw-9';
  const r = runCli(['superuser', 'upsert', `--email=${SU_EMAIL}`, `--password=${NEW}`, `--data-dir=${srv.dataDir}`, '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).created, false);
  const old = await srv.api('GET', '/api/collections', { token: srv.suToken });
  assertEnvelope(old, 401, 'unauthorized', "admin's old token after upsert");
  const oldPw = await login('_superusers', SU_EMAIL, SU_PASSWORD);
  assertEnvelope(oldPw, 400, undefined, 'old admin password');
  assert.equal(oldPw.body.message, 'Invalid credentials.');
  const nl = await login('_superusers', SU_EMAIL, NEW);
  assert.equal(nl.status, 200, nl.text);
  const ok = await srv.api('GET', '/api/collections', { token: nl.body.token });
  assert.equal(ok.status, 200, 'the new admin token works');
});
