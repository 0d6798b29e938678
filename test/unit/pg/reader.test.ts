/**
 * The PostgreSQL reader (src/store/pg/reader.ts, src/store/pg/read-types.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts): no synchronous read at all (nothing serving requests may block the
 * main thread on the server), every parameter and value type, errors with their SQLSTATE, the
 * pool's routing, time budgets that stop the statement on the server, lost connections, plans,
 * close(), and (printed, not asserted) what a point read costs on the pool. The migrations'
 * blocking connection is tested in migration-bridge.test.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { startPostgres, postgresSkipReason, postgresBinDir, type Postgres } from '../../helpers/postgres.js';
import { PgReader, planDetails, type PgReaderOptions } from '../../../src/store/pg/reader.js';
import { ReadBudgetExceeded } from '../../../src/store/read-budget.js';

const skip = postgresSkipReason() ?? false;
let server: Postgres | null = null;
let url = '';
let admin: pg.Client;
const readers: PgReader[] = [];
const BIG_ROWS = 50_000;

before(async () => {
  if (skip) return;
  server = await startPostgres();
  url = await server.createDatabase('reader');
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`
    CREATE TABLE t (id text PRIMARY KEY, n bigint, i integer, f double precision, num numeric, s text, j jsonb, b bytea, flag boolean, at timestamptz);
    INSERT INTO t VALUES ('a', 9007199254740993, 7, 1.5, 12.25, 'héllo ?', '{"b": [1, 2], "a": "x"}', '\\x00ff10', true, '2024-01-02 03:04:05+00');
    INSERT INTO t (id) VALUES ('nulls');
    CREATE TABLE counter (id integer PRIMARY KEY, v integer NOT NULL);
    INSERT INTO counter VALUES (1, 0);
    CREATE TABLE big (id text PRIMARY KEY, country text NOT NULL, pop bigint NOT NULL);
    INSERT INTO big SELECT 'r' || g, 'c' || (g % 200), g * 7 % 100003 FROM generate_series(1, ${BIG_ROWS}) g;
    CREATE INDEX big_country ON big (country);
    ANALYZE;
  `);
});

after(async () => {
  for (const r of readers) await r.close().catch(() => undefined);
  await admin?.end().catch(() => undefined);
  if (server) await server.stop();
});

async function reader(options: PgReaderOptions = {}): Promise<PgReader> {
  const r = await PgReader.start(url, options);
  readers.push(r);
  return r;
}

/** Runs `sql` through psql: a commit made while this thread stays inside one event-loop turn. */
function psql(sql: string): void {
  const res = spawnSync(join(postgresBinDir()!, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

async function until(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function activity(app: string, like = '%'): Promise<Array<{ pid: number; state: string; query: string }>> {
  const r = await admin.query('SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1 AND query LIKE $2 AND pid <> pg_backend_pid()', [app, like]);
  return r.rows as Array<{ pid: number; state: string; query: string }>;
}

const errCode = (code: string) => (err: unknown): boolean => {
  assert.equal((err as { code?: string }).code, code, String(err));
  return true;
};

test('no synchronous read: SqlReader.sync is null and PgReader has no …Sync method or isExpensive', () => {
  const names = Object.getOwnPropertyNames(PgReader.prototype);
  assert.deepEqual(names.filter((n) => /Sync$|^isExpensive$|^planCost$/.test(n)), []);
  const r = new PgReader('postgres://127.0.0.1:1/none');
  assert.equal(r.sync, null);
  return r.close();
});

test('reads: every parameter type in, every value type out', { skip }, async () => {
  const r = await reader();
  const big = 9007199254740993n;
  const bytes = new Uint8Array([0, 1, 254, 255]);
  const row = await r.get('SELECT $1::text, $2::float8, $3::int8, $4::int8, $5::text IS NULL, $6::bytea, $7::bytea, \'?\' AS literal_not_a_slot', ['it\'s ?', 2.5, 42, big, null, bytes, Buffer.from('hi')]);
  assert.ok(row);
  assert.equal(row[0], 'it\'s ?');
  assert.equal(row[1], 2.5);
  assert.equal(row[2], 42n);
  assert.equal(row[3], big);
  assert.equal(row[4], true, 'a boolean comes back as a boolean, not as SQLite\'s 1');
  assert.ok(Buffer.isBuffer(row[5]), 'bytea is a Buffer');
  assert.deepEqual([...(row[5] as Buffer)], [0, 1, 254, 255]);
  assert.equal((row[6] as Buffer).toString(), 'hi');
  assert.equal(row[7], '?');

  const t = (await r.get('SELECT id, n, i, f, num, s, j, b, flag, at, j::text FROM t WHERE id = $1', ['a']))!;
  assert.equal(t[0], 'a');
  assert.equal(t[1], 9007199254740993n, 'int8 as BigInt, exact');
  assert.equal(t[2], 7, 'int4 as a number: PostgreSQL\'s own type, not SQLite\'s BigInt');
  assert.equal(t[3], 1.5);
  assert.equal(t[4], 12.25, 'numeric as a number');
  assert.equal(t[5], 'héllo ?');
  assert.equal(typeof t[6], 'string', 'jsonb as its JSON text');
  assert.deepEqual(JSON.parse(t[6] as string), { a: 'x', b: [1, 2] });
  assert.equal(t[6], t[10]);
  assert.deepEqual([...(t[7] as Buffer)], [0, 0xff, 0x10]);
  assert.equal(t[8], true, 'a boolean column as a boolean');
  assert.equal(typeof t[9], 'string', 'timestamps as the server\'s text');

  const nulls = (await r.get('SELECT n, i, f, num, s, j, b, flag FROM t WHERE id = $1', ['nulls']))!;
  assert.deepEqual(nulls, [null, null, null, null, null, null, null, null]);

  assert.equal(await r.get('SELECT id FROM t WHERE id = $1', ['none']), undefined);
  assert.deepEqual(await r.all('SELECT id FROM t ORDER BY id', []), [['a'], ['nulls']]);
  assert.deepEqual(await r.all('SELECT id FROM t WHERE id = $1', ['none']), []);
  for (let k = 0; k < 10; k++) assert.equal((await r.get('SELECT n FROM t WHERE id = $1', ['a']))![0], 9007199254740993n);
  assert.equal((await r.all('SELECT id, pop FROM big r', [])).length, BIG_ROWS);
});

test('errors carry the SQLSTATE; a failed read leaves the reader usable; every read sees the latest commit', { skip }, async () => {
  const r = await reader();
  await assert.rejects(r.get('SELECT * FROM no_such_table WHERE id = $1', ['x']), (err: unknown) => err instanceof pg.DatabaseError && errCode('42P01')(err));
  await assert.rejects(r.get('SELEC 1', []), errCode('42601'));
  await assert.rejects(r.get('SELECT 1 / $1::int', [0]), errCode('22012'));
  await assert.rejects(r.get('SELECT $1::int', ['x']), errCode('22P02'));
  assert.equal((await r.get('SELECT count(*) FROM t', []))![0], 2n);
  const v = async (): Promise<number> => (await r.get('SELECT v FROM counter WHERE id = $1', [1]))![0] as number;
  const start = await v();
  psql('UPDATE counter SET v = v + 1');
  assert.equal(await v(), start + 1);
  r.endSnapshot(); // nothing to end: a no-op
  assert.equal(await v(), start + 1);
});

test('asynchronous reads on the pool: same shapes, errors with codes, Auto and Balanced routing', { skip }, async () => {
  const r = await reader();
  const viaGet = await r.get('SELECT id, n, i, f, num, s, j, b, flag FROM t WHERE id = $1', ['a']);
  const viaPool = await r.get('SELECT id, n, i, f, num, s, j, b, flag FROM t WHERE id = $1', ['a'], { pool: true });
  assert.deepEqual(viaPool, viaGet);
  assert.ok(Buffer.isBuffer(viaPool![7]));
  assert.deepEqual(await r.all('SELECT id FROM t ORDER BY id', [], { pool: true }), [['a'], ['nulls']]);
  assert.equal(await r.get('SELECT id FROM t WHERE id = $1', ['none'], { pool: true }), undefined);
  await assert.rejects(r.all('SELECT * FROM no_such_table', [], { pool: true }), errCode('42P01'));
  const many = await Promise.all(Array.from({ length: 20 }, (_, k) => r.get('SELECT $1::int8 * 2', [k], { pool: true })));
  assert.deepEqual(many.map((x) => x![0]), Array.from({ length: 20 }, (_, k) => BigInt(k * 2)));
  assert.equal(r.workerFree(), true);
  // every read is on the pool, cheap or not
  const cheap = r.getAuto('SELECT r.id FROM big r WHERE r.id = $1', ['r5']);
  assert.ok(cheap instanceof Promise);
  assert.deepEqual(await cheap, ['r5']);
  const dear = r.allAuto('SELECT r.id FROM big r WHERE r.pop = $1 LIMIT 5', [7]);
  assert.ok(dear instanceof Promise);
  assert.deepEqual(await dear, [['r1']]);
  assert.ok(r.allAuto('SELECT r.id FROM big r WHERE r.id = $1', ['r5'], 5000) instanceof Promise, 'a deep offset goes to the pool');
  assert.deepEqual(await r.getBalanced('SELECT $1::text', ['x']), ['x']);
});

test('a time budget rejects with ReadBudgetExceeded and stops the statement on the server', { skip }, async () => {
  const r = await reader({ applicationName: 'rt-budget', poolSize: 2 });
  const t0 = performance.now();
  await assert.rejects(r.all('SELECT pg_sleep($1)', [30], { pool: true, budgetMs: 300 }), (err: unknown) => err instanceof ReadBudgetExceeded && err.budgetMs === 300);
  const took = performance.now() - t0;
  assert.ok(took >= 290 && took < 1500, `rejected after ${took.toFixed(0)} ms`);
  await until('the cancelled pg_sleep to leave pg_stat_activity', async () => (await activity('rt-budget-pool', '%pg_sleep%')).every((a) => a.state !== 'active'), 3000);
  // a budget that is not spent changes nothing; the pool still answers
  assert.deepEqual(await r.get('SELECT $1::int8', [5], { pool: true, budgetMs: 2000 }), [5n]);
  // queue time counts: with both connections asleep, a third read waits and times out in the queue
  const sleepers = [r.all('SELECT pg_sleep(30)', [], { pool: true, budgetMs: 400 }), r.all('SELECT pg_sleep(30)', [], { pool: true, budgetMs: 400 })];
  await assert.rejects(r.get('SELECT 1', [], { pool: true, budgetMs: 200 }), ReadBudgetExceeded);
  for (const s of sleepers) await assert.rejects(s, ReadBudgetExceeded);
  await until('both sleepers cancelled', async () => (await activity('rt-budget-pool', '%pg_sleep%')).every((a) => a.state !== 'active'), 3000);
  assert.deepEqual(await r.get('SELECT 2', [], { pool: true, budgetMs: 1000 }), [2]);
});

test('a read has its own statement_timeout: budgeted and unbudgeted reads alternating on one connection', { skip }, async () => {
  const r = await reader({ applicationName: 'rt-timeouts', poolSize: 1 });
  const shown = (budgetMs?: number): Promise<unknown[] | undefined> => r.get('SELECT current_setting($1)', ['statement_timeout'], budgetMs === undefined ? undefined : { pool: true, budgetMs });
  for (let k = 0; k < 3; k++) {
    const budgeted = String((await shown(2000))![0]);
    assert.match(budgeted, /^\d+(ms|s)$/);
    assert.notEqual(budgeted, '0', 'a budgeted read runs under a statement_timeout');
    assert.deepEqual(await shown(), ['0'], 'the next unbudgeted read on the same connection has none');
  }
  // the setting goes out with the read; a failing read leaves the connection's setting known
  await assert.rejects(r.all('SELECT * FROM no_such_table', [], { pool: true, budgetMs: 1000 }), errCode('42P01'));
  assert.deepEqual(await shown(), ['0']);
  assert.notEqual(String((await shown(1000))![0]), '0');
});

test('a killed pool connection: the next read reconnects', { skip }, async () => {
  const r = await reader({ applicationName: 'rt-kill' });
  await r.get('SELECT 1', [], { pool: true });
  await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rt-kill-pool'`);
  assert.deepEqual(await r.get('SELECT $1::int8', [6], { pool: true }), [6n]);
});

test('a schema change made elsewhere: the next read has the new shape', { skip }, async () => {
  const r = await reader();
  await admin.query('CREATE TABLE shape (id text PRIMARY KEY, a integer); INSERT INTO shape VALUES (\'x\', 1)');
  assert.equal((await r.get('SELECT * FROM shape WHERE id = $1', ['x']))!.length, 2);
  await admin.query('ALTER TABLE shape ADD COLUMN b text DEFAULT \'new\'');
  assert.deepEqual(await r.get('SELECT * FROM shape WHERE id = $1', ['x']), ['x', 1, 'new']);
  r.invalidate();
  assert.deepEqual(await r.get('SELECT * FROM shape WHERE id = $1', ['x']), ['x', 1, 'new']);
});

test('point reads of one turn run as one statement; each caller gets its own row', { skip }, async () => {
  const r = await reader();
  const one = 'SELECT id, country, pop FROM big WHERE id = $1 LIMIT 1';
  const alone = await Promise.all(['r1', 'r2', 'missing', 'r3'].map(async (id) => {
    const row = await r.get(one, [id]);
    return row;
  }));
  // the same reads in one turn: one pool statement for all of them (poolStats counts statements)
  const before = r.poolStats().completed;
  const ids = ['r1', 'r2', 'missing', 'r3', 'r2', 'it\'s'];
  const together = await Promise.all(ids.map((id) => r.get(one, [id])));
  assert.equal(r.poolStats().completed - before, 1, 'six point reads, one statement');
  assert.deepEqual(together.slice(0, 4), alone);
  assert.deepEqual(together[4], together[1], 'the same id twice: the same row twice');
  assert.equal(together[2], undefined, 'no row: undefined');
  assert.equal(together[5], undefined);
  assert.equal(typeof together[0]![2], 'bigint', 'the values keep their types');

  // other parameters are part of the batch: reads differing there are not mixed up
  const ruled = 'SELECT id, pop FROM big WHERE id = $1 AND country = $2 LIMIT 1';
  const [a, b, c] = await Promise.all([r.get(ruled, ['r1', 'c1']), r.get(ruled, ['r1', 'c2']), r.get(ruled, ['r201', 'c1'])]);
  assert.deepEqual([a?.[0], b, c?.[0]], ['r1', undefined, 'r201']);
});

test('a point read PostgreSQL refuses to combine runs one by one, with its own answer', { skip }, async () => {
  const r = await reader();
  // the slot is typed integer by its column, so the combined form (a text per id) is refused
  const sql = 'SELECT id FROM counter WHERE id = $1 LIMIT 1';
  const rows = await Promise.all([r.get(sql, ['1']), r.get(sql, ['2'])]);
  assert.deepEqual(rows, [[1], undefined]);
  const errs = await Promise.allSettled([r.get(sql, ['1']), r.get(sql, ['not a number'])]);
  assert.deepEqual(errs[0], { status: 'fulfilled', value: [1] });
  assert.equal(errs[1].status, 'rejected');
  assert.equal(((errs[1] as PromiseRejectedResult).reason as { code?: string }).code, '22P02', 'the bad one fails alone, with its SQLSTATE');
});

test('a schema change under a combined point read: the next reads have the new shape', { skip }, async () => {
  const r = await reader();
  await admin.query('CREATE TABLE shape2 (id text PRIMARY KEY, a integer); INSERT INTO shape2 VALUES (\'x\', 1), (\'y\', 2)');
  const sql = 'SELECT * FROM shape2 WHERE id = $1 LIMIT 1';
  assert.deepEqual(await Promise.all([r.get(sql, ['x']), r.get(sql, ['y'])]), [['x', 1], ['y', 2]]);
  await admin.query('ALTER TABLE shape2 ADD COLUMN b text DEFAULT \'new\'');
  assert.deepEqual(await Promise.all([r.get(sql, ['x']), r.get(sql, ['y'])]), [['x', 1, 'new'], ['y', 2, 'new']]);
  assert.deepEqual(await r.get(sql, ['y']), ['y', 2, 'new']);
});

test('plan: indexed against unindexed reads, in SQLite\'s wording', { skip }, async () => {
  const r = await reader();
  const plan = async (sql: string, params: unknown[]): Promise<string[]> => r.plan(sql, params as never[]);
  const point = 'SELECT r.id, r.pop FROM big r WHERE r.id = $1';
  assert.ok((await plan(point, ['r7'])).some((d) => /^SEARCH r USING (COVERING )?INDEX big_pkey$/.test(d)), (await plan(point, ['r7'])).join('; '));
  const indexed = 'SELECT r.id FROM big r WHERE r.country = $1 LIMIT 20';
  assert.ok((await plan(indexed, ['c3'])).some((d) => d === 'SEARCH r USING INDEX big_country'), (await plan(indexed, ['c3'])).join('; '));
  assert.deepEqual(await plan('SELECT r.id FROM big r WHERE r.pop = $1 LIMIT 20', [7]), ['SCAN r']);
  const sorted = 'SELECT r.id FROM big r ORDER BY r.pop LIMIT 20';
  assert.ok((await plan(sorted, [])).includes('USE TEMP B-TREE FOR ORDER BY'), (await plan(sorted, [])).join('; '));
  assert.deepEqual(await plan('SELECT r.id FROM big r LIMIT 20', []), ['SCAN r']);
  assert.deepEqual(await plan('SELECT 1', []), ['SCAN CONSTANT ROW']);
  const grouped = await plan('SELECT r.country, count(*) FROM big r GROUP BY r.country', []);
  assert.ok(grouped.some((d) => d.includes('TEMP B-TREE FOR GROUP BY')), grouped.join('; '));

  // the mapping itself, on a hand-made tree
  assert.deepEqual(planDetails({
    'Node Type': 'Limit',
    Plans: [{
      'Node Type': 'Sort',
      Plans: [{
        'Node Type': 'Nested Loop',
        Plans: [
          { 'Node Type': 'Bitmap Heap Scan', Alias: 'r', Plans: [{ 'Node Type': 'Bitmap Index Scan', 'Index Name': 'ix_a' }] },
          { 'Node Type': 'Index Only Scan', Alias: 'x', 'Index Name': 'ix_b' },
        ],
      }],
    }],
  }), ['USE TEMP B-TREE FOR ORDER BY', 'SEARCH r USING INDEX ix_a', 'SCAN x USING COVERING INDEX ix_b']);
});

test('close() leaves no thread and no connection', { skip }, async () => {
  const threads = (): number => readdirSync('/proc/self/task').length;
  // a first reader warms whatever the process starts once (libuv's pool, pg's modules)
  const warm = await PgReader.start(url, { applicationName: 'rt-warm' });
  await warm.get('SELECT 1', [], { pool: true });
  await warm.close();
  const before = threads();
  const r = await PgReader.start(url, { applicationName: 'rt-close' });
  await Promise.all([r.get('SELECT 1', []), r.get('SELECT 1', [], { pool: true }), r.get('SELECT 2', [], { pool: true })]);
  assert.ok(threads() <= before, 'no thread of its own');
  assert.ok((await activity('rt-close-pool')).length >= 1);
  await r.close();
  await until('no connection left', async () => (await activity('rt-close-pool')).length === 0, 3000);
  await assert.rejects(r.get('SELECT 1', []), /closed/);
  await assert.rejects(r.get('SELECT 1', [], { pool: true }), /closed/);
});

test('measured: a point read on the pool (printed, not asserted)', { skip }, async () => {
  // The machine is shared: every configuration runs ROUNDS times, interleaved, and the median
  // (and the best) round is reported.
  const sql = 'SELECT r.id, r.country, r.pop FROM big r WHERE r.id = $1';
  let seq = 0;
  const id = (): string => `r${(++seq * 7919) % BIG_ROWS + 1}`;
  const N = 1000;
  const ROUNDS = 5;
  const elu = (): number => performance.eventLoopUtilization().active;
  const off = await reader();
  const direct = new pg.Client({ connectionString: url, types: { getTypeParser: (() => (v: string) => v) as pg.CustomTypesConfig['getTypeParser'] } });
  await direct.connect();
  const text = 'SELECT r.id, r.country, r.pop FROM big r WHERE r.id = $1';
  /** One round of a configuration: [wall µs per read, main-thread busy µs per read]. */
  const configs: Array<[string, () => Promise<void>]> = [
    ['pool, one read at a time', async () => { for (let k = 0; k < N; k++) await off.get(sql, [id()], { pool: true }); }],
    ['pool, 8 reads in flight', async () => {
      await Promise.all(Array.from({ length: 8 }, async () => { for (let k = 0; k < N / 8; k++) await off.get(sql, [id()], { pool: true }); }));
    }],
    ['one pg.Client on the main thread (baseline), one at a time', async () => { for (let k = 0; k < N; k++) await direct.query({ text, values: [id()], rowMode: 'array' }); }],
    ['(an empty setImmediate turn, to subtract)', async () => { for (let k = 0; k < N; k++) await turn(); }],
  ];
  const results = new Map<string, Array<[number, number]>>();
  for (const [, run] of configs) await run(); // warm: statements prepared, connections open
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, run] of configs) {
      const e0 = elu();
      const t0 = performance.now();
      await run();
      const wall = ((performance.now() - t0) * 1000) / N;
      const busy = ((elu() - e0) * 1000) / N;
      results.set(label, [...(results.get(label) ?? []), [wall, busy]]);
    }
  }
  await direct.end();
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const lines = configs.map(([label]) => {
    const rs = results.get(label)!;
    const walls = rs.map((x) => x[0]);
    return `${label.padEnd(60)} ${median(walls).toFixed(0).padStart(5)} µs/read (best ${Math.min(...walls).toFixed(0)}), main thread busy ${median(rs.map((x) => x[1])).toFixed(0)} µs/read`;
  });
  console.log(`point read costs, ${N} reads a round, median of ${ROUNDS} interleaved rounds:\n${lines.map((l) => `  ${l}`).join('\n')}`);
});
