/**
 * (Runs the built module: a worker thread started from TypeScript sources gets no tsx loader on Node 20.)
 * The change feed (issue 13): once per committed transaction the writer reports every record it
 * created, updated or deleted — trigger side effects and cascades included, failed jobs excluded —
 * merged per record, before any job of that commit is answered.
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
  writer.changes.subscribe((b) => batches.push(b));
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
    await fn(writer, batches);
  } finally {
    await writer.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const flat = (batches: ChangeBatch[]) => batches.flatMap((b) => b.changes.map((c) => `${c.op} ${c.collection}/${c.id}`));

test('creates, updates, deletes, cascades and side effects, merged per record; tables outside _collections unseen', async () => {
  await withWriter(async (w, batches) => {
    let settledAfterFeed = false;
    const seen = () => batches.length;
    const job = w.write([
      { sql: `INSERT INTO "authors" VALUES ('a1', 'Ann'), ('a2', 'Bo')`, params: [] },
      { sql: `INSERT INTO "books" ("id", "author", "title") VALUES ('b1', 'a1', 'x'), ('b2', 'a2', 'y')`, params: [] },
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
    batches.length = 0;
    await w.write([
      { sql: `INSERT INTO "authors" VALUES ('a3', 'C')`, params: [] },
      { sql: `DELETE FROM "authors" WHERE "id" = 'a3'`, params: [] },
      { sql: `DELETE FROM "authors" WHERE "id" = 'a1'`, params: [] },
      { sql: `INSERT INTO "authors" VALUES ('a1', 'again')`, params: [] },
    ]);
    assert.deepEqual(flat(batches), ['delete c_a/a3', 'update c_a/a1', 'delete c_b/b1'], 'create+delete is a delete; delete+create is an update');
  });
});

test('a failed job reports nothing; its group still reports the jobs that committed', async () => {
  await withWriter(async (w, batches) => {
    const ok = w.write([{ sql: `INSERT INTO "authors" VALUES ('k1', 'kept')`, params: [] }]);
    const bad = w.write([
      { sql: `INSERT INTO "authors" VALUES ('g1', 'gone')`, params: [] },
      { sql: 'SELECT 1 WHERE 0', params: [], expect: 'row', fail: { status: 403, code: 'forbidden', message: 'no' } },
    ]);
    const dup = w.write([{ sql: `INSERT INTO "authors" VALUES ('k1', 'dup')`, params: [] }]);
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
    await w.write([{ sql: `INSERT INTO "later" VALUES ('l1')`, params: [] }]);
    await w.write([
      { sql: 'ALTER TABLE "later" RENAME TO "renamed"', params: [] },
      { sql: `UPDATE "_collections" SET "name" = 'renamed' WHERE "id" = 'c_l'`, params: [] },
    ]);
    await w.write([{ sql: `INSERT INTO "renamed" VALUES ('l2')`, params: [] }]);
    assert.deepEqual(flat(batches).filter((x) => x.includes('c_l')), ['create c_l/l1', 'create c_l/l2']);
  });
});

test('a bulk change past the listing limit names the collection instead', async () => {
  await withWriter(async (w, batches) => {
    await w.write([{ sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000) INSERT INTO "authors" SELECT 'x' || i, 'n' FROM n`, params: [] }]);
    assert.equal(batches.length, 1);
    assert.deepEqual(batches[0].changes, []);
    assert.deepEqual(batches[0].truncated, ['c_a']);
  });
});
