/**
 * Unit: constant-time comparison of secrets (CSRF values, single-use token verifiers), as the
 * issue's security checks ask: equality semantics, and a comparison whose cost does not depend
 * on where the first differing byte is (medians of many batches; a generous bound, since this is
 * a property check and not a speed test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { safeEqual } from '../../../src/auth/tokens.js';
import { median } from '../../helpers/auth-helpers.js';

test('safeEqual: equal, unequal, different lengths, empty', () => {
  assert.equal(safeEqual('abc', 'abc'), true);
  assert.equal(safeEqual('abc', 'abd'), false);
  assert.equal(safeEqual('abc', 'abcd'), false);
  assert.equal(safeEqual('', ''), true);
  assert.equal(safeEqual('é', 'e'), false);
});

test('safeEqual: the cost does not depend on the position of the first differing byte', () => {
  const secret = randomBytes(48).toString('base64url');
  const flip = (i: number) => secret.slice(0, i) + (secret[i] === 'A' ? 'B' : 'A') + secret.slice(i + 1);
  const early = flip(0);
  const late = flip(secret.length - 1);
  const batch = (candidate: string) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 2_000; i++) safeEqual(secret, candidate);
    return Number(process.hrtime.bigint() - t0);
  };
  for (let i = 0; i < 20; i++) batch(early), batch(late); // warm-up
  const e: number[] = [];
  const l: number[] = [];
  for (let i = 0; i < 60; i++) {
    e.push(batch(early));
    l.push(batch(late));
  }
  const [me, ml] = [median(e), median(l)];
  assert.ok(Math.abs(me - ml) / Math.max(me, ml) < 0.25, `median ns per batch: first byte ${me}, last byte ${ml}`);
});
