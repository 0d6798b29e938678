/**
 * The PostgreSQL writer (src/store/pg/writer.ts) against a real PostgreSQL (test/helpers/postgres.ts):
 * group commit with a savepoint per job, guards, returned rows, constraint failures through the
 * dialect, the change feed (updates, deletes, cascades, creates), `committed` ordering, a lost
 * connection, and close().
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import { PgWriter, PgWriteError, PgConnectionError, MAX_GROUP } from '../../../src/store/pg/writer.js';
import { pgDialect } from '../../../src/store/pg/dialect.js';
import { ApiError, knownApiError } from '../../../src/errors/api-error.js';
import { GuardFailed, WriterClosed } from '../../../src/store/errors/store-errors.js';
import type { ChangeBatch } from '../../../src/store/change-feed.js';

const skip = postgresSkipReason() ?? false;
let server: Postgres | null = null;
let dbCount = 0;
const open: Array<{ writer: PgWriter; admin: pg.Client }> = [];

before(async () => {
  if (!skip) server = await startPostgres();
});

after(async () => {
  for (const { writer, admin } of open) {
    await writer.close().catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  if (server) {
    await server.stop();
  }
});

/** A new database with a started writer and a second (admin) connection to check from. */
async function fresh(): Promise<{ writer: PgWriter; admin: pg.Client; url: string }> {
  const url = await server!.createDatabase(`w${++dbCount}`);
  const writer = await PgWriter.start(url);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  open.push({ writer, admin });
  return { writer, admin, url };
}

const ids = async (admin: pg.Client, table: string): Promise<string[]> =>
  (await admin.query(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r: { id: string }) => r.id);

const forbid = { status: 403, code: 'forbidden', message: 'no' };

/** Ten clean groups of two inserts into `t` (ids `<prefix><g>-<k>`): the writer then runs groups without savepoints. */
async function cleanGroups(writer: PgWriter, prefix: string): Promise<void> {
  for (let g = 0; g < 10; g++) {
    await Promise.all([0, 1].map((k) => writer.write([{ sql: 'INSERT INTO t VALUES ($1, $2)', params: [`${prefix}${g}-${k}`, 0] }])));
  }
}

/** The last value of the sequence `runs` (nextval is not rolled back, so it counts the statements run). */
async function runsOf(admin: pg.Client): Promise<number> {
  return Number((await admin.query('SELECT last_value FROM runs')).rows[0].last_value);
}

test('a job applies whole or not at all', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY, v integer)', params: [] }]);
  const ok = await writer.write([
    { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['a', 1] },
    { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['b', 2] },
  ]);
  assert.deepEqual(ok, [{ changes: 1 }, { changes: 1 }]);
  await assert.rejects(
    writer.write([
      { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['c', 3] },
      { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['a', 4] },
    ]),
    (err: unknown) => err instanceof PgWriteError && err.sqlState === '23505' && err.step === 1 && err.constraint === 't_pkey',
  );
  assert.deepEqual(await ids(admin, 't'), ['a', 'b']);
});

test('failed guards and statements roll back only their job; the rest of the group commits', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY, v integer)', params: [] }, { sql: `INSERT INTO t VALUES ('r0', 0)`, params: [] }]);
  let commits = 0;
  writer.committed.subscribe(() => commits++);
  const before = writer.commits;
  const jobs: Array<Promise<unknown>> = [];
  const n = 40;
  for (let i = 1; i <= n; i++) {
    const id = `r${i}`;
    if (i % 10 === 3) {
      // a row guard that fails after a write: the write must not survive
      jobs.push(writer.write([
        { sql: 'INSERT INTO t VALUES ($1, $2)', params: [id, i] },
        { sql: 'SELECT 1 WHERE false', params: [], expect: 'row', fail: forbid },
      ]));
    } else if (i % 10 === 5) {
      // a change guard (an update of no row) after a write
      jobs.push(writer.write([
        { sql: 'INSERT INTO t VALUES ($1, $2)', params: [id, i] },
        { sql: 'UPDATE t SET v = $1 WHERE id = $2', params: [1, 'missing'], expect: 'change' },
      ]));
    } else if (i % 10 === 7) {
      // a statement error after a write
      jobs.push(writer.write([
        { sql: 'INSERT INTO t VALUES ($1, $2)', params: [id, i] },
        { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['r0', i] },
      ]));
    } else {
      jobs.push(writer.write([
        { sql: 'INSERT INTO t VALUES ($1, $2)', params: [id, i] },
        { sql: 'UPDATE t SET v = v + 1 WHERE id = $1', params: ['r0'], expect: 'change' },
      ]));
    }
  }
  assert.equal(writer.inFlight, n);
  const results = await Promise.allSettled(jobs);
  const expected = ['r0'];
  results.forEach((r, k) => {
    const i = k + 1;
    if (i % 10 === 3) {
      assert.equal(r.status, 'rejected');
      // a failed guard rejects with GuardFailed, which the API answers with the step's fail
      assert.ok((r as PromiseRejectedResult).reason instanceof GuardFailed, String((r as PromiseRejectedResult).reason));
      const e = knownApiError((r as PromiseRejectedResult).reason);
      assert.ok(e instanceof ApiError && e.status === 403 && e.code === 'forbidden', String(e));
    } else if (i % 10 === 5) {
      const e = knownApiError((r as PromiseRejectedResult).reason);
      assert.ok(e instanceof ApiError && e.status === 404 && e.code === 'not_found', String(e));
    } else if (i % 10 === 7) {
      const e = (r as PromiseRejectedResult).reason;
      assert.ok(e instanceof PgWriteError && e.sqlState === '23505' && e.step === 1, String(e));
    } else {
      assert.equal(r.status, 'fulfilled', String((r as PromiseRejectedResult).reason));
      expected.push(`r${i}`);
    }
  });
  // all 40 jobs were written in one event-loop turn: one group, one commit
  assert.ok(n <= MAX_GROUP);
  assert.equal(commits, 1, `${n} jobs took ${commits} commits`);
  assert.equal(writer.commits, before + 1);
  assert.deepEqual(await ids(admin, 't'), expected.sort());
  const r0 = await admin.query(`SELECT v FROM t WHERE id = 'r0'`);
  assert.equal(r0.rows[0].v, expected.length - 1, 'every committed job incremented r0 once');
});

test('a group run without savepoints: a failed job rolls it back and the group runs again with them', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY, v integer); CREATE SEQUENCE runs', params: [] }, { sql: `INSERT INTO t VALUES ('r0', 0)`, params: [] }]);
  // groups of two clean jobs in a row: the writer then runs groups without savepoints
  await cleanGroups(writer, 'w');
  const runs = (): Promise<number> => runsOf(admin);
  // one group of ten; jobs 3 and 7 fail after writing. `nextval` is not rolled back, so it counts
  // the jobs run: 3 without savepoints (up to the first failure), then 10 with them
  const jobs = Array.from({ length: 10 }, (_, k) => {
    const i = k + 1;
    const steps = [
      { sql: 'SELECT nextval(\'runs\')', params: [] as [] },
      { sql: 'INSERT INTO t VALUES ($1, $2)', params: [`r${i}`, i] },
      i === 3 ? { sql: 'SELECT 1 WHERE false', params: [] as [], expect: 'row' as const, fail: forbid }
        : i === 7 ? { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['r0', i] }
          : { sql: 'UPDATE t SET v = v + 1 WHERE id = $1', params: ['r0'], expect: 'change' as const },
    ];
    return writer.write(steps);
  });
  const results = await Promise.allSettled(jobs);
  assert.equal(await runs(), 13, 'three jobs, then the whole group again');
  assert.ok((results[2] as PromiseRejectedResult).reason instanceof GuardFailed);
  assert.equal(((results[6] as PromiseRejectedResult).reason as PgWriteError).sqlState, '23505');
  const ok = results.flatMap((r, k) => (r.status === 'fulfilled' ? [`r${k + 1}`] : []));
  assert.deepEqual(ok, ['r1', 'r2', 'r4', 'r5', 'r6', 'r8', 'r9', 'r10']);
  const rows = (await admin.query(`SELECT id FROM t WHERE id LIKE 'r%' ORDER BY id`)).rows.map((r) => r.id as string);
  assert.deepEqual(rows, ['r0', ...ok].sort());
  assert.equal((await admin.query(`SELECT v FROM t WHERE id = 'r0'`)).rows[0].v, ok.length, 'each committed job counted once');

  // after a failed job the next groups keep their savepoints (each job runs once, even one that fails)
  const again = await Promise.allSettled([
    writer.write([{ sql: 'SELECT nextval(\'runs\')', params: [] }, { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['s1', 0] }]),
    writer.write([{ sql: 'SELECT nextval(\'runs\')', params: [] }, { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['r0', 0] }]),
  ]);
  assert.deepEqual(again.map((r) => r.status), ['fulfilled', 'rejected']);
  assert.equal(await runs(), 15);
});

test('an optimistic group goes out pipelined: every statement sent before the first answer; results and failures as one at a time', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY, v integer); CREATE SEQUENCE runs', params: [] }, { sql: `INSERT INTO t VALUES ('r0', 0)`, params: [] }]);
  await cleanGroups(writer, 'w');
  const runs = (): Promise<number> => runsOf(admin);
  // every step has parameters: the group is pipelined, and with returned rows it answers as before
  const clean = await Promise.all(Array.from({ length: 6 }, (_, k) => writer.write([
    { sql: 'SELECT nextval($1::regclass)', params: ['runs'] },
    { sql: 'INSERT INTO t VALUES ($1, $2) RETURNING id, v', params: [`p${k}`, k], returnRows: true },
    { sql: 'UPDATE t SET v = v + 1 WHERE id = $1', params: ['r0'], expect: 'change' },
  ])));
  assert.deepEqual(clean.map((r) => r[1]), Array.from({ length: 6 }, (_, k) => ({ changes: 1, rows: [[`p${k}`, k]], columns: ['id', 'v'] })));
  assert.deepEqual(clean.map((r) => r[2]), Array.from({ length: 6 }, () => ({ changes: 1 })));
  assert.equal(await runs(), 6);
  // jobs 3 (a guard: no error, the statements after it still run) and 7 (23505: PostgreSQL refuses
  // the rest of the transaction) fail. Sent together, jobs 1-7 ran before the answers were read;
  // one at a time the group would have stopped at job 3. Then the group runs again with savepoints.
  const jobs = Array.from({ length: 10 }, (_, k) => {
    const i = k + 1;
    return writer.write([
      { sql: 'SELECT nextval($1::regclass)', params: ['runs'] },
      { sql: 'INSERT INTO t VALUES ($1, $2)', params: [`r${i}`, i] },
      i === 3 ? { sql: 'SELECT 1 WHERE $1::text IS NULL', params: ['x'], expect: 'row' as const, fail: forbid }
        : i === 7 ? { sql: 'INSERT INTO t VALUES ($1, $2)', params: ['r0', i] }
          : { sql: 'UPDATE t SET v = v + 1 WHERE id = $1', params: ['r0'], expect: 'change' as const },
    ]);
  });
  const results = await Promise.allSettled(jobs);
  assert.equal(await runs(), 6 + 7 + 10, 'seven jobs sent at once, then the whole group again');
  assert.ok((results[2] as PromiseRejectedResult).reason instanceof GuardFailed);
  assert.equal(((results[6] as PromiseRejectedResult).reason as PgWriteError).sqlState, '23505');
  const ok = results.flatMap((r, k) => (r.status === 'fulfilled' ? [`r${k + 1}`] : []));
  assert.deepEqual(ok, ['r1', 'r2', 'r4', 'r5', 'r6', 'r8', 'r9', 'r10']);
  assert.deepEqual((await admin.query(`SELECT id FROM t WHERE id LIKE 'r%' ORDER BY id`)).rows.map((r) => r.id as string), ['r0', ...ok].sort());
  assert.equal((await admin.query(`SELECT v FROM t WHERE id = 'r0'`)).rows[0].v, 6 + ok.length, 'each committed job counted once');

  // BEGIN goes out with the statements: a connection killed while idle fails it, and the group
  // (nothing of it run) is sent again on a new connection
  await cleanGroups(writer, 'x');
  const pid = writer.backendPid!;
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  await Promise.all(Array.from({ length: 4 }, (_, k) => writer.write([{ sql: 'INSERT INTO t VALUES ($1, $2)', params: [`k${k}`, k] }])));
  assert.notEqual(writer.backendPid, pid);
  assert.deepEqual((await admin.query(`SELECT id FROM t WHERE id LIKE 'k%' ORDER BY id`)).rows.map((r) => r.id as string), ['k0', 'k1', 'k2', 'k3']);
});

test('jobs arriving while a group is in flight form the next group', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY)', params: [] }]);
  const before = writer.commits;
  const first = writer.write([{ sql: 'SELECT pg_sleep(0.3)', params: [] }, { sql: `INSERT INTO t VALUES ('slow')`, params: [] }]);
  await new Promise((r) => setTimeout(r, 100)); // the first group is in flight now
  const later = Array.from({ length: 20 }, (_, i) => writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: [`q${i}`] }]));
  await Promise.all([first, ...later]);
  assert.equal(writer.commits - before, 2, 'the slow job alone, then the 20 that waited');
  assert.equal((await ids(admin, 't')).length, 21);
});

test('returnRows gives raw rows and column names; int8 as BigInt', { skip }, async () => {
  const { writer } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY, n bigint, v integer, j jsonb, b bytea)', params: [] }]);
  const [ins, sel, plain] = await writer.write([
    { sql: 'INSERT INTO t VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING id, n, v', params: ['x', 9007199254740993n, 7, '{"a":1}', new Uint8Array([1, 2])], returnRows: true },
    { sql: 'SELECT id, j, b, $1 AS "q?" FROM t WHERE id = $2', params: ['lit', 'x'], returnRows: true, expect: 'row' },
    { sql: 'UPDATE t SET v = $1 WHERE id = $2', params: [8, 'x'] },
  ]);
  assert.deepEqual(ins, { changes: 1, rows: [['x', 9007199254740993n, 7]], columns: ['id', 'n', 'v'] });
  assert.equal(sel.changes, 0);
  assert.deepEqual(sel.columns, ['id', 'j', 'b', 'q?']);
  assert.deepEqual(sel.rows?.[0]?.slice(0, 2), ['x', { a: 1 }]);
  assert.deepEqual([...(sel.rows?.[0]?.[2] as Buffer)], [1, 2]);
  assert.equal(sel.rows?.[0]?.[3], 'lit');
  assert.deepEqual(plain, { changes: 1 });
});

test('constraint violations map through the dialect', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{
    sql: `CREATE TABLE p (id text PRIMARY KEY);
          CREATE TABLE t (id text PRIMARY KEY, email text UNIQUE, v integer NOT NULL CHECK (v >= 0), p text REFERENCES p (id));
          INSERT INTO p VALUES ('p1');
          INSERT INTO t VALUES ('a', 'a@x', 1, 'p1')`,
    params: [],
  }]);
  const insert = (id: string, email: string, v: number | null, p: string | null) =>
    writer.write([{ sql: 'INSERT INTO t VALUES ($1, $2, $3, $4)', params: [id, email, v, p] }]).then(() => null, (e: unknown) => e);
  // the column a 409 names: the not-null column, a unique or foreign key's first key column
  const cases: Array<[Promise<unknown>, string, string | undefined]> = [
    [insert('b', 'a@x', 1, null), '23505', 'email'],
    [insert('c', 'c@x', null, null), '23502', 'v'],
    [insert('d', 'd@x', -1, null), '23514', undefined],
    [insert('e', 'e@x', 1, 'nope'), '23503', 'p'],
  ];
  for (const [p, state, column] of cases) {
    const err = await p;
    assert.ok(err instanceof PgWriteError, String(err));
    assert.equal(err.sqlState, state);
    assert.deepEqual(pgDialect.writeFailure(err), { constraint: true, message: err.message, column });
  }
  const syntax = await writer.write([{ sql: 'INSERT INTO nowhere VALUES ($1)', params: [1] }]).catch((e: unknown) => e);
  assert.ok(syntax instanceof PgWriteError && syntax.sqlState === '42P01');
  assert.deepEqual(pgDialect.writeFailure(syntax), { constraint: false, message: syntax.message, column: undefined });
  // a raw driver error from any other connection maps the same way
  const raw = await admin.query(`INSERT INTO t VALUES ('a', 'z@x', 1, NULL)`).catch((e: unknown) => e);
  assert.equal(pgDialect.writeFailure(raw)?.constraint, true);
  // not database failures
  assert.equal(pgDialect.writeFailure(new ApiError(403, 'forbidden', 'no')), null);
  assert.equal(pgDialect.writeFailure(new PgConnectionError('lost')), null);
  assert.equal(pgDialect.writeFailure(new Error('x')), null);
  assert.equal(pgDialect.writeFailure('x'), null);
  assert.deepEqual(await ids(admin, 't'), ['a']);
});

test('the change feed reports creates, updates, deletes and cascaded deletes per commit', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{
    sql: `CREATE TABLE parents (id text PRIMARY KEY, name text, pic bytea);
          CREATE TABLE kids (id text PRIMARY KEY, parent text REFERENCES parents (id) ON DELETE CASCADE, n integer);
          CREATE TABLE untracked (id text PRIMARY KEY)`,
    params: [],
  }]);
  assert.equal(await writer.syncChangeTriggers([{ collection: 'c_par', table: 'parents' }, { collection: 'c_kid', table: 'kids' }]), 2);
  const batches: ChangeBatch[] = [];
  writer.changes.subscribe((b) => {
    assert.equal(b.commit, writer.commits, 'delivered with the commit count of its commit');
    batches.push(b);
  });
  const create = (table: string, collection: string, id: string, extra: unknown[]) =>
    writer.write([{ sql: `INSERT INTO ${table} VALUES ($1, ${extra.map((_, i) => `$${i + 2}`).join(', ')})`, params: [id, ...(extra as never[])], creates: { collection, id } }]);

  // 1. creates, reported from the steps' `creates`; a failed create is not reported
  await Promise.all([
    create('parents', 'c_par', 'p1', ['one', null]),
    create('parents', 'c_par', 'p2', ['two', null]),
    create('kids', 'c_kid', 'k1', ['p1', 1]),
    create('kids', 'c_kid', 'k2', ['p1', 2]),
    create('kids', 'c_kid', 'k3', ['p2', 3]),
    create('kids', 'c_kid', 'kx', ['nope', 4]).catch(() => 'failed'),
  ]);
  assert.equal(batches.length, 1);
  assert.deepEqual(batches[0].changes.map((c) => `${c.op} ${c.collection}/${c.id}`).sort(), [
    'create c_kid/k1', 'create c_kid/k2', 'create c_kid/k3', 'create c_par/p1', 'create c_par/p2',
  ]);

  // 2. an update, and an update in a job whose guard then fails (rolled back: not reported)
  await Promise.all([
    writer.write([{ sql: 'UPDATE kids SET n = n + 10 WHERE parent = $1', params: ['p2'] }]),
    writer.write([
      { sql: 'UPDATE parents SET name = $1 WHERE id = $2', params: ['renamed', 'p1'] },
      { sql: 'SELECT 1 WHERE false', params: [], expect: 'row', fail: forbid },
    ]).catch(() => 'failed'),
  ]);
  assert.equal(batches.length, 2);
  assert.deepEqual(batches[1].changes, [{ collection: 'c_kid', id: 'k3', op: 'update' }]);
  assert.deepEqual(batches[1].truncated, []);

  // 3. a delete that cascades to two children; the deleted row kept for c_par (bytea as null)
  writer.captureDeletedRows(['c_par']);
  await admin.query(`UPDATE parents SET pic = '\\x0102' WHERE id = 'p1'`); // another session: not reported
  await writer.write([{ sql: 'DELETE FROM parents WHERE id = $1', params: ['p1'], expect: 'change' }]);
  assert.equal(batches.length, 3);
  const third = [...batches[2].changes].sort((a, b) => a.id.localeCompare(b.id));
  assert.deepEqual(third.map((c) => `${c.op} ${c.collection}/${c.id}`), ['delete c_kid/k1', 'delete c_kid/k2', 'delete c_par/p1']);
  assert.deepEqual(third[2].old, { id: 'p1', name: 'one', pic: null });
  assert.equal(third[0].old, undefined, 'c_kid did not ask for deleted rows');

  // 4. within one commit: a create then an update is a create; a create then a delete is a delete
  await Promise.all([
    writer.write([
      { sql: 'INSERT INTO parents (id, name) VALUES ($1, $2)', params: ['p3', 'three'], creates: { collection: 'c_par', id: 'p3' } },
      { sql: 'UPDATE parents SET name = $1 WHERE id = $2', params: ['three!', 'p3'] },
    ]),
    writer.write([
      { sql: 'INSERT INTO parents (id, name) VALUES ($1, $2)', params: ['p4', 'four'], creates: { collection: 'c_par', id: 'p4' } },
      { sql: 'DELETE FROM parents WHERE id = $1', params: ['p4'] },
    ]),
  ]);
  assert.equal(batches.length, 4);
  const fourth = batches[4 - 1].changes.map((c) => `${c.op} ${c.collection}/${c.id}`).sort();
  assert.deepEqual(fourth, ['create c_par/p3', 'delete c_par/p4']);

  // 5. a table not named is not tracked; a commit with no change publishes nothing
  await writer.write([{ sql: `INSERT INTO untracked VALUES ('u'); UPDATE untracked SET id = 'v'`, params: [] }]);
  await writer.write([{ sql: 'SELECT 1', params: [] }]);
  assert.equal(batches.length, 4);

  // 6. triggers made in the job that creates the table; dropped from tables no longer named
  await writer.write([
    { sql: 'CREATE TABLE late (id text PRIMARY KEY)', params: [] },
    PgWriter.changeTriggersStep([{ collection: 'c_late', table: 'late' }, { collection: 'c_kid', table: 'kids' }]),
    { sql: `INSERT INTO late VALUES ('l1')`, params: [] },
    { sql: `UPDATE late SET id = 'l2'`, params: [] },
    { sql: `UPDATE parents SET name = 'x'`, params: [] },
  ]);
  assert.equal(batches.length, 5);
  assert.deepEqual(batches[4].changes, [{ collection: 'c_late', id: 'l2', op: 'update' }]);
  const trig = await admin.query(`SELECT tgrelid::regclass::text AS t FROM pg_trigger WHERE tgname LIKE '\\_svc\\_cf\\_%' ORDER BY 1, tgname`);
  assert.deepEqual(trig.rows.map((r: { t: string }) => r.t), ['kids', 'kids', 'late', 'late']);

  // naming a table that does not exist fails the job
  await assert.rejects(writer.syncChangeTriggers([{ collection: 'c', table: 'missing' }]), (e: unknown) => e instanceof PgWriteError && e.sqlState === '42P01');
  // writes from another session are not reported, and do not fail for want of the temp table
  await admin.query(`UPDATE kids SET n = 0; DELETE FROM late`);
  assert.equal(batches.length, 5);
});

test('a bulk change past the listing limit names the collection only', { skip }, async () => {
  const { writer } = await fresh();
  await writer.write([{ sql: `CREATE TABLE t (id text PRIMARY KEY, v integer); INSERT INTO t SELECT 'r' || g, g FROM generate_series(1, 45000) g`, params: [] }]);
  await writer.syncChangeTriggers([{ collection: 'c_t', table: 't' }]);
  const batches: ChangeBatch[] = [];
  writer.changes.subscribe((b) => void batches.push(b));
  await writer.write([{ sql: 'UPDATE t SET v = v + 1', params: [] }]);
  assert.equal(batches.length, 1);
  assert.deepEqual(batches[0].changes, []);
  assert.deepEqual(batches[0].truncated, ['c_t']);
  await writer.write([{ sql: 'UPDATE t SET v = v + 1 WHERE v < 100', params: [] }]);
  assert.equal(batches[1].changes.length, 98);
});

test('committed and the feed run before the write promise resolves', { skip }, async () => {
  const { writer } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY)', params: [] }]);
  const order: string[] = [];
  writer.committed.subscribe(() => order.push(`commit ${writer.commits}`));
  writer.changes.subscribe((b) => void order.push(`feed ${b.commit}`));
  const c = writer.commits;
  await Promise.all([
    writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: ['a'], creates: { collection: 'c', id: 'a' } }]).then(() => order.push('resolved a')),
    writer.write([{ sql: 'SELECT 1 WHERE false', params: [], expect: 'row' }]).catch(() => order.push('rejected b')),
  ]);
  assert.deepEqual(order, [`commit ${c + 1}`, `feed ${c + 1}`, 'resolved a', 'rejected b']);
});

/** Waits until the writer's backend runs a statement matching `like` (pg_stat_activity). */
async function waitActive(admin: pg.Client, pid: number, like: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE $2`, [pid, like]);
    if (r.rowCount) return;
    if (Date.now() > deadline) throw new Error('the writer never ran the statement');
    await new Promise((res) => setTimeout(res, 20));
  }
}

test('a lost connection fails the in-flight and queued jobs, and the next write reconnects', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY)', params: [] }]);
  const pid = writer.backendPid!;
  assert.ok(pid > 0);
  const started = Date.now();
  const inFlight = writer.write([{ sql: `INSERT INTO t VALUES ('lost')`, params: [] }, { sql: 'SELECT pg_sleep(30)', params: [] }]).then(() => null, (e: unknown) => e);
  await waitActive(admin, pid, '%pg_sleep%');
  const queued = writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: ['queued'] }]).then(() => null, (e: unknown) => e);
  assert.equal(writer.inFlight, 2);
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  const [e1, e2] = await Promise.all([inFlight, queued]);
  assert.ok(Date.now() - started < 10_000, 'answered at once, not after the sleep');
  assert.ok(e1 instanceof PgConnectionError, String(e1));
  assert.match(e1.message, /connection was lost .*not applied/);
  assert.ok(e2 instanceof PgConnectionError, String(e2));
  assert.equal(pgDialect.writeFailure(e1), null);
  assert.equal(writer.inFlight, 0);

  // the next write connects again
  await writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: ['after'] }]);
  assert.notEqual(writer.backendPid, pid);
  assert.deepEqual(await ids(admin, 't'), ['after']);

  // a connection lost while idle is noticed too, and change capture works on the new one
  await writer.syncChangeTriggers([{ collection: 'c_t', table: 't' }]);
  const idlePid = writer.backendPid!;
  await admin.query('SELECT pg_terminate_backend($1)', [idlePid]);
  await new Promise((r) => setTimeout(r, 100));
  const batches: ChangeBatch[] = [];
  writer.changes.subscribe((b) => void batches.push(b));
  await writer.write([{ sql: 'UPDATE t SET id = $1 WHERE id = $2', params: ['after2', 'after'], expect: 'change' }]);
  assert.notEqual(writer.backendPid, idlePid);
  assert.deepEqual(batches.map((b) => b.changes), [[{ collection: 'c_t', id: 'after2', op: 'update' }]]);

  // killed while idle and written to at once, before the driver noticed: the group was not sent
  // yet, so it is tried again on a new connection
  for (let i = 0; i < 3; i++) {
    await admin.query('SELECT pg_terminate_backend($1)', [writer.backendPid]);
    await writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: [`again${i}`] }]);
  }
  assert.deepEqual(await ids(admin, 't'), ['after2', 'again0', 'again1', 'again2'].sort());
});

test('a prepared statement whose table changed under it is prepared again', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: `CREATE TABLE t (id text PRIMARY KEY, v integer); INSERT INTO t VALUES ('a', 1)`, params: [] }]);
  const read = () => writer.write([{ sql: 'SELECT * FROM t WHERE id = $1', params: ['a'], returnRows: true }]);
  assert.deepEqual((await read())[0].rows, [['a', 1]]);
  await admin.query('ALTER TABLE t ALTER COLUMN v TYPE bigint');
  assert.deepEqual((await read())[0].rows, [['a', 1n]]);
  await admin.query('ALTER TABLE t ADD COLUMN w text');
  assert.deepEqual((await read())[0], { changes: 0, rows: [['a', 1n, null]], columns: ['id', 'v', 'w'] });
});

test('a server that cannot be reached fails writes instead of hanging them', { skip }, async () => {
  const writer = new PgWriter(server!.urlOf('postgres').replace(`:${server!.port}/`, ':1/'), { connectionTimeoutMs: 2000 });
  const err = await writer.write([{ sql: 'SELECT 1', params: [] }]).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof PgConnectionError, String(err));
  assert.match(err.message, /cannot connect/);
  await writer.close();
  await assert.rejects(PgWriter.start(server!.urlOf('no_such_database')), /cannot open the PostgreSQL database for writing/);
});

test('close() commits the queued jobs; later writes answer 503', { skip }, async () => {
  const { writer, admin } = await fresh();
  await writer.write([{ sql: 'CREATE TABLE t (id text PRIMARY KEY)', params: [] }]);
  const jobs = Array.from({ length: 100 }, (_, i) => writer.write([{ sql: 'INSERT INTO t VALUES ($1)', params: [`r${String(i).padStart(3, '0')}`] }]));
  const closing = writer.close();
  await assert.rejects(writer.write([{ sql: 'SELECT 1', params: [] }]), (e: unknown) => e instanceof WriterClosed && knownApiError(e)?.status === 503);
  await closing;
  const results = await Promise.allSettled(jobs);
  assert.ok(results.every((r) => r.status === 'fulfilled'));
  assert.equal((await ids(admin, 't')).length, 100);
  assert.equal(writer.backendPid, null);
});
