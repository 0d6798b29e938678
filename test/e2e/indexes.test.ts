/**
 * Collection `indexes` end to end (spec 1-core-api.md "Collection": indexes; "Records": a write
 * that breaks an integrity constraint answers 409). Indexes are created, dropped and replaced by
 * PATCH; the real SQLite indexes are checked in the database file (on PostgreSQL, in the catalog of
 * the directory's database: the same names, `idx_<collectionId>_<name>`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import Database from 'libsql';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, dumpServerLog } from '../helpers/records-fixtures.js';
import { withDb } from '../helpers/auth-helpers.js';
import { TEST_BACKEND } from '../helpers/backend.js';

const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };
let srv: Svc;
let items: any;

/** Index names and uniqueness of a table, from the database file. */
function sqliteIndexes(table: string): Map<string, { unique: boolean; columns: string[] }> {
  const db = new Database(join(srv.dataDir, 'data.db'), { readonly: true });
  try {
    const out = new Map<string, { unique: boolean; columns: string[] }>();
    for (const [name, unique, origin] of db.prepare(`SELECT name, "unique", origin FROM pragma_index_list(?)`).raw(true).all([table]) as Array<[string, number, string]>) {
      if (origin !== 'c') continue; // only CREATE INDEX ones (not the primary key)
      const columns = (db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').raw(true).all([name]) as string[][]).map((r) => r[0]);
      out.set(name, { unique: Number(unique) === 1, columns });
    }
    return out;
  } finally {
    db.close();
  }
}

/** The same from the PostgreSQL catalog: the table's indexes but its primary key, by name. */
function pgIndexes(table: string): Map<string, { unique: boolean; columns: string[] }> {
  const rows = withDb(srv.dataDir, (db) => db.prepare(
    'SELECT i."relname", x."indisunique", (SELECT string_agg(a."attname", \',\' ORDER BY k."n") FROM unnest(x."indkey"::int2[]) WITH ORDINALITY AS k("attnum", "n") ' +
    'JOIN pg_attribute a ON a."attrelid" = x."indrelid" AND a."attnum" = k."attnum") ' +
    'FROM pg_index x JOIN pg_class i ON i."oid" = x."indexrelid" JOIN pg_class t ON t."oid" = x."indrelid" ' +
    'WHERE t."relname" = ? AND t."relnamespace" = \'public\'::regnamespace AND NOT x."indisprimary" ORDER BY i."relname"',
  ).raw(true).all([table]) as Array<[string, boolean, string | null]>);
  return new Map(rows.map(([name, unique, cols]) => [name, { unique: unique === true, columns: cols ? cols.split(',') : [] }]));
}

const dbIndexes = (table: string) => (TEST_BACKEND === 'postgres' ? pgIndexes(table) : sqliteIndexes(table));
const userIndexes = (c: any) => new Map([...dbIndexes(c.name)].filter(([n]) => n.startsWith(`idx_${c.id}_`)).map(([n, v]) => [n.slice(`idx_${c.id}_`.length), v]));
const create = (body: Record<string, unknown>) => srv.api('POST', '/api/collections/items/records', { body });
const patchCollection = (body: Record<string, unknown>) => srv.api('PATCH', '/api/collections/items', { token: srv.suToken, body });

before(async () => {
  srv = await startSvc();
  items = await srv.createCollection({
    name: 'items', type: 'base', ...PUBLIC,
    fields: [{ name: 'sku', type: 'text' }, { name: 'title', type: 'text' }, { name: 'shelf', type: 'number' }],
    indexes: [{ name: 'by_sku', fields: ['sku'], unique: true }, 'CREATE INDEX by_title_shelf ON items (title, shelf DESC)'],
  });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('create: object and SQL forms become named SQLite indexes; the collection echoes them', async () => {
  assert.deepEqual(items.indexes, [{ name: 'by_sku', fields: ['sku'], unique: true }, { name: 'by_title_shelf', fields: ['title', 'shelf'], unique: false }]);
  const got = userIndexes(items);
  assert.deepEqual(got.get('by_sku'), { unique: true, columns: ['sku'] });
  assert.deepEqual(got.get('by_title_shelf'), { unique: false, columns: ['title', 'shelf'] });
  const empty = await srv.createCollection({ name: 'noidx', type: 'base', fields: [{ name: 'a', type: 'text' }] });
  assert.deepEqual(empty.indexes, [], 'an empty array when none');
});

test('a unique index answers 409 on a duplicate (create and update), never 500', async () => {
  assert.equal((await create({ sku: 'A-1', title: 't' })).status, 201);
  assertError(await create({ sku: 'A-1', title: 'other' }), 409, 'conflict');
  const b = await create({ sku: 'B-1' });
  assertError(await srv.api('PATCH', `/api/collections/items/records/${b.body.id}`, { body: { sku: 'A-1' } }), 409, 'conflict');
  assert.equal((await create({ title: 'no sku' })).status, 201, 'NULLs do not conflict');
  assert.equal((await create({ title: 'no sku either' })).status, 201);
});

test('PATCH drops and replaces indexes', async () => {
  const dropped = await patchCollection({ indexes: ['CREATE INDEX by_title_shelf ON items (title, shelf)'] });
  assert.equal(dropped.status, 200, dropped.text);
  assert.deepEqual(dropped.body.indexes.map((i: any) => i.name), ['by_title_shelf']);
  assert.deepEqual([...userIndexes(items).keys()], ['by_title_shelf']);
  assert.equal((await create({ sku: 'A-1' })).status, 201, 'duplicates allowed once the unique index is dropped');

  const replaced = await patchCollection({ indexes: [{ name: 'by_title_u', fields: ['title'], unique: true }] });
  assert.equal(replaced.status, 200, replaced.text);
  assert.deepEqual([...userIndexes(items).keys()], ['by_title_u']);
  assert.equal((await create({ title: 'unique title' })).status, 201);
  assertError(await create({ title: 'unique title' }), 409, 'conflict');

  // A unique index the existing rows already break is refused before anything changes.
  const clash = await patchCollection({ indexes: [{ name: 'by_sku', fields: ['sku'], unique: true }] });
  assert.equal(clash.status, 400, clash.text);
  assert.deepEqual([...userIndexes(items).keys()], ['by_title_u'], 'the old indexes are kept');

  const none = await patchCollection({ indexes: [] });
  assert.deepEqual(none.body.indexes, []);
  assert.equal(userIndexes(items).size, 0);
});

test('renaming an indexed field keeps the index on the renamed column; dropping the field drops its index', async () => {
  const col = await srv.createCollection({
    name: 'renames', type: 'base', ...PUBLIC,
    fields: [{ name: 'code', type: 'text' }, { name: 'extra', type: 'text' }],
    indexes: [{ name: 'by_code', fields: ['code'], unique: true }, { name: 'by_extra', fields: ['extra'] }],
  });
  const [code, extra] = col.schema;
  const renamed = await srv.api('PATCH', '/api/collections/renames', { token: srv.suToken, body: { fields: [{ ...code, name: 'ref' }, extra] } });
  assert.equal(renamed.status, 200, renamed.text);
  assert.deepEqual(renamed.body.indexes, [{ name: 'by_code', fields: ['ref'], unique: true }, { name: 'by_extra', fields: ['extra'], unique: false }]);
  assert.deepEqual(userIndexes(col).get('by_code'), { unique: true, columns: ['ref'] });
  assert.equal((await srv.api('POST', '/api/collections/renames/records', { body: { ref: 'x' } })).status, 201);
  assertError(await srv.api('POST', '/api/collections/renames/records', { body: { ref: 'x' } }), 409, 'conflict');
  const droppedField = await srv.api('PATCH', '/api/collections/renames', { token: srv.suToken, body: { fields: [{ ...code, name: 'ref' }] } });
  assert.equal(droppedField.status, 200, droppedField.text);
  assert.deepEqual(droppedField.body.indexes.map((i: any) => i.name), ['by_code']);
  assert.deepEqual([...userIndexes(col).keys()], ['by_code']);
});

test('invalid index definitions are 400 with indexes.<i> codes', async () => {
  const cases: Array<[unknown, string]> = [
    [[{ name: 'x', fields: ['nope'] }], 'validation_not_found'],
    [[{ name: 'x', fields: ['sku'] }, { name: 'X', fields: ['title'] }], 'validation_duplicate_name'],
    [[{ name: 'bad name', fields: ['sku'] }], 'validation_invalid_name'],
    [[{ name: 'x', fields: [] }], 'validation_required'],
    [['DROP TABLE items'], 'validation_value'],
  ];
  for (const [indexes, code] of cases) {
    const r = await patchCollection({ indexes });
    assertError(r, 400, 'validation_failed');
    const key = Object.keys(r.body.data).find((k) => k.startsWith('indexes.'));
    assert.equal(key && r.body.data[key].code, code, `${JSON.stringify(indexes)}: ${r.text}`);
  }
  assertError(await patchCollection({ indexes: 'nope' }), 400, 'validation_failed');
});

test('every collection has an index on created that a page sorted by created walks; a database made before gets it at start', async () => {
  // the index is the table's own (named by the collection id), beside the declared ones
  const byCreated = (c: any) => [...dbIndexes(c.name)].find(([, v]) => v.columns.length === 1 && v.columns[0] === 'created');
  assert.ok(byCreated(items), 'items has an index on created');
  assert.ok(!items.indexes.some((ix: any) => ix.fields.includes('created')), 'it is not one of the collection\'s declared indexes');
  if (TEST_BACKEND !== 'postgres') {
    // SQLite's plan of a filtered page, newest first: the index, no sort of the matching rows
    // (PostgreSQL's plans: test/unit/pg/sort-index.test.ts)
    const plan = withDb(srv.dataDir, (db) => (db.prepare('EXPLAIN QUERY PLAN SELECT r."id" FROM "items" r WHERE r."shelf" > ? ORDER BY r."created" DESC, r.rowid DESC LIMIT 20').raw(true).all([3]) as unknown[][]).map((r) => String(r[3])));
    assert.ok(plan.some((d) => d.includes(byCreated(items)![0])), plan.join('; '));
    assert.ok(!plan.some((d) => d.includes('TEMP B-TREE')), plan.join('; '));
  }
  // a database made before: the index is gone; the next start makes it again and says so
  const dir = mkdtempSync(join(tmpdir(), 'svc-created-'));
  const first = await startSvc({ dataDir: dir });
  const made = await first.createCollection({ name: 'older', type: 'base', ...PUBLIC, fields: [{ name: 'n', type: 'number' }] });
  await first.stop();
  const createdIndex = (c: any) => (TEST_BACKEND === 'postgres' ? pgIndexesIn(dir, c.name) : sqliteIndexesIn(dir, c.name)).find((n) => n.includes('created'));
  const name = createdIndex(made);
  assert.ok(name);
  withDb(dir, (db) => db.prepare(`DROP INDEX "${name}"`).run([]));
  assert.equal(createdIndex(made), undefined);
  const upgraded = await startSvc({ dataDir: dir, superuser: false });
  try {
    assert.equal(createdIndex(made), name, 'the start made the index again');
    assert.match(upgraded.stderr(), /older[^\n]*created|created[^\n]*older/);
    assert.equal((await upgraded.api('GET', '/api/collections/older/records?sort=-created')).status, 200);
  } finally {
    await upgraded.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Index names of `table` in the database of data directory `dir` (SQLite file). */
function sqliteIndexesIn(dir: string, table: string): string[] {
  return withDb(dir, (db) => (db.prepare('SELECT name FROM pragma_index_list(?)').raw(true).all([table]) as string[][]).map((r) => r[0]));
}

/** The same on PostgreSQL (the directory's database). */
function pgIndexesIn(dir: string, table: string): string[] {
  return withDb(dir, (db) => (db.prepare('SELECT indexname FROM pg_indexes WHERE tablename = ?').raw(true).all([table]) as string[][]).map((r) => r[0]));
}
