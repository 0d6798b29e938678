/**
 * (Runs the built module: a worker thread started from TypeScript sources gets no tsx loader on Node 20.)
 * The writer's wire format (src/store/write-job.ts): every kind of step result, guard and SQLite
 * failures with what the caller attached, parameters of every bound type, and jobs that queue up
 * while a group is being applied (they travel as one batch and all settle).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WriterClient, WriteError } from '../../../dist/src/store/sqlite/writer-client.js';
import { ApiError, toApiError } from '../../../dist/src/errors/api-error.js';
import { GuardFailed, WriterClosed } from '../../../dist/src/store/errors/store-errors.js';

async function withWriter(fn: (w: InstanceType<typeof WriterClient>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wire-'));
  const writer = await WriterClient.start(join(dir, 'data.db'));
  try {
    await fn(writer);
  } finally {
    await writer.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('step results: changes, rows with columns, and every parameter type round-trips', async () => {
  await withWriter(async (w) => {
    await w.write([{ sql: 'CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, r REAL, b BLOB, z TEXT)', params: [] }]);
    const blob = Buffer.from([0, 1, 2, 255]);
    const res = await w.write([
      { sql: 'INSERT INTO t VALUES (?, ?, ?, ?, ?)', params: ['a', 9007199254740993n, 1.5, blob, null] },
      { sql: 'INSERT INTO t VALUES (?, ?, ?, ?, ?)', params: ['b', 2, -0.25, Buffer.alloc(0), 'x'] },
      { sql: 'UPDATE t SET z = ? WHERE id IN (?, ?)', params: ['y', 'a', 'b'] },
      { sql: 'SELECT id, n, r, b, z FROM t ORDER BY id', params: [], returnRows: true },
      { sql: 'SELECT 1 FROM t WHERE id = ?', params: ['a'], expect: 'row' },
      { sql: 'DELETE FROM t WHERE id = ?', params: ['nope'], returnRows: true },
    ]);
    assert.equal(res.length, 6);
    assert.deepEqual(res.map((r) => r.changes), [1, 1, 2, 0, 0, 0]);
    assert.deepEqual(res[3].columns, ['id', 'n', 'r', 'b', 'z']);
    const rows = res[3].rows!;
    assert.equal(rows.length, 2);
    assert.equal(rows[0][0], 'a');
    assert.equal(rows[0][1], 9007199254740993n, 'integers come back as BigInt, exactly');
    assert.equal(rows[0][2], 1.5);
    assert.deepEqual(Buffer.from(rows[0][3] as Uint8Array), blob);
    assert.equal(rows[0][4], 'y');
    assert.equal(rows[1][1], 2n);
    assert.equal(res[4].rows, undefined, 'a step without returnRows carries no rows');
    assert.equal(res[5].rows, undefined, 'a write with returnRows and no RETURNING has no rows');
  });
});

test('a failing guard rejects with the fail the caller attached; an SQLite error with its code and step', async () => {
  await withWriter(async (w) => {
    await w.write([{ sql: 'CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER)', params: [] }]);
    await w.write([{ sql: 'INSERT INTO t VALUES (?, ?)', params: ['a', 1] }]);
    const data = { author: { code: 'validation_not_found', message: 'The related record does not exist.' } };
    const [rowGuard, changeGuard, defaultGuard, sqlite, ok] = await Promise.allSettled([
      w.write([
        { sql: 'INSERT INTO t VALUES (?, ?)', params: ['b', 2] },
        { sql: 'SELECT 1 FROM t WHERE id = ?', params: ['missing'], expect: 'row', fail: { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data } },
      ]),
      w.write([{ sql: 'UPDATE t SET v = 5 WHERE id = ?', params: ['missing'], expect: 'change', fail: { status: 404, code: 'not_found', message: 'gone' } }]),
      w.write([{ sql: 'SELECT 1 WHERE 0', params: [], expect: 'row' }]),
      w.write([
        { sql: 'INSERT INTO t VALUES (?, ?)', params: ['c', 3] },
        { sql: 'INSERT INTO t VALUES (?, ?)', params: ['a', 4] },
      ]),
      w.write([{ sql: 'INSERT INTO t VALUES (?, ?)', params: ['d', 5] }]),
    ]);
    assert.equal(rowGuard.status, 'rejected');
    // the writer rejects with GuardFailed carrying the step's fail; the API answers it (toApiError)
    assert.ok((rowGuard as PromiseRejectedResult).reason instanceof GuardFailed);
    assert.equal((rowGuard as PromiseRejectedResult).reason.step, 1);
    const e1 = toApiError((rowGuard as PromiseRejectedResult).reason);
    assert.ok(e1 instanceof ApiError);
    assert.equal(e1.status, 400);
    assert.equal(e1.code, 'validation_failed');
    assert.deepEqual(e1.data, data);
    const e2 = toApiError((changeGuard as PromiseRejectedResult).reason);
    assert.ok(e2 instanceof ApiError);
    assert.equal(e2.status, 404);
    assert.equal(e2.message, 'gone');
    assert.ok((defaultGuard as PromiseRejectedResult).reason instanceof GuardFailed);
    const e3 = toApiError((defaultGuard as PromiseRejectedResult).reason);
    assert.ok(e3 instanceof ApiError);
    assert.equal(e3.status, 404, 'a guard without fail answers not found');
    const e4 = (sqlite as PromiseRejectedResult).reason;
    assert.ok(e4 instanceof WriteError);
    assert.match(e4.sqliteCode, /^SQLITE_CONSTRAINT/);
    assert.equal(e4.step, 1);
    assert.equal(ok.status, 'fulfilled');
    const [check] = await w.write([{ sql: 'SELECT id FROM t ORDER BY id', params: [], returnRows: true }]);
    assert.deepEqual(check.rows!.map((r) => r[0]), ['a', 'd'], 'failed jobs left nothing behind');
  });
});

test('jobs queued while a group is applied all settle, in few commits, each with its own results', async () => {
  await withWriter(async (w) => {
    await w.write([{ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)', params: [] }]);
    let commits = 0;
    w.committed.subscribe(() => commits++);
    const waves: Promise<Array<{ changes: number; rows?: unknown[][] }>>[] = [];
    // Three waves: the later ones are queued from inside the settlement of earlier jobs, so they
    // pile up while the writer applies a group.
    const wave = (n: number, tag: string) => {
      for (let i = 0; i < n; i++) {
        waves.push(w.write([
          { sql: 'INSERT INTO t (v) VALUES (?)', params: [`${tag}${i}`] },
          { sql: 'SELECT v FROM t WHERE rowid = last_insert_rowid()', params: [], returnRows: true },
        ]));
      }
    };
    wave(200, 'a');
    void waves[0].then(() => wave(200, 'b'));
    void waves[100].then(() => wave(200, 'c'));
    await new Promise((r) => setTimeout(r, 50));
    const results = await Promise.all(waves);
    assert.equal(results.length, 600);
    const seen = new Set(results.map((r) => String(r[1].rows![0][0])));
    assert.equal(seen.size, 600, 'every job got the row it inserted');
    assert.ok(commits < 600 / 4, `600 jobs took ${commits} commits`);
    assert.equal(w.inFlight, 0);
  });
});

test('a write after close answers 503', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wire-'));
  const w = await WriterClient.start(join(dir, 'data.db'));
  await w.close();
  await assert.rejects(w.write([{ sql: 'SELECT 1', params: [] }]), (e: unknown) => e instanceof WriterClosed && toApiError(e).status === 503 && toApiError(e).code === 'overloaded');
  rmSync(dir, { recursive: true, force: true });
});

test('one statement run for rows and then as a guard binds its new parameters (libsql all() then get())', async () => {
  await withWriter(async (w) => {
    await w.write([{ sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)', params: [] }]);
    await w.write([{ sql: "INSERT INTO t SELECT value, 'x' FROM generate_series(1, 5)", params: [] }]);
    const update = 'UPDATE t SET v = ? WHERE id = ? RETURNING id, v';
    const [withRows] = await w.write([{ sql: update, params: ['c', 4], returnRows: true }]);
    assert.deepEqual(withRows.rows, [[4n, 'c']]);
    // the same SQL as a guard (a get() on libsql): it must update row 5, not run again for row 4
    await w.write([{ sql: update, params: ['d', 5], expect: 'row' }]);
    const [read] = await w.write([{ sql: 'SELECT id, v FROM t WHERE id >= 4 ORDER BY id', params: [], returnRows: true }]);
    assert.deepEqual(read.rows, [[4n, 'c'], [5n, 'd']]);
  });
});

test('a step refused by SQLite leaves no parameters behind: the same SQL then writes its own row', async () => {
  await withWriter(async (w) => {
    await w.write([{ sql: 'CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT UNIQUE)', params: [] }]);
    await w.write([{ sql: "INSERT INTO u VALUES (1, 'a'), (2, 'b'), (3, 'c')", params: [] }]);
    const update = 'UPDATE u SET v = ? WHERE id = ? RETURNING id';
    // a guard (get() on libsql) refused by the unique constraint
    await assert.rejects(w.write([{ sql: update, params: ['b', 1], expect: 'row' }]));
    // libsql 0.5.29 ran this one with the failed step's parameters and refused it too
    await w.write([{ sql: update, params: ['z', 3], expect: 'row' }]);
    const [read] = await w.write([{ sql: 'SELECT id, v FROM u ORDER BY id', params: [], returnRows: true }]);
    assert.deepEqual(read.rows, [[1n, 'a'], [2n, 'b'], [3n, 'z']]);
  });
});
