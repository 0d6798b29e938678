/**
 * E2E: session stores, logout everywhere, cookies + CSRF on the session routes, require_verified,
 * collection binding of tokens, the password-change paragraph and the log mail fallback
 * (spec 1-core-api.md: "Auth endpoints", "Session (table session store)", "Password change",
 * "Authentication", "States and transitions").
 *
 * One server, no mail configuration: tokens are read from the `mail` log lines.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc, type ApiResponse } from '../helpers/server.js';
import { setCookies } from '../helpers/proc.js';
import { assertError, login as loginAt, cookieHeaders, tokenFromLog, withDb } from '../helpers/auth-helpers.js';

const PW = 'session-pass-1';
let srv: Svc;

const login = (col: string, identity: string, password = PW, headers: Record<string, string> = {}) => loginAt(srv, col, identity, password, headers);
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

async function signup(col: string, email: string): Promise<string> {
  const r = await srv.api('POST', `/api/collections/${col}/records`, { body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

async function status(method: string, path: string, token: string): Promise<number> {
  return (await srv.api(method, path, { token })).status;
}

before(async () => {
  srv = await startSvc();
  const own = { createRule: '@public', viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id', listRule: 'id = @request.auth.id' };
  await srv.createCollection({ name: 'epochers', type: 'auth', fields: [], ...own });
  await srv.createCollection({ name: 'devices', type: 'auth', fields: [], ...own, options: { auth: { session: { store: 'table' } } } });
  await srv.createCollection({ name: 'strict', type: 'auth', fields: [], ...own, options: { auth: { require_verified: true } } });
  await srv.createCollection({ name: 'switchers', type: 'auth', fields: [], ...own });
});

after(async () => {
  await srv?.stop();
});

test('epoch store: per-device routes 404; DELETE /auth/sessions logs out everywhere and clears cookies', async () => {
  const id = await signup('epochers', 'ep1@example.com');
  const a = await login('epochers', 'ep1@example.com');
  const b = await login('epochers', 'ep1@example.com');
  assert.equal(a.status, 200, a.text);
  assertError(await srv.api('GET', '/api/collections/epochers/auth/sessions', { token: a.body.token }), 404, 'not_found', 'list in epoch mode');
  assertError(await srv.api('DELETE', '/api/collections/epochers/auth/sessions/abcdefghijklmno', { token: a.body.token }), 404, 'not_found', 'delete one in epoch mode');
  assertError(await srv.api('DELETE', '/api/collections/epochers/auth/sessions'), 401, 'unauthorized', 'logout everywhere anonymously');

  const out = await srv.api('DELETE', '/api/collections/epochers/auth/sessions', { token: a.body.token });
  assert.equal(out.status, 204, out.text);
  const c = setCookies(out.headers);
  for (const n of ['svc_auth', 'svc_csrf']) assert.equal(c.get(n)?.attrs.get('max-age'), '0', `${n} cleared`);
  for (const [label, t] of [['caller', a.body.token], ['other session', b.body.token]]) {
    assertError(await srv.api('GET', `/api/collections/epochers/records/${id}`, { token: t }), 401, 'unauthorized', `${label} after logout everywhere`);
  }
  const again = await login('epochers', 'ep1@example.com');
  assert.equal(again.status, 200, 'a new login works');
  assert.equal(await status('GET', `/api/collections/epochers/records/${id}`, again.body.token), 200);
});

test('table store: rows listed newest first with id, created, last_seen, user_agent, ip, is_current', async () => {
  const id = await signup('devices', 'dev1@example.com');
  const s1 = await login('devices', 'dev1@example.com', PW, { 'user-agent': 'agent-one/1.0' });
  const s2 = await login('devices', 'dev1@example.com', PW, { 'user-agent': 'agent-two/2.0' });
  assert.equal(s2.status, 200, s2.text);
  assert.equal(typeof decodeJwt(s1.body.token).sid, 'string', 'a table-store token names its session');

  const l = await srv.api('GET', '/api/collections/devices/auth/sessions', { token: s1.body.token });
  assert.equal(l.status, 200, l.text);
  assert.deepEqual(Object.keys(l.body), ['items']);
  assert.equal(l.body.items.length, 2);
  for (const it of l.body.items) assert.deepEqual(Object.keys(it), ['id', 'created', 'last_seen', 'user_agent', 'ip', 'is_current']);
  assert.deepEqual(l.body.items.map((i: any) => i.user_agent), ['agent-two/2.0', 'agent-one/1.0'], 'newest first');
  assert.deepEqual(l.body.items.map((i: any) => i.is_current), [false, true], 'is_current marks the caller');
  assert.equal(l.body.items[1].id, decodeJwt(s1.body.token).sid);
  assert.match(l.body.items[0].ip, /127\.0\.0\.1|::1|0000/);
  assert.equal(await status('GET', `/api/collections/devices/records/${id}`, s2.body.token), 200);

  // refresh keeps the session row
  const r = await srv.api('POST', '/api/collections/devices/auth-refresh', { token: s1.body.token });
  assert.equal(r.status, 200, r.text);
  assert.equal(decodeJwt(r.body.token).sid, decodeJwt(s1.body.token).sid, 'refresh keeps the sid');
  assert.ok(setCookies(r.headers).get('svc_auth')?.value, 'refresh re-sets the cookies');
  const l2 = await srv.api('GET', '/api/collections/devices/auth/sessions', { token: r.body.token });
  assert.equal(l2.body.items.length, 2, 'refresh adds no row');
});

test('table store: DELETE /auth/sessions/:sid ends that session; unknown or foreign sid 404', async () => {
  const id = await signup('devices', 'dev2@example.com');
  await signup('devices', 'dev3@example.com');
  const mine = await login('devices', 'dev2@example.com');
  const other = await login('devices', 'dev2@example.com');
  const stranger = await login('devices', 'dev3@example.com');
  const otherSid = decodeJwt(other.body.token).sid as string;
  const strangerSid = decodeJwt(stranger.body.token).sid as string;

  assertError(await srv.api('DELETE', '/api/collections/devices/auth/sessions/zzzzzzzzzzzzzzz', { token: mine.body.token }), 404, 'not_found', 'unknown sid');
  assertError(await srv.api('DELETE', `/api/collections/devices/auth/sessions/${strangerSid}`, { token: mine.body.token }), 404, 'not_found', "another user's sid");
  assert.equal(await status('GET', '/api/collections/devices/auth/sessions', stranger.body.token), 200, "the stranger's session survived");

  const d = await srv.api('DELETE', `/api/collections/devices/auth/sessions/${otherSid}`, { token: mine.body.token });
  assert.equal(d.status, 204, d.text);
  assertError(await srv.api('GET', `/api/collections/devices/records/${id}`, { token: other.body.token }), 401, 'unauthorized', 'revoked session');
  assert.equal(await status('GET', `/api/collections/devices/records/${id}`, mine.body.token), 200, 'the caller keeps its session');
  assertError(await srv.api('DELETE', `/api/collections/devices/auth/sessions/${otherSid}`, { token: mine.body.token }), 404, 'not_found', 'second delete');

  // logout (table store) ends the caller's own row
  const lo = await srv.api('POST', '/api/collections/devices/auth-logout', { token: mine.body.token });
  assert.equal(lo.status, 204);
  assertError(await srv.api('GET', `/api/collections/devices/records/${id}`, { token: mine.body.token }), 401, 'unauthorized', 'after auth-logout');
});

test('table store: logout everywhere wipes every row and bumps the epoch', async () => {
  const id = await signup('devices', 'dev4@example.com');
  const toks = [];
  for (let i = 0; i < 3; i++) toks.push((await login('devices', 'dev4@example.com')).body.token);
  const d = await srv.api('DELETE', '/api/collections/devices/auth/sessions', { token: toks[0] });
  assert.equal(d.status, 204, d.text);
  for (const t of toks) assertError(await srv.api('GET', `/api/collections/devices/records/${id}`, { token: t }), 401, 'unauthorized', 'after logout everywhere');
  const n = await login('devices', 'dev4@example.com');
  const l = await srv.api('GET', '/api/collections/devices/auth/sessions', { token: n.body.token });
  assert.equal(l.body.items.length, 1, 'only the new session is left');
  assert.equal(withDb(srv.dataDir, (db) => (db.prepare('SELECT "token_epoch" FROM "devices" WHERE "id" = ?').get([id]) as any).token_epoch), 1);
});

test('session routes and refresh need the caller\'s own collection (401); a token of one collection never authenticates another', async () => {
  const eid = await signup('epochers', 'cross@example.com');
  await signup('devices', 'cross@example.com');
  const e = await login('epochers', 'cross@example.com');
  const cases: Array<[string, string, string | null]> = [
    ['POST', '/api/collections/devices/auth-refresh', e.body.token],
    ['GET', '/api/collections/devices/auth/sessions', e.body.token],
    ['DELETE', '/api/collections/devices/auth/sessions/abcdefghijklmno', e.body.token],
    ['DELETE', '/api/collections/devices/auth/sessions', e.body.token],
    ['DELETE', '/api/collections/epochers/auth/sessions', srv.suToken],
    ['POST', '/api/collections/epochers/auth-refresh', srv.suToken],
    ['GET', '/api/collections/devices/auth/sessions', null],
  ];
  for (const [m, p, t] of cases) assertError(await srv.api(m, p, { token: t }), 401, 'unauthorized', `${m} ${p} with ${t === srv.suToken ? 'superuser' : t ? 'epochers' : 'no'} token`);

  // A record with the same id in another collection: the API refuses the id (one auth identity,
  // one collection), so the twin is made in the database, as an older data directory may hold one.
  // Swapping the collection claim breaks the signature.
  const refused = await srv.api('POST', '/api/collections/devices/records', { token: srv.suToken, body: { id: eid, email: 'twin@example.com', password: PW, passwordConfirm: PW } });
  assertError(refused, 409, 'conflict', 'an id taken in another auth collection');
  const twin = await srv.api('POST', '/api/collections/devices/records', { token: srv.suToken, body: { email: 'twin@example.com', password: PW, passwordConfirm: PW } });
  assert.equal(twin.status, 201, twin.text);
  withDb(srv.dataDir, (db) => db.prepare('UPDATE devices SET id = ? WHERE id = ?').run(eid, twin.body.id));
  const [h, p, s] = (e.body.token as string).split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const swapped = `${h}.${Buffer.from(JSON.stringify({ ...claims, collectionId: (await srv.api('GET', '/api/collections/devices', { token: srv.suToken })).body.id })).toString('base64url')}.${s}`;
  assertError(await srv.api('GET', `/api/collections/devices/records/${eid}`, { token: swapped }), 401, 'unauthorized', 'collection claim swapped');
  const v = await srv.api('GET', `/api/collections/epochers/records/${eid}`, { token: e.body.token });
  assert.equal(v.status, 200, 'the token still works for its own collection');
});

test('switching a collection to the table store ends tokens that carry no session row', async () => {
  const id = await signup('switchers', 'sw@example.com');
  const old = await login('switchers', 'sw@example.com');
  assert.equal(await status('GET', `/api/collections/switchers/records/${id}`, old.body.token), 200);
  const p = await srv.api('PATCH', '/api/collections/switchers', { token: srv.suToken, body: { options: { auth: { session: { store: 'table' } } } } });
  assert.equal(p.status, 200, p.text);
  assertError(await srv.api('GET', `/api/collections/switchers/records/${id}`, { token: old.body.token }), 401, 'unauthorized', 'epoch token in table mode');
  const n = await login('switchers', 'sw@example.com');
  assert.equal(await status('GET', `/api/collections/switchers/records/${id}`, n.body.token), 200);
});

test('cookie credentials on the session routes: unsafe methods without X-CSRF-Token are anonymous (401); safe ones are not', async () => {
  await signup('devices', 'jar@example.com');
  const s = await login('devices', 'jar@example.com');
  const withCsrf = cookieHeaders(s);
  const noCsrf = cookieHeaders(s, false);
  const g = await srv.api('GET', '/api/collections/devices/auth/sessions', { headers: noCsrf });
  assert.equal(g.status, 200, 'GET with the cookie alone');
  assert.equal(g.body.items[0].is_current, true);
  assertError(await srv.api('DELETE', '/api/collections/devices/auth/sessions', { headers: noCsrf }), 401, 'unauthorized', 'DELETE without CSRF header');
  assertError(await srv.api('DELETE', '/api/collections/devices/auth/sessions', { headers: { ...noCsrf, 'x-csrf-token': 'wrong' } }), 401, 'unauthorized', 'DELETE with a wrong CSRF header');
  assert.equal((await srv.api('GET', '/api/collections/devices/auth/sessions', { headers: noCsrf })).status, 200, 'nothing was revoked');
  const r = await srv.api('POST', '/api/collections/devices/auth-refresh', { headers: withCsrf });
  assert.equal(r.status, 200, r.text);
  const d = await srv.api('DELETE', '/api/collections/devices/auth/sessions', { headers: cookieHeaders(r) });
  assert.equal(d.status, 204, d.text);
  assert.equal(setCookies(d.headers).get('svc_auth')?.attrs.get('max-age'), '0');
});

test('require_verified: every session-issuing path answers 403 email_not_verified for an unverified record', async () => {
  const id = await signup('strict', 'nv@example.com');
  const wrong = await login('strict', 'nv@example.com', 'not-the-password');
  assert.equal(wrong.status, 400, 'a wrong password is still 400');
  const r = await login('strict', 'nv@example.com');
  assertError(r, 403, 'email_not_verified', 'login unverified');
  assert.equal(r.headers.getSetCookie().length, 0, 'no cookies');

  const mark = srv.stderr().length;
  const rv = await srv.api('POST', '/api/collections/strict/request-verification', { body: { email: 'nv@example.com' } });
  assert.equal(rv.status, 204, rv.text);
  const token = await tokenFromLog(srv, 'nv@example.com', mark);
  assert.equal((await srv.api('POST', '/api/collections/strict/confirm-verification', { body: { token } })).status, 204);
  const ok = await login('strict', 'nv@example.com');
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.record.verified, true);

  // unverified again (superuser): refresh no longer issues a session
  assert.equal((await srv.api('PATCH', `/api/collections/strict/records/${id}`, { token: srv.suToken, body: { verified: false } })).status, 200);
  assertError(await srv.api('POST', '/api/collections/strict/auth-refresh', { token: ok.body.token }), 403, 'email_not_verified', 'refresh unverified');
});

test('password change: one identical 400 for wrong/missing old password, unknown record and passwordless record', async () => {
  const NEW = 'changed-pass-22';
  const id = await signup('epochers', 'pc@example.com');
  const pl = await signup('epochers', 'pl@example.com');
  const s = await login('epochers', 'pc@example.com');
  const ps = await login('epochers', 'pl@example.com');
  withDb(srv.dataDir, (db) => db.prepare('UPDATE "epochers" SET "passwordHash" = NULL WHERE "id" = ?').run([pl]));

  const bodies: string[] = [];
  const cases: Array<[string, string, string, Record<string, unknown>]> = [
    ['missing oldPassword', id, s.body.token, { password: NEW, passwordConfirm: NEW }],
    ['wrong oldPassword', id, s.body.token, { password: NEW, passwordConfirm: NEW, oldPassword: 'nope-nope-nope' }],
    ['unknown record', 'zzzzzzzzzzzzzzz', s.body.token, { password: NEW, passwordConfirm: NEW, oldPassword: PW }],
    ['passwordless record (owner)', pl, ps.body.token, { password: NEW, passwordConfirm: NEW, oldPassword: PW }],
    ['passwordless record, empty old', pl, ps.body.token, { password: NEW, passwordConfirm: NEW, oldPassword: '' }],
  ];
  for (const [name, rid, tok, body] of cases) {
    const r = await srv.api('PATCH', `/api/collections/epochers/records/${rid}`, { token: tok, body });
    assertError(r, 400, 'bad_request', name);
    assert.equal(r.body.message, 'Invalid credentials.', name);
    bodies.push(r.text);
  }
  assert.equal(new Set(bodies).size, 1, 'the same body every time');
  assert.equal(withDb(srv.dataDir, (db) => (db.prepare('SELECT "passwordHash" FROM "epochers" WHERE "id" = ?').get([pl]) as any).passwordHash), null, 'the passwordless account gained no password');
  assert.equal(await status('GET', `/api/collections/epochers/records/${id}`, s.body.token), 200, 'failed changes end no session');
});

test('password change in the table store: the owner keeps its session row with fresh cookies, every other session ends', async () => {
  const NEW = 'table-new-pass-3';
  const id = await signup('devices', 'tpc@example.com');
  const mine = await login('devices', 'tpc@example.com');
  const other = await login('devices', 'tpc@example.com');
  const sid = decodeJwt(mine.body.token).sid;
  const r = await srv.api('PATCH', `/api/collections/devices/records/${id}`, { headers: cookieHeaders(mine), body: { password: NEW, passwordConfirm: NEW, oldPassword: PW } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, id);
  assert.ok(!('token' in r.body), 'the plain updated record');
  const fresh = setCookies(r.headers).get('svc_auth')!.value;
  assert.equal(decodeJwt(fresh).sid, sid, 'the fresh token keeps the session row');
  for (const t of [mine.body.token, other.body.token]) assertError(await srv.api('GET', `/api/collections/devices/records/${id}`, { token: t }), 401, 'unauthorized', 'old token');
  const l = await srv.api('GET', '/api/collections/devices/auth/sessions', { token: fresh });
  assert.equal(l.status, 200, l.text);
  assert.deepEqual(l.body.items.map((i: any) => [i.id, i.is_current]), [[sid, true]], 'only the owner session is left');

  // a superuser change ends every session row, without handing out cookies
  const su = await srv.api('PATCH', `/api/collections/devices/records/${id}`, { token: srv.suToken, body: { password: PW, passwordConfirm: PW } });
  assert.equal(su.status, 200, su.text);
  assert.equal(su.headers.getSetCookie().length, 0);
  assertError(await srv.api('GET', `/api/collections/devices/records/${id}`, { token: fresh }), 401, 'unauthorized', 'after superuser change');
  assert.equal(withDb(srv.dataDir, (db) => (db.prepare('SELECT COUNT(*) AS n FROM "_sessions" WHERE "recordId" = ?').get([id]) as any).n), 0);
});

test('a superuser is exempt from oldPassword and from the pwchange limit; its own change refreshes its cookies', async () => {
  const id = await signup('epochers', 'suex@example.com');
  for (let i = 0; i < 12; i++) {
    const pw = `admin-set-pass-${i}`;
    const r = await srv.api('PATCH', `/api/collections/epochers/records/${id}`, { token: srv.suToken, body: { password: pw, passwordConfirm: pw } });
    assert.equal(r.status, 200, `change ${i}: ${r.text}`);
    assert.ok(!r.text.includes(srv.suToken), 'no superuser token in a record response');
  }
  const su = await login('_superusers', SU_EMAIL, SU_PASSWORD);
  const suRec = su.body.record.id;
  const own = await srv.api('PATCH', `/api/collections/_superusers/records/${suRec}`, { token: su.body.token, body: { password: SU_PASSWORD, passwordConfirm: SU_PASSWORD } });
  assert.equal(own.status, 200, own.text);
  const fresh = setCookies(own.headers).get('svc_auth')?.value;
  assert.ok(fresh, 'the superuser, as the owner, gets fresh cookies');
  assert.ok(!own.text.includes(fresh!) && !own.text.includes(su.body.token), 'the token is never in the body');
  assert.equal((await srv.api('GET', '/api/collections', { token: fresh! })).status, 200);
  srv.suToken = fresh!;
});

test('log delivery: reset token in one `mail` info line; short password keeps the token; reuse 400; other sessions end', async () => {
  const id = await signup('epochers', 'reset@example.com');
  const s = await login('epochers', 'reset@example.com');
  const mark = srv.stderr().length;
  assert.equal((await srv.api('POST', '/api/collections/epochers/request-password-reset', { body: { email: 'RESET@example.com' } })).status, 204);
  assert.equal((await srv.api('POST', '/api/collections/epochers/request-password-reset', { body: { email: 'ghost@example.com' } })).status, 204);
  const token = await tokenFromLog(srv, 'reset@example.com', mark);
  const lines = srv.stderr().slice(mark).split('\n').filter((l) => l.includes('"scope":"mail"'));
  assert.equal(lines.length, 1, 'one mail line, none for the unknown address');
  assert.equal(JSON.parse(lines[0]).level, 'info');

  const short = await srv.api('POST', '/api/collections/epochers/confirm-password-reset', { body: { token, password: 'short', passwordConfirm: 'short' } });
  assertError(short, 400, 'validation_failed', 'short password');
  assert.equal(short.body.data.password.code, 'validation_min');
  const mismatch = await srv.api('POST', '/api/collections/epochers/confirm-password-reset', { body: { token, password: 'long-enough-1', passwordConfirm: 'different-1' } });
  assertError(mismatch, 400, 'validation_failed', 'passwordConfirm mismatch');
  const foreign = await srv.api('POST', '/api/collections/devices/confirm-password-reset', { body: { token, password: 'long-enough-1' } });
  assertError(foreign, 400, 'validation_failed', 'token of another collection');
  const wrongKind = await srv.api('POST', '/api/collections/epochers/confirm-verification', { body: { token } });
  assertError(wrongKind, 400, 'validation_failed', 'reset token at confirm-verification');

  const ok = await srv.api('POST', '/api/collections/epochers/confirm-password-reset', { body: { token, password: 'after-reset-9', passwordConfirm: 'after-reset-9' } });
  assert.equal(ok.status, 204, ok.text);
  assertError(await srv.api('POST', '/api/collections/epochers/confirm-password-reset', { body: { token, password: 'again-reset-9' } }), 400, 'validation_failed', 'second use');
  assertError(await srv.api('GET', `/api/collections/epochers/records/${id}`, { token: s.body.token }), 401, 'unauthorized', 'session before the reset');
  assert.equal((await login('epochers', 'reset@example.com', 'after-reset-9')).status, 200);
});

test('deleting an auth record removes its session and token rows', async () => {
  const srv2 = await startSvc();
  try {
    await srv2.createCollection({ name: 'members', type: 'auth', createRule: '@public', deleteRule: 'id = @request.auth.id', options: { auth: { session: { store: 'table' } } } });
    const made = await srv2.api('POST', '/api/collections/members/records', { body: { email: 'gone@example.com', password: 'password123' } });
    assert.equal(made.status, 201, made.text);
    const login = await srv2.api('POST', '/api/collections/members/auth-with-password', { body: { identity: 'gone@example.com', password: 'password123' } });
    assert.equal(login.status, 200, login.text);
    assert.equal((await srv2.api('POST', '/api/collections/members/request-password-reset', { body: { email: 'gone@example.com' } })).status, 204);
    const count = (table: string) => withDb(srv2.dataDir, (db) => Number((db.prepare(`SELECT COUNT(*) FROM "${table}" WHERE "recordId" = ?`).raw(true).get([made.body.id]) as unknown[])[0]));
    const deadline = Date.now() + 5000;
    while (count('_authTokens') === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(count('_sessions'), 1);
    assert.equal(count('_authTokens'), 1);
    assert.equal((await srv2.api('DELETE', `/api/collections/members/records/${made.body.id}`, { token: login.body.token })).status, 204);
    assert.equal(count('_sessions'), 0);
    assert.equal(count('_authTokens'), 0);
  } finally {
    await srv2.stop();
  }
});
