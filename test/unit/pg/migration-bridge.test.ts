/**
 * The app migrations' blocking connection on PostgreSQL (src/store/pg/migrations-sql.ts,
 * MigrationBridge; its worker workers/pg-reader.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts): statements answered synchronously, errors with their SQLSTATE,
 * statement_timeout before the bridge's own timeout, a backend that stops answering (the main
 * thread gives up, the worker and its connection end), and close() leaving no thread or
 * connection. The bridge exists only for a migration run: PgReader has none (reader.test.ts).
 *
 * Runs from the TypeScript sources, but the worker is the compiled one
 * (dist/workers/pg-reader.js, see src/store/worker-url.ts): `npm run build` first.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import { MigrationBridge, PgBridgeTimeout } from '../../../src/store/pg/migrations-sql.js';

const skip = postgresSkipReason() ?? false;
let server: Postgres | null = null;
let url = '';
let admin: pg.Client;

before(async () => {
  if (skip) return;
  server = await startPostgres();
  url = await server.createDatabase('migration_bridge');
  await (admin = new pg.Client({ connectionString: url })).connect();
});

after(async () => {
  await admin?.end().catch(() => undefined);
  if (server) await server.stop();
});

async function backends(app: string): Promise<number[]> {
  const r = await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app]);
  return r.rows.map((x: { pid: number }) => x.pid);
}

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const errCode = (code: string) => (err: unknown): boolean => {
  assert.equal((err as { code?: string }).code, code, String(err));
  return true;
};

test('statements answer synchronously, with rows, fields, changes and SQLSTATE errors; close() leaves nothing', { skip }, async () => {
  const threads = (): number => readdirSync('/proc/self/task').length;
  const before = threads();
  const b = await MigrationBridge.start(url, 'rt-migrate');
  assert.ok(threads() > before, 'the bridge runs a thread while the run lasts');
  b.run('CREATE TABLE m (id text PRIMARY KEY, n bigint)');
  assert.equal(b.run('INSERT INTO m VALUES (?, ?), (?, ?)', ['a', 1, 'b', 2]).changes, 2);
  const r = b.run('SELECT id, n, \'?\' AS q FROM m ORDER BY id');
  assert.deepEqual(r.fields, ['id', 'n', 'q']);
  assert.deepEqual(r.rows, [['a', 1n, '?'], ['b', 2n, '?']]);
  assert.throws(() => b.run('SELECT * FROM no_such_table'), (err: unknown) => err instanceof pg.DatabaseError && errCode('42P01')(err));
  // a transaction goes on on the same connection
  b.run('BEGIN');
  b.run('INSERT INTO m VALUES (?, ?)', ['c', 3]);
  b.run('ROLLBACK');
  assert.equal(b.run('SELECT count(*) FROM m').rows[0][0], 2n);
  assert.equal((await backends('rt-migrate')).length, 1);
  await b.close();
  await until('the thread to end', async () => threads() <= before, 3000);
  await until('its connection to end', async () => (await backends('rt-migrate')).length === 0, 3000);
  assert.throws(() => b.run('SELECT 1'), /closed/);
});

test('statement_timeout answers 57014 first; a silent backend makes the main thread give up, ending the worker and its connection', { skip }, async () => {
  const b = await MigrationBridge.start(url, 'rt-migrate-stop', 600);
  try {
    const t0 = performance.now();
    assert.throws(() => b.run('SELECT pg_sleep(5)'), errCode('57014'));
    assert.ok(performance.now() - t0 < 1500);
    assert.equal(b.run('SELECT 3').rows[0][0], 3n);
    const [pid] = await backends('rt-migrate-stop');
    assert.ok(pid > 0);
    // a backend that stops answering (SIGSTOP): statement_timeout cannot fire, the main thread must not hang
    process.kill(pid, 'SIGSTOP');
    try {
      const t1 = performance.now();
      assert.throws(() => b.run('SELECT 4'), (err: unknown) => err instanceof PgBridgeTimeout);
      const waited = performance.now() - t1;
      assert.ok(waited >= 590 && waited < 2000, `gave up after ${waited.toFixed(0)} ms`);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    assert.throws(() => b.run('SELECT 5'), /closed/, 'the run is over: no new connection');
    await until('the abandoned backend to go', async () => (await backends('rt-migrate-stop')).length === 0, 5000);
  } finally {
    await b.close();
  }
});
