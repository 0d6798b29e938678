/**
 * Encrypted fields end to end (spec 1-core-api.md "Field": `encrypted` on text, editor and json,
 * never in filter or sort; 0-conventions.md "Error codes": encrypted_*, searchable_encrypted).
 * Values are ciphertext in the database file (read here with libsql) and plaintext over the API.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runCli, startSvc, type Svc } from '../helpers/server.js';
import { withDb } from '../helpers/auth-helpers.js';
import { TEST_BACKEND } from '../helpers/backend.js';
import { assertError, dumpServerLog } from '../helpers/records-fixtures.js';

const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };
const FIELDS = [
  { name: 'title', type: 'text' },
  { name: 'note', type: 'text', options: { encrypted: true } },
  { name: 'body', type: 'editor', options: { encrypted: true } },
  { name: 'data', type: 'json', options: { encrypted: true } },
];

let dataDir: string;
let srv: Svc;
const dirs: string[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-enc-'));
  dirs.push(d);
  return d;
}

/** Raw stored columns of a record, read from the database (the SQLite file, or the directory's PostgreSQL database). */
function atRest(dir: string, table: string, id: string, cols: string[]): unknown[] {
  return withDb(dir, (db) => db.prepare(`SELECT ${cols.map((c) => `"${c}"`).join(', ')} FROM "${table}" WHERE "id" = ?`).raw(true).get([id]) as unknown[]);
}

before(async () => {
  dataDir = tempDir();
  srv = await startSvc({ dataDir });
  await srv.createCollection({ name: 'secrets', type: 'base', ...PUBLIC, fields: FIELDS });
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('ciphertext at rest, plaintext over the API (create, view, list, update)', async (t) => {
  const c = await srv.api('POST', '/api/collections/secrets/records', { body: { title: 'visible', note: 'top secret', body: '<p>hidden text</p>', data: { pin: 1234 } } });
  assert.equal(c.status, 201, c.text);
  assert.deepEqual([c.body.note, c.body.body, c.body.data], ['top secret', '<p>hidden text</p>', { pin: 1234 }]);
  const id = c.body.id;
  const stored = atRest(dataDir, 'secrets', id, ['title', 'note', 'body', 'data']);
  assert.equal(stored[0], 'visible', 'plain fields stay plain');
  for (const v of stored.slice(1)) {
    assert.match(String(v), /^enc:v1:[A-Za-z0-9+/=]+$/);
    assert.ok(!/top secret|hidden text|1234/.test(String(v)));
  }
  assert.notEqual(stored[1], atRest(dataDir, 'secrets', (await srv.api('POST', '/api/collections/secrets/records', { body: { note: 'top secret' } })).body.id, ['note'])[0], 'random IV: equal values differ at rest');

  const v = await srv.api('GET', `/api/collections/secrets/records/${id}`);
  assert.deepEqual([v.body.note, v.body.data], ['top secret', { pin: 1234 }]);
  const l = await srv.api('GET', '/api/collections/secrets/records?perPage=100');
  assert.ok(l.body.items.some((r: any) => r.id === id && r.note === 'top secret' && r.body === '<p>hidden text</p>'));

  const u = await srv.api('PATCH', `/api/collections/secrets/records/${id}`, { body: { note: 'new secret', data: null } });
  assert.deepEqual([u.body.note, u.body.data], ['new secret', null], u.text);
  const after = atRest(dataDir, 'secrets', id, ['note', 'data']);
  assert.match(String(after[0]), /^enc:v1:/);
  assert.ok(!String(after[0]).includes('new secret'));
  assert.equal(after[1], null, 'null stays null');
  // No plaintext anywhere in the database files (main file and write-ahead log), unlike a plain field.
  const noFiles = TEST_BACKEND === 'postgres' ? 'reads the SQLite database file and its WAL (data.db, data.db-wal); on PostgreSQL the data lives in the server\'s cluster, checked at rest through SQL above' : false;
  await t.test('no plaintext in the database files', { skip: noFiles }, () => {
    const files = ['data.db', 'data.db-wal'].map((f) => join(dataDir, f)).filter(existsSync).map((f) => readFileSync(f).toString('latin1')).join('');
    assert.ok(files.includes('visible'), 'sanity: a plain value is findable in the files');
    for (const secret of ['top secret', 'new secret', 'hidden text']) assert.ok(!files.includes(secret), `"${secret}" is not in the database files`);
  });
});

test('filter or sort on an encrypted field answers 400', async () => {
  for (const q of ['filter=note%3D%22x%22', 'filter=data.pin%3D1', 'filter=body~%22a%22', 'sort=note', 'sort=-data', 'sort=title,body']) {
    const r = await srv.api('GET', `/api/collections/secrets/records?${q}`);
    assertError(r, 400);
    assert.match(r.body.message, /encrypted/i, q);
  }
  assert.equal((await srv.api('GET', '/api/collections/secrets/records?filter=title%3D%22x%22&sort=title')).status, 200);
});

test('encrypted fields cannot be unique, indexed or searchable, and only text, editor and json', async () => {
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['unique', { fields: [{ name: 'a', type: 'text', options: { encrypted: true, unique: true } }] }, 'fields.0.encrypted', 'validation_encrypted_unique'],
    ['number', { fields: [{ name: 'a', type: 'number', options: { encrypted: true } }] }, 'fields.0.encrypted', 'validation_encrypted_type'],
    ['select', { fields: [{ name: 'a', type: 'select', options: { values: ['x'], encrypted: true } }] }, 'fields.0.encrypted', 'validation_encrypted_type'],
    ['searchable', { fields: [{ name: 'a', type: 'editor', options: { encrypted: true, searchable: true } }] }, 'fields.0.searchable', 'validation_searchable_encrypted'],
    ['index', { fields: [{ name: 'a', type: 'text', options: { encrypted: true } }], indexes: [{ name: 'by_a', fields: ['a'] }] }, 'indexes.0', 'validation_encrypted_index'],
    ['index (SQL form)', { fields: [{ name: 'a', type: 'json', options: { encrypted: true } }], indexes: ['CREATE INDEX by_a ON x (a)'] }, 'indexes.0', 'validation_encrypted_index'],
  ];
  for (const [label, def, key, code] of cases) {
    const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: `bad_${label.replace(/\W/g, '_')}`, type: 'base', ...def } });
    assertError(r, 400, 'validation_failed');
    assert.equal(r.body.data[key]?.code, code, `${label}: ${r.text}`);
  }
  // Turning encryption on for an indexed field is refused the same way.
  await srv.createCollection({ name: 'plainidx', type: 'base', fields: [{ name: 'a', type: 'text' }], indexes: [{ name: 'by_a', fields: ['a'] }] });
  const col = (await srv.api('GET', '/api/collections/plainidx', { token: srv.suToken })).body;
  const r = await srv.api('PATCH', '/api/collections/plainidx', { token: srv.suToken, body: { fields: [{ ...col.schema[0], options: { encrypted: true } }] } });
  assert.equal(r.body.data?.['indexes.0']?.code, 'validation_encrypted_index', r.text);
});

test('turning encryption on and off rewrites the stored values', async () => {
  const col = await srv.createCollection({ name: 'toggle', type: 'base', ...PUBLIC, fields: [{ name: 'memo', type: 'text' }] });
  const ids: string[] = [];
  for (const memo of ['one', 'two', '']) ids.push((await srv.api('POST', '/api/collections/toggle/records', { body: { memo } })).body.id);
  const field = col.schema[0];
  const on = await srv.api('PATCH', '/api/collections/toggle', { token: srv.suToken, body: { fields: [{ ...field, options: { encrypted: true } }] } });
  assert.equal(on.status, 200, on.text);
  for (const id of ids) assert.match(String(atRest(dataDir, 'toggle', id, ['memo'])[0]), /^enc:v1:/);
  const list = await srv.api('GET', '/api/collections/toggle/records?perPage=10');
  assert.deepEqual(list.body.items.map((r: any) => r.memo).sort(), ['', 'one', 'two']);
  const off = await srv.api('PATCH', '/api/collections/toggle', { token: srv.suToken, body: { fields: [{ ...field, options: { encrypted: false } }] } });
  assert.equal(off.status, 200, off.text);
  assert.equal(atRest(dataDir, 'toggle', ids[0], ['memo'])[0], 'one');
});

test('the key file is created once (mode 0600) and values stay readable after a restart', async (t) => {
  const keyFile = join(dataDir, 'encryption_key');
  const noKeyFile = TEST_BACKEND === 'postgres' ? 'the key file <dataDir>/encryption_key (mode 0600) is the SQLite backend\'s; on PostgreSQL the key is the row \'encryption_key\' of the table _secrets (checked below)' : false;
  await t.test('the key file exists with mode 0600', { skip: noKeyFile }, () => {
    assert.ok(existsSync(keyFile));
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
  });
  // The stored key: the file on SQLite; on PostgreSQL the shared secret row of `_secrets`.
  const storedKey = (): string => (TEST_BACKEND === 'postgres'
    ? String((withDb(dataDir, (db) => db.prepare('SELECT "value" FROM "_secrets" WHERE "name" = ?').raw(true).get(['encryption_key'])) as unknown[] | undefined)?.[0] ?? '')
    : readFileSync(keyFile, 'utf8'));
  assert.equal(Buffer.from(storedKey().trim(), 'base64').length, 32);
  const key = storedKey();
  const id = (await srv.api('POST', '/api/collections/secrets/records', { body: { note: 'survives restarts' } })).body.id;
  await srv.stop();
  srv = await startSvc({ dataDir, superuser: false });
  assert.equal(storedKey(), key, 'the key is not regenerated');
  const v = await srv.api('GET', `/api/collections/secrets/records/${id}`);
  assert.equal(v.body.note, 'survives restarts', v.text);
});

test('SERVICE_ENCRYPTION_KEY is used instead of a key file; a different key cannot read the values', async () => {
  const dir = tempDir();
  const key = randomBytes(32);
  let s = await startSvc({ dataDir: dir, env: { SERVICE_ENCRYPTION_KEY: key.toString('hex') } });
  try {
    await s.createCollection({ name: 'vault', type: 'base', ...PUBLIC, fields: [{ name: 'pin', type: 'text', options: { encrypted: true } }] });
    const id = (await s.api('POST', '/api/collections/vault/records', { body: { pin: '0000' } })).body.id;
    assert.ok(!existsSync(join(dir, 'encryption_key')), 'no key file with SERVICE_ENCRYPTION_KEY');
    await s.stop();
    s = await startSvc({ dataDir: dir, superuser: false, env: { SERVICE_ENCRYPTION_KEY: key.toString('base64') } });
    assert.equal((await s.api('GET', `/api/collections/vault/records/${id}`)).body.pin, '0000', 'same key as base64');
    await s.stop();
    s = await startSvc({ dataDir: dir, superuser: false, env: { SERVICE_ENCRYPTION_KEY: randomBytes(32).toString('base64url') } });
    const r = await s.api('GET', `/api/collections/vault/records/${id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.pin, null, 'another key reads null, never ciphertext');
    // The warning is written before the reply, but the server's stderr reaches this process on
    // its own stream: give it a moment.
    const until = Date.now() + 10_000;
    while (!/cannot decrypt/.test(s.stderr()) && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    assert.match(s.stderr(), /cannot decrypt/);
  } finally {
    await s.stop();
  }
});

test('an invalid SERVICE_ENCRYPTION_KEY makes serve exit 1 naming the variable (never echoing the value)', () => {
  for (const bad of ['short', 'zz'.repeat(32), randomBytes(16).toString('base64')]) {
    const r = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${tempDir()}`], { SERVICE_ENCRYPTION_KEY: bad });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /SERVICE_ENCRYPTION_KEY/);
    assert.ok(!r.stderr.includes(bad), 'the key is not echoed');
  }
});
