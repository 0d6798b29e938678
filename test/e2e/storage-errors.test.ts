/**
 * Storage's typed errors over HTTP (src/store/errors/store-errors.ts, answered by knownApiError in
 * src/errors/api-error.ts): for each kind a request can cause, the reply is byte for byte the one
 * the API gave when storage still threw ApiError (docs/api.md, "Errors"). The writer closing
 * (WriterClosed) cannot be caused by a request; test/unit/errors/store-errors.test.ts has it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { dumpServerLog } from '../helpers/records-fixtures.js';
import { TEST_BACKEND } from '../helpers/backend.js';

const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };
let srv: Svc;

before(async () => {
  srv = await startSvc();
  const authors = await srv.createCollection({ name: 'authors', type: 'base', ...PUBLIC, fields: [{ name: 'name', type: 'text' }] });
  await srv.createCollection({
    name: 'items', type: 'base', ...PUBLIC,
    fields: [{ name: 'sku', type: 'text' }, { name: 'title', type: 'text' }, { name: 'author', type: 'relation', options: { collectionId: authors.id, maxSelect: 1 } }, { name: 'meta', type: 'json' }],
    indexes: [{ name: 'by_sku', fields: ['sku'], unique: true }],
  });
  await srv.createCollection({ name: 'closed', type: 'base', createRule: '@request.auth.id != ""', fields: [{ name: 'title', type: 'text' }] });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

/** Asserts the exact reply: status and the envelope's bytes. */
async function answers(method: string, path: string, body: unknown, status: number, text: string): Promise<void> {
  const r = await srv.api(method, path, body === undefined ? {} : { body });
  assert.equal(r.status, status, r.text);
  assert.equal(r.text, text);
}

test('UniqueViolation: a duplicate unique value is 409 naming the field', async () => {
  const first = await srv.api('POST', '/api/collections/items/records', { body: { sku: 'A-1', title: 'one' } });
  assert.equal(first.status, 201, first.text);
  await answers('POST', '/api/collections/items/records', { sku: 'A-1', title: 'two' }, 409,
    '{"status":409,"code":"conflict","message":"The value of \\"sku\\" conflicts with an existing record.","data":{}}');
});

test('GuardFailed: a relation to a missing record is the relation guard\'s 400 with its data', async () => {
  await answers('POST', '/api/collections/items/records', { sku: 'B-1', author: 'missingrecord01' }, 400,
    '{"status":400,"code":"validation_failed","message":"Failed to validate the submitted data.","data":{"author":{"code":"validation_not_found","message":"The related record does not exist."}}}');
});

test('NotFound: a missing collection is 404', async () => {
  await answers('GET', '/api/collections/nosuchthing/records', undefined, 404,
    '{"status":404,"code":"not_found","message":"Missing collection context.","data":{}}');
});

test('InvalidQuery: an unknown sort field and a sub-path of a plain field are 400', async () => {
  await answers('GET', '/api/collections/items/records?sort=nope', undefined, 400,
    '{"status":400,"code":"bad_request","message":"Invalid sort: unknown field \\"nope\\".","data":{}}');
  await answers('GET', `/api/collections/items/records?filter=${encodeURIComponent("title.x = 'a'")}`, undefined, 400,
    '{"status":400,"code":"bad_request","message":"Invalid filter: field \\"title\\" has no sub-fields.","data":{}}');
});

test('InvalidValue: text with U+0000 is 400 on PostgreSQL (SQLite stores it)', async () => {
  const r = await srv.api('POST', '/api/collections/items/records', { body: { sku: 'N-1', title: 'a\u0000b' } });
  if (TEST_BACKEND === 'postgres') {
    assert.equal(r.status, 400, r.text);
    assert.equal(r.text, '{"status":400,"code":"bad_request","message":"Text may not contain the NUL character (U+0000) on this server.","data":{}}');
  } else assert.equal(r.status, 201, r.text);
});

test('InvalidValue: JSON with a NUL (\\u0000) is 400 on PostgreSQL, in a create, an update and a batch (SQLite stores it)', async () => {
  const bad = { note: 'a\u0000b', ['k\u0000']: 1 };
  const first = await srv.api('POST', '/api/collections/items/records', { body: { sku: 'J-1', meta: { ok: true } } });
  assert.equal(first.status, 201, first.text);
  const create = await srv.api('POST', '/api/collections/items/records', { body: { sku: 'J-2', meta: bad } });
  const update = await srv.api('PATCH', `/api/collections/items/records/${first.body.id}`, { body: { meta: ['x', '\u0000'] } });
  const batch = await srv.api('POST', '/api/batch', { token: srv.suToken, body: { requests: [
    { method: 'POST', url: '/api/collections/items/records', body: { sku: 'J-3' } },
    { method: 'POST', url: '/api/collections/items/records', body: { sku: 'J-4', meta: bad } },
  ] } });
  if (TEST_BACKEND === 'postgres') {
    const envelope = '{"status":400,"code":"bad_request","message":"JSON may not contain the NUL character (\\\\u0000) on this server.","data":{}}';
    assert.equal(create.status, 400, create.text);
    assert.equal(create.text, envelope);
    assert.equal(update.status, 400, update.text);
    assert.equal(update.text, envelope);
    assert.equal(batch.status, 400, batch.text);
    assert.equal((await srv.api('GET', `/api/collections/items/records?filter=${encodeURIComponent("sku ~ 'J-'")}&sort=sku`)).body.items.map((r: { sku: string }) => r.sku).join(), 'J-1', 'nothing of the refused writes, nor of their batch, was stored');
    assert.deepEqual((await srv.api('GET', `/api/collections/items/records/${first.body.id}`)).body.meta, { ok: true });
  } else {
    assert.equal(create.status, 201, create.text);
    assert.deepEqual(create.body.meta, bad);
    assert.equal(update.status, 200, update.text);
    assert.equal(batch.status, 200, batch.text);
  }
});

test('UnsupportedSchema: a searchable field with full-text search off is 400', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-store-errors-'));
  const off = await startSvc({ dataDir, args: ['--features=fts5-off'] });
  try {
    const r = await off.api('POST', '/api/collections', { token: off.suToken, body: { name: 'docs', type: 'base', fields: [{ name: 'body', type: 'text', options: { searchable: true } }] } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.text, '{"status":400,"code":"bad_request","message":"Full-text search is disabled on this server (feature fts5-off): fields cannot be searchable.","data":{}}');
  } finally {
    await off.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
