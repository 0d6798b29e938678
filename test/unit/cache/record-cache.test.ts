/** The rendered-record cache (src/cache/record-cache.ts): validity by schema version, drops, the size bound. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordCache } from '../../../src/cache/record-cache.ts';

test('an entry answers for its schema version only; a stale one is dropped', () => {
  const c = new RecordCache();
  c.set('col1', 'a', 1, '{"id":"a"}', ['a']);
  assert.equal(c.get('col1', 'a', 1), '{"id":"a"}');
  assert.deepEqual(c.entry('col1', 'a', 1)?.row, ['a']);
  assert.equal(c.get('col2', 'a', 1), undefined, 'collections do not share entries');
  assert.equal(c.get('col1', 'a', 2), undefined);
  assert.equal(c.get('col1', 'a', 1), undefined, 'the stale entry is gone');
});

test('drop ends one record, dropCollection every record of one collection', () => {
  const c = new RecordCache();
  for (const id of ['a', 'b']) for (const col of ['x', 'y']) c.set(col, id, 1, `${col}${id}`);
  c.drop('x', 'a');
  assert.equal(c.get('x', 'a', 1), undefined);
  assert.equal(c.get('x', 'b', 1), 'xb');
  c.dropCollection('x');
  assert.equal(c.get('x', 'b', 1), undefined);
  assert.equal(c.get('y', 'a', 1), 'ya');
  assert.equal(c.get('y', 'b', 1), 'yb');
  c.dropCollection('none'); // unknown collections are fine
  c.drop('none', 'a');
});

test('the size bound: the cache starts over rather than outgrow it, and counts what drops give back', () => {
  const c = new RecordCache(100);
  c.set('x', 'a', 1, 'x'.repeat(40));
  c.set('x', 'b', 1, 'x'.repeat(40));
  assert.ok(c.get('x', 'a', 1) && c.get('x', 'b', 1));
  c.set('x', 'c', 1, 'x'.repeat(40)); // 120 > 100: starts over, then keeps c
  assert.equal(c.get('x', 'a', 1), undefined);
  assert.equal(c.get('x', 'c', 1)?.length, 40);
  c.drop('x', 'c');
  c.set('y', 'd', 1, 'x'.repeat(60));
  c.set('y', 'e', 1, 'x'.repeat(40)); // 100: fits only because the drop gave its 40 back
  assert.ok(c.get('y', 'd', 1) && c.get('y', 'e', 1));
  c.dropCollection('y');
  c.set('z', 'f', 1, 'x'.repeat(100)); // fits only because dropCollection gave 100 back
  assert.equal(c.get('z', 'f', 1)?.length, 100);
  c.set('z', 'f', 1, 'x'.repeat(90)); // a replaced entry counts once
  c.set('z', 'g', 1, 'x'.repeat(10));
  assert.ok(c.get('z', 'f', 1) && c.get('z', 'g', 1));
});

test('entry overhead counts towards the bound: a cache of 1,000 bytes with 150 a entry holds 5 rows of 50', () => {
  const c = new RecordCache<Buffer>(1000, 150);
  for (let i = 0; i < 5; i++) c.set('c1', `r${i}`, 1, Buffer.alloc(50));
  for (let i = 0; i < 5; i++) assert.ok(c.get('c1', `r${i}`, 1), `r${i} kept`);
  c.set('c1', 'r5', 1, Buffer.alloc(50)); // 6 × 200 > 1,000: the cache starts over
  assert.equal(c.get('c1', 'r0', 1), undefined);
  assert.ok(c.get('c1', 'r5', 1));
  // replacing and dropping entries give their share back
  c.set('c1', 'r5', 1, Buffer.alloc(10));
  c.drop('c1', 'r5');
  for (let i = 0; i < 5; i++) c.set('c1', `s${i}`, 1, Buffer.alloc(50));
  for (let i = 0; i < 5; i++) assert.ok(c.get('c1', `s${i}`, 1), `s${i} kept`);
});
