/** Record ids (src/domain/ids.ts): format, time order, uniqueness within a millisecond; random ids stay random. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ID_PATTERN, newId, newRecordId } from '../src/domain/ids.ts';

test('record ids are 15 characters of [a-z0-9] whose first 8 give the creation time', () => {
  const before = Date.now();
  const id = newRecordId();
  const after = Date.now();
  assert.match(id, ID_PATTERN);
  const ms = parseInt(id.slice(0, 8), 36) + Date.UTC(2020, 0, 1);
  assert.ok(ms >= before && ms <= after, `time part ${ms} outside ${before}..${after}`);
});

test('record ids sort by creation across milliseconds (binary collation)', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push(newRecordId());
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.deepEqual([...ids].sort(), ids);
});

test('record ids never repeat, even many in one millisecond', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200_000; i++) seen.add(newRecordId());
  assert.equal(seen.size, 200_000);
});

test('random ids have no time part: their leading characters spread over the alphabet', () => {
  const firsts = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const id = newId();
    assert.match(id, ID_PATTERN);
    firsts.add(id[0]);
  }
  assert.equal(firsts.size, 36);
});
