/**
 * (Runs the built module: a worker thread started from TypeScript sources gets no tsx loader on Node 20.)
 * The change feed with a listener that reads before the later ones may see a batch (a settings or
 * schema reload, which on PostgreSQL can only read asynchronously): the batch, and every batch
 * emitted meanwhile, reach the later listeners after it settled, in commit order; the writer
 * answers the batch's jobs only then; a batch delivered late counts as one more commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WriterClient } from '../../../dist/src/store/sqlite/writer-client.js';
import { ChangeFeed, type ChangeBatch } from '../../../dist/src/store/change-feed.js';

const batch = (commit: number, id: string): ChangeBatch => ({ commit, changes: [{ collection: 'c', id, op: 'create' }], truncated: [] });

test('an asynchronous listener holds its batch and the later ones from the listeners after it, in order', async () => {
  let late = 0;
  const feed = new ChangeFeed(() => void late++);
  const seen: string[] = [];
  let release!: () => void;
  feed.subscribe((b) => void seen.push(`first ${b.changes[0].id}`));
  feed.subscribe((b) => {
    seen.push(`reload ${b.changes[0].id}`);
    if (b.changes[0].id !== 'a') return undefined;
    return new Promise<void>((r) => (release = r));
  });
  feed.subscribe((b) => void seen.push(`last ${b.changes[0].id}`));

  assert.equal(feed.emit(batch(1, 'x')), undefined, 'synchronous listeners only: delivered on return');
  const a = feed.emit(batch(2, 'a'));
  assert.ok(a instanceof Promise);
  const b = feed.emit(batch(3, 'b'));
  assert.ok(b instanceof Promise, 'a batch behind a waiting one waits too');
  const order: string[] = [];
  void a.then(() => order.push('a'));
  void b.then(() => order.push('b'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen, ['first x', 'reload x', 'last x', 'first a', 'reload a'], 'nothing after the waiting listener yet, no later batch');
  release();
  await b;
  assert.deepEqual(seen.slice(5), ['last a', 'first b', 'reload b', 'last b']);
  assert.deepEqual(order, ['a', 'b'], 'emitters told in commit order');
  assert.equal(late, 2, 'each batch delivered late counted once');
  assert.equal(feed.emit(batch(4, 'y')), undefined, 'the backlog is gone: synchronous again');
});

test('a listener removed while its batch waited is skipped', async () => {
  const feed = new ChangeFeed();
  const seen: string[] = [];
  feed.subscribe(() => new Promise<void>((r) => setImmediate(r)));
  const stop = feed.subscribe(() => void seen.push('removed'));
  feed.subscribe(() => void seen.push('kept'));
  const p = feed.emit(batch(1, 'a'));
  stop();
  await p;
  assert.deepEqual(seen, ['kept']);
});

test('the SQLite writer answers a job once an asynchronous listener has its batch', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-feed-async-'));
  const writer = await WriterClient.start(join(dir, 'data.db'));
  try {
    await writer.write([{ sql: 'CREATE TABLE "t" ("id" TEXT PRIMARY KEY)', params: [] }]);
    const events: string[] = [];
    writer.changes.subscribe(async (b) => {
      events.push(`reload start ${b.commit}`);
      await new Promise((r) => setTimeout(r, 30));
      events.push('reload end');
    });
    const commitsBefore = writer.commits;
    await writer.write([{ sql: 'INSERT INTO "t" VALUES (?)', params: ['a'], creates: { collection: 'c', id: 'a' } }]);
    events.push('answered');
    assert.deepEqual(events, [`reload start ${commitsBefore + 1}`, 'reload end', 'answered']);
    assert.equal(writer.commits, commitsBefore + 2, 'the late delivery counted as one more commit');
  } finally {
    await writer.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
