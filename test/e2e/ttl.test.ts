/**
 * Expiring rows (options.ttl_field): hidden from every read at once, deleted by the collector at
 * startup and on its interval (here 400 ms via SERVICE_TTL_GC_INTERVAL_MS), files included.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { withDb } from '../helpers/auth-helpers.js';

let srv: Svc;
let tags: any;
let notes: any;
const past = '2000-01-01 00:00:00.000Z';
const future = '2999-01-01 00:00:00.000Z';

function rowsInDb(dataDir: string, table: string): string[] {
  return withDb(dataDir, (db) => (db.prepare(`SELECT "id" FROM "${table}"`).raw(true).all([]) as string[][]).map((r) => r[0]));
}

before(async () => {
  srv = await startSvc({ env: { SERVICE_TTL_GC_INTERVAL_MS: '400' } });
  tags = await srv.createCollection({ name: 'tags', fields: [{ name: 'name', type: 'text' }], viewRule: '@public', listRule: '@public' });
  notes = await srv.createCollection({
    name: 'notes',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'expires', type: 'date' },
      { name: 'tag', type: 'relation', options: { collectionId: tags.id, maxSelect: 1 } },
    ],
    options: { ttl_field: 'expires' },
    viewRule: '@public',
    listRule: '@public',
    updateRule: '@public',
  });
});
after(async () => { await srv?.stop(); });

test('ttl_field must name a date or autodate field', async () => {
  for (const ttl of ['title', 'nope', 5]) {
    const r = await srv.api('POST', '/api/collections', {
      token: srv.suToken,
      body: { name: `bad_${String(ttl)}`, fields: [{ name: 'title', type: 'text' }], options: { ttl_field: ttl } },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.data['options.ttl_field'].code, 'validation_invalid_ttl_field');
  }
  const ok = await srv.api('POST', '/api/collections', {
    token: srv.suToken,
    body: { name: 'auto_ttl', fields: [{ name: 'stamp', type: 'autodate' }], options: { ttl_field: 'stamp' } },
  });
  assert.equal(ok.status, 201, ok.text);
});

test('expired rows are hidden from list, view, abilities and expand, for superusers too', async () => {
  // The collector runs every 400 ms, so the row is created live and expired by an update; the
  // update answers with the written record, and every read after it must hide the row.
  const tag = (await srv.api('POST', '/api/collections/tags/records', { token: srv.suToken, body: { name: 't' } })).body;
  const live = (await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { title: 'live', expires: future } })).body;
  const never = (await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { title: 'never' } })).body;
  const dying = (await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { title: 'dying', expires: future, tag: tag.id } })).body;
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${dying.id}`)).status, 200);
  await srv.createCollection({ name: 'pins', fields: [{ name: 'note', type: 'relation', options: { collectionId: notes.id, maxSelect: 1 } }], viewRule: '@public' });
  const pin = (await srv.api('POST', '/api/collections/pins/records', { token: srv.suToken, body: { note: dying.id } })).body;
  assert.equal((await srv.api('GET', `/api/collections/pins/records/${pin.id}?expand=note`)).body.expand.note.id, dying.id);
  assert.equal((await srv.api('PATCH', `/api/collections/notes/records/${dying.id}`, { body: { expires: past } })).status, 200);
  const expanded = await srv.api('GET', `/api/collections/pins/records/${pin.id}?expand=note`);
  assert.equal(expanded.status, 200);
  assert.equal(expanded.body.expand?.note, undefined, 'an expired record is not expanded');
  for (const token of [null, srv.suToken]) {
    const list = await srv.api('GET', '/api/collections/notes/records?perPage=100', { token });
    const ids = list.body.items.map((x: any) => x.id);
    assert.ok(ids.includes(live.id) && ids.includes(never.id), 'live and never-expiring rows are listed');
    assert.ok(!ids.includes(dying.id), 'expired row is hidden from the list');
    assert.equal(list.body.totalItems, ids.length);
    assert.equal((await srv.api('GET', `/api/collections/notes/records/${dying.id}`, { token })).status, 404);
    assert.equal((await srv.api('GET', `/api/collections/notes/records/${dying.id}/abilities`, { token })).status, 404);
  }
});

test('the collector deletes expired rows on its interval and at startup', async () => {
  const r = await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { title: 'old', expires: past } });
  assert.equal(r.status, 201, 'creating an already-expired row is allowed');
  const id = r.body.id;
  const deadline = Date.now() + 5000;
  while (rowsInDb(srv.dataDir, 'notes').includes(id) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  assert.ok(!rowsInDb(srv.dataDir, 'notes').includes(id), 'expired row deleted by the periodic collector');
  // The delete is visible to another connection at COMMIT; the server logs it once the writer's
  // answer reaches the main thread, a moment later.
  while (!/deleted \d+ expired row/.test(srv.stderr()) && Date.now() < deadline + 2000) await new Promise((res) => setTimeout(res, 50));
  assert.match(srv.stderr(), /deleted \d+ expired row/);
});

test('startup collection', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ttl-'));
  const a = await startSvc({ dataDir: dir, env: { SERVICE_TTL_GC_INTERVAL_MS: '3600000' } });
  try {
    const c = await a.createCollection({ name: 'sessions_x', fields: [{ name: 'until', type: 'date' }], options: { ttl_field: 'until' } });
    const gone = (await a.api('POST', '/api/collections/sessions_x/records', { token: a.suToken, body: { until: past } })).body;
    const kept = (await a.api('POST', '/api/collections/sessions_x/records', { token: a.suToken, body: { until: future } })).body;
    assert.ok(c.id && dir);
    const dataDir = a.dataDir;
    await a.stop();
    const b = await startSvc({ dataDir, env: { SERVICE_TTL_GC_INTERVAL_MS: '3600000' } });
    try {
      const deadline = Date.now() + 5000;
      while (rowsInDb(dataDir, 'sessions_x').includes(gone.id) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
      const ids = rowsInDb(dataDir, 'sessions_x');
      assert.ok(!ids.includes(gone.id), 'expired at startup: deleted');
      assert.ok(ids.includes(kept.id), 'unexpired: kept');
    } finally {
      await b.stop();
    }
  } finally {
    if (a.proc.exitCode === null) await a.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('files of expired rows are removed with them', async () => {
  const c = await srv.createCollection({
    name: 'uploads_ttl',
    fields: [{ name: 'until', type: 'date' }, { name: 'doc', type: 'file', options: { maxSelect: 1 } }],
    options: { ttl_field: 'until' },
  });
  const form = new FormData();
  form.set('until', past);
  form.set('doc', new Blob([Buffer.from('hello file')], { type: 'text/plain' }), 'a.txt');
  const res = await fetch(`${srv.url}/api/collections/uploads_ttl/records`, { method: 'POST', body: form, headers: { authorization: `Bearer ${srv.suToken}` } });
  const rec = await res.json();
  assert.equal(res.status, 201, JSON.stringify(rec));
  const folder = join(srv.dataDir, 'storage', c.id, rec.id);
  const deadline = Date.now() + 5000;
  while (existsSync(folder) && readdirSync(folder).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.ok(!existsSync(folder) || readdirSync(folder).length === 0, 'stored file removed after the row expired');
});
