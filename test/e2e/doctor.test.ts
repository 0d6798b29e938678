/**
 * `svc doctor` end to end (spec 1-core-api.md, "Command line": findings stream, exit codes 0/1/2,
 * dash-case check ids; "Access rules": open signup is a warning, other public writes errors;
 * 0-conventions.md: `svc doctor [--json]`), and the slow-query log it reads
 * (src/ops/slow-queries.ts): real servers, the built CLI, data directories set up to trigger each
 * check.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { runCli, startSvc, type Svc } from '../helpers/server.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { withDb } from '../helpers/auth-helpers.js';

const PG = TEST_BACKEND === 'postgres';
/** A check of the embedded database's own files; its PostgreSQL counterpart has a test of its own below. */
const SQLITE_ONLY = PG ? 'this reads a file of the embedded database (data.db, its WAL or token_secret); the PostgreSQL counterpart is the next test' : false;
/** A check of what the PostgreSQL backend keeps in the database; run by `npm run test:pg`. */
const PG_ONLY = PG ? false : 'runs against PostgreSQL in `npm run test:pg` (SVC_TEST_BACKEND=postgres)';

const CHECKS = ['loose-file-modes', 'wal-size', 'token-secret', 'public-write-rule', 'open-signup', 'no-superuser', 'encryption-key-backup', 'missing-index'];
/** The checks that run: on PostgreSQL every one but wal-size (the server manages its own WAL). */
const CHECKS_RUN = PG ? CHECKS.length - 1 : CHECKS.length;
const dirs: string[] = [];
const servers: Svc[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-doctor-'));
  dirs.push(d);
  return d;
}

async function serve(opts: Parameters<typeof startSvc>[0] = {}): Promise<Svc> {
  const srv = await startSvc({ dataDir: tempDir(), ...opts });
  servers.push(srv);
  return srv;
}

interface Finding { check_id: string; severity: string; message: string; fix: string }
interface Doctor { status: number | null; findings: Finding[]; summary: { errors: number; warnings: number; infos: number; checks_run: number }; stderr: string }

/** `svc doctor --json` on `dataDir`, with the stream's shape checked line by line. */
function doctor(dataDir: string, env: Record<string, string> = {}): Doctor {
  const r = runCli(['doctor', `--data-dir=${dataDir}`, '--json'], env);
  assert.ok(r.stdout.endsWith('\n'), `stdout ends with a newline: ${JSON.stringify(r.stdout)}`);
  const lines = r.stdout.slice(0, -1).split('\n');
  const objects = lines.map((l) => JSON.parse(l)); // every line parses
  const last = objects.pop();
  assert.deepEqual(Object.keys(last), ['summary'], `the last line is the summary: ${r.stdout}`);
  assert.deepEqual(Object.keys(last.summary), ['errors', 'warnings', 'infos', 'checks_run']);
  for (const f of objects) {
    assert.deepEqual(Object.keys(f), ['check_id', 'severity', 'message', 'fix'], JSON.stringify(f));
    assert.ok(CHECKS.includes(f.check_id), f.check_id);
    assert.match(f.check_id, /^[a-z]+(-[a-z]+)*$/);
    assert.ok(['error', 'warning', 'info'].includes(f.severity), f.severity);
    assert.ok(f.message.length > 0 && f.fix.length > 0);
  }
  const count = (s: string) => objects.filter((f) => f.severity === s).length;
  assert.deepEqual(last.summary, { errors: count('error'), warnings: count('warning'), infos: count('info'), checks_run: CHECKS_RUN });
  return { status: r.status, findings: objects, summary: last.summary, stderr: r.stderr };
}

const of = (d: Doctor, id: string) => d.findings.filter((f) => f.check_id === id);

/** Polls until `fn` returns a truthy value (the slow-query log is written after the reply). */
async function eventually<T>(fn: () => T | undefined | null | false, what: string, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function slowLog(dataDir: string): any[] {
  const file = join(dataDir, 'slow_queries.ndjson');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

const OWNED = { listRule: '@request.auth.id != ""', viewRule: '@request.auth.id != ""', createRule: '@request.auth.id != ""', updateRule: 'owner = @request.auth.id', deleteRule: 'owner = @request.auth.id' };

let clean: Svc;

before(async () => {
  clean = await serve();
  const members = await clean.createCollection({ name: 'members', type: 'auth', fields: [{ name: 'nick', type: 'text' }], viewRule: 'id = @request.auth.id', updateRule: 'id = @request.auth.id' });
  await clean.createCollection({ name: 'notes', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: members.id } }], ...OWNED, listRule: '@public', viewRule: '@public' });
});

after(async () => {
  for (const s of servers) await s.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a clean data directory: exit 0 while the server runs, info findings only, text and JSON', () => {
  const d = doctor(clean.dataDir);
  assert.equal(d.status, 0, JSON.stringify(d.findings));
  assert.deepEqual(d.findings.filter((f) => f.severity !== 'info'), []);
  assert.equal(d.summary.errors + d.summary.warnings, 0);
  // the key file exists and nothing is encrypted yet: information only
  const enc = of(d, 'encryption-key-backup');
  assert.equal(enc.length, 1);
  assert.equal(enc[0].severity, 'info');
  assert.match(enc[0].message, /no collection uses encrypted fields/);

  const text = runCli(['doctor', `--data-dir=${clean.dataDir}`]);
  assert.equal(text.status, 0, text.stderr);
  const lines = text.stdout.trimEnd().split('\n');
  assert.match(lines[lines.length - 1], new RegExp(`^0 errors, 0 warnings, 1 info \\(${CHECKS_RUN} checks on ${PG ? 'postgres' : '/'}`));
  assert.match(lines[0], /^\[info\] encryption-key-backup: .+ — fix: .+/);
});

test('public-write-rule (error) and open-signup (warning, not also a public write): exit 2', async () => {
  const guest = await clean.createCollection({ name: 'guestbook', type: 'base', fields: [{ name: 'text', type: 'text' }], createRule: '@public', deleteRule: '@public', listRule: '@public' });
  const people = await clean.createCollection({ name: 'people', type: 'auth', fields: [], createRule: '@public', updateRule: '@public' });
  try {
    const d = doctor(clean.dataDir);
    assert.equal(d.status, 2);
    const pub = of(d, 'public-write-rule');
    assert.deepEqual(pub.map((f) => [f.severity, /collection "(\w+)" (\w+) is @public/.exec(f.message)?.slice(1).join(' ')]).sort(), [
      ['error', 'guestbook createRule'], ['error', 'guestbook deleteRule'], ['error', 'people updateRule'],
    ]);
    const signup = of(d, 'open-signup');
    assert.equal(signup.length, 1);
    assert.equal(signup[0].severity, 'warning');
    assert.match(signup[0].message, /collection "people" is an auth collection .* anyone can sign up/);
    assert.deepEqual([d.summary.errors, d.summary.warnings], [3, 1]);

    const text = runCli(['doctor', `--data-dir=${clean.dataDir}`]);
    assert.equal(text.status, 2);
    assert.match(text.stdout, /^\[error\] public-write-rule: collection "guestbook" createRule is @public: .+ — fix: .+$/m);
    assert.match(text.stdout, /^\[warning\] open-signup: collection "people" .+ — fix: .+$/m);
    assert.match(text.stdout, new RegExp(`^3 errors, 1 warning, 1 info \\(${CHECKS_RUN} checks on .+\\)$`, 'm'));
  } finally {
    for (const c of [guest, people]) assert.equal((await clean.api('DELETE', `/api/collections/${c.id}`, { token: clean.suToken })).status, 204);
  }
  assert.equal(doctor(clean.dataDir).status, 0, 'back to clean once the collections are gone');
});

test('--app: the declared collections count as the next start will apply them', () => {
  const appFile = join(tempDir(), 'app.mjs');
  writeFileSync(appFile, `export default { collections: [
    { name: 'notes', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'owner', type: 'text' }], updateRule: '@public' },
    { name: 'fans', type: 'auth', fields: [], createRule: '@public' },
  ] };\n`);
  const r = runCli(['doctor', `--data-dir=${clean.dataDir}`, `--app=${appFile}`, '--json']);
  assert.equal(r.status, 2, r.stdout + r.stderr);
  const findings = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)).filter((o) => o.check_id);
  assert.deepEqual(findings.filter((f) => f.severity !== 'info').map((f) => `${f.check_id}: ${f.message.split(':')[0]}`), [
    'public-write-rule: collection "notes" (declared by the app) updateRule is @public',
    'open-signup: collection "fans" (declared by the app) is an auth collection whose createRule is @public',
  ]);
  const broken = runCli(['doctor', `--data-dir=${clean.dataDir}`, `--app=${join(tmpdir(), 'svc-doctor-no-such-app.mjs')}`, '--json']);
  assert.equal(broken.status, 1);
  assert.equal(JSON.parse(broken.stdout).error.code, 'app');
});

test('loose-file-modes: a database file readable by others', { skip: SQLITE_ONLY }, () => {
  const db = join(clean.dataDir, 'data.db');
  chmodSync(db, 0o644);
  try {
    const d = doctor(clean.dataDir);
    assert.equal(d.status, 2);
    const loose = of(d, 'loose-file-modes');
    assert.equal(loose.length, 1);
    assert.equal(loose[0].severity, 'warning');
    assert.ok(loose[0].message.includes(`${db} (mode 0644)`), loose[0].message);
    assert.match(loose[0].fix, /chmod -R go-rwx/);
  } finally {
    chmodSync(db, 0o600);
  }
  assert.deepEqual(of(doctor(clean.dataDir), 'loose-file-modes'), []);
});

test('token-secret: too short and readable by others (errors); absent (info)', { skip: SQLITE_ONLY }, () => {
  const file = join(clean.dataDir, 'token_secret');
  const saved = readFileSync(file);
  try {
    writeFileSync(file, Buffer.alloc(16, 7).toString('base64'));
    chmodSync(file, 0o644);
    const d = doctor(clean.dataDir);
    assert.equal(d.status, 2);
    const ts = of(d, 'token-secret');
    assert.equal(ts.length, 2, JSON.stringify(ts));
    assert.ok(ts.every((f) => f.severity === 'error'));
    assert.match(ts[0].message, /holds 16 byte\(s\).*fewer than 32/);
    assert.match(ts[1].message, /mode 0644/);
    assert.ok(of(d, 'loose-file-modes')[0].message.includes('token_secret (mode 0644)'));

    unlinkSync(file);
    const gone = of(doctor(clean.dataDir), 'token-secret');
    assert.equal(gone.length, 1);
    assert.equal(gone[0].severity, 'info');
    assert.match(gone[0].message, /missing/);
  } finally {
    writeFileSync(file, saved, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  assert.deepEqual(of(doctor(clean.dataDir), 'token-secret'), []);
});

/** A collection with an encrypted field. */
const VAULT = { name: 'vault', type: 'base', fields: [{ name: 'pin', type: 'text', options: { encrypted: true } }] };

/** The doctor on the clean directory while VAULT exists: exit 2 and one encryption-key-backup warning naming vault.pin. */
function encryptedWarning(): Finding[] {
  const d = doctor(clean.dataDir);
  assert.equal(d.status, 2);
  const enc = of(d, 'encryption-key-backup');
  assert.equal(enc.length, 1);
  assert.equal(enc[0].severity, 'warning');
  assert.ok(enc[0].message.includes('vault.pin'), enc[0].message);
  return enc;
}

test('encryption-key-backup: a warning once a field is encrypted', { skip: SQLITE_ONLY }, async () => {
  const secrets = await clean.createCollection(VAULT);
  try {
    const enc = encryptedWarning();
    assert.ok(enc[0].message.includes(join(clean.dataDir, 'encryption_key')));
    assert.match(enc[0].fix, /back up encryption_key separately/);
  } finally {
    await clean.api('DELETE', `/api/collections/${secrets.id}`, { token: clean.suToken });
  }
});

test('no-superuser: a data directory whose _superusers is empty', async () => {
  const srv = await serve({ superuser: false });
  const d = doctor(srv.dataDir);
  assert.equal(d.status, 2);
  const su = of(d, 'no-superuser');
  assert.equal(su.length, 1);
  assert.equal(su[0].severity, 'warning');
  assert.match(su[0].fix, /svc superuser create/);
  assert.equal(of(doctor(clean.dataDir), 'no-superuser').length, 0, 'the clean directory has one');
});

test('wal-size: a write-ahead log over 64 MB', { skip: SQLITE_ONLY }, async () => {
  const srv = await serve();
  await srv.stop();
  const db = new Database(join(srv.dataDir, 'data.db'));
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)'); // every frame into the database: the WAL holds nothing
  db.close();
  const wal = join(srv.dataDir, 'data.db-wal');
  writeFileSync(wal, '', { flag: 'a' });
  truncateSync(wal, 65 * 1024 * 1024); // sparse; an all-zero header is no valid frame
  const d = doctor(srv.dataDir);
  assert.equal(d.status, 2);
  const w = of(d, 'wal-size');
  assert.equal(w.length, 1);
  assert.equal(w[0].severity, 'warning');
  assert.match(w[0].message, /data\.db-wal is 65\.0 MB \(over 64 MB\)/);
  truncateSync(wal, 1024 * 1024);
  assert.deepEqual(of(doctor(srv.dataDir), 'wal-size'), []);
});

test('the doctor fails with exit 1: no data directory, no database, an unreadable database, usage errors', { skip: SQLITE_ONLY }, () => {
  const missing = runCli(['doctor', `--data-dir=${join(tmpdir(), 'svc-doctor-does-not-exist')}`, '--json']);
  assert.equal(missing.status, 1);
  const lines = missing.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 1, 'exactly one object on stdout');
  assert.equal(JSON.parse(lines[0]).error.code, 'not_found');
  assert.match(missing.stderr, /no data directory/);

  const empty = tempDir();
  const noDb = runCli(['doctor', `--data-dir=${empty}`, '--json']);
  assert.equal(noDb.status, 1);
  assert.equal(JSON.parse(noDb.stdout).error.code, 'no_database');
  assert.ok(!existsSync(join(empty, 'data.db')), 'the doctor does not create a database');

  writeFileSync(join(empty, 'data.db'), 'this is not a database at all, just some text that is long enough '.repeat(100), { mode: 0o600 });
  const bad = runCli(['doctor', `--data-dir=${empty}`, '--json']);
  assert.equal(bad.status, 1, bad.stdout);
  assert.equal(JSON.parse(bad.stdout).error.code, 'io');
  const badText = runCli(['doctor', `--data-dir=${empty}`]);
  assert.equal(badText.status, 1);
  assert.match(badText.stderr, /svc: cannot read .*data\.db/);

  for (const json of [true, false]) {
    const usage = runCli(['doctor', '--no-such-option', ...(json ? ['--json'] : [])]);
    assert.equal(usage.status, 1, `usage error exits 1 (json ${json})`);
    if (json) assert.equal(JSON.parse(usage.stdout).error.code, 'usage');
    else assert.equal(usage.stdout, '');
  }
});

test('loose-file-modes: the data directory itself open to its group (both backends)', () => {
  chmodSync(clean.dataDir, 0o750);
  try {
    const d = doctor(clean.dataDir);
    assert.equal(d.status, 2);
    const loose = of(d, 'loose-file-modes');
    assert.equal(loose.length, 1);
    assert.ok(loose[0].message.includes(`${clean.dataDir} (mode 0750)`), loose[0].message);
  } finally {
    chmodSync(clean.dataDir, 0o700);
  }
  assert.deepEqual(of(doctor(clean.dataDir), 'loose-file-modes'), []);
});

/** One statement on the directory's PostgreSQL database (test/helpers/auth-helpers.ts withDb). */
const pgRun = (dataDir: string, sql: string, params: unknown[] = []) => withDb(dataDir, (db) => db.prepare(sql).raw(true).all(params) as unknown[][]);

test('token-secret on PostgreSQL: the shared secret in _secrets, not 32 bytes (error), absent (info)', { skip: PG_ONLY }, () => {
  const [[saved]] = pgRun(clean.dataDir, `SELECT "value" FROM "_secrets" WHERE "name" = 'token_secret'`);
  assert.equal(Buffer.from(String(saved), 'base64').length, 32);
  assert.deepEqual(of(doctor(clean.dataDir), 'token-secret'), [], 'a sound secret: no finding');
  try {
    pgRun(clean.dataDir, `UPDATE "_secrets" SET "value" = ? WHERE "name" = 'token_secret'`, [Buffer.alloc(16, 7).toString('base64')]);
    const d = doctor(clean.dataDir);
    assert.equal(d.status, 2);
    const ts = of(d, 'token-secret');
    assert.equal(ts.length, 1, JSON.stringify(ts));
    assert.equal(ts[0].severity, 'error');
    assert.match(ts[0].message, /"token_secret" row of "_secrets" in postgres:\/\/\S+ holds 16 byte\(s\) of base64, not 32/);
    assert.match(ts[0].fix, /DELETE FROM "_secrets"/);

    pgRun(clean.dataDir, `DELETE FROM "_secrets" WHERE "name" = 'token_secret'`);
    const gone = of(doctor(clean.dataDir), 'token-secret');
    assert.equal(gone.length, 1);
    assert.equal(gone[0].severity, 'info');
    assert.match(gone[0].message, /holds no token secret/);
  } finally {
    pgRun(clean.dataDir, `INSERT INTO "_secrets" ("name", "value") VALUES ('token_secret', ?) ON CONFLICT ("name") DO UPDATE SET "value" = excluded."value"`, [saved]);
  }
  assert.deepEqual(of(doctor(clean.dataDir), 'token-secret'), []);
});

test('encryption-key-backup on PostgreSQL: a key stored beside the values is a warning; SERVICE_ENCRYPTION_KEY makes it information', { skip: PG_ONLY }, async () => {
  const vault = await clean.createCollection(VAULT);
  try {
    const enc = encryptedWarning();
    assert.match(enc[0].message, /the key stored in the same database \(postgres:\/\/\S+, "_secrets"\): any dump, replica or backup of the database reads them/);
    assert.match(enc[0].fix, /set SERVICE_ENCRYPTION_KEY to it on every instance/);

    // the fix's own steps: the stored key works as SERVICE_ENCRYPTION_KEY
    const [[key]] = pgRun(clean.dataDir, `SELECT "value" FROM "_secrets" WHERE "name" = 'encryption_key'`);
    const withEnv = of(doctor(clean.dataDir, { SERVICE_ENCRYPTION_KEY: String(key) }), 'encryption-key-backup');
    assert.equal(withEnv.length, 1);
    assert.equal(withEnv[0].severity, 'info');
    assert.match(withEnv[0].message, /use the key in SERVICE_ENCRYPTION_KEY \(a key row also remains/);

    // encrypted values and no key anywhere: the next start would make a new key
    pgRun(clean.dataDir, `DELETE FROM "_secrets" WHERE "name" = 'encryption_key'`);
    try {
      const lost = of(doctor(clean.dataDir), 'encryption-key-backup');
      assert.equal(lost.length, 1);
      assert.equal(lost[0].severity, 'error');
      assert.match(lost[0].message, /holds no key/);
    } finally {
      pgRun(clean.dataDir, `INSERT INTO "_secrets" ("name", "value") VALUES ('encryption_key', ?)`, [key]);
    }
  } finally {
    await clean.api('DELETE', `/api/collections/${vault.id}`, { token: clean.suToken });
  }
});

test('the doctor on PostgreSQL fails with exit 1: an unreachable server (no password shown), a database with no svc tables (left unchanged)', { skip: PG_ONLY }, () => {
  const dir = tempDir();
  const down = runCli(['doctor', `--data-dir=${dir}`, '--json'], { SERVICE_DATABASE_URL: 'postgres://svc:hunter2-secret@127.0.0.1:1/nowhere' });
  assert.equal(down.status, 1, down.stdout);
  const err = JSON.parse(down.stdout).error;
  assert.equal(err.code, 'io');
  assert.match(err.message, /^cannot connect to postgres:\/\/svc@127\.0\.0\.1:1\/nowhere: /);
  assert.ok(!(down.stdout + down.stderr).includes('hunter2'), 'the password is never printed');

  // runCli gives the fresh directory a fresh, empty database of its own
  const empty = runCli(['doctor', `--data-dir=${dir}`, '--json']);
  assert.equal(empty.status, 1, empty.stdout);
  assert.equal(JSON.parse(empty.stdout).error.code, 'no_database');
  assert.match(JSON.parse(empty.stdout).error.message, /no svc tables in postgres:\/\//);
  assert.deepEqual(pgRun(dir, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`), [[0]], 'the doctor created nothing');
});

test('the app definition\'s database selects PostgreSQL for doctor, schema dump and serve; SERVICE_DATABASE_URL wins over it', { skip: PG_ONLY, timeout: 60_000 }, async () => {
  const url = readFileSync(join(clean.dataDir, '.test-database-url'), 'utf8').trim();
  const dir = tempDir();
  const appFile = join(dir, 'app.mjs');
  writeFileSync(appFile, `export default { database: ${JSON.stringify(url)} };\n`, { mode: 0o600 });
  // no SERVICE_DATABASE_URL: the definition's database
  const viaApp = runCli(['doctor', `--data-dir=${dir}`, `--app=${appFile}`], { SERVICE_DATABASE_URL: '' });
  assert.equal(viaApp.status, 0, viaApp.stdout + viaApp.stderr);
  assert.match(viaApp.stdout, new RegExp(`\\(${CHECKS_RUN} checks on postgres://`));
  const dump = runCli(['schema', 'dump', `--data-dir=${dir}`, `--app=${appFile}`, '--json'], { SERVICE_DATABASE_URL: '' });
  assert.equal(dump.status, 0, dump.stderr);
  assert.ok(dump.stdout.includes('"notes"'), 'the dump lists the collections of the PostgreSQL database');
  // the environment wins: an unreachable URL fails although the definition names a good one
  const envWins = runCli(['doctor', `--data-dir=${dir}`, `--app=${appFile}`, '--json'], { SERVICE_DATABASE_URL: 'postgres://svc@127.0.0.1:1/nowhere' });
  assert.equal(envWins.status, 1);
  assert.equal(JSON.parse(envWins.stdout).error.code, 'io');

  const srv = await startSvc({ dataDir: dir, superuser: false, args: [`--app=${appFile}`], env: { SERVICE_DATABASE_URL: '' } });
  servers.push(srv);
  const list = await srv.api('GET', '/api/collections/notes/records');
  assert.equal(list.status, 200, 'the server serves the collections of the definition\'s database');
  const meta = await srv.api('GET', '/api/meta');
  assert.equal(meta.body.capabilities?.serverSql, true, JSON.stringify(meta.body));
});

test('missing-index from the slow-query log; the log never holds a filter value; gone once the index exists', { timeout: 180_000 }, async () => {
  const dataDir = tempDir();
  let srv = await startSvc({ dataDir });
  await srv.createCollection({ name: 'events', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'views', type: 'number' }, { name: 'kind', type: 'text' }] });
  await srv.stop();
  // 200,000 rows written straight into the table while no server runs. On PostgreSQL 1,000
  // kinds, not 10: with 20,000 rows of a kind its planner rightly reads a page of five by a
  // sequential scan (it stops at the fifth match), index or not; 200 rows of a kind make the
  // index the plan, as on SQLite (whose page query uses it either way)
  if (PG) {
    pgRun(dataDir, `INSERT INTO "events" ("id","created","updated","title","views","kind")
      SELECT 'ev' || lpad(i::text, 13, '0'), '2025-01-01 00:00:00.000Z', '2025-01-01 00:00:00.000Z', 'title ' || i, i, 'k' || (i % 1000) FROM generate_series(1, 200000) AS i`);
    pgRun(dataDir, 'ANALYZE "events"');
  } else {
    const db = new Database(join(dataDir, 'data.db'));
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
      INSERT INTO "events" ("id","created","updated","title","views","kind")
      SELECT printf('ev%013d', i), '2025-01-01 00:00:00.000Z', '2025-01-01 00:00:00.000Z', 'title ' || i, i, 'k' || (i % 10) FROM n`);
    db.close();
  }

  srv = await startSvc({ dataDir, env: { SERVICE_SLOW_QUERY_MS: '1' } });
  servers.push(srv);
  const list = (filter: string, sort = '') =>
    srv.api('GET', `/api/collections/events/records?filter=${encodeURIComponent(filter)}${sort ? `&sort=${sort}` : ''}&perPage=5`, { token: srv.suToken });
  const first = await list(`kind = 'zq-secret-4417' && views > 424242.5`);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.totalItems, 0);
  const second = await list(`kind = "other-value-1" && views > 17`); // same shape, other values
  assert.equal(second.status, 200);
  const fast = await srv.api('GET', '/api/collections/events/records?perPage=1&skipTotal=1', { token: srv.suToken });
  assert.equal(fast.status, 200);

  const shape = 'kind = ? && views > ?';
  const lines = await eventually(() => slowLog(dataDir).filter((e) => e.filter === shape).length ? slowLog(dataDir) : null, 'the slow-query line');
  const mine = lines.filter((e) => e.filter === shape);
  assert.equal(mine.length, 1, 'one line per shape per minute');
  const e = mine[0];
  assert.equal(e.collection, 'events');
  assert.equal(e.shape, `filter: ${shape}`);
  assert.deepEqual(e.fields, ['kind', 'views']);
  assert.equal(e.search, false);
  assert.ok(e.duration_ms >= 1, String(e.duration_ms));
  assert.ok(!Number.isNaN(Date.parse(e.ts)));
  assert.ok(e.plan.some((l: string) => /^SCAN r\b/.test(l) && !/INDEX/.test(l)), JSON.stringify(e.plan));
  const file = join(dataDir, 'slow_queries.ndjson');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const raw = readFileSync(file, 'utf8');
  for (const value of ['zq-secret-4417', '424242', 'other-value-1']) assert.ok(!raw.includes(value), `the log holds ${value}`);

  const d = doctor(dataDir);
  assert.equal(d.status, 2);
  const mi = of(d, 'missing-index');
  assert.equal(mi.length, 1, JSON.stringify(d.findings));
  assert.equal(mi[0].severity, 'warning');
  assert.match(mi[0].message, /collection "events": slow lists \(1 logged, up to \d+ ms, last .+\) read the whole table: no index leads with any of "kind", "views"/);
  assert.ok(mi[0].message.includes(JSON.stringify(`filter: ${shape}`)), mi[0].message);
  assert.ok(mi[0].fix.includes('add an index on "kind"'), mi[0].fix);
  assert.ok(mi[0].fix.includes('"CREATE INDEX events_kind ON \\"events\\" (\\"kind\\")"'), mi[0].fix);
  assert.ok(mi[0].fix.includes('{"name":"events_kind","fields":["kind"]}'), mi[0].fix);
  assert.ok(!JSON.stringify(d.findings).includes('zq-secret-4417'));

  // the index the doctor suggests, through the collection's indexes
  const patched = await srv.api('PATCH', '/api/collections/events', { token: srv.suToken, body: { indexes: [{ name: 'by_kind', fields: ['kind'] }] } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(of(doctor(dataDir), 'missing-index'), [], 'the old line predates the change');

  // a fresh log: the same shape is logged again under the new schema, with the index in its plan
  unlinkSync(file);
  let fresh: any;
  for (let i = 0; i < 20 && !fresh; i++) {
    const r = await list(`kind = 'k3' && views > ${i}`); // about 20,000 rows to count
    assert.equal(r.status, 200);
    await new Promise((res) => setTimeout(res, 30));
    fresh = slowLog(dataDir).find((l) => l.filter === shape);
  }
  assert.ok(fresh, 'a slow list of the shape is logged after the change');
  assert.ok(fresh.plan.some((l: string) => /USING INDEX .*by_kind/.test(l)), JSON.stringify(fresh.plan));
  assert.ok(!fresh.plan.some((l: string) => /^SCAN r\b/.test(l)), JSON.stringify(fresh.plan));
  const after = doctor(dataDir);
  assert.deepEqual(of(after, 'missing-index'), []);
  assert.equal(after.status, 0, JSON.stringify(after.findings));
});

test('searches and vector queries are logged too, without the search text or the vector', { timeout: 120_000, skip: PG ? 'vector queries on PostgreSQL need the pgvector extension, which Debian 12 does not package (it cannot be installed on this machine)' : false }, async () => {
  const dataDir = tempDir();
  let srv = await startSvc({ dataDir, args: ['--features=vector'] });
  await srv.createCollection({ name: 'docs', type: 'base', fields: [{ name: 'title', type: 'text', options: { searchable: true } }, { name: 'embedding', type: 'json' }] });
  await srv.stop();
  const db = new Database(join(dataDir, 'data.db'));
  db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
    INSERT INTO "docs" ("id","created","updated","title","embedding")
    SELECT printf('dc%013d', i), '2025-01-01 00:00:00.000Z', '2025-01-01 00:00:00.000Z', 'quokka number ' || i, json_array((i % 7) / 7.0, (i % 11) / 11.0, 0.5) FROM n`);
  db.close();
  srv = await startSvc({ dataDir, args: ['--features=vector'], env: { SERVICE_SLOW_QUERY_MS: '1' } });
  servers.push(srv);
  const search = await srv.api('GET', '/api/collections/docs/records?search=quokka&perPage=3', { token: srv.suToken });
  assert.equal(search.status, 200, search.text);
  assert.ok(search.body.totalItems > 0, 'the search matches rows');
  const vector = await srv.api('GET', `/api/collections/docs/records?vector=${encodeURIComponent('embedding:[0.123457,0.654321,0.5]')}&perPage=3&filter=${encodeURIComponent("title != 'wombat-9931'")}`, { token: srv.suToken });
  assert.equal(vector.status, 200, vector.text);
  const lines = await eventually(() => {
    const l = slowLog(dataDir);
    return l.some((e) => e.search) && l.some((e) => e.vector) ? l : null;
  }, 'the search and vector lines');
  const s = lines.find((e) => e.search);
  assert.equal(s.shape, 'search: ?');
  assert.ok(s.plan.length > 0, 'the search has a plan');
  const v = lines.find((e) => e.vector);
  assert.equal(v.shape, 'filter: title != ? | vector: ?');
  assert.ok(v.plan.some((l: string) => /^SCAN r\b/.test(l)), JSON.stringify(v.plan));
  const raw = readFileSync(join(dataDir, 'slow_queries.ndjson'), 'utf8');
  for (const value of ['quokka', '0.123457', '0.654321', 'wombat']) assert.ok(!raw.includes(value), `the log holds ${value}`);
});
