/** Record ids (src/records/ids.ts): format, time order, uniqueness within a millisecond; random ids stay random. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ID_PATTERN, newId, newRecordId, randomToken } from '../../../src/records/ids.ts';

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

test('random tokens: base64url of the asked byte count, never repeated, across pool refills and beyond the pool size', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 3000; i++) {
    const t = randomToken(18); // 3000 × 18 bytes walks the 8 KiB pool more than six times
    assert.match(t, /^[A-Za-z0-9_-]{24}$/);
    assert.equal(Buffer.from(t, 'base64url').length, 18);
    seen.add(t);
  }
  assert.equal(seen.size, 3000);
  assert.equal(Buffer.from(randomToken(), 'base64url').length, 32);
  assert.equal(Buffer.from(randomToken(10_000), 'base64url').length, 10_000); // larger than the pool
});

test('random tokens never hand out bytes already handed out (zeroed pool slots are not reused)', () => {
  // A token that took a zeroed slot would decode to all-zero bytes. 5000 draws of 16 bytes with
  // a random id between them (its bytes come from the same pool) cross the pool's end many times
  // at uneven offsets.
  for (let i = 0; i < 5000; i++) {
    newId();
    const b = Buffer.from(randomToken(16), 'base64url');
    assert.ok(b.some((x) => x !== 0), `draw ${i} was all zero bytes`);
  }
});
