/**
 * App migrations on the server-SQL backend (src/store/pg/migrations-sql.ts) against a real
 * PostgreSQL: the MigrationTx (exec, query, script, each a promise here) inside one transaction
 * per migration, recorded with it; statements a migration did not await still run, in order,
 * before it is recorded; a failure (awaited or not) rolls its migration back, names its cause and
 * keeps the earlier ones; the event loop turns while a statement runs; a lost connection fails
 * the run; two instances starting at once apply each migration once.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import { applyMigrationsPg, appliedMigrationsPg } from '../../../src/store/pg/migrations-sql.js';
import type { RunnableMigration } from '../../../src/store/migrations.js';

const skip = postgresSkipReason() ?? false;
const ROOT = resolve(import.meta.dirname, '..', '..', '..');
let server: Postgres | null = null;

before(async () => {
  if (!skip) server = await startPostgres();
});

after(async () => {
  if (server) await server.stop();
});

async function rows(url: string, sql: string): Promise<unknown[][]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query({ text: sql, rowMode: 'array' })).rows;
  } finally {
    await c.end();
  }
}

const log: RunnableMigration = { id: '0001_log', up: (tx) => tx.script(`CREATE TABLE app_log (msg text NOT NULL);\nINSERT INTO app_log VALUES ('one? not a placeholder');`) };
const seed: RunnableMigration = {
  async up(tx) {
    const exec = tx.exec('INSERT INTO app_log VALUES (?), (?)', ['two', 'three']);
    assert.ok(exec instanceof Promise, 'on PostgreSQL a statement answers a promise');
    assert.deepEqual(await exec, { changes: 2 });
    // reads see the migration's own writes
    assert.deepEqual(await tx.query('SELECT count(*) AS n FROM app_log WHERE msg <> ?', ['x']), [{ n: 3 }]);
    // PostgreSQL's own types (docs/deployment.md, "Values read back"): integers as numbers, a boolean as a boolean
    assert.deepEqual(await tx.query('SELECT 2::int2 AS s, 3::int4 AS i, 4::int8 AS b, 1 < 2 AS yes, 1.5::float8 AS f'), [{ s: 2, i: 3, b: 4, yes: true, f: 1.5 }]);
  },
  id: '0002_seed',
};

test('migrations apply in order, each with its record; a second run applies nothing', { skip }, async () => {
  const url = await server!.createDatabase('order');
  const seen: string[] = [];
  assert.deepEqual(await appliedMigrationsPg(url), []);
  assert.deepEqual(await applyMigrationsPg(url, [log, seed], (id) => seen.push(id)), ['0001_log', '0002_seed']);
  assert.deepEqual(seen, ['0001_log', '0002_seed']);
  assert.deepEqual((await rows(url, 'SELECT msg FROM app_log ORDER BY msg')).map((r) => r[0]), ['one? not a placeholder', 'three', 'two']);
  assert.deepEqual((await appliedMigrationsPg(url)).map((a) => a.id), ['0001_log', '0002_seed']);
  assert.deepEqual(await applyMigrationsPg(url, [log, seed]), []);
});

test('a failing migration is rolled back whole and named; the ones before it stay', { skip }, async () => {
  const url = await server!.createDatabase('failing');
  // neither statement awaited: the failure is still the migration's, with its own cause
  const bad: RunnableMigration = { id: '0003_bad', up: (tx) => { void tx.exec('INSERT INTO app_log VALUES (?)', ['four']); void tx.exec('INSERT INTO nowhere VALUES (1)'); } };
  const err = await applyMigrationsPg(url, [log, seed, bad]).catch((e: unknown) => e as Error & { migrationId?: string });
  assert.ok(err instanceof Error);
  assert.equal(err.migrationId, '0003_bad');
  assert.match(err.message, /migration 0003_bad failed and was rolled back: .*nowhere/);
  assert.deepEqual((await appliedMigrationsPg(url)).map((a) => a.id), ['0001_log', '0002_seed']);
  assert.deepEqual(await rows(url, `SELECT count(*)::int FROM app_log WHERE msg = 'four'`), [[0]], 'nothing of the failed migration stays');
  // an async migration whose transaction ended cannot write afterwards
  let later: (() => void) | null = null;
  const leaky: RunnableMigration = { id: '0004_leaky', up: (tx) => { later = () => tx.exec('SELECT 1'); } };
  await applyMigrationsPg(url, [log, seed, leaky]);
  assert.throws(() => later!(), /its transaction has ended/);
  // awaited and caught inside the migration: still its failure (the transaction is aborted)
  const caught: RunnableMigration = { id: '0005_caught', up: async (tx) => { await Promise.resolve(tx.exec('SELECT * FROM nowhere')).catch(() => undefined); } };
  const err2 = await applyMigrationsPg(url, [log, seed, leaky, caught]).then(() => assert.fail('the migration must fail'), (e: unknown) => e as Error & { migrationId?: string });
  assert.equal(err2.migrationId, '0005_caught');
  assert.match(err2.message, /nowhere/);
  assert.deepEqual((await appliedMigrationsPg(url)).map((a) => a.id), ['0001_log', '0002_seed', '0004_leaky']);
});

test('statements a migration did not await run in order before it is recorded; the event loop turns meanwhile', { skip }, async () => {
  const url = await server!.createDatabase('unawaited');
  let ticks = 0;
  const timer = setInterval(() => ticks++, 20);
  const fill: RunnableMigration = {
    id: '0003_fill',
    up(tx) {
      void tx.exec('CREATE TABLE steps (k int PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())');
      for (let k = 1; k <= 50; k++) void tx.exec('INSERT INTO steps (k) VALUES (?)', [k]);
      void tx.exec('SELECT pg_sleep(0.3)');
    },
  };
  try {
    assert.deepEqual(await applyMigrationsPg(url, [log, seed, fill]), ['0001_log', '0002_seed', '0003_fill']);
  } finally {
    clearInterval(timer);
  }
  assert.ok(ticks >= 5, `timers ran while the migration's statements did (${ticks} ticks)`);
  const steps = await rows(url, 'SELECT k FROM steps ORDER BY at, k');
  assert.deepEqual(steps.map((r) => r[0]), Array.from({ length: 50 }, (_, i) => i + 1), 'in the order they were sent');
});

test('a connection lost during a migration fails the run, rolled back; nothing hangs', { skip }, async () => {
  const url = await server!.createDatabase('lost');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const dies: RunnableMigration = {
      id: '0003_dies',
      async up(tx) {
        await tx.exec('INSERT INTO app_log VALUES (?)', ['five']);
        const killed = admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'svc-migrate' AND datname = current_database()`);
        await tx.exec('SELECT pg_sleep(10)');
        await killed;
      },
    };
    const t0 = Date.now();
    const err = await applyMigrationsPg(url, [log, seed, dies]).then(() => assert.fail('the migration must fail'), (e: unknown) => e as Error & { migrationId?: string });
    assert.ok(Date.now() - t0 < 8000, 'the run ended when its connection did');
    assert.equal(err.migrationId, '0003_dies');
    assert.deepEqual((await appliedMigrationsPg(url)).map((a) => a.id), ['0001_log', '0002_seed']);
    assert.deepEqual(await rows(url, `SELECT count(*)::int FROM app_log WHERE msg = 'five'`), [[0]]);
  } finally {
    await admin.end();
  }
});

test('an unreachable server is a clear error', { skip }, async () => {
  await assert.rejects(appliedMigrationsPg('postgres://svc@127.0.0.1:1/none'), /cannot open the PostgreSQL database for migrations/);
});

test('two instances starting at once apply each migration once', { skip }, async () => {
  // two processes, as two servers are
  const url = await server!.createDatabase('racing');
  const script = `
    import { applyMigrationsPg } from ${JSON.stringify(join(ROOT, 'src', 'store', 'pg', 'migrations-sql.ts'))};
    const counted = { id: '0001_counted', up: async (tx) => {
      await tx.exec('INSERT INTO runs VALUES (?)', [process.pid]);
      await new Promise((r) => setTimeout(r, 300));
    } };
    const applied = await applyMigrationsPg(process.env.URL, [counted]);
    process.stdout.write(JSON.stringify(applied));
  `;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('CREATE TABLE runs (pid int)');
  await c.end();
  const run = () => new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, URL: url } }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}\n${out}`)) : resolve(out)));
  });
  const [a, b] = await Promise.all([run(), run()]);
  assert.deepEqual([...JSON.parse(a), ...JSON.parse(b)], ['0001_counted']);
  assert.equal((await rows(url, 'SELECT count(*)::int FROM runs'))[0][0], 1, 'the migration ran once');
});
