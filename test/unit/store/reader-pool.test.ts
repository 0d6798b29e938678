/**
 * The reader pool's scheduling (src/store/sqlite/reader.ts): whether a reader thread is
 * free is read from what the threads report finished (shared memory), so a main thread that is
 * busy, and so has not taken the answers in, still sees a thread free again; reads for the pool
 * wait in the Reader's queue and all come back with their own answers. Real worker threads
 * (dist/workers/reader.js: `npm run build` first) on a real database file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { Reader } from '../../../src/store/sqlite/reader.js';

let dir: string;
let reader: Reader;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-reader-pool-'));
  const path = join(dir, 'data.db');
  const db = new Database(path);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('CREATE TABLE t (n INTEGER)');
  db.exec('INSERT INTO t SELECT value FROM generate_series(1, 20000)');
  db.close();
  reader = new Reader(path, 1);
  // start the thread and its connection
  assert.deepEqual(await reader.get('SELECT 1', [], { pool: true }), [1n]);
});

after(async () => {
  await reader?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Busy-waits (never yielding to the event loop) until `ok()` or `ms` pass; returns whether it held. */
function spinUntil(ok: () => boolean, ms: number): boolean {
  const end = performance.now() + ms;
  while (performance.now() < end) if (ok()) return true;
  return ok();
}

test('a reader thread that finished is free again before the main thread takes its answer in', async () => {
  // about a million rows each (tens of milliseconds): neither read can finish before the checks
  // right after they are sent
  const sql = 'SELECT count(*), sum(n) FROM t, generate_series(1, 50) g WHERE (n + g.value) % ? = 0';
  // one read running and one waiting behind it: the balanced reads that may go to one thread
  const first = reader.getBalanced(sql, [3]);
  const second = reader.getBalanced(sql, [7]);
  assert.ok(first instanceof Promise && second instanceof Promise, 'both went to the worker');
  assert.equal(reader.workerFree(), false, 'two reads held by the one thread');
  // The main thread stays busy (no event-loop turn, so no answer is taken in); the thread's
  // reports alone make it free again. Counting by answers taken in, this never turned true.
  assert.ok(spinUntil(() => reader.workerFree(), 20_000), 'the thread was never seen free while the main thread was busy');
  // a third balanced read now goes to the thread too, not to the main thread
  const third = reader.getBalanced(sql, [11]);
  assert.ok(third instanceof Promise);
  // each answer is its own: the same reads on the main thread
  assert.deepEqual(await first, reader.getSync(sql, [3]));
  assert.deepEqual(await second, reader.getSync(sql, [7]));
  assert.deepEqual(await third, reader.getSync(sql, [11]));
});

test('reads queued for the pool come back in full, each with its own answer', async () => {
  const divisors = Array.from({ length: 40 }, (_, i) => i + 2);
  const answers = await Promise.all(divisors.map((d) => (d % 2 ? reader.all('SELECT count(*) FROM t WHERE n % ? = 0', [d], { pool: true }) : reader.get('SELECT count(*) FROM t WHERE n % ? = 0', [d], { pool: true }))));
  answers.forEach((a, i) => {
    const want = BigInt(Math.floor(20000 / divisors[i]));
    assert.deepEqual(divisors[i] % 2 ? a : [a], [[want]], `divisor ${divisors[i]}`);
  });
  assert.equal(reader.workerFree(), true, 'nothing held once all are answered');
});

test('one SQL text read by all() and then by get() answers for the new parameters, on the main thread and on the pool', async () => {
  const sql = 'SELECT count(*) FROM t WHERE n % ? = 0';
  assert.deepEqual(reader.allSync(sql, [3]), [[6666n]]);
  assert.deepEqual(reader.getSync(sql, [4]), [5000n]);
  assert.deepEqual(await reader.all(sql, [3], { pool: true }), [[6666n]]);
  assert.deepEqual(await reader.get(sql, [4], { pool: true }), [5000n]);
});

/**
 * With one thread of `two` running a read of a second or more, a cheap read, then (the main thread
 * spinning, so it takes no answer in) another: the second must reach the idle thread too.
 */
async function cheapReadPassesLongRead(two: Reader): Promise<void> {
  // both threads started, with their connections
  await Promise.all([two.get('SELECT 1', [], { pool: true }), two.get('SELECT 2', [], { pool: true })]);
  let longDone = false;
  const long = two.get('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) FROM c', [6_000_000], { pool: true }).finally(() => { longDone = true; });
  const first = two.get('SELECT upper(?)', ['a'], { pool: true });
  spinUntil(() => false, 300);
  const second = two.get('SELECT upper(?)', ['b'], { pool: true });
  assert.deepEqual(await first, ['A']);
  assert.deepEqual(await second, ['B']);
  assert.equal(longDone, false, 'the second cheap read waited behind the long one');
  assert.deepEqual(await long, [6_000_000n]);
}

test('with two reader threads, a cheap read goes to the idle thread, not behind a long read, while the main thread is busy', async () => {
  const two = new Reader(join(dir, 'data.db'), 2);
  try {
    await cheapReadPassesLongRead(two);
  } finally {
    await two.close();
  }
});

test('threads that idle out give their slots back: later threads still report what they finished', async () => {
  const two = new Reader(join(dir, 'data.db'), 2, 100);
  try {
    // ten times two threads started and ended: more than the 16 slots a pool has
    for (let i = 0; i < 10; i++) {
      await Promise.all([two.get('SELECT 1', [], { pool: true }), two.get('SELECT 2', [], { pool: true })]);
      await new Promise((r) => setTimeout(r, 400));
    }
    await cheapReadPassesLongRead(two);
  } finally {
    await two.close();
  }
});

test('a read that failed leaves no parameters behind: the next read of the same SQL answers for its own', async () => {
  // libsql 0.5.29 answered the next get() of a statement that threw with the failed call's row
  const sql = "SELECT ?, json_extract(?, '$.a')";
  assert.throws(() => reader.getSync(sql, ['ann', '{bad']), /malformed JSON/);
  assert.deepEqual(reader.getSync(sql, ['ben', '{"a":"ben"}']), ['ben', 'ben']);
  assert.throws(() => reader.allSync(sql, ['ann', '{bad']), /malformed JSON/);
  assert.deepEqual(reader.allSync(sql, ['ben', '{"a":"ben"}']), [['ben', 'ben']]);
  await assert.rejects(reader.get(sql, ['ann', '{bad'], { pool: true }), /malformed JSON/);
  assert.deepEqual(await reader.get(sql, ['ben', '{"a":"ben"}'], { pool: true }), ['ben', 'ben']);
  await assert.rejects(reader.all(sql, ['ann', '{bad'], { pool: true }), /malformed JSON/);
  assert.deepEqual(await reader.all(sql, ['ben', '{"a":"ben"}'], { pool: true }), [['ben', 'ben']]);
});

test('poolStats counts the reads the pool ran and the time they took, and nothing is busy once they are answered', async () => {
  const before = reader.poolStats();
  assert.equal(before.size, 1);
  await Promise.all([3, 5, 7].map((d) => reader.all('SELECT count(*) FROM t WHERE n % ? = 0', [d], { pool: true })));
  const after = reader.poolStats();
  assert.equal(after.completed - before.completed, 3);
  assert.ok(after.busyMs > before.busyMs);
  assert.equal(after.busy, 0);
  assert.equal(after.waiting, 0);
});
