/**
 * The persistence mode of resumable uploads end to end (2-uploads-and-mail.md, "Persistence mode",
 * "Versioning", the 503 rows of "Errors"): an app with `resumableUploads: { durable: true }`
 * (test/fixtures/app-uploads.mjs), real restarts after SIGKILL, the database read and altered
 * between runs with a direct connection.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, runCli, ROOT, type Svc } from '../helpers/server.js';
import { assertError, signup, type User } from '../helpers/records-fixtures.js';
import { withDb } from '../helpers/auth-helpers.js';
import { TEST_BACKEND } from '../helpers/backend.js';

/** The persistence mode needs file-backed SQLite: the server SQL backend is refused (checked below). */
const SQLITE_ONLY = TEST_BACKEND === 'postgres'
  ? 'durable resumable uploads need the embedded file-backed SQLite database; the spec refuses them on the server SQL backend (2-uploads-and-mail.md, "Persistence mode")'
  : false;

const APP = join(ROOT, 'test', 'fixtures', 'app-uploads.mjs');
const KIB = 1024;
const dirs: string[] = [];

let dataDir: string;
let srv: Svc;
let alice: User;

const start = (dir: string, env: Record<string, string> = {}) => startSvc({ dataDir: dir, args: [`--app=${APP}`], env });

async function call(s: Svc, method: string, path: string, opts: { token?: string; body?: unknown; raw?: Buffer; offset?: number } = {}): Promise<{ status: number; body: any; text: string }> {
  const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
  if (opts.offset !== undefined) headers['upload-offset'] = String(opts.offset);
  const res = await s.api(method, path, { token: opts.token ?? null, body: opts.body, raw: opts.raw, headers: opts.raw ? { ...headers, 'content-type': 'application/octet-stream' } : headers });
  return { status: res.status, body: res.body, text: res.text };
}

async function newDoc(s: Svc, token: string, col = 'docs'): Promise<string> {
  const r = await call(s, 'POST', `/api/collections/${col}/records`, { token, body: {} });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

async function send(s: Svc, id: string, data: Buffer, from: number, to: number, size: number, token: string): Promise<void> {
  for (let at = from; at < to; at += size) {
    const r = await call(s, 'PATCH', `/api/uploads/${id}`, { token, raw: data.subarray(at, Math.min(at + size, to)), offset: at });
    assert.equal(r.status, 204, `chunk at ${at}: ${r.text}`);
  }
}

/** Starts the app and expects it to refuse to start; the output. */
function refusedStart(dir: string, env: Record<string, string> = {}, extra: string[] = []): string {
  const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, `--app=${APP}`, ...extra], { SERVICE_LOG_FORMAT: 'json', ...env });
  assert.equal(r.status, 1, `the server must refuse to start: ${r.stderr}`);
  return r.stderr;
}

before(async () => {
  if (SQLITE_ONLY) return;
  dataDir = mkdtempSync(join(tmpdir(), 'svc-uploads-'));
  dirs.push(dataDir);
  srv = await start(dataDir);
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
});
after(async () => {
  await srv?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('kill -9 mid-upload, restart, GET the offset, resume, commit: identical bytes', { skip: SQLITE_ONLY }, async () => {
  const doc = await newDoc(srv, alice.token);
  const data = randomBytes(3 * 1024 * KIB + 4321);
  const c = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'big.bin', length: data.length } });
  assert.equal(c.status, 201, c.text);
  assert.equal(c.body.durability, 'sqlite-restart');
  const half = 1536 * KIB + 100; // not on a page boundary
  await send(srv, c.body.id, data, 0, half, 256 * KIB, alice.token);
  await srv.stop('SIGKILL');

  srv = await start(dataDir);
  assert.match(srv.stderr(), /restored \d+ upload session/);
  const g = await call(srv, 'GET', `/api/uploads/${c.body.id}`, { token: alice.token });
  assert.equal(g.status, 200, g.text);
  assert.deepEqual(g.body, { ...c.body, offset: half });
  // an acknowledged range re-sent after the restart still compares against the restored bytes
  assert.equal((await call(srv, 'PATCH', `/api/uploads/${c.body.id}`, { token: alice.token, raw: data.subarray(1000, 5000), offset: 1000 })).status, 204);
  const wrong = Buffer.from(data.subarray(1000, 5000));
  wrong[0] ^= 1;
  assertError(await call(srv, 'PATCH', `/api/uploads/${c.body.id}`, { token: alice.token, raw: wrong, offset: 1000 }), 409, 'conflict');
  await send(srv, c.body.id, data, half, data.length, 1024 * KIB, alice.token);
  assert.equal((await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token })).status, 204);
  const rec = await call(srv, 'GET', `/api/collections/docs/records/${doc}`, { token: alice.token });
  const file = await fetch(`${srv.url}/api/files/docs/${doc}/${rec.body.file}`, { headers: { authorization: `Bearer ${alice.token}` } });
  assert.ok(Buffer.from(await file.arrayBuffer()).equals(data));
  // the payload rows went with the completed receipt, in the same commit
  withDb(dataDir, (db) => {
    const row = db.prepare('SELECT "state", "offset" FROM "_uploadSessions" WHERE "id" = ?').raw().get(c.body.id) as unknown[];
    assert.deepEqual(row, ['completed', data.length]);
    assert.equal((db.prepare('SELECT count(*) FROM "_uploadPayloads" WHERE "session" = ?').raw().get(c.body.id) as unknown[])[0], 0);
  });
});

test('a commit whose response is lost is acknowledged after a restart; hooks are not replayed', { skip: SQLITE_ONLY }, async () => {
  const doc = await newDoc(srv, alice.token);
  const data = randomBytes(10 * KIB);
  const c = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'a.bin', length: data.length } });
  await send(srv, c.body.id, data, 0, data.length, 1024 * KIB, alice.token);
  const before = (await call(srv, 'GET', '/api/x/hooks')).body.afterUpdates;
  assert.equal((await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token })).status, 204);
  assert.equal((await call(srv, 'GET', '/api/x/hooks')).body.afterUpdates, before + 1, 'the commit ran the afterUpdate hook once');
  await srv.stop('SIGKILL');
  srv = await start(dataDir);
  assert.equal((await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token })).status, 204);
  assert.equal((await call(srv, 'GET', `/api/uploads/${c.body.id}`, { token: alice.token })).body.state, 'completed');
  assert.equal((await call(srv, 'GET', '/api/x/hooks')).body.afterUpdates, 0, 'no hook ran again in the new process');
});

test('a session found committing at restart becomes failed: never retried, no payload kept', { skip: SQLITE_ONLY }, async () => {
  const doc = await newDoc(srv, alice.token);
  const data = randomBytes(5000);
  const c = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'a.bin', length: data.length } });
  await send(srv, c.body.id, data, 0, data.length, 1024 * KIB, alice.token);
  await srv.stop('SIGKILL');
  // as if the process died between marking it committing and the record commit
  withDb(dataDir, (db) => db.prepare('UPDATE "_uploadSessions" SET "state" = \'committing\' WHERE "id" = ?').run(c.body.id));
  srv = await start(dataDir);
  assert.equal((await call(srv, 'GET', `/api/uploads/${c.body.id}`, { token: alice.token })).body.state, 'failed');
  assertError(await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token }), 409);
  assert.equal((await call(srv, 'GET', `/api/collections/docs/records/${doc}`, { token: alice.token })).body.file, null);
  withDb(dataDir, (db) => assert.equal((db.prepare('SELECT count(*) FROM "_uploadPayloads" WHERE "session" = ?').raw().get(c.body.id) as unknown[])[0], 0));
});

test('a hook that rejects the commit fails the session; the record is untouched', { skip: SQLITE_ONLY }, async () => {
  const rec = await newDoc(srv, alice.token, 'locked');
  const c = await call(srv, 'POST', `/api/collections/locked/records/${rec}/uploads`, { token: alice.token, body: { field: 'file', filename: 'a.bin', length: 10 } });
  await send(srv, c.body.id, Buffer.alloc(10, 3), 0, 10, 1024 * KIB, alice.token);
  assertError(await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token }), 403, 'forbidden');
  assert.equal((await call(srv, 'GET', `/api/uploads/${c.body.id}`, { token: alice.token })).body.state, 'failed');
  assert.equal((await call(srv, 'GET', `/api/collections/locked/records/${rec}`)).body.file, null);
  withDb(dataDir, (db) => assert.deepEqual(db.prepare('SELECT "state" FROM "_uploadSessions" WHERE "id" = ?').raw().get(c.body.id), ['failed']));
});

test('a receipt that cannot be written: 503, the record update rolls back, uploads stop until a restart', { skip: SQLITE_ONLY }, async () => {
  const doc = await newDoc(srv, alice.token);
  const c = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'a.bin', length: 100 } });
  await send(srv, c.body.id, Buffer.alloc(100, 9), 0, 100, 1024 * KIB, alice.token);
  const other = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'b.bin', length: 100 } });
  // the session row disappears under the server (another writer): the receipt has nothing to mark
  withDb(dataDir, (db) => db.prepare('DELETE FROM "_uploadSessions" WHERE "id" = ?').run(c.body.id));
  assertError(await call(srv, 'POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token }), 503, 'internal');
  assert.equal((await call(srv, 'GET', `/api/collections/docs/records/${doc}`, { token: alice.token })).body.file, null, 'the record update rolled back');
  // the cleanup could not be written either: every upload operation is 503 now
  assertError(await call(srv, 'GET', `/api/uploads/${other.body.id}`, { token: alice.token }), 503, 'internal');
  assertError(await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'c.bin', length: 1 } }), 503, 'internal');
  assert.match(srv.stderr(), /uploads stopped until restart/);
  // other routes go on
  assert.equal((await call(srv, 'GET', `/api/collections/docs/records/${doc}`, { token: alice.token })).status, 200);
  await srv.stop();
  srv = await start(dataDir);
  assert.equal((await call(srv, 'GET', `/api/uploads/${other.body.id}`, { token: alice.token })).status, 200);
});

test('the owner file: a second durable owner fails at startup even with --ignore-lock; the file stays', { skip: SQLITE_ONLY }, async () => {
  const owner = `${realpathSync(join(dataDir, 'data.db'))}.svc-uploads.lock`;
  assert.ok(existsSync(owner));
  assert.equal(JSON.parse(readFileSync(owner, 'utf8')).pid, srv.proc.pid);
  const out = refusedStart(dataDir, {}, ['--ignore-lock']);
  assert.match(out, /owned by another process \(pid \d+/);
  assert.match(out, /svc-uploads\.lock/);
  // the standalone server with the durable feature names the same owner
  const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, '--ignore-lock', '--features=resumable-uploads,durable-resumable-uploads'], { SERVICE_LOG_FORMAT: 'json' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /owned by another process/);
  await srv.stop();
  assert.ok(existsSync(owner), 'the owner file is permanent');
  assert.equal(JSON.parse(readFileSync(owner, 'utf8')).pid, 0);
  srv = await start(dataDir);
});

test('budget changes are refused while unexpired sessions remain', { skip: SQLITE_ONLY }, async () => {
  const doc = await newDoc(srv, alice.token);
  const c = await call(srv, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice.token, body: { field: 'file', filename: 'a.bin', length: 10 } });
  assert.equal(c.status, 201);
  await srv.stop();
  assert.match(refusedStart(dataDir, { UPLOADS_TTL: '600' }), /upload budgets changed while \d+ unexpired upload session/);
  srv = await start(dataDir);
  assert.equal((await call(srv, 'GET', `/api/uploads/${c.body.id}`, { token: alice.token })).status, 200, 'refused, never rewritten');
});

test('store versions and invalid state are refused and never rewritten; a database with no upload tables starts fresh', { skip: SQLITE_ONLY }, async () => {
  await srv.stop();
  const version = (v: string | null) => withDb(dataDir, (db) => {
    if (v === null) db.prepare('DELETE FROM "_uploadStore" WHERE "key" = \'version\'').run();
    else db.prepare('INSERT OR REPLACE INTO "_uploadStore" ("key", "value") VALUES (\'version\', ?)').run(v);
  });
  version('1');
  assert.match(refusedStart(dataDir), /format version 1/);
  withDb(dataDir, (db) => assert.deepEqual(db.prepare('SELECT "value" FROM "_uploadStore" WHERE "key" = \'version\'').raw().get(), ['1']));
  version('3');
  assert.match(refusedStart(dataDir), /format version 3/);
  version(null);
  assert.match(refusedStart(dataDir), /no version marker/);
  version('2');
  // invalid recovered state: an offset past the length
  const id = withDb(dataDir, (db) => {
    const row = db.prepare('SELECT "id", "length" FROM "_uploadSessions" WHERE "state" = \'receiving\' LIMIT 1').raw().get() as unknown[];
    db.prepare('UPDATE "_uploadSessions" SET "offset" = ? WHERE "id" = ?').run(Number(row[1]) + 1, row[0]);
    return String(row[0]);
  });
  assert.match(refusedStart(dataDir), /offset \d+ is past length/);
  withDb(dataDir, (db) => db.prepare('UPDATE "_uploadSessions" SET "offset" = 0 WHERE "id" = ?').run(id));
  // a missing payload page
  withDb(dataDir, (db) => db.prepare('DELETE FROM "_uploadPayloads" WHERE "session" = ?').run(id));
  assert.match(refusedStart(dataDir), /payload that does not match its length/);
  withDb(dataDir, (db) => db.prepare('DELETE FROM "_uploadSessions" WHERE "id" = ?').run(id));

  // a partial schema elsewhere: refused, left as it is
  const partial = mkdtempSync(join(tmpdir(), 'svc-uploads-partial-'));
  dirs.push(partial);
  assert.equal(runCli(['superuser', 'upsert', '--email=a@b.co', '--password=supersecret1', `--data-dir=${partial}`]).status, 0);
  withDb(partial, (db) => db.exec('CREATE TABLE "_uploadStore" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL)'));
  assert.match(refusedStart(partial), /upload store is incomplete/);
  withDb(partial, (db) => assert.deepEqual(db.prepare('SELECT count(*) FROM sqlite_master WHERE name LIKE \'_upload%\'').raw().get(), [1]));
  withDb(partial, (db) => db.exec('DROP TABLE "_uploadStore"'));
  const fresh = await start(partial);
  try {
    withDb(partial, (db) => assert.deepEqual(db.prepare('SELECT "value" FROM "_uploadStore" WHERE "key" = \'version\'').raw().get(), ['2']));
  } finally {
    await fresh.stop();
  }
  srv = await start(dataDir);
});

test('the durable mode refuses budgets it cannot hold', { skip: SQLITE_ONLY }, () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-uploads-budget-'));
  dirs.push(d);
  const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${d}`, '--features=resumable-uploads,durable-resumable-uploads'], { SERVICE_LOG_FORMAT: 'json', SERVICE_UPLOAD_MAX_UPLOAD_BYTES: String(1024 * 1024 * 1024), SERVICE_UPLOAD_MAX_TOTAL_BYTES: String(1024 * 1024 * 1024) });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /max_upload_bytes must be at most 999983360 in the persistence mode/);
  const bad = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${d}`, '--features=durable-resumable-uploads']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /durable-resumable-uploads together with resumable-uploads/);
});

if (TEST_BACKEND === 'postgres') {
  test('the server SQL backend refuses the persistence mode at startup', () => {
    const d = mkdtempSync(join(tmpdir(), 'svc-uploads-pg-'));
    dirs.push(d);
    assert.match(refusedStart(d), /durable resumable uploads need the embedded database/);
  });
}

test('a failed rollback of a live durable-upload transaction ends the process (exit 1, one error line); the next start recovers', { skip: SQLITE_ONLY }, async () => {
  // The fault: SVC_TEST_FAIL_ROLLBACK (test-only, docs/operations.md) makes the COMMIT of the first
  // write group touching "_uploadPayloads" fail and then its ROLLBACK fail with the transaction
  // still open. SQLite's own ROLLBACK cannot fail on a live transaction by any fault a test can
  // cause (a removed, locked or read-only file makes it answer "no transaction is active" at
  // worst, after SQLite rolled back by itself), so the failure is injected at that one call.
  const dir = mkdtempSync(join(tmpdir(), 'svc-uploads-fatal-'));
  dirs.push(dir);
  const faulty = await start(dir, { SVC_TEST_FAIL_ROLLBACK: '_uploadPayloads' });
  const user = await signup(faulty, 'users', 'fatal@example.com', 'fatal-password');
  const doc = await newDoc(faulty, user.token);
  const exited = new Promise<number | null>((r) => (faulty.proc.exitCode !== null ? r(faulty.proc.exitCode) : faulty.proc.once('exit', (code) => r(code))));
  // the upload's creation writes its payload rows: that group's COMMIT and ROLLBACK fail
  const answer = await fetch(`${faulty.url}/api/collections/docs/records/${doc}/uploads`, {
    method: 'POST', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ field: 'file', filename: 'a.bin', length: 10 }),
  }).then((r) => r.status, () => 'no answer');
  const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running'), 15_000))]);
  if (code === 'still running') {
    const after = await fetch(`${faulty.url}/api/collections/docs/records/${doc}/uploads`, {
      method: 'POST', headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ field: 'file', filename: 'b.bin', length: 10 }),
    }).then((r) => r.status, () => 'no answer');
    await faulty.stop('SIGKILL');
    assert.fail(`the server kept running after the failed rollback (the upload answered ${answer}, the next ${after})`);
  }
  assert.equal(code, 1, faulty.stderr());
  assert.notEqual(answer, 201, 'the upload whose transaction failed was never acknowledged');
  const fatal = faulty.stderr().split('\n').filter((l) => l.includes('fatal storage failure'));
  assert.equal(fatal.length, 1, faulty.stderr());
  const line = JSON.parse(fatal[0]);
  assert.equal(line.level, 'err');
  assert.equal(line.scope, 'storage');
  assert.match(line.msg ?? line.message, /fatal storage failure, exiting: the write transaction failed \(injected COMMIT failure.*\) and could not be rolled back \(injected ROLLBACK failure/);
  // the next start (no fault) recovers to the last commit: no trace of the failed upload, uploads work
  const again = await start(dir);
  try {
    withDb(dir, (db) => assert.equal((db.prepare('SELECT count(*) FROM "_uploadSessions"').raw().get() as unknown[])[0], 0));
    const c = await call(again, 'POST', `/api/collections/docs/records/${doc}/uploads`, { token: user.token, body: { field: 'file', filename: 'a.bin', length: 10 } });
    assert.equal(c.status, 201, c.text);
  } finally {
    await again.stop();
  }
});
