/**
 * (Runs the built module: a worker thread started from TypeScript sources gets no tsx loader on Node 20.)
 * Group commit on the writer thread: many jobs share a transaction, each job applies whole or not
 * at all, a failing job never sinks the others, and every acknowledged job is durable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { WriterClient, WriteError } from '../../../dist/src/store/sqlite/writer-client.js';
import { ApiError, toApiError } from '../../../dist/src/errors/api-error.js';
import { GuardFailed } from '../../../dist/src/store/errors/store-errors.js';

test('failing jobs in a group roll back alone; the rest commit and stay committed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-writer-'));
  const path = join(dir, 'data.db');
  const writer = await WriterClient.start(path);
  try {
    await writer.write([{ sql: 'CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER)', params: [] }]);
    let commits = 0;
    writer.committed.subscribe(() => commits++);
    const jobs: Promise<unknown>[] = [];
    const expectOk: string[] = [];
    for (let i = 0; i < 300; i++) {
      const id = `r${i}`;
      if (i % 10 === 3) {
        // two rows, the second violates the primary key: the first row must not survive
        jobs.push(writer.write([
          { sql: 'INSERT INTO t VALUES (?, ?)', params: [`${id}-a`, i] },
          { sql: 'INSERT INTO t VALUES (?, ?)', params: ['r0', i] },
        ]));
      } else if (i % 10 === 7) {
        // a guard that fails after a write
        jobs.push(writer.write([
          { sql: 'INSERT INTO t VALUES (?, ?)', params: [id, i] },
          { sql: 'SELECT 1 WHERE 0', params: [], expect: 'row', fail: { status: 403, code: 'forbidden', message: 'no' } },
        ]));
      } else {
        expectOk.push(id);
        jobs.push(writer.write([{ sql: 'INSERT INTO t VALUES (?, ?)', params: [id, i] }]));
      }
    }
    const results = await Promise.allSettled(jobs);
    results.forEach((r, i) => {
      if (i % 10 === 3) {
        assert.equal(r.status, 'rejected');
        assert.ok((r as PromiseRejectedResult).reason instanceof WriteError);
        assert.match((r as PromiseRejectedResult).reason.sqliteCode, /^SQLITE_CONSTRAINT/);
      } else if (i % 10 === 7) {
        assert.equal(r.status, 'rejected');
        assert.ok((r as PromiseRejectedResult).reason instanceof GuardFailed);
        const e = toApiError((r as PromiseRejectedResult).reason);
        assert.ok(e instanceof ApiError);
        assert.equal(e.status, 403);
      } else assert.equal(r.status, 'fulfilled', String((r as PromiseRejectedResult).reason));
    });
    assert.ok(commits < 300, `300 jobs took ${commits} commits: they were grouped`);
  } finally {
    await writer.close();
  }
  const db = new Database(path);
  const ids = (db.prepare('SELECT id FROM t ORDER BY id').raw(true).all([]) as string[][]).map((r) => r[0]);
  db.close();
  const expected = [];
  for (let i = 0; i < 300; i++) if (i % 10 !== 3 && i % 10 !== 7) expected.push(`r${i}`);
  assert.deepEqual(ids, expected.sort());
  rmSync(dir, { recursive: true, force: true });
});
