/**
 * Parameter slots both backends read natively (src/store/slots.ts): `$1…$n` lists, the order
 * check SQLite's executors run on a statement before preparing it, and SQLite's binding of `$n`
 * (named parameters numbered by first appearance) giving PostgreSQL's answer for the same array.
 * (The writer part runs the built module: a worker thread started from TypeScript sources gets no
 * tsx loader on Node 20.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { SLOT, checkRendered, checkSlotOrder, renderSlots, slotList } from '../../../src/store/slots.js';
import { WriterClient } from '../../../dist/src/store/sqlite/writer-client.js';

test('slotList: consecutive slots from a start', () => {
  assert.equal(slotList(1, 3), '$1,$2,$3');
  assert.equal(slotList(4, 1), '$4');
  assert.equal(slotList(2, 0), '');
});

test('renderSlots: the SLOTs of a fragment become ? on SQLite and $1…$n on PostgreSQL, in order; a text without one is itself', () => {
  const sql = `SELECT r."id" FROM "t" r WHERE (r."a" > ${SLOT}) AND (r."b" = ${SLOT}::text) LIMIT ${SLOT}`;
  assert.equal(renderSlots.sqlite(sql), 'SELECT r."id" FROM "t" r WHERE (r."a" > ?) AND (r."b" = ?::text) LIMIT ?');
  assert.equal(renderSlots.postgres(sql), 'SELECT r."id" FROM "t" r WHERE (r."a" > $1) AND (r."b" = $2::text) LIMIT $3');
  const plain = 'SELECT 1 WHERE \'?\' = $1';
  assert.equal(renderSlots.sqlite(plain), plain);
  assert.equal(renderSlots.postgres(plain), plain);
  assert.throws(() => checkRendered(sql), /slot its builder did not render/);
  assert.throws(() => checkSlotOrder(sql), /slot its builder did not render/);
  assert.doesNotThrow(() => checkRendered(renderSlots.postgres(sql)));
});

test('checkSlotOrder: slots first appearing in order pass, repeats included; out of order or mixed with ? is refused', () => {
  for (const ok of ['SELECT 1', 'SELECT ? , ?', 'SELECT $1, $2, $1', 'UPDATE t SET a = $1 WHERE b = $2 AND c = $1', `SELECT json_extract(x, '$.a') FROM t WHERE id = $1`]) {
    assert.doesNotThrow(() => checkSlotOrder(ok), ok);
  }
  assert.throws(() => checkSlotOrder('SELECT $2, $1'), /slot \$2 first appears before \$1/);
  assert.throws(() => checkSlotOrder('SELECT $1, $3'), /slot \$3 first appears before \$2/);
  assert.throws(() => checkSlotOrder('SELECT $1, ?'), /mixes \$n and \? slots/);
});

test('SQLite binds $n slots by first appearance: the array PostgreSQL would take gives its answer', () => {
  const db = new Database(':memory:');
  try {
    const st = db.prepare('SELECT $1, $2, $1 || $2');
    st.raw(true);
    assert.deepEqual(st.get(['a', 'b']), ['a', 'b', 'ab']);
  } finally {
    db.close();
  }
});

test('the SQLite writer refuses a statement whose slots are out of order, and runs one in order', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-slots-'));
  const w = await WriterClient.start(join(dir, 'data.db'));
  try {
    await w.write([{ sql: 'CREATE TABLE t (a TEXT, b TEXT)', params: [] }]);
    await w.write([{ sql: 'INSERT INTO t (a, b) VALUES ($1, $2)', params: ['x', 'y'] }]);
    await assert.rejects(w.write([{ sql: 'INSERT INTO t (b, a) VALUES ($2, $1)', params: ['x', 'y'] }]), /slot \$2 first appears before \$1/);
    const [r] = await w.write([{ sql: 'SELECT a, b FROM t WHERE a = $1 OR b = $1', params: ['x'], returnRows: true }]);
    assert.deepEqual(r.rows, [['x', 'y']]);
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
