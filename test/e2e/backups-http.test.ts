/**
 * Backups over HTTP (docs/operations.md, "Backups over HTTP"), against the real server: a backup
 * made while clients write holds the database and the stored files; listing, download (bearer
 * token or a superuser's file token), upload, delete, restore at the next start, the scheduled
 * backups with their retention, every refusal, and the official PocketBase SDK's `pb.backups`.
 * On PostgreSQL (`npx tsx test/pg-suite.ts FILE`) only the refusal runs: every route answers 400
 * naming pg_dump.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { list as tarList } from 'tar';
import Database from 'libsql';
import PocketBase from 'pocketbase';
import { runCli, startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { until } from '../helpers/wait.js';

const ON_PG = TEST_BACKEND === 'postgres';
const SQLITE_ONLY = ON_PG ? 'backups over HTTP copy the embedded SQLite database; on PostgreSQL the routes refuse (tested below)' : false;

const root = mkdtempSync(join(tmpdir(), 'svc-test-backups-http-'));
const dataDir = join(root, 'data');
let srv: Svc;
const others: Svc[] = [];
let userToken = '';
/** stored files uploaded to `docs`: record id, stored name, bytes */
const uploaded: { id: string; name: string; bytes: Buffer }[] = [];

const su = (method: string, path: string, body?: unknown) => srv.api(method, path, { token: srv.suToken, body });

/** The entries of a tar archive. */
async function entries(file: string): Promise<string[]> {
  const out: string[] = [];
  await tarList({ file, onReadEntry: (e) => { out.push(e.path); } });
  return out;
}

/** Downloads backup `key` with `auth` (bearer token or ?token=) into a file; answers it and the response. */
async function download(key: string, auth: { bearer?: string; token?: string }): Promise<{ res: Response; file: string }> {
  const url = `${srv.url}/api/backups/${encodeURIComponent(key)}${auth.token ? `?token=${encodeURIComponent(auth.token)}` : ''}`;
  const res = await fetch(url, { headers: auth.bearer ? { authorization: `Bearer ${auth.bearer}` } : {} });
  const file = join(root, `dl-${Math.random().toString(36).slice(2)}-${key}`);
  if (res.status === 200) writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  else await res.arrayBuffer();
  return { res, file };
}

async function login(url: string): Promise<string> {
  const r = await fetch(`${url}/api/collections/_superusers/auth-with-password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: SU_EMAIL, password: SU_PASSWORD }),
  });
  assert.equal(r.status, 200);
  return ((await r.json()) as { token: string }).token;
}

before(async () => {
  mkdirSync(dataDir);
  srv = await startSvc({ dataDir });
  await srv.createCollection({ name: 'items', type: 'base', listRule: '@public', fields: [{ name: 'title', type: 'text' }] });
  await srv.createCollection({
    name: 'users', type: 'auth', createRule: '@public', fields: [],
  });
  let r = await srv.api('POST', '/api/collections/users/records', { body: { email: 'u@test.local', password: 'userpass123', passwordConfirm: 'userpass123' } });
  assert.equal(r.status, 201, r.text);
  r = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'u@test.local', password: 'userpass123' } });
  assert.equal(r.status, 200, r.text);
  userToken = r.body.token;
  if (ON_PG) return;
  await srv.createCollection({
    name: 'docs', type: 'base', viewRule: '@public',
    fields: [{ name: 'title', type: 'text' }, { name: 'attachment', type: 'file', options: { maxSize: 5_000_000 } }],
  });
  // a few MB of stored files, so a backup takes long enough for a second one to meet it
  const pb = new PocketBase(srv.url);
  pb.authStore.save(srv.suToken);
  for (const bytes of [Buffer.from('hello backup\n'), Buffer.alloc(4_000_000, 7)]) {
    const rec = await pb.collection('docs').create({ title: `${bytes.length} bytes`, attachment: new File([bytes], 'file.bin') });
    uploaded.push({ id: rec.id, name: rec.attachment, bytes });
  }
});

after(async () => {
  for (const s of others) await s.stop();
  await srv?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('only superusers reach the backup routes: 401 without auth, 403 for a user', async () => {
  for (const [method, path] of [['GET', '/api/backups'], ['POST', '/api/backups'], ['GET', '/api/backups/x.tar'], ['DELETE', '/api/backups/x.tar'], ['POST', '/api/backups/x.tar/restore'], ['POST', '/api/backups/upload']]) {
    const anon = await srv.api(method, path, {});
    assert.equal(anon.status, 401, `${method} ${path}: ${anon.text}`);
    assert.equal(anon.body.code, 'unauthorized');
    const user = await srv.api(method, path, { token: userToken });
    assert.equal(user.status, 403, `${method} ${path}: ${user.text}`);
    assert.equal(user.body.code, 'forbidden');
  }
});

test('on PostgreSQL every backup route answers 400 naming pg_dump', { skip: ON_PG ? false : 'runs on PostgreSQL (npx tsx test/pg-suite.ts FILE)' }, async () => {
  for (const [method, path] of [['GET', '/api/backups'], ['POST', '/api/backups'], ['GET', '/api/backups/x.tar'], ['DELETE', '/api/backups/x.tar'], ['POST', '/api/backups/x.tar/restore']]) {
    const r = await su(method, path);
    assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
    assert.match(r.body.message, /pg_dump/);
  }
  assert.equal(existsSync(join(dataDir, 'backups')), false);
});

test('a backup made while clients write holds the database and the stored files', { skip: SQLITE_ONLY, timeout: 120_000 }, async () => {
  const acked = new Set<string>();
  let stopped = false;
  const client = async (): Promise<void> => {
    while (!stopped) {
      const r = await su('POST', '/api/collections/items/records', { title: 'w' });
      assert.equal(r.status, 201, r.text);
      acked.add(r.body.id);
    }
  };
  const clients = [client(), client(), client()];
  await until(() => acked.size >= 30, 20_000, 'writes before the backup');
  const before = new Set(acked);
  const made = await su('POST', '/api/backups', { name: 'under_load.tar' });
  const ackedMeanwhile = acked.size - before.size;
  stopped = true;
  await Promise.all(clients);
  assert.equal(made.status, 204, made.text);
  assert.equal(made.text, '');
  // the backup runs on a worker thread: writes go on while it is made
  assert.ok(ackedMeanwhile > 0, `${ackedMeanwhile} writes acknowledged while the backup ran`);

  const list = await su('GET', '/api/backups');
  assert.equal(list.status, 200);
  const entry = list.body.find((b: { key: string }) => b.key === 'under_load.tar');
  assert.deepEqual(Object.keys(entry), ['key', 'size', 'modified']);
  assert.ok(entry.size > 4_000_000, `size ${entry.size}`);
  assert.match(entry.modified, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/);

  const { res, file } = await download('under_load.tar', { bearer: srv.suToken });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/x-tar');
  assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename="under_load\.tar"$/);
  const names = await entries(file);
  assert.equal(names[0], 'manifest.json');
  for (const n of ['data.db', 'token_secret']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  for (const f of uploaded) assert.ok(names.some((n) => n.startsWith('storage/') && n.endsWith(`/${f.name}`)), `stored file ${f.name}`);
  assert.ok(!names.some((n) => n.startsWith('backups')), 'the backups folder is not in a backup');
  // every write acknowledged before the backup started is in its database
  const unpacked = mkdtempSync(join(root, 'unpacked-'));
  const { extract } = await import('tar');
  await extract({ file, cwd: unpacked });
  const db = new Database(join(unpacked, 'data.db'), { readonly: true });
  const ids = new Set((db.prepare('SELECT id FROM items').raw(true).all() as string[][]).map((r) => r[0]));
  db.close();
  for (const id of before) assert.ok(ids.has(id), `acknowledged record ${id} is in the backup`);
});

test('a backup is downloaded with a superuser\'s file token, not with a user\'s or a bad one', { skip: SQLITE_ONLY }, async () => {
  const tok = await su('POST', '/api/files/token');
  assert.equal(tok.status, 200);
  const ok = await download('under_load.tar', { token: tok.body.token });
  assert.equal(ok.res.status, 200);
  assert.ok((await entries(ok.file)).includes('data.db'));
  const userFileToken = (await srv.api('POST', '/api/files/token', { token: userToken })).body.token;
  assert.equal((await download('under_load.tar', { token: userFileToken })).res.status, 403);
  assert.equal((await download('under_load.tar', { token: 'not-a-token' })).res.status, 401);
  assert.equal((await download('under_load.tar', {})).res.status, 401);
  assert.equal((await download('missing.tar', { token: tok.body.token })).res.status, 404);
});

test('refusals: bad names, a taken name, unknown keys, a second backup while one runs', { skip: SQLITE_ONLY, timeout: 60_000 }, async () => {
  for (const name of ['../escape.tar', 'a/b.tar', '.hidden.tar', 'plain', 'x.zip', 'sp ace.tar', `${'a'.repeat(200)}.tar`, 42]) {
    const r = await su('POST', '/api/backups', { name });
    assert.equal(r.status, 400, `${JSON.stringify(name)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
    assert.ok(r.body.message.length > 0);
  }
  const taken = await su('POST', '/api/backups', { name: 'under_load.tar' });
  assert.equal(taken.status, 400);
  assert.match(taken.body.message, /already exists/);
  for (const [method, path] of [['GET', '/api/backups/nope.tar'], ['DELETE', '/api/backups/nope.tar'], ['POST', '/api/backups/nope.tar/restore'], ['DELETE', '/api/backups/..%2Fdata.db']]) {
    const r = await su(method, path);
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'not_found');
  }
  const [a, b] = await Promise.all([su('POST', '/api/backups', { name: 'race_a.tar' }), su('POST', '/api/backups', { name: 'race_b.tar' })]);
  const statuses = [a.status, b.status].sort();
  assert.deepEqual(statuses, [204, 400], `${a.text} ${b.text}`);
  const refused = a.status === 400 ? a : b;
  assert.match(refused.body.message, /already under way/);
  const keys = (await su('GET', '/api/backups')).body.map((x: { key: string }) => x.key);
  assert.equal(keys.filter((k: string) => k.startsWith('race_')).length, 1);
  // nothing half-made is left or listed
  assert.deepEqual(readdirSync(join(dataDir, 'backups')).filter((n) => n.startsWith('.')), []);
});

test('the PocketBase SDK lists, creates, downloads, uploads and deletes backups', { skip: SQLITE_ONLY, timeout: 60_000 }, async () => {
  const pb = new PocketBase(srv.url);
  await pb.collection('_superusers').authWithPassword(SU_EMAIL, SU_PASSWORD);
  assert.equal(await pb.backups.create('sdk_made.tar'), true);
  const list = await pb.backups.getFullList();
  const made = list.find((b) => b.key === 'sdk_made.tar')!;
  assert.ok(made && made.size > 0);
  assert.equal(list[0].key, 'sdk_made.tar', 'newest first');
  const url = pb.backups.getDownloadURL(await pb.files.getToken(), 'sdk_made.tar');
  const res = await fetch(url);
  assert.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(bytes.length, made.size);
  // a downloaded backup uploads back under another name; anything else is refused
  assert.equal(await pb.backups.upload({ file: new File([bytes], 'sdk_uploaded.tar') }), true);
  assert.equal((await pb.backups.getFullList()).find((b) => b.key === 'sdk_uploaded.tar')?.size, made.size);
  await assert.rejects(pb.backups.upload({ file: new File([Buffer.from('not a tar')], 'junk.tar') }), (e: { status: number; message: string }) => e.status === 400 && /not/.test(e.message));
  await assert.rejects(pb.backups.upload({ file: new File([bytes], 'sdk_uploaded.tar') }), (e: { status: number }) => e.status === 400);
  await assert.rejects(pb.backups.create('bad name.zip'), (e: { status: number }) => e.status === 400);
  assert.equal(await pb.backups.delete('sdk_uploaded.tar'), true);
  assert.equal(await pb.backups.delete('sdk_made.tar'), true);
  assert.ok(!(await pb.backups.getFullList()).some((b) => b.key.startsWith('sdk_')));
  await assert.rejects(pb.backups.delete('sdk_made.tar'), (e: { status: number }) => e.status === 404);
});

test('svc backup skips the backups folder and svc restore --force keeps it', { skip: SQLITE_ONLY, timeout: 60_000 }, async () => {
  const out = join(root, 'cli-backup.tar');
  const r = runCli(['backup', out, `--data-dir=${dataDir}`, '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!(await entries(out)).some((n) => n.startsWith('backups')));
  // a restore into a copy holding a backups folder keeps the folder
  const copy = join(root, 'restore-target');
  mkdirSync(join(copy, 'backups'), { recursive: true });
  writeFileSync(join(copy, 'backups', 'kept.tar'), 'x');
  writeFileSync(join(copy, 'data.db'), '');
  const rr = runCli(['restore', out, `--data-dir=${copy}`, '--force', '--json']);
  assert.equal(rr.status, 0, rr.stderr);
  assert.ok(existsSync(join(copy, 'backups', 'kept.tar')));
  assert.ok(existsSync(join(copy, 'token_secret')));
});

test('a restore asked for over HTTP is applied at the next start, before the database opens', { skip: SQLITE_ONLY, timeout: 120_000 }, async () => {
  const snap = await su('GET', '/api/collections/items/records?perPage=1');
  const countAtBackup = snap.body.totalItems;
  assert.equal((await su('POST', '/api/backups', { name: 'restore_me.tar' })).status, 204);
  const later = await su('POST', '/api/collections/items/records', { title: 'after the backup' });
  assert.equal(later.status, 201);
  const asked = await su('POST', '/api/backups/restore_me.tar/restore');
  assert.equal(asked.status, 204, asked.text);
  assert.ok(existsSync(join(dataDir, 'backups', '.restore-pending.json')));
  // the running server still serves the current data
  assert.equal((await su('GET', `/api/collections/items/records/${later.body.id}`)).status, 200);
  const keysBefore = (await su('GET', '/api/backups')).body.map((b: { key: string }) => b.key).sort();
  assert.equal(await srv.stop(), 0);

  srv = await startSvc({ dataDir, superuser: false });
  srv.suToken = await login(srv.url);
  assert.match(srv.stderr(), /restored backup restore_me\.tar/);
  const after = await su('GET', '/api/collections/items/records?perPage=1');
  assert.equal(after.body.totalItems, countAtBackup, 'the data is the backup\'s');
  assert.equal((await su('GET', `/api/collections/items/records/${later.body.id}`)).status, 404);
  for (const f of uploaded) {
    const res = await fetch(`${srv.url}/api/files/docs/${f.id}/${f.name}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), f.bytes);
  }
  // the backups are all still there, the marker is gone
  assert.deepEqual((await su('GET', '/api/backups')).body.map((b: { key: string }) => b.key).sort(), keysBefore);
  assert.equal(existsSync(join(dataDir, 'backups', '.restore-pending.json')), false);
});

test('a pending restore of a backup deleted meanwhile is logged and the server starts on its data', { skip: SQLITE_ONLY, timeout: 120_000 }, async () => {
  assert.equal((await su('POST', '/api/backups', { name: 'doomed.tar' })).status, 204);
  const mark = await su('POST', '/api/collections/items/records', { title: 'kept' });
  assert.equal((await su('POST', '/api/backups/doomed.tar/restore')).status, 204);
  assert.equal((await su('DELETE', '/api/backups/doomed.tar')).status, 204);
  assert.equal(await srv.stop(), 0);
  srv = await startSvc({ dataDir, superuser: false });
  srv.suToken = await login(srv.url);
  assert.match(srv.stderr(), /pending restore of backup doomed\.tar failed/);
  assert.equal((await su('GET', `/api/collections/items/records/${mark.body.id}`)).status, 200);
  assert.equal(existsSync(join(dataDir, 'backups', '.restore-pending.json')), false);
});

test('scheduled backups run on SERVICE_BACKUP_CRON and keep SERVICE_BACKUP_KEEP of them', { skip: SQLITE_ONLY, timeout: 120_000 }, async () => {
  const s = await startSvc({ env: { SERVICE_BACKUP_CRON: '*/2 * * * * *', SERVICE_BACKUP_KEEP: '2' } });
  others.push(s);
  const manual = await s.api('POST', '/api/backups', { token: s.suToken, body: { name: 'manual.tar' } });
  assert.ok(manual.status === 204 || /under way/.test(manual.body?.message), manual.text);
  if (manual.status !== 204) await until(async () => (await s.api('POST', '/api/backups', { token: s.suToken, body: { name: 'manual.tar' } })).status === 204, 20_000, 'a manual backup');
  await until(() => /deleted scheduled backup auto_svc_backup_/.test(s.stderr()), 30_000, 'a pruned scheduled backup');
  const keys: string[] = (await s.api('GET', '/api/backups', { token: s.suToken })).body.map((b: { key: string }) => b.key);
  const auto = keys.filter((k) => /^auto_svc_backup_\d{14}\.tar$/.test(k));
  assert.ok(auto.length >= 2 && auto.length <= 3, keys.join(', '));
  assert.ok(keys.includes('manual.tar'), 'a backup made by hand is never pruned');
  // a bad pattern or count stops the start
  for (const env of [{ SERVICE_BACKUP_CRON: 'not a cron' }, { SERVICE_BACKUP_CRON: '* * * * *', SERVICE_BACKUP_KEEP: '0' }]) {
    await assert.rejects(startSvc({ env }), /SERVICE_BACKUP_(CRON|KEEP)/);
  }
});
