/**
 * The auth-side statement stores (src/store/shared/auth-sql.ts, session-sql.ts, token-sql.ts,
 * link-sql.ts, mfa-sql.ts) with their PostgreSQL dialects against a real PostgreSQL
 * (test/helpers/postgres.ts): the system tables from bootstrap.ts and an auth collection from
 * collection-sql.ts written through a PgWriter, reads through a PgReader. Every method of every
 * store runs in one scenario (identity look-ups, hidden columns, sessions, tokens, OAuth2 links,
 * passkeys, second factors, side-row deletes), and the same scenario runs against the SQLite
 * stores on a libsql database: each step's outcome and each read's answer is recorded, and the
 * two records must be equal (differential), besides the expectations asserted on each backend.
 *
 * Runs from the TypeScript sources, but the readers' and writers' workers are the compiled ones
 * (see src/store/worker-url.ts): `npm run build` first.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import type { Collection, Field } from '../../../src/model/schema.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import type { Dialect } from '../../../src/store/dialect.js';
import { AUTH_SIDE_TABLES, type AuthRecordStore, type AuthTokenRowStore, type ExternalAuthRowStore, type MfaRowStore, type PasskeyRowStore, type SessionRowStore, type StepFail } from '../../../src/store/auth-store.js';
import { knownApiError } from '../../../src/errors/api-error.js';
import { authSystemFields, defaultAuthOptions } from '../../../src/model/auth-schema.js';
// the stores, shared by both backends and spelled for each by its dialect
import { AuthSql, AUTH_DIALECTS } from '../../../src/store/shared/auth-sql.js';
import { SessionSql, SESSION_TIE_BREAK } from '../../../src/store/shared/session-sql.js';
import { TokenSql, TOKEN_TIE_BREAK } from '../../../src/store/shared/token-sql.js';
import { ExternalAuthSql, PasskeySql, LINK_DIALECTS } from '../../../src/store/shared/link-sql.js';
import { MfaSql, TOTP_ORDER } from '../../../src/store/shared/mfa-sql.js';
// PostgreSQL
import { PgWriter } from '../../../src/store/pg/writer.js';
import { PgReader } from '../../../src/store/pg/reader.js';
import { pgDialect } from '../../../src/store/pg/dialect.js';
import { bootstrapSteps as pgBootstrapSteps } from '../../../src/store/pg/bootstrap.js';
import { createSteps as pgCreateSteps, q, uniqueIndexName } from '../../../src/store/pg/collection-sql.js';
// SQLite
import { WriterClient } from '../../../src/store/sqlite/writer-client.js';
import { Reader } from '../../../src/store/sqlite/reader.js';
import { sqliteDialect } from '../../../src/store/sqlite/dialect.js';
import { bootstrapSteps as sqliteBootstrapSteps } from '../../../src/store/sqlite/bootstrap.js';
import { createSteps as sqliteCreateSteps } from '../../../src/store/sqlite/collection-sql.js';

const skip = postgresSkipReason() ?? false;

/** Timestamps in the stored format, increasing. */
const T = (n: number): string => `2024-01-02 03:04:${String(n).padStart(2, '0')}.000Z`;
const NOW = 1_700_000_000_000;

const USERS: Collection = {
  id: 'pbc_users00001',
  name: 'users',
  type: 'auth',
  system: false,
  fields: [...authSystemFields(), { id: 'f_username', name: 'username', type: 'text', options: { unique: true } } as Field],
  indexes: [],
  options: { ttl_field: null, auth: { ...defaultAuthOptions(), identityFields: ['email', 'username'] } },
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null,
  created: T(0), updated: T(0),
};
const C = USERS.id;

/** One backend: its writer, a raw read, the stores and the dialect. */
interface Backend {
  name: string;
  write(steps: WriteStep[]): Promise<unknown>;
  get(sql: string, params: (string | number)[]): Promise<unknown[] | undefined>;
  auth: AuthRecordStore;
  sessions: SessionRowStore;
  tokens: AuthTokenRowStore;
  links: ExternalAuthRowStore;
  passkeys: PasskeyRowStore;
  mfa: MfaRowStore;
  dialect: Dialect;
  statements: string[];
  close(): Promise<void>;
}

const gone = (what: string): StepFail => ({ status: 404, code: `${what}_gone`, message: `${what} is gone` });

/** The outcome of one job: ok, a failed guard (its code) or a write failure (constraint or not). */
async function outcome(b: Backend, steps: WriteStep[]): Promise<string> {
  for (const s of steps) b.statements.push(s.sql);
  try {
    await b.write(steps);
    return 'ok';
  } catch (err) {
    const guard = knownApiError(err); // a failed guard's GuardFailed, as the API answers it
    if (guard) return `guard:${guard.code}`;
    const f = b.dialect.writeFailure(err);
    if (f) return f.constraint ? 'constraint' : `error:${f.message}`;
    throw err;
  }
}

const insertUser = (id: string, email: string, username: string): WriteStep => ({
  sql: 'INSERT INTO "users" ("id","created","updated","email","emailVisibility","verified","username","passwordHash","tokenKey") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)',
  params: [id, T(0), T(0), email, 0, 0, username, `hash-${id}`, `key-${id}`],
});

const sideCounts = (b: Backend, recordId?: string): Promise<number[]> =>
  Promise.all(AUTH_SIDE_TABLES.map(async (t) => Number((await b.get(`SELECT count(*) FROM "${t}" WHERE "collectionId" = $1${recordId ? ' AND "recordId" = $2' : ''}`, recordId ? [C, recordId] : [C]))?.[0])));

/**
 * The scenario: every store method, with expectations asserted on the backend; returns what it
 * observed (every read's answer and every job's outcome, labelled) for the differential check.
 */
async function scenario(b: Backend): Promise<Array<[string, unknown]>> {
  const seen: Array<[string, unknown]> = [];
  const see = <V>(label: string, v: V): V => { seen.push([label, v]); return v; };
  const job = async (label: string, steps: WriteStep[], expect: string): Promise<void> => {
    assert.equal(see(label, await outcome(b, steps)), expect, `${b.name}: ${label}`);
  };

  // ---- auth records -------------------------------------------------------------------------
  await job('insert users', [insertUser('u1', 'Alice@Example.com', 'alice'), insertUser('u2', 'bob@example.com', 'Bob')], 'ok');
  const fields = ['email', 'username'] as const;
  assert.equal(see('identity email any case', (await b.auth.idByIdentity(USERS, fields, 'ALICE@example.COM'))), 'u1');
  assert.equal(see('identity username', (await b.auth.idByIdentity(USERS, fields, 'Bob'))), 'u2');
  assert.equal(see('identity username is exact', (await b.auth.idByIdentity(USERS, ['username'], 'bob'))), undefined);
  assert.equal(see('identity email only', (await b.auth.idByIdentity(USERS, ['email'], 'alice'))), undefined);
  assert.equal(see('identity missing', (await b.auth.idByIdentity(USERS, fields, 'nobody@example.com'))), undefined);
  assert.deepEqual(see('byEmail', (await b.auth.byEmail(USERS, 'alice@EXAMPLE.com'))), { id: 'u1', email: 'Alice@Example.com', verified: false });
  assert.equal(see('byEmail missing', (await b.auth.byEmail(USERS, 'carol@example.com'))), undefined);
  // the whole row: the codec's columns, then passwordHash, tokenKey, token_epoch, in each backend's
  // own types (docs/deployment.md, "Values read back"): a bool field is SQLite's INTEGER (BigInt)
  // and PostgreSQL's smallint (a number); token_epoch is a bigint on both
  const flag = b.dialect === pgDialect ? 0 : 0n;
  assert.deepEqual(see('recordRow v1', (await b.auth.recordRow(USERS, 1, 'r."id", r."email", r."verified"', 'u1'))), ['u1', 'Alice@Example.com', flag, 'hash-u1', 'key-u1', 0n]);
  assert.deepEqual(see('recordRow v1 cached', (await b.auth.recordRow(USERS, 1, 'ignored: cached per version', 'u2'))), ['u2', 'bob@example.com', flag, 'hash-u2', 'key-u2', 0n]);
  assert.deepEqual(see('recordRow v2', (await b.auth.recordRow(USERS, 2, 'r."username"', 'u2'))), ['Bob', 'hash-u2', 'key-u2', 0n]);
  assert.equal(see('recordRow missing', (await b.auth.recordRow(USERS, 2, 'r."username"', 'nope'))), undefined);

  await job('markVerified', [b.auth.markVerifiedStep(USERS, 'u1', 'alice@example.com', T(1), gone('email'))], 'ok');
  assert.deepEqual(see('byEmail verified', (await b.auth.byEmail(USERS, 'ALICE@example.com'))), { id: 'u1', email: 'Alice@Example.com', verified: true });
  await job('markVerified email changed', [b.auth.markVerifiedStep(USERS, 'u2', 'old@example.com', T(1), gone('email'))], 'guard:email_gone');
  await job('setPassword', [b.auth.setPasswordStep(USERS, 'u1', 'ALICE@EXAMPLE.COM', 'hash-2', 'key-2', T(2), gone('email'))], 'ok');
  await job('setPassword email changed', [b.auth.setPasswordStep(USERS, 'u1', 'x@example.com', 'hash-3', 'key-3', T(2), gone('email'))], 'guard:email_gone');
  await job('setPassword missing record', [b.auth.setPasswordStep(USERS, 'zz', 'alice@example.com', 'hash-3', 'key-3', T(2), gone('email'))], 'guard:email_gone');
  await job('bumpEpoch x2', [b.auth.bumpEpochStep(USERS, 'u1'), b.auth.bumpEpochStep(USERS, 'u1')], 'ok');
  assert.deepEqual(see('recordRow after updates', (await b.auth.recordRow(USERS, 3, 'r."verified", r."updated"', 'u1'))), [b.dialect === pgDialect ? 1 : 1n, T(2), 'hash-2', 'key-2', 2n]);

  assert.equal(see('superusers none', (await b.auth.superuserCount())), 0);
  await job('insert superuser', [{
    sql: 'INSERT INTO "_superusers" ("id","created","updated","email","emailVisibility","verified","passwordHash","tokenKey") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)',
    params: ['su1', T(0), T(0), 'root@example.com', 0, 1, 'h', 'k'],
  }], 'ok');
  assert.equal(see('superusers one', (await b.auth.superuserCount())), 1);

  // ---- sessions ----------------------------------------------------------------------------
  const ua = (id: string, n: number): { id: string; created: string; user_agent: string; ip: string } => ({ id, created: T(n), user_agent: `ua-${id}`, ip: `10.0.0.${n}` });
  await job('session s1', b.sessions.createSteps(C, 'u1', T(0), ua('s1', 10)), 'ok');
  await job('session s2', b.sessions.createSteps(C, 'u1', T(0), ua('s2', 11)), 'ok');
  await job('session s3 (u2)', b.sessions.createSteps(C, 'u2', T(0), ua('s3', 11)), 'ok');
  await job('session id taken', b.sessions.createSteps(C, 'u2', T(0), ua('s3', 12)), 'constraint');
  assert.equal(see('lastSeen', (await b.sessions.lastSeen(C, 'u1', 's1'))), T(10));
  assert.equal(see('lastSeen other owner', (await b.sessions.lastSeen(C, 'u2', 's1'))), undefined);
  assert.equal(see('lastSeen other collection', (await b.sessions.lastSeen('other', 'u1', 's1'))), undefined);
  await job('touch s1', [b.sessions.touchStep('s1', T(15))], 'ok');
  assert.equal(see('lastSeen touched', (await b.sessions.lastSeen(C, 'u1', 's1'))), T(15));
  const listed = see('sessions list', (await b.sessions.list(C, 'u1', T(0))));
  assert.deepEqual(listed, [
    { id: 's2', created: T(11), last_seen: T(11), user_agent: 'ua-s2', ip: '10.0.0.11' },
    { id: 's1', created: T(10), last_seen: T(15), user_agent: 'ua-s1', ip: '10.0.0.10' },
  ]);
  assert.deepEqual(see('sessions list cutoff', (await b.sessions.list(C, 'u1', T(12))).map((s) => s.id)), ['s1']);
  assert.deepEqual(see('sessions list cutoff inclusive', (await b.sessions.list(C, 'u1', T(11))).map((s) => s.id)), ['s2', 's1']);
  // a new login drops the owner's sessions last seen before the cutoff (s2), not others' (s3)
  await job('session s4 with cutoff', b.sessions.createSteps(C, 'u1', T(12), ua('s4', 16)), 'ok');
  assert.deepEqual(see('sessions after expiry', (await b.sessions.list(C, 'u1', T(0))).map((s) => s.id)), ['s4', 's1']);
  assert.deepEqual(see('sessions u2 kept', (await b.sessions.list(C, 'u2', T(0))).map((s) => s.id)), ['s3']);
  await job('revoke s1', [b.sessions.revokeStep(C, 'u1', 's1', gone('session'))], 'ok');
  await job('revoke s1 again', [b.sessions.revokeStep(C, 'u1', 's1', gone('session'))], 'guard:session_gone');
  await job('revoke other owner', [b.sessions.revokeStep(C, 'u1', 's3', gone('session'))], 'guard:session_gone');
  await job('session s5', b.sessions.createSteps(C, 'u1', T(0), ua('s5', 17)), 'ok');
  await job('wipe all but s4', b.sessions.wipeSteps(C, 'u1', 's4'), 'ok');
  assert.deepEqual(see('sessions kept one', (await b.sessions.list(C, 'u1', T(0))).map((s) => s.id)), ['s4']);
  await job('session s6', b.sessions.createSteps(C, 'u1', T(0), ua('s6', 18)), 'ok');
  await job('wipe all', b.sessions.wipeSteps(C, 'u1', null), 'ok');
  assert.deepEqual(see('sessions wiped', (await b.sessions.list(C, 'u1', T(0)))), []);
  assert.deepEqual(see('sessions u2 untouched', (await b.sessions.list(C, 'u2', T(0))).map((s) => s.id)), ['s3']);

  // ---- single-use tokens ---------------------------------------------------------------------
  const tok = (id: string, kind: string, recordId: string, created: number, expires: number) =>
    ({ id, hash: `h-${id}`, kind, collectionId: C, recordId, email: 'Alice@Example.com', created: T(created), expires });
  await job('issue expired t0', b.tokens.issueSteps(tok('t0', 'verify', 'u1', 20, NOW - 1), NOW - 100), 'ok');
  await job('issue t1', b.tokens.issueSteps(tok('t1', 'verify', 'u1', 21, NOW + 60_000), NOW - 100), 'ok');
  await job('issue t2 reset', b.tokens.issueSteps(tok('t2', 'reset', 'u1', 22, NOW + 60_000), NOW - 100), 'ok');
  const found = see('token find', (await b.tokens.find('t1', 'verify', C)));
  assert.deepEqual(found, { hash: 'h-t1', recordId: 'u1', email: 'Alice@Example.com', expires: NOW + 60_000 });
  assert.equal(typeof found?.expires, 'number');
  assert.equal(see('token find wrong kind', (await b.tokens.find('t1', 'reset', C))), undefined);
  assert.equal(see('token find wrong collection', (await b.tokens.find('t1', 'verify', 'other'))), undefined);
  assert.deepEqual(see('token expired still there', (await b.tokens.find('t0', 'verify', C))?.expires), NOW - 1);
  // issuing at NOW deletes every token expired at NOW (t0), of any record
  await job('issue t3 at now', b.tokens.issueSteps(tok('t3', 'verify', 'u1', 23, NOW + 1000), NOW), 'ok');
  assert.equal(see('expired token dropped', (await b.tokens.find('t0', 'verify', C))), undefined);
  assert.deepEqual(see('latest verify', (await b.tokens.latest('verify', C, 'u1'))), { id: 't3', hash: 'h-t3', email: 'Alice@Example.com', expires: NOW + 1000 });
  assert.deepEqual(see('latest reset', (await b.tokens.latest('reset', C, 'u1'))?.id), 't2');
  assert.equal(see('latest other record', (await b.tokens.latest('verify', C, 'u2'))), undefined);
  await job('consume t1', [b.tokens.consumeStep('t1', gone('token'))], 'ok');
  await job('consume t1 twice', [b.tokens.consumeStep('t1', gone('token'))], 'guard:token_gone');
  assert.equal(see('consumed token', (await b.tokens.find('t1', 'verify', C))), undefined);
  await job('issue t4 (u2)', b.tokens.issueSteps(tok('t4', 'verify', 'u2', 24, NOW + 1000), NOW), 'ok');
  await job('drop verify u1', b.tokens.dropAllSteps('verify', C, 'u1'), 'ok');
  assert.equal(see('latest after drop', (await b.tokens.latest('verify', C, 'u1'))), undefined);
  assert.equal(see('reset kept', (await b.tokens.find('t2', 'reset', C))?.recordId), 'u1');
  assert.equal(see('u2 token kept', (await b.tokens.find('t4', 'verify', C))?.recordId), 'u2');

  // ---- OAuth2 links --------------------------------------------------------------------------
  await job('link google u1', [b.links.linkStep('e1', C, 'u1', 'google', 'g-1', T(30), true)], 'ok');
  await job('link github u1', [b.links.linkStep('e2', C, 'u1', 'github', 'gh-1', T(31), false)], 'ok');
  await job('link google u2', [b.links.linkStep('e3', C, 'u2', 'google', 'g-2', T(30), false)], 'ok');
  await job('provider account linked already', [b.links.linkStep('e4', C, 'u2', 'google', 'g-1', T(32), true)], 'constraint');
  await job('same account, other collection', [b.links.linkStep('e5', 'other', 'x1', 'google', 'g-1', T(32), false)], 'ok');
  assert.equal(see('recordFor', (await b.links.recordFor(C, 'google', 'g-1'))), 'u1');
  assert.equal(see('recordFor other collection', (await b.links.recordFor('other', 'google', 'g-1'))), 'x1');
  assert.equal(see('recordFor is exact', (await b.links.recordFor(C, 'google', 'G-1'))), undefined);
  assert.deepEqual(see('links list', (await b.links.list(C, ['u1', 'u2']))), [
    { recordId: 'u1', provider: 'google', providerId: 'g-1' },
    { recordId: 'u2', provider: 'google', providerId: 'g-2' },
    { recordId: 'u1', provider: 'github', providerId: 'gh-1' },
  ]);
  assert.deepEqual(see('links list none', (await b.links.list(C, []))), []);
  // more ids than one IN list holds
  const many = Array.from({ length: 1200 }, (_, i) => `x${i}`);
  assert.deepEqual(see('links list chunks', (await b.links.list(C, [...many, 'u2'])).map((l) => l.providerId)), ['g-2']);
  await job('unlink github', [b.links.unlinkStep(C, 'u1', 'github', gone('link'))], 'ok');
  await job('unlink github again', [b.links.unlinkStep(C, 'u1', 'github', gone('link'))], 'guard:link_gone');
  assert.deepEqual(see('links after unlink', (await b.links.list(C, ['u1'])).map((l) => l.provider)), ['google']);
  // the unconfirmed links of one record go; its confirmed ones and other records' stay
  await job('link github u1 unconfirmed', [b.links.linkStep('e6', C, 'u1', 'github', 'gh-1', T(33), false)], 'ok');
  await job('drop unconfirmed u1', [b.links.unconfirmedDropStep(C, 'u1')], 'ok');
  assert.deepEqual(see('links after drop', (await b.links.list(C, ['u1', 'u2'])).map((l) => l.providerId)), ['g-1', 'g-2']);
  assert.equal(see('other collection untouched', (await b.links.recordFor('other', 'google', 'g-1'))), 'x1');

  // ---- passkeys ------------------------------------------------------------------------------
  const key = (id: string, recordId: string, factor: boolean, counter = 0) => ({ id, recordId, publicKey: `pk-${id}`, counter, transports: '["usb","nfc"]', factor });
  await job('passkey cred1', [b.passkeys.addStep(C, key('cred1', 'u1', false), T(40))], 'ok');
  await job('passkey cred2 factor', [b.passkeys.addStep(C, key('cred2', 'u1', true, 4_294_967_295), T(41))], 'ok');
  await job('passkey cred3 factor', [b.passkeys.addStep(C, key('cred3', 'u1', true), T(42))], 'ok');
  await job('passkey cred4 (u2)', [b.passkeys.addStep(C, key('cred4', 'u2', true), T(42))], 'ok');
  await job('credential id taken', [b.passkeys.addStep(C, key('cred1', 'u2', false), T(43))], 'constraint');
  const cred2 = see('passkey find', (await b.passkeys.find(C, 'cred2')));
  assert.deepEqual(cred2, { id: 'cred2', recordId: 'u1', publicKey: 'pk-cred2', counter: 4_294_967_295, transports: '["usb","nfc"]', factor: true });
  assert.equal(see('passkey find other collection', (await b.passkeys.find('other', 'cred2'))), undefined);
  assert.deepEqual(see('passkeys all', (await b.passkeys.list(C, 'u1')).map((p) => [p.id, p.factor])), [['cred1', false], ['cred2', true], ['cred3', true]]);
  assert.deepEqual(see('passkeys factors', (await b.passkeys.list(C, 'u1', true)).map((p) => p.id)), ['cred2', 'cred3']);
  assert.deepEqual(see('passkeys sign-in', (await b.passkeys.list(C, 'u1', false)).map((p) => p.id)), ['cred1']);
  await job('passkey use', [b.passkeys.useStep(C, 'cred1', 0, 5, T(44), gone('counter'))], 'ok');
  await job('passkey use, counter moved', [b.passkeys.useStep(C, 'cred1', 0, 6, T(45), gone('counter'))], 'guard:counter_gone');
  await job('passkey use, other collection', [b.passkeys.useStep('other', 'cred1', 5, 6, T(45), gone('counter'))], 'guard:counter_gone');
  assert.equal(see('passkey counter', (await b.passkeys.find(C, 'cred1'))?.counter), 5);
  assert.equal(see('passkey lastUsed', (await b.get('SELECT "lastUsed" FROM "_passkeys" WHERE "id" = $1', ['cred1']))?.[0]), T(44));
  await job('passkey remove', [b.passkeys.removeStep(C, 'u1', 'cred1', gone('passkey'))], 'ok');
  await job('passkey remove again', [b.passkeys.removeStep(C, 'u1', 'cred1', gone('passkey'))], 'guard:passkey_gone');
  await job('passkey remove other owner', [b.passkeys.removeStep(C, 'u1', 'cred4', gone('passkey'))], 'guard:passkey_gone');
  await job('passkey sign-in again', [b.passkeys.addStep(C, key('cred5', 'u1', false), T(46))], 'ok');
  await job('passkey remove factors', [b.passkeys.removeStep(C, 'u1', null, gone('passkey'))], 'ok');
  await job('passkey remove factors when none', [b.passkeys.removeStep(C, 'u1', null, gone('passkey'))], 'ok');
  assert.deepEqual(see('passkeys after factor removal', (await b.passkeys.list(C, 'u1')).map((p) => p.id)), ['cred5']);
  assert.deepEqual(see('passkeys u2 kept', (await b.passkeys.list(C, 'u2')).map((p) => p.id)), ['cred4']);
  // a reset's removal: every sign-in passkey of the record, its second factors and others' stay
  await job('passkey factor again', [b.passkeys.addStep(C, key('cred6', 'u1', true), T(47))], 'ok');
  await job('passkey sign-in (u2)', [b.passkeys.addStep(C, key('cred7', 'u2', false), T(47))], 'ok');
  await job('passkey remove sign-in', [b.passkeys.removeAllSignInStep(C, 'u1')], 'ok');
  assert.deepEqual(see('passkeys after sign-in removal', (await b.passkeys.list(C, 'u1')).map((p) => p.id)), ['cred6']);
  assert.deepEqual(see('passkeys u2 after sign-in removal', (await b.passkeys.list(C, 'u2')).map((p) => p.id)), ['cred4', 'cred7']);

  // ---- second factors: TOTP ------------------------------------------------------------------
  await job('totp add', [b.mfa.addTotpStep('f1', C, 'u1', 'enc:secret', 0, T(50))], 'ok');
  await job('totp add (u2)', [b.mfa.addTotpStep('f2', C, 'u2', 'enc:other', 7, T(50))], 'ok');
  assert.deepEqual(see('totp factors', (await b.mfa.totpFactors(C, 'u1'))), [{ id: 'f1', secret: 'enc:secret', lastStep: 0 }]);
  await job('totp use 56666666', [b.mfa.useTotpStep('f1', 56_666_666, gone('step'))], 'ok');
  await job('totp reuse', [b.mfa.useTotpStep('f1', 56_666_666, gone('step'))], 'guard:step_gone');
  await job('totp older step', [b.mfa.useTotpStep('f1', 56_666_665, gone('step'))], 'guard:step_gone');
  await job('totp next step', [b.mfa.useTotpStep('f1', 56_666_667, gone('step'))], 'ok');
  await job('totp missing factor', [b.mfa.useTotpStep('nope', 56_666_668, gone('step'))], 'guard:step_gone');
  assert.deepEqual(see('totp last step', (await b.mfa.totpFactors(C, 'u1'))), [{ id: 'f1', secret: 'enc:secret', lastStep: 56_666_667 }]);
  await job('totp remove', [b.mfa.removeTotpStep(C, 'u1')], 'ok');
  assert.deepEqual(see('totp removed', (await b.mfa.totpFactors(C, 'u1'))), []);
  assert.deepEqual(see('totp u2 kept', (await b.mfa.totpFactors(C, 'u2')).map((f) => f.lastStep)), [7]);

  // ---- second factors: recovery codes --------------------------------------------------------
  const codes = ['r1', 'r2', 'r3'].map((id) => ({ id, hash: `rh-${id}` }));
  await job('recovery set', b.mfa.replaceRecoveryStep(C, 'u1', codes, T(51)), 'ok');
  await job('recovery set (u2)', b.mfa.replaceRecoveryStep(C, 'u2', [{ id: 'q1', hash: 'qh' }], T(51)), 'ok');
  const sorted = (xs: { id: string; hash: string }[]) => [...xs].sort((a, b2) => a.id.localeCompare(b2.id));
  assert.deepEqual(see('recovery codes', sorted((await b.mfa.recoveryCodes(C, 'u1')))), codes);
  await job('recovery use r2', [b.mfa.useRecoveryStep('r2', gone('code'))], 'ok');
  await job('recovery reuse r2', [b.mfa.useRecoveryStep('r2', gone('code'))], 'guard:code_gone');
  assert.deepEqual(see('recovery left', sorted((await b.mfa.recoveryCodes(C, 'u1'))).map((r) => r.id)), ['r1', 'r3']);
  await job('recovery replace', b.mfa.replaceRecoveryStep(C, 'u1', [{ id: 'r4', hash: 'rh-r4' }], T(52)), 'ok');
  assert.deepEqual(see('recovery replaced', (await b.mfa.recoveryCodes(C, 'u1'))), [{ id: 'r4', hash: 'rh-r4' }]);
  await job('recovery clear', b.mfa.replaceRecoveryStep(C, 'u1', [], T(53)), 'ok');
  assert.deepEqual(see('recovery cleared', (await b.mfa.recoveryCodes(C, 'u1'))), []);
  assert.deepEqual(see('recovery u2 kept', (await b.mfa.recoveryCodes(C, 'u2'))), [{ id: 'q1', hash: 'qh' }]);

  // ---- second factors: attempts --------------------------------------------------------------
  const att = (id: string, purpose: 'login' | 'enroll' | 'manage', expires: number, recordId = 'u1') =>
    ({ id, hash: `ah-${id}`, collectionId: C, recordId, purpose, tries: 0, data: '', expires });
  await job('attempt a0 (expiring)', b.mfa.addAttemptSteps(att('a0', 'login', NOW - 1), T(60), NOW - 100), 'ok');
  assert.equal(see('attempt a0', (await b.mfa.attempt('a0', C))?.expires), NOW - 1);
  await job('attempt a1', b.mfa.addAttemptSteps(att('a1', 'login', NOW + 300_000), T(61), NOW), 'ok');
  assert.equal(see('expired attempt dropped', (await b.mfa.attempt('a0', C))), undefined);
  const a1 = see('attempt a1', (await b.mfa.attempt('a1', C)));
  assert.deepEqual(a1, { id: 'a1', hash: 'ah-a1', collectionId: C, recordId: 'u1', purpose: 'login', tries: 0, data: '', expires: NOW + 300_000 });
  assert.equal(see('attempt other collection', (await b.mfa.attempt('a1', 'other'))), undefined);
  await job('attempt data', [b.mfa.setAttemptDataStep('a1', '{"secret":"enc:x","q":"?"}')], 'ok');
  assert.equal(see('attempt data read', (await b.mfa.attempt('a1', C))?.data), '{"secret":"enc:x","q":"?"}');
  await job('attempt fail 1', b.mfa.failAttemptSteps('a1', 3), 'ok');
  await job('attempt fail 2', b.mfa.failAttemptSteps('a1', 3), 'ok');
  assert.equal(see('attempt tries', (await b.mfa.attempt('a1', C))?.tries), 2);
  await job('attempt fail 3 (limit)', b.mfa.failAttemptSteps('a1', 3), 'ok');
  assert.equal(see('attempt deleted at the limit', (await b.mfa.attempt('a1', C))), undefined);
  await job('attempt a2', b.mfa.addAttemptSteps(att('a2', 'enroll', NOW + 300_000), T(62), NOW), 'ok');
  await job('attempt consume', [b.mfa.consumeAttemptStep('a2', gone('attempt'))], 'ok');
  await job('attempt consume twice', [b.mfa.consumeAttemptStep('a2', gone('attempt'))], 'guard:attempt_gone');
  await job('attempts a3..a6', [
    ...b.mfa.addAttemptSteps(att('a3', 'login', NOW + 300_000), T(63), NOW),
    ...b.mfa.addAttemptSteps(att('a4', 'enroll', NOW + 300_000), T(63), NOW),
    ...b.mfa.addAttemptSteps(att('a5', 'manage', NOW + 300_000), T(63), NOW),
    ...b.mfa.addAttemptSteps(att('a6', 'enroll', NOW + 300_000, 'u2'), T(63), NOW),
  ], 'ok');
  await job('attempt id taken', b.mfa.addAttemptSteps(att('a3', 'login', NOW + 300_000), T(64), NOW), 'constraint');
  await job('drop enroll+manage', [b.mfa.dropAttemptsStep(C, 'u1', ['enroll', 'manage'])], 'ok');
  assert.deepEqual(see('attempts left', await Promise.all(['a3', 'a4', 'a5', 'a6'].map(async (id) => (await b.mfa.attempt(id, C))?.purpose ?? null))), ['login', null, null, 'enroll']);
  await job('drop no purpose', [b.mfa.dropAttemptsStep(C, 'u1', [])], 'ok');
  assert.equal(see('attempt kept by empty drop', (await b.mfa.attempt('a3', C))?.purpose), 'login');

  // ---- second factors: the durable account limit ---------------------------------------------
  const WINDOW = 10_000;
  assert.equal(see('tries none', (await b.mfa.triesSince(C, 'u1', 0))), 0);
  for (const at of [NOW - 20_000, NOW - 5000, NOW - 1000]) await job(`try at ${at - NOW}`, b.mfa.addTrySteps(C, 'u1', at, WINDOW), 'ok');
  await job('try u2', b.mfa.addTrySteps(C, 'u2', NOW, WINDOW), 'ok');
  // the third try's window (NOW - 11,000) dropped the first
  assert.equal(see('tries all', (await b.mfa.triesSince(C, 'u1', 0))), 2);
  assert.equal(see('tries since', (await b.mfa.triesSince(C, 'u1', NOW - 5000))), 1);
  assert.equal(see('tries since is exclusive', (await b.mfa.triesSince(C, 'u1', NOW - 1000))), 0);
  await job('try at now', b.mfa.addTrySteps(C, 'u1', NOW + 6000, WINDOW), 'ok'); // drops at <= NOW - 4000
  assert.equal(see('tries after window', (await b.mfa.triesSince(C, 'u1', 0))), 2);

  // ---- side rows of a deleted record, then of a deleted collection ---------------------------
  await job('session for u1', b.sessions.createSteps(C, 'u1', T(0), ua('s7', 19)), 'ok');
  await job('token for u1', b.tokens.issueSteps(tok('t5', 'verify', 'u1', 25, NOW + 1000), NOW), 'ok');
  await job('recovery for u1', b.mfa.replaceRecoveryStep(C, 'u1', [{ id: 'r9', hash: 'x' }], T(54)), 'ok');
  await job('totp for u1', [b.mfa.addTotpStep('f3', C, 'u1', 'enc:s', 0, T(55))], 'ok');
  const beforeU2 = see('u2 side rows', await sideCounts(b, 'u2'));
  assert.ok(beforeU2.every((n) => n > 0), `${b.name}: u2 has a row in each side table: ${beforeU2}`);
  const beforeU1 = see('u1 side rows', await sideCounts(b, 'u1'));
  assert.ok(beforeU1.every((n) => n > 0), `${b.name}: u1 has a row in each side table: ${beforeU1}`);
  await job('delete u2 side rows', b.auth.recordSideRowsDeleteSteps(C, 'u2'), 'ok');
  assert.deepEqual(see('u2 side rows gone', await sideCounts(b, 'u2')), AUTH_SIDE_TABLES.map(() => 0));
  assert.deepEqual(see('u1 side rows kept', await sideCounts(b, 'u1')), beforeU1);
  await job('delete collection side rows', b.auth.collectionSideRowsDeleteSteps(C), 'ok');
  assert.deepEqual(see('collection side rows gone', await sideCounts(b)), AUTH_SIDE_TABLES.map(() => 0));
  assert.equal(see('other collection kept', (await b.links.recordFor('other', 'google', 'g-1'))), 'x1');
  return seen;
}

async function pgBackend(server: Postgres): Promise<Backend> {
  const url = await server.createDatabase('auth_stores');
  const writer = await PgWriter.start(url);
  await writer.write(pgBootstrapSteps());
  await writer.write(pgCreateSteps(USERS, [], [USERS]));
  const reader = await PgReader.start(url);
  return {
    name: 'postgresql',
    write: (steps) => writer.write(steps),
    get: (sql, params) => reader.get(sql, params),
    auth: new AuthSql(reader, AUTH_DIALECTS.postgres),
    sessions: new SessionSql(reader, SESSION_TIE_BREAK.postgres),
    tokens: new TokenSql(reader, TOKEN_TIE_BREAK.postgres),
    links: new ExternalAuthSql(reader, LINK_DIALECTS.postgres),
    passkeys: new PasskeySql(reader, LINK_DIALECTS.postgres),
    mfa: new MfaSql(reader, TOTP_ORDER.postgres),
    dialect: pgDialect,
    statements: [],
    async close() {
      await reader.close();
      await writer.close();
    },
  };
}

async function sqliteBackend(dir: string): Promise<Backend> {
  const path = join(dir, 'data.db');
  const writer = await WriterClient.start(path);
  await writer.write(sqliteBootstrapSteps());
  await writer.write(sqliteCreateSteps(USERS, [], [USERS]));
  const reader = new Reader(path, 0);
  return {
    name: 'sqlite',
    write: (steps) => writer.write(steps),
    get: (sql, params) => reader.get(sql, params),
    auth: new AuthSql(reader, AUTH_DIALECTS.sqlite),
    sessions: new SessionSql(reader, SESSION_TIE_BREAK.sqlite),
    tokens: new TokenSql(reader, TOKEN_TIE_BREAK.sqlite),
    links: new ExternalAuthSql(reader, LINK_DIALECTS.sqlite),
    passkeys: new PasskeySql(reader, LINK_DIALECTS.sqlite),
    mfa: new MfaSql(reader, TOTP_ORDER.sqlite),
    dialect: sqliteDialect,
    statements: [],
    async close() {
      await reader.close();
      await writer.close();
    },
  };
}

describe('auth-side stores on PostgreSQL', { skip }, () => {
  let server: Postgres;
  let dir: string;
  let pgb: Backend;
  let sqb: Backend;

  before(async () => {
    server = await startPostgres();
    dir = mkdtempSync(join(tmpdir(), 'svc-auth-stores-'));
    pgb = await pgBackend(server);
    sqb = await sqliteBackend(dir);
  });

  after(async () => {
    await pgb?.close().catch(() => undefined);
    await sqb?.close().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  });

  test('every store method behaves on PostgreSQL as on SQLite (same scenario, same answers)', async () => {
    const onPg = await scenario(pgb);
    const onSqlite = await scenario(sqb);
    assert.equal(onPg.length, onSqlite.length);
    // raw rows differ in their integers' types only (recordRow: BigInt on SQLite, smallint a number on PostgreSQL)
    const same = (v: unknown): unknown => (Array.isArray(v) ? v.map((x) => (typeof x === 'bigint' ? Number(x) : x)) : v);
    for (let i = 0; i < onPg.length; i++) assert.deepStrictEqual(same(onPg[i][1]), same(onSqlite[i][1]), `step ${i}: ${onPg[i][0]}`);
  });

  test('the PostgreSQL statements use no SQLite-only syntax', () => {
    assert.ok(pgb.statements.length > 50, `statements recorded: ${pgb.statements.length}`);
    for (const sql of pgb.statements) assert.doesNotMatch(sql, /unixepoch|json_each|\browid\b|zeroblob|nocase|!=/i, sql);
  });

  test('the email guard of the auth updates uses the lower("email") unique index', async () => {
    const step = pgb.auth.markVerifiedStep(USERS, 'u1', 'ALICE@example.com', T(9), gone('email'));
    const client = new pg.Client({ connectionString: server.urlOf('auth_stores') });
    await client.connect();
    try {
      // a table this small is scanned whatever its indexes: price the scans out to see the match
      await client.query('SET enable_seqscan = off');
      await client.query('SET enable_indexscan = on');
      // the step's email clause, its one parameter ($3 of the step) bound alone
      const guard = step.sql.slice(step.sql.indexOf('"id" = $2 AND ') + '"id" = $2 AND '.length);
      assert.equal(guard, 'lower("email") = lower($3::text)');
      const sql = `SELECT "id" FROM "users" WHERE ${guard.replace('$3', '$1')}`;
      const plan = (await client.query(`EXPLAIN ${sql}`, ['ALICE@example.com'])).rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      const index = uniqueIndexName(USERS, USERS.fields.find((f) => f.name === 'email')!);
      assert.ok(plan.includes(`using ${q(index)}`) || plan.includes(`using ${index}`), plan);
    } finally {
      await client.end();
    }
  });
});
