// date fields: ISO 8601 input normalised to `YYYY-MM-DD HH:MM:SS.sssZ` (UTC); bounds; nowDate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeValue, encodeValue, normalizeDate, nowDate, jsonSchemaFor } from '../../../src/collections/fields/index.js';
import { columnType } from '../../../src/store/sqlite/column-types.js';
import type { Field, FieldOptions } from '../../../src/model/schema.js';

const date = (options: FieldOptions = {}): Field => ({ id: 'f1', name: 'd', type: 'date', options });
const STORED = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/;

test('normalisation of accepted forms', () => {
  const cases: Array<[string, string]> = [
    ['2024-03-05T06:07:08.123Z', '2024-03-05 06:07:08.123Z'],
    ['2024-03-05 06:07:08.123Z', '2024-03-05 06:07:08.123Z'],
    ['2024-03-05T06:07:08Z', '2024-03-05 06:07:08.000Z'],
    ['2024-03-05t06:07:08z', '2024-03-05 06:07:08.000Z'],
    ['2024-03-05 06:07:08', '2024-03-05 06:07:08.000Z'],
    ['2024-03-05T06:07', '2024-03-05 06:07:00.000Z'],
    ['2024-03-05', '2024-03-05 00:00:00.000Z'],
    ['2024-03-05T06:07:08.1Z', '2024-03-05 06:07:08.100Z'],
    ['2024-03-05T06:07:08.123456789Z', '2024-03-05 06:07:08.123Z'],
    ['2024-03-05T06:07:08+02:00', '2024-03-05 04:07:08.000Z'],
    ['2024-03-05T06:07:08-0530', '2024-03-05 11:37:08.000Z'],
    ['2024-03-05T06:07:08+01', '2024-03-05 05:07:08.000Z'],
    ['2024-01-01T00:30:00+01:00', '2023-12-31 23:30:00.000Z'],
    ['2024-02-29T12:00:00Z', '2024-02-29 12:00:00.000Z'],
    ['2000-02-29', '2000-02-29 00:00:00.000Z'],
    ['0001-01-01', '0001-01-01 00:00:00.000Z'],
    ['0050-06-01', '0050-06-01 00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31 23:59:59.999Z'],
  ];
  for (const [input, out] of cases) assert.equal(normalizeDate(input), out, input);
});

test('invalid dates', () => {
  for (const bad of [
    'yesterday', '2024-13-01', '2024-00-10', '2024-02-30', '2023-02-29', '1900-02-29', '2024-04-31',
    '2024-01-01T24:00:00Z', '2024-01-01T23:60:00Z', '2024-01-01T23:59:60Z', '2024-01-01T10:00:00+24:00',
    '24-01-01', '2024-1-1', '2024-01-01T', '2024-01-01 10', '2024-01-01T10:00:00.Z', ' 2024-01-01',
    '2024-01-01T10:00:00 Z', '0000-01-01T00:00:00+00:01', '9999-12-31T23:59:59-00:01', '1704067200000',
  ]) {
    assert.equal(normalizeDate(bad), null, bad);
    assert.equal((encodeValue(date(), bad, 'create') as { error: { code: string } }).error.code, 'validation_date', bad);
  }
  const r = encodeValue(date(), 1704067200000, 'create');
  assert.ok('error' in r && r.error.code === 'validation_type');
});

test('encode / decode, empty values, required, Date objects', () => {
  const f = date();
  assert.equal(columnType(f), 'TEXT');
  assert.deepEqual(jsonSchemaFor(f), { type: ['string', 'null'] });
  assert.deepEqual(encodeValue(f, '2024-03-05T06:07:08+02:00', 'create'), { value: '2024-03-05 04:07:08.000Z' });
  assert.deepEqual(encodeValue(f, new Date(Date.UTC(2020, 0, 2, 3, 4, 5, 6)), 'create'), { value: '2020-01-02 03:04:05.006Z' });
  for (const empty of [undefined, null, '']) assert.deepEqual(encodeValue(f, empty, 'update'), { value: null });
  const r = encodeValue(date({ required: true }), '', 'create');
  assert.ok('error' in r && r.error.code === 'validation_required');
  assert.equal(decodeValue(f, '2024-03-05 04:07:08.000Z'), '2024-03-05 04:07:08.000Z');
  assert.equal(decodeValue(f, null), null);
});

test('min / max bounds', () => {
  const f = date({ min: '2024-01-01 00:00:00.000Z', max: '2024-12-31 23:59:59.999Z' });
  assert.deepEqual(encodeValue(f, '2024-01-01', 'create'), { value: '2024-01-01 00:00:00.000Z' });
  assert.deepEqual(encodeValue(f, '2025-01-01T00:59:59.999+01:00', 'create'), { value: '2024-12-31 23:59:59.999Z' });
  for (const out of ['2023-12-31T23:59:59.999Z', '2025-01-01', '2024-01-01T00:00:00+00:01']) {
    const r = encodeValue(f, out, 'create');
    assert.ok('error' in r && r.error.code === 'validation_date', out);
  }
});

test('nowDate', () => {
  const before = Date.now();
  const now = nowDate();
  assert.match(now, STORED);
  const t = Date.parse(now.replace(' ', 'T'));
  assert.ok(t >= before - 1 && t <= Date.now() + 1);
  assert.equal(normalizeDate(now), now);
});
