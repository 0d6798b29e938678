/**
 * (Runs the built module: a worker thread started from TypeScript sources gets no tsx loader on Node 20.)
 * The change feed: once per committed transaction, every record created (named by the
 * creating step), updated or deleted (noted by the writer's triggers: side effects and cascades
 * included), failed jobs excluded, merged per record, before any job of that commit is answered.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WriterClient } from '../../../dist/src/store/sqlite/writer-client.js';
import type { ChangeBatch } from '../../../dist/src/store/change-feed.js';

async function withWriter(fn: (w: WriterClient, batches: ChangeBatch[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-feed-'));
  const writer = await WriterClient.start(join(dir, 'data.db'));
  const batches: ChangeBatch[] = [];
  writer.changes.subscribe((b) => void batches.push(b));
  try {
    // the record tables the feed watches are the ones `_collections` names
    await writer.write([
      { sql: 'CREATE TABLE "_collections" ("id" TEXT PRIMARY KEY, "name" TEXT)', params: [] },
      { sql: 'CREATE TABLE "authors" ("id" TEXT PRIMARY KEY, "name" TEXT)', params: [] },
      { sql: 'CREATE TABLE "books" ("id" TEXT PRIMARY KEY, "author" TEXT, "title" TEXT, "n" INTEGER DEFAULT 0)', params: [] },
      { sql: 'CREATE TABLE "plain" ("id" TEXT PRIMARY KEY)', params: [] },
      { sql: `INSERT INTO "_collections" VALUES ('c_a', 'authors'), ('c_b', 'books')`, params: [] },
      // a cascade, as relation fields make them, and a side effect on the row itself
      { sql: 'CREATE TRIGGER "casc" AFTER DELETE ON "authors" BEGIN DELETE FROM "books" WHERE "author" = OLD."id"; END', params: [] },
      { sql: 'CREATE TRIGGER "bump" AFTER INSERT ON "books" BEGIN UPDATE "books" SET "n" = 1 WHERE "id" = NEW."id"; END', params: [] },
    ]);
    batches.length = 0;
    writer.captureDeletedRows(['c_a', 'c_b']);
    await fn(writer, batches);
  } finally {
    await writer.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An INSERT step of one record that names it, as the record service's creates do. */
const insert = (table: string, collection: string, values: unknown[]) => ({
  sql: `INSERT INTO "${table}" VALUES (${values.map(() => '?').join(', ')})`, params: values, creates: { collection, id: String(values[0]) },
});
const flat = (batches: ChangeBatch[]) => batches.flatMap((b) => b.changes.map((c) => `${c.op} ${c.collection}/${c.id}`));

test('named creates, updates, deletes, cascades and side effects, merged per record; tables outside _collections unseen', async () => {
  await withWriter(async (w, batches) => {
    let settledAfterFeed = false;
    const seen = () => batches.length;
    const job = w.write([
      insert('authors', 'c_a', ['a1', 'Ann']),
      insert('authors', 'c_a', ['a2', 'Bo']),
      insert('books', 'c_b', ['b1', 'a1', 'x', 0]),
      insert('books', 'c_b', ['b2', 'a2', 'y', 0]),
      { sql: `INSERT INTO "plain" VALUES ('p1')`, params: [] },
    ]).then(() => {
      settledAfterFeed = seen() === 1;
    });
    await job;
    assert.ok(settledAfterFeed, 'the feed is delivered before the job is answered');
    // b1's side-effect update merges into its create
    assert.deepEqual(flat(batches).sort(), ['create c_a/a1', 'create c_a/a2', 'create c_b/b1', 'create c_b/b2']);
    assert.equal(batches[0].commit, w.commits);
    batches.length = 0;
    await w.write([{ sql: `UPDATE "authors" SET "name" = 'Ann2' WHERE "id" = 'a1'`, params: [] }]);
    await w.write([{ sql: `DELETE FROM "authors" WHERE "id" = 'a2'`, params: [] }]);
    assert.deepEqual(flat(batches), ['update c_a/a1', 'delete c_a/a2', 'delete c_b/b2'], 'the cascade is reported with its cause');
    const [, delA2, delB2] = batches.flatMap((b) => b.changes);
    assert.deepEqual(delA2.old, { id: 'a2', name: 'Bo' }, 'a delete carries its row as it was');
    assert.deepEqual(delB2.old, { id: 'b2', author: 'a2', title: 'y', n: 1 }, 'a cascaded delete too');
    assert.equal(batches[0].changes[0].old, undefined, 'an update carries no old row');
    batches.length = 0;
    await w.write([
      insert('authors', 'c_a', ['a3', 'C']),
      { sql: `UPDATE "authors" SET "name" = 'C2' WHERE "id" = 'a3'`, params: [] },
      insert('authors', 'c_a', ['a4', 'D']),
      { sql: `DELETE FROM "authors" WHERE "id" = 'a4'`, params: [] },
    ]);
    assert.deepEqual(flat(batches), ['create c_a/a3', 'delete c_a/a4'], 'create+update is a create; create+delete is a delete');
    assert.deepEqual(batches[0].changes[1].old, { id: 'a4', name: 'D' });
  });
});

test('a failed job reports nothing; its group still reports the jobs that committed', async () => {
  await withWriter(async (w, batches) => {
    const ok = w.write([insert('authors', 'c_a', ['k1', 'kept'])]);
    const bad = w.write([
      insert('authors', 'c_a', ['g1', 'gone']),
      { sql: `UPDATE "authors" SET "name" = 'changed' WHERE "id" = 'k1'`, params: [] },
      { sql: 'SELECT 1 WHERE 0', params: [], expect: 'row', fail: { status: 403, code: 'forbidden', message: 'no' } },
    ]);
    const dup = w.write([insert('authors', 'c_a', ['k1', 'dup'])]);
    await ok;
    await assert.rejects(bad);
    await assert.rejects(dup);
    assert.deepEqual(flat(batches), ['create c_a/k1']);
  });
});

test('a table created and registered later is watched from the next write, also after a rename', async () => {
  await withWriter(async (w, batches) => {
    await w.write([
      { sql: 'CREATE TABLE "later" ("id" TEXT PRIMARY KEY)', params: [] },
      { sql: `INSERT INTO "_collections" VALUES ('c_l', 'later')`, params: [] },
    ]);
    await w.write([{ sql: `INSERT INTO "later" VALUES ('l1')`, params: [] }, { sql: `UPDATE "later" SET "id" = 'l1' WHERE "id" = 'l1'`, params: [] }]);
    await w.write([
      { sql: 'ALTER TABLE "later" RENAME TO "renamed"', params: [] },
      { sql: `UPDATE "_collections" SET "name" = 'renamed' WHERE "id" = 'c_l'`, params: [] },
    ]);
    await w.write([{ sql: `INSERT INTO "renamed" VALUES ('l2')`, params: [] }, { sql: `DELETE FROM "renamed" WHERE "id" = 'l1'`, params: [] }]);
    assert.deepEqual(flat(batches).filter((x) => x.includes('c_l')), ['update c_l/l1', 'delete c_l/l1']);
  });
});

test('a bulk change past the listing limit names the collection instead', async () => {
  await withWriter(async (w, batches) => {
    await w.write([{ sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000) INSERT INTO "authors" SELECT 'x' || i, 'n' FROM n`, params: [] }]);
    assert.equal(batches.length, 0, 'inserts without a named record are not noted');
    await w.write([{ sql: `UPDATE "authors" SET "name" = 'm'`, params: [] }]);
    assert.equal(batches.length, 1);
    assert.deepEqual(batches[0].changes, []);
    assert.deepEqual(batches[0].truncated, ['c_a']);
  });
});

test('deletes carry their row only in the collections asked for', async () => {
  await withWriter(async (w, batches) => {
    w.captureDeletedRows(['c_b']);
    await w.write([insert('authors', 'c_a', ['x1', 'X']), insert('books', 'c_b', ['y1', 'x1', 't', 0])]);
    batches.length = 0;
    await w.write([{ sql: `DELETE FROM "authors" WHERE "id" = 'x1'`, params: [] }]);
    const [a, b] = batches.flatMap((x) => x.changes);
    assert.equal(a.op, 'delete');
    assert.equal(a.old, undefined, 'authors were not asked for');
    assert.deepEqual(b.old, { id: 'y1', author: 'x1', title: 't', n: 1 });
  });
});
