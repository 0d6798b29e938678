/**
 * `svc backup FILE` and `svc restore FILE` end to end with the real server and CLI
 * (0-conventions.md, "Embedding: the app definition", CLI forms; spec 1-core-api.md, "Command
 * line": --json output, exit codes).
 *
 * One source server runs for the whole file. A backup taken while concurrent clients create
 * records holds every write acknowledged before it started; restored servers start on the copy
 * and serve the records, the superuser login, the old tokens (same token secret) and the stored
 * files. Refusals exit 1 with `{error: {code, message}}` under --json and leave the target as it
 * was.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { list as tarList } from 'tar';
import Database from 'libsql';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { oneJsonObject, runCliAsync } from '../helpers/proc.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** svc backup / restore copy the embedded database file; on PostgreSQL they refuse (checked below). */
const SQLITE_FILE = TEST_BACKEND === 'postgres'
  ? 'svc backup and restore copy the embedded SQLite database file and the data directory\'s keys; on the server SQL backend they refuse (the database is backed up with pg_dump)'
  : false;

const CLEAN_ENV = { SERVICE_LOG_LEVEL: undefined, SERVICE_LOG_FORMAT: undefined, SERVICE_DATA_DIR: undefined };
const cli = (...args: string[]) => runCliAsync(args, CLEAN_ENV);
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

const root = mkdtempSync(join(tmpdir(), 'svc-test-backup-'));
const source = join(root, 'source');
const dirBackup = join(root, 'backup-dir');
let srv: Svc;
const others: Svc[] = [];
/** files uploaded to `docs`: record id, stored name, bytes */
const uploaded: { id: string; name: string; bytes: Buffer }[] = [];

/** Every file under `dir` (recursively) with its mode; folders too. */
function walk(dir: string): { path: string; dir: boolean; mode: number; size: number }[] {
  const out: { path: string; dir: boolean; mode: number; size: number }[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    const st = statSync(p);
    out.push({ path: p, dir: e.isDirectory(), mode: st.mode & 0o777, size: st.size });
    if (e.isDirectory()) out.push(...walk(p));
  }
  return out;
}

async function login(url: string): Promise<{ status: number; token: string }> {
  const r = await fetch(`${url}/api/collections/_superusers/auth-with-password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: SU_EMAIL, password: SU_PASSWORD }),
  });
  const body = (await r.json()) as { token?: string };
  return { status: r.status, token: body.token ?? '' };
}

/** All `items` records of a server, id → title. */
async function items(url: string, token: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let page = 1; ; page++) {
    const r = await fetch(`${url}/api/collections/items/records?perPage=500&page=${page}&skipTotal=true`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    const body = (await r.json()) as { items: { id: string; title: string }[] };
    for (const it of body.items) out.set(it.id, it.title);
    if (body.items.length < 500) return out;
  }
}

/** Starts a server on a restored data directory and checks login, old token and stored files. */
async function checkRestored(dataDir: string): Promise<{ srv: Svc; token: string }> {
  const restored = await startSvc({ dataDir, superuser: false });
  others.push(restored);
  const li = await login(restored.url);
  assert.equal(li.status, 200, 'the superuser of the backup logs in on the restored server');
  const old = await fetch(`${restored.url}/api/collections`, { headers: { authorization: `Bearer ${srv.suToken}` } });
  assert.equal(old.status, 200, 'a token issued by the source server is valid (same token secret)');
  for (const f of uploaded) {
    const r = await fetch(`${restored.url}/api/files/docs/${f.id}/${f.name}`);
    assert.equal(r.status, 200, `file ${f.name} is served`);
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), f.bytes);
  }
  return { srv: restored, token: li.token };
}

/** Asserts a failure: exit 1, one `{error: {code, message}}` object on stdout. Returns the error. */
function assertJsonError(r: { status: number | null; stdout: string; stderr: string }, code: string): { code: string; message: string; [k: string]: unknown } {
  assert.equal(r.status, 1, `exit 1 expected: ${r.stdout} ${r.stderr}`);
  const o = oneJsonObject(r.stdout);
  assert.deepEqual(Object.keys(o), ['error']);
  assert.equal(o.error.code, code, o.error.message);
  assert.equal(typeof o.error.message, 'string');
  assert.ok(o.error.message.length > 0);
  return o.error;
}

before(async () => {
  if (SQLITE_FILE) return;
  mkdirSync(source);
  srv = await startSvc({ dataDir: source });
  await srv.createCollection({ name: 'items', type: 'base', fields: [{ name: 'title', type: 'text' }] });
  await srv.createCollection({
    name: 'docs', type: 'base', viewRule: '@public',
    fields: [{ name: 'title', type: 'text' }, { name: 'attachment', type: 'file', options: { maxSize: 1_000_000 } }],
  });
  for (const [i, bytes] of [Buffer.from('hello backup\n'), Buffer.from(Array.from({ length: 70_000 }, (_, k) => k % 251))].entries()) {
    const fd = new FormData();
    fd.append('title', `doc ${i}`);
    fd.append('attachment', new Blob([bytes], { type: 'application/octet-stream' }), `file${i}.bin`);
    const r = await fetch(`${srv.url}/api/collections/docs/records`, { method: 'POST', body: fd, headers: { authorization: `Bearer ${srv.suToken}` } });
    const body = (await r.json()) as { id: string; attachment: string };
    assert.equal(r.status, 201, JSON.stringify(body));
    uploaded.push({ id: body.id, name: body.attachment, bytes });
  }
});

after(async () => {
  for (const s of others) await s.stop();
  await srv?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('a backup taken under write load restores every write acknowledged before it started', { timeout: 120_000, skip: SQLITE_FILE }, async () => {
  const acked = new Map<string, string>();
  let stopped = false;
  const client = async (c: number): Promise<void> => {
    for (let i = 0; !stopped; i++) {
      const title = `c${c}-${i}`;
      const r = await fetch(`${srv.url}/api/collections/items/records`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${srv.suToken}` },
        body: JSON.stringify({ title }), signal: AbortSignal.timeout(10_000),
      });
      const body = (await r.json()) as { id: string };
      assert.equal(r.status, 201, JSON.stringify(body));
      acked.set(body.id, title);
    }
  };
  const load = Promise.all(Array.from({ length: 8 }, (_, c) => client(c)));
  // the backup starts once the load has made progress (a count, not a time: a loaded machine
  // may take longer than usual to answer the first writes)
  await waitFor(() => acked.size >= 20, 30_000);
  const before = new Map(acked);
  // a stored file being written sits in storage/.partial until it is linked into place: not copied
  mkdirSync(join(source, 'storage', '.partial'), { recursive: true });
  writeFileSync(join(source, 'storage', '.partial', 'being-written'), 'part of a file');
  const r = await cli('backup', dirBackup, `--data-dir=${source}`, '--json');
  const duringBackup = acked.size - before.size;
  await sleep(100);
  stopped = true;
  await load;

  assert.equal(r.status, 0, r.stderr);
  assert.ok(before.size >= 20, `the load made progress before the backup (${before.size} writes)`);
  assert.ok(duringBackup > 0, 'writes were acknowledged while the backup ran');
  const out = oneJsonObject(r.stdout);
  assert.deepEqual(Object.keys(out), ['backup', 'database_bytes', 'files', 'bytes']);
  assert.equal(out.backup, dirBackup);

  // contents: snapshot, keys copied byte for byte, stored files, manifest agreeing with them
  const entries = walk(dirBackup);
  const sourceFiles = walk(join(source, 'storage')).filter((e) => !e.dir && !e.path.includes('/.partial/'));
  assert.equal(existsSync(join(dirBackup, 'storage', '.partial')), false, 'files being written are not in the backup');
  const backupFiles = walk(join(dirBackup, 'storage')).filter((e) => !e.dir);
  assert.equal(sourceFiles.length, uploaded.length);
  assert.deepEqual(backupFiles.map((e) => e.path.slice(dirBackup.length)), sourceFiles.map((e) => e.path.slice(source.length)));
  for (const key of ['token_secret', 'encryption_key']) assert.equal(sha(join(dirBackup, key)), sha(join(source, key)), key);
  const dbBytes = statSync(join(dirBackup, 'data.db')).size;
  const fileBytes = uploaded.reduce((n, f) => n + f.bytes.length, 0);
  const keyBytes = statSync(join(dirBackup, 'token_secret')).size + statSync(join(dirBackup, 'encryption_key')).size;
  assert.deepEqual([out.database_bytes, out.files, out.bytes], [dbBytes, uploaded.length, dbBytes + keyBytes + fileBytes]);
  const manifest = JSON.parse(readFileSync(join(dirBackup, 'manifest.json'), 'utf8'));
  assert.equal(manifest.format, 1);
  assert.equal(manifest.svc_version, JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')).version);
  assert.ok(Math.abs(Date.parse(manifest.created_at) - Date.now()) < 60_000, manifest.created_at);
  assert.deepEqual([manifest.database_bytes, manifest.files, manifest.file_bytes, manifest.bytes, manifest.keys], [dbBytes, uploaded.length, fileBytes, out.bytes, ['token_secret', 'encryption_key']]);
  for (const e of entries) assert.equal(e.mode, e.dir ? 0o700 : 0o600, `${e.path} mode ${e.mode.toString(8)}`);
  assert.deepEqual(readdirSync(root).filter((n) => n.includes('partial')), [], 'no staging left behind');

  // restore into a directory that does not exist yet
  const target = join(root, 'restored-dir');
  const rr = await cli('restore', dirBackup, `--data-dir=${target}`, '--json');
  assert.equal(rr.status, 0, rr.stderr);
  assert.deepEqual(oneJsonObject(rr.stdout), { restored: dirBackup, data_dir: target, replaced: false });
  assert.equal(statSync(target).mode & 0o777, 0o700);
  const restoredEntries = walk(target);
  assert.deepEqual(restoredEntries.map((e) => e.path.slice(target.length)).sort(), entries.filter((e) => !e.path.endsWith('manifest.json')).map((e) => e.path.slice(dirBackup.length)).sort());
  for (const e of restoredEntries) assert.equal(e.mode, e.dir ? 0o700 : 0o600, `${e.path} mode ${e.mode.toString(8)}`);

  const { srv: restored, token } = await checkRestored(target);
  const got = await items(restored.url, token);
  for (const [id, title] of before) assert.equal(got.get(id), title, `acknowledged write ${id} (${title}) before the backup is restored`);
  for (const [id, title] of got) assert.equal(acked.get(id), title, `restored record ${id} was written by a client`);
  assert.ok(got.size < acked.size, 'writes after the backup are not in it');
  await restored.stop();
});

test('tar form: a .tar backup taken while the server runs restores into a new data directory', { timeout: 60_000, skip: SQLITE_FILE }, async () => {
  const tarFile = join(root, 'backup.tar');
  const expected = await items(srv.url, srv.suToken);
  const r = await cli('backup', tarFile, `--data-dir=${source}`, '--json');
  assert.equal(r.status, 0, r.stderr);
  const out = oneJsonObject(r.stdout);
  assert.equal(out.backup, tarFile);
  assert.equal(out.files, uploaded.length);
  assert.equal(statSync(tarFile).mode & 0o777, 0o600);
  assert.ok(statSync(tarFile).isFile());
  const names: string[] = [];
  await tarList({ file: tarFile, onReadEntry: (e) => { names.push(e.path); } });
  for (const n of ['manifest.json', 'data.db', 'token_secret', 'encryption_key']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  for (const f of uploaded) assert.ok(names.some((n) => n.startsWith('storage/') && n.endsWith(`/${f.id}/${f.name}`)), `${f.name} in the archive`);
  assert.deepEqual(readdirSync(root).filter((n) => n.includes('partial')), [], 'no staging left behind');

  const target = join(root, 'restored-tar');
  const rr = await cli('restore', tarFile, `--data-dir=${target}`);
  assert.equal(rr.status, 0, rr.stderr);
  assert.match(rr.stdout, /^restored .*backup\.tar into .*restored-tar\n$/);
  for (const e of walk(target)) assert.equal(e.mode, e.dir ? 0o700 : 0o600, `${e.path} mode ${e.mode.toString(8)}`);
  const { srv: restored, token } = await checkRestored(target);
  assert.deepEqual(await items(restored.url, token), expected);
  await restored.stop();
});

test('restore is refused while a server holds the data directory, and onto existing data without --force', { timeout: 60_000, skip: SQLITE_FILE }, async () => {
  const tarFile = join(root, 'backup.tar');
  const count = (await items(srv.url, srv.suToken)).size;
  const locked = assertJsonError(await cli('restore', dirBackup, `--data-dir=${source}`, '--force', '--json'), 'lock');
  assert.equal(locked.pid, srv.proc.pid);
  assert.equal(locked.data_dir, source);
  const prose = await cli('restore', tarFile, `--data-dir=${source}`, '--force');
  assert.equal(prose.status, 1);
  assert.equal(prose.stdout, '');
  assert.match(prose.stderr, new RegExp(`svc: data directory .* is in use by svc process ${srv.proc.pid}`));
  assert.equal((await items(srv.url, srv.suToken)).size, count, 'the running server still serves its data');
  assert.deepEqual(readdirSync(source).filter((n) => n.startsWith('.restore-')), []);

  // existing data (server stopped): refused without --force, nothing changed
  const target = join(root, 'restored-dir');
  const before = readdirSync(target).sort();
  const dbSum = sha(join(target, 'data.db'));
  const refused = assertJsonError(await cli('restore', tarFile, `--data-dir=${target}`, '--json'), 'not_empty');
  assert.match(refused.message, /already has a database; pass --force/);
  assert.deepEqual(readdirSync(target).sort(), before);
  assert.equal(sha(join(target, 'data.db')), dbSum);

  // --force replaces: the old entries are gone, the backup's are in, nothing left aside
  writeFileSync(join(target, 'storage', 'stray.txt'), 'old');
  writeFileSync(join(target, 'data.db-wal'), 'old wal');
  const forced = await cli('restore', tarFile, `--data-dir=${target}`, '--force', '--json');
  assert.equal(forced.status, 0, forced.stderr);
  assert.deepEqual(oneJsonObject(forced.stdout), { restored: tarFile, data_dir: target, replaced: true });
  assert.equal(existsSync(join(target, 'storage', 'stray.txt')), false);
  assert.equal(existsSync(join(target, 'data.db-wal')), false);
  assert.deepEqual(readdirSync(target).filter((n) => n.startsWith('.restore-') || n === 'svc.lock'), []);
  const { srv: restored, token } = await checkRestored(target);
  assert.equal((await items(restored.url, token)).size, count);
  await restored.stop();
});

test('backup refusals: existing target, no database, target inside the data directory; nothing written', { timeout: 60_000, skip: SQLITE_FILE }, async () => {
  const sum = sha(join(dirBackup, 'manifest.json'));
  const exists = assertJsonError(await cli('backup', dirBackup, `--data-dir=${source}`, '--json'), 'exists');
  assert.match(exists.message, /already exists/);
  assert.equal(sha(join(dirBackup, 'manifest.json')), sum);
  const tarFile = join(root, 'existing.tar');
  writeFileSync(tarFile, 'keep me');
  const prose = await cli('backup', tarFile, `--data-dir=${source}`);
  assert.equal(prose.status, 1);
  assert.equal(prose.stdout, '');
  assert.match(prose.stderr, /^svc: .*existing\.tar already exists/);
  assert.equal(readFileSync(tarFile, 'utf8'), 'keep me');

  const missing = join(root, 'no-such-data');
  const target = join(root, 'never.tar');
  const none = assertJsonError(await cli('backup', target, `--data-dir=${missing}`, '--json'), 'no_database');
  assert.match(none.message, /no database in .*no-such-data/);
  assert.equal(existsSync(missing), false, 'the missing data directory is not created');
  assert.equal(existsSync(target), false);
  assertJsonError(await cli('backup', join(source, 'storage', 'inside'), `--data-dir=${source}`, '--json'), 'usage');
  assert.equal(existsSync(join(source, 'storage', 'inside')), false);
  assert.deepEqual(readdirSync(root).filter((n) => n.includes('partial')), []);
  // nor may a restore read its backup from inside the data directory it replaces
  const target2 = join(root, 'restored-dir');
  cpSync(dirBackup, join(target2, 'storage', 'copy'), { recursive: true });
  assertJsonError(await cli('restore', join(target2, 'storage', 'copy'), `--data-dir=${target2}`, '--force', '--json'), 'usage');
  assert.ok(existsSync(join(target2, 'storage', 'copy', 'manifest.json')));
});

test('restore refuses a missing, incomplete or corrupt backup before touching the target', { timeout: 60_000, skip: SQLITE_FILE }, async () => {
  const variant = (name: string, damage: (dir: string) => void): string => {
    const dir = join(root, `bad-${name}`);
    cpSync(dirBackup, dir, { recursive: true });
    damage(dir);
    return dir;
  };
  const storedFile = (dir: string) => walk(join(dir, 'storage')).find((e) => !e.dir)!.path;
  const overwrite = (file: string, at: number, bytes: Buffer) => {
    const fd = openSync(file, 'r+');
    writeSync(fd, bytes, 0, bytes.length, at);
    closeSync(fd);
  };
  const halfTar = join(root, 'half.tar');
  const whole = readFileSync(join(root, 'backup.tar'));
  writeFileSync(halfTar, whole.subarray(0, Math.floor(whole.length / 2)));
  const notTar = join(root, 'not-a-backup.tar');
  writeFileSync(notTar, 'this is not a tar archive at all\n'.repeat(40));

  const cases: [string, string, RegExp][] = [
    [join(root, 'nothing-here'), 'not_found', /no backup at/],
    [variant('manifest', (d) => rmSync(join(d, 'manifest.json'))), 'invalid_backup', /manifest\.json is missing/],
    [variant('format', (d) => writeFileSync(join(d, 'manifest.json'), '{"format": 99}')), 'invalid_backup', /format 99/],
    [variant('nodb', (d) => rmSync(join(d, 'data.db'))), 'invalid_backup', /data\.db is missing/],
    [variant('short', (d) => truncateSync(join(d, 'data.db'), 4096)), 'invalid_backup', /data\.db has 4096 bytes/],
    [variant('header', (d) => overwrite(join(d, 'data.db'), 0, Buffer.alloc(100, 0x41))), 'invalid_backup', /data\.db cannot be read|integrity check/],
    [variant('pages', (d) => overwrite(join(d, 'data.db'), 4096, Buffer.alloc(statSync(join(d, 'data.db')).size - 8192, 0xff))), 'invalid_backup', /data\.db cannot be read|integrity check/],
    [variant('integrity', (d) => {
      // an index whose definition no longer matches its rows: readable, but integrity_check fails
      const db = new Database(join(d, 'data.db'));
      db.exec("CREATE TABLE zz(x, y); CREATE INDEX zz_x ON zz(x); INSERT INTO zz VALUES (1, 'a'), (2, 'b');");
      db.exec("PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE INDEX zz_x ON zz(y)' WHERE name = 'zz_x';");
      db.close();
      const m = JSON.parse(readFileSync(join(d, 'manifest.json'), 'utf8'));
      writeFileSync(join(d, 'manifest.json'), JSON.stringify({ ...m, database_bytes: statSync(join(d, 'data.db')).size }));
    }), 'invalid_backup', /data\.db fails the integrity check \(row 1 missing from index zz_x/],
    [variant('key', (d) => rmSync(join(d, 'token_secret'))), 'invalid_backup', /token_secret is missing/],
    [variant('file', (d) => rmSync(storedFile(d))), 'invalid_backup', /storage\/ holds 1 files/],
    [variant('storage', (d) => { rmSync(join(d, 'storage'), { recursive: true }); writeFileSync(join(d, 'storage'), 'x'); }), 'invalid_backup', /cannot be read as a backup/],
    [halfTar, 'invalid_backup', /not a readable tar archive|is missing|holds/],
    [notTar, 'invalid_backup', /not a readable tar archive/],
  ];
  const results = await Promise.all(cases.map(([from], i) => cli('restore', from, `--data-dir=${join(root, `target-${i}`)}`, '--json')));
  for (const [i, [from, code, message]] of cases.entries()) {
    const err = assertJsonError(results[i], code);
    assert.match(err.message, message, `${from}: ${err.message}`);
    assert.equal(existsSync(join(root, `target-${i}`)), false, `${from}: the target is not created`);
  }
});

test('usage errors exit 1 with or without --json', async () => {
  const [noFile, extra, unknown, bare] = await Promise.all([
    cli('backup', '--json'),
    cli('restore', 'a', 'b', '--json'),
    cli('restore', dirBackup, '--bogus', '--json'),
    cli('backup'),
  ]);
  for (const r of [noFile, extra, unknown]) assertJsonError(r, 'usage');
  assert.equal(bare.status, 1);
  assert.equal(bare.stdout, '');
  assert.match(bare.stderr, /svc backup needs FILE/);
  assert.match(bare.stderr, /\$ svc backup \[--json\] \[--data-dir DIR\] <FILE>/, 'the usage line follows');
});

if (TEST_BACKEND === 'postgres') {
  test('on the server SQL backend backup and restore refuse with a usage error naming pg_dump', async () => {
    const dir = join(root, 'pg-data');
    mkdirSync(dir);
    const [backup, restore] = await Promise.all([cli('backup', join(root, 'pg-backup'), `--data-dir=${dir}`, '--json'), cli('restore', join(root, 'pg-backup'), `--data-dir=${dir}`, '--json')]);
    for (const r of [backup, restore]) assert.match(assertJsonError(r, 'usage').message, /pg_dump/);
    assert.equal(existsSync(join(root, 'pg-backup')), false, 'nothing written');
  });
}
