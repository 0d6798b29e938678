/**
 * pgStores (src/store/pg/sql-stores.ts): the whole StoreSql of a PostgreSQL backend over one
 * PgReader, used as the domain uses `store.sql`: the system tables bootstrapped through a
 * PgWriter, a collection created through the schema store's DDL jobs and read back, a record
 * inserted and viewed through the record statements, a setting and a session written and read,
 * and write failures told apart by the dialect. Against a real PostgreSQL (skips with the reason
 * when none can start here).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import type { Collection, Field } from '../../../src/model/schema.js';
import { PgWriter } from '../../../src/store/pg/writer.js';
import { PgReader } from '../../../src/store/pg/reader.js';
import { bootstrapSteps } from '../../../src/store/pg/bootstrap.js';
import { pgStores } from '../../../src/store/pg/sql-stores.js';
import { RateLimiter } from '../../../src/auth/rate-limit.js';
import type { StoreSql } from '../../../src/store/store.js';

const skip = postgresSkipReason() ?? false;
let server: Postgres | undefined;
let writer: PgWriter | undefined;
let reader: PgReader | undefined;
let sql: StoreSql;

const T0 = '2026-11-27 03:00:00.000Z';
const field = (id: string, name: string, type: Field['type'], options: Field['options'] = {}): Field => ({ id, name, type, options });
const notes: Collection = {
  id: 'c_notes0000001', name: 'notes', type: 'base', system: false, indexes: [], options: {},
  fields: [field('f_title', 'title', 'text'), field('f_n', 'n', 'number'), field('f_tags', 'tags', 'select', { values: ['a', 'b'], maxSelect: 2 })],
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: T0, updated: T0,
};

before(async () => {
  if (skip) return;
  server = await startPostgres();
  const url = await server.createDatabase('stores');
  writer = await PgWriter.start(url);
  reader = await PgReader.start(url);
  sql = pgStores(reader, { vector: false }, new RateLimiter());
  await writer.write(bootstrapSteps());
});

after(async () => {
  await writer?.close();
  await reader?.close();
  await server?.stop();
});

test('a collection through the schema store, a record through the record statements', { skip }, async () => {
  const before = await sql.schema.loadAll();
  assert.ok(!before.some((c) => c.name === 'notes'));
  await writer!.write(sql.schema.createSteps(notes, before, [...before, notes]));
  reader!.invalidate();
  const loaded = (await sql.schema.loadAll()).find((c) => c.id === notes.id);
  assert.equal(loaded?.name, 'notes');
  assert.deepEqual(loaded?.fields.map((f) => f.name), ['title', 'n', 'tags']);
  const cols = ['id', 'created', 'updated', 'title', 'n', 'tags'];
  await writer!.write([{ sql: sql.records.insert(notes, cols), params: ['rec000000000001', T0, T0, 'Hello', 2.5, '["a","b"]'] }]);
  const row = await reader!.get(sql.records.rowById(notes, 'r."id", r."title", r."n"'), ['rec000000000001']);
  assert.deepEqual(row, ['rec000000000001', 'Hello', 2.5]);
  // a duplicate id is a constraint failure as the dialect tells it
  const dup = await writer!.write([{ sql: sql.records.insert(notes, cols), params: ['rec000000000001', T0, T0, 'Again', 1, '[]'] }]).then(() => null, (e: unknown) => e);
  assert.equal(sql.dialect.writeFailure(dup)?.constraint, true);
});

test('settings and sessions through their stores', { skip }, async () => {
  await writer!.write([sql.settings.putStep('app.name', JSON.stringify('svc'), T0)]);
  assert.deepEqual((await sql.settings.all()).find((s) => s.key === 'app.name')?.value, JSON.stringify('svc'));
  await writer!.write(sql.sessions.createSteps('c_users', 'u1', '2000-01-01 00:00:00.000Z', { id: 'sid1', created: T0, user_agent: 'test', ip: '127.0.0.1' }));
  assert.equal((await sql.sessions.lastSeen('c_users', 'u1', 'sid1')), T0);
  assert.deepEqual((await sql.sessions.list('c_users', 'u1', '2000-01-01 00:00:00.000Z')).map((s) => s.id), ['sid1']);
});
