// number fields: float mode and exact fixed-point mode (scaled int64).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeValue, encodeValue, jsonSchemaFor, parseFixed, formatFixed, INT64_MAX, INT64_MIN,
} from '../../../src/collections/fields/index.js';
import { columnType } from '../../../src/store/sqlite/column-types.js';
import type { Field, FieldOptions } from '../../../src/model/schema.js';
import type { SqlValue } from '../../../src/store/bind.js';

const num = (options: FieldOptions = {}): Field => ({ id: 'f1', name: 'n', type: 'number', options });
const fixed = (scale: number, more: FieldOptions = {}) => num({ mode: 'fixed', scale, ...more });
function enc(f: Field, input: unknown): SqlValue {
  const r = encodeValue(f, input, 'create');
  assert.ok('value' in r, `expected a value for ${String(input)}: ${JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
  return r.value;
}
function code(f: Field, input: unknown): string {
  const r = encodeValue(f, input, 'create');
  assert.ok('error' in r, `expected an error for ${String(input)}`);
  return r.error.code;
}

test('float mode: numbers only, bounds, required', () => {
  const f = num();
  assert.equal(columnType(f), 'REAL');
  assert.deepEqual(jsonSchemaFor(f), { type: ['number', 'null'] });
  for (const v of [0, 1, -1.5, 1e300, Number.MIN_VALUE]) assert.equal(decodeValue(f, enc(f, v)), v);
  assert.ok(Object.is(enc(f, -0), 0));
  assert.equal(enc(f, undefined), null);
  assert.equal(enc(f, null), null);
  // a value of another JSON type is validation_type; a number that is not finite, validation_number
  for (const bad of ['1', '', true, [1], {}]) assert.equal(code(f, bad), 'validation_type', String(bad));
  for (const bad of [NaN, Infinity]) assert.equal(code(f, bad), 'validation_number', String(bad));
  const b = num({ min: -1, max: 10 });
  assert.equal(code(b, -1.01), 'validation_min');
  assert.equal(code(b, 10.5), 'validation_max');
  assert.equal(enc(b, -1), -1);
  assert.equal(enc(b, 10), 10);
  const r = num({ required: true });
  assert.equal(code(r, null), 'validation_required');
  assert.equal(code(r, undefined), 'validation_required');
  assert.equal(enc(r, 0), 0); // 0 is a value
  assert.equal(decodeValue(f, null), null);
  assert.equal(decodeValue(f, 5n), 5);
});

test('fixed mode: decimal strings in and out', () => {
  const f = fixed(2);
  assert.equal(columnType(f), 'INTEGER');
  assert.deepEqual(jsonSchemaFor(f), { type: ['string', 'null'] });
  const cases: Array<[unknown, bigint, string]> = [
    ['-12.34', -1234n, '-12.34'],
    ['12.3', 1230n, '12.30'],
    ['0', 0n, '0.00'],
    ['-0', 0n, '0.00'],
    ['-0.00', 0n, '0.00'],
    ['1.', 100n, '1.00'],
    ['.5', 50n, '0.50'],
    ['-.5', -50n, '-0.50'],
    ['+7.25', 725n, '7.25'],
    ['007.10', 710n, '7.10'],
    [3, 300n, '3.00'],
    [0.1, 10n, '0.10'],
    [-2.55, -255n, '-2.55'],
    [1e5, 10000000n, '100000.00'],
    [-0, 0n, '0.00'],
  ];
  for (const [input, scaled, out] of cases) {
    assert.equal(enc(f, input), scaled, String(input));
    assert.equal(decodeValue(f, scaled), out);
    assert.equal(decodeValue(f, Number(scaled)), out); // libsql without safeIntegers
  }
  assert.equal(enc(f, ''), null);
  assert.equal(enc(f, null), null);
  assert.equal(decodeValue(f, null), null);
  assert.equal(code(fixed(2, { required: true }), ''), 'validation_required');
  assert.equal(enc(fixed(2, { required: true }), '0'), 0n);
});

test('fixed mode: malformed input → validation_number; another JSON type → validation_type', () => {
  const f = fixed(2);
  for (const bad of ['1e5', '1E5', '1.5e1', '.', '+', '-', '', ' 1', '1 ', '1,5', '0x10', '1.2.3', '--1', 'abc', 'Infinity', 'NaN']) {
    if (bad === '') continue; // empty means "no value"
    assert.equal(code(f, bad), 'validation_number', bad);
  }
  for (const bad of [true, [1], {}, 1n]) assert.equal(code(f, bad), 'validation_type', String(bad));
  for (const bad of [NaN, Infinity, -Infinity]) assert.equal(code(f, bad), 'validation_number', String(bad));
});

test('fixed mode: precision', () => {
  const f = fixed(2);
  assert.equal(code(f, '1.234'), 'validation_too_precise');
  assert.equal(code(f, '1.230'), 'validation_too_precise'); // more decimals than the scale, even zeros
  assert.equal(code(f, 0.125), 'validation_too_precise');
  assert.equal(code(f, 1e-7), 'validation_too_precise');
  assert.equal(enc(fixed(8), 1e-7), 10n); // exponent form of a JSON number is expanded exactly
  assert.equal(enc(fixed(8), '0.00000001'), 1n);
  assert.equal(decodeValue(fixed(8), 1n), '0.00000001');
  assert.equal(enc(fixed(1), '-0.1'), -1n);
  assert.equal(decodeValue(fixed(1), -1n), '-0.1');
});

test('fixed mode: exact at the int64 bounds', () => {
  const f = fixed(2);
  assert.equal(enc(f, '92233720368547758.07'), INT64_MAX);
  assert.equal(enc(f, '-92233720368547758.08'), INT64_MIN);
  assert.equal(decodeValue(f, INT64_MAX), '92233720368547758.07');
  assert.equal(decodeValue(f, INT64_MIN), '-92233720368547758.08');
  assert.equal(code(f, '92233720368547758.08'), 'validation_overflow');
  assert.equal(code(f, '-92233720368547758.09'), 'validation_overflow');
  assert.equal(code(f, '100000000000000000'), 'validation_overflow');
  assert.equal(code(f, '9'.repeat(5000)), 'validation_overflow');
  assert.equal(code(f, '-' + '9'.repeat(100000) + '.5'), 'validation_overflow');
  assert.equal(enc(f, '0'.repeat(5000) + '1.5'), 150n); // leading zeros are harmless
  assert.equal(code(f, 1e21), 'validation_overflow');
  assert.equal(code(f, -1.7976931348623157e308), 'validation_overflow');
  const f8 = fixed(8);
  assert.equal(enc(f8, '92233720368.54775807'), INT64_MAX);
  assert.equal(code(f8, '92233720368.54775808'), 'validation_overflow');
  assert.equal(decodeValue(f8, INT64_MIN), '-92233720368.54775808');
  // beyond 2^53: neighbouring values stay distinct
  assert.equal(enc(f, '90071992547409.93'), 9007199254740993n);
  assert.equal(decodeValue(f, 9007199254740993n), '90071992547409.93');
});

test('fixed mode: min / max compare exactly', () => {
  const f = fixed(2, { min: '90071992547409.92', max: '90071992547409.94' });
  assert.equal(code(f, '90071992547409.91'), 'validation_min');
  assert.equal(enc(f, '90071992547409.92'), 9007199254740992n);
  assert.equal(enc(f, '90071992547409.94'), 9007199254740994n);
  assert.equal(code(f, '90071992547409.95'), 'validation_max');
  const r = encodeValue(fixed(2, { min: '-1.00' }), '-1.01', 'create');
  assert.ok('error' in r && r.error.message === 'Must be at least -1.00.');
});

test('parseFixed / formatFixed helpers', () => {
  assert.deepEqual(parseFixed('1.5', 3), { scaled: 1500n });
  assert.equal(formatFixed(-5n, 3), '-0.005');
  assert.equal(formatFixed(123456789n, 8), '1.23456789');
  for (let i = 0; i < 500; i++) {
    const scale = 1 + (i % 8);
    const scaled = BigInt.asIntN(64, BigInt(Math.floor(Math.random() * 2 ** 53)) * BigInt(Math.floor(Math.random() * 2 ** 20)) - 2n ** 70n / 3n);
    const text = formatFixed(scaled, scale);
    assert.deepEqual(parseFixed(text, scale), { scaled }, text);
  }
});
