/**
 * App migrations on the server-SQL backend (src/store/pg/migrations-sql.ts) against a real
 * PostgreSQL: the synchronous MigrationTx (exec, query, script) inside one transaction per
 * migration, recorded with it; a failure rolls its migration back and keeps the earlier ones;
 * two instances starting at once apply each migration once.
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
  id: '0002_seed',
  up(tx) {
    assert.deepEqual(tx.exec('INSERT INTO app_log VALUES (?), (?)', ['two', 'three']), { changes: 2 });
    // reads see the migration's own writes
    assert.deepEqual(tx.query('SELECT count(*) AS n FROM app_log WHERE msg <> ?', ['x']), [{ n: 3 }]);
  },
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
  const bad: RunnableMigration = { id: '0003_bad', up: (tx) => { tx.exec('INSERT INTO app_log VALUES (?)', ['four']); tx.exec('INSERT INTO nowhere VALUES (1)'); } };
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
});

test('two instances starting at once apply each migration once', { skip }, async () => {
  // two processes, as two servers are (in one process the waiting one would block the other:
  // the migration connection is synchronous)
  const url = await server!.createDatabase('racing');
  const script = `
    import { applyMigrationsPg } from ${JSON.stringify(join(ROOT, 'src', 'store', 'pg', 'migrations-sql.ts'))};
    const counted = { id: '0001_counted', up: async (tx) => {
      tx.exec('INSERT INTO runs VALUES (?)', [process.pid]);
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
