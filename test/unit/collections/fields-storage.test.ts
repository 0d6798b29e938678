// Encoded values stored in a real libsql table read back and decode equal; schemas serialise them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import fastJson from 'fast-json-stringify';
import { bindAll, type SqlValue } from '../../../src/store/bind.js';
import {
  decodeValue, encodeValue, jsonSchemaFor, normalizeFieldDefinition, INT64_MAX, INT64_MIN,
} from '../../../src/collections/fields/index.js';
import { columnType } from '../../../src/store/sqlite/column-types.js';
import type { Field } from '../../../src/model/schema.js';

function define(input: Record<string, unknown>): Field {
  const r = normalizeFieldDefinition(input, new Set());
  assert.ok('field' in r, JSON.stringify(r));
  return r.field;
}

const ID1 = 'abcdefghij12345';
const ID2 = 'zyxwvutsrq98765';
const fields: Field[] = [
  define({ name: 'title', type: 'text', max: 50 }),
  define({ name: 'body', type: 'editor' }),
  define({ name: 'price', type: 'number' }),
  define({ name: 'amount', type: 'number', mode: 'fixed', scale: 2 }),
  define({ name: 'tiny', type: 'number', mode: 'fixed', scale: 8 }),
  define({ name: 'active', type: 'bool' }),
  define({ name: 'mail', type: 'email' }),
  define({ name: 'site', type: 'url' }),
  define({ name: 'due', type: 'date' }),
  define({ name: 'stamp', type: 'autodate' }),
  define({ name: 'color', type: 'select', values: ['red', 'green', 'blue'] }),
  define({ name: 'tags', type: 'select', values: ['a', 'b', 'c'], maxSelect: 3 }),
  define({ name: 'owner', type: 'relation', collectionId: 'users' }),
  define({ name: 'friends', type: 'relation', collectionId: 'users', maxSelect: 5 }),
  define({ name: 'meta', type: 'json' }),
];

/** name → [input, expected decoded value]; rows beyond the first exercise edge values; autodate ignores its input. */
const rows: Array<Record<string, [unknown, unknown]>> = [
  {
    title: ['Héllo 😀', 'Héllo 😀'], body: ['<p>x</p>', '<p>x</p>'], price: [-12.5, -12.5],
    amount: ['92233720368547758.07', '92233720368547758.07'], tiny: ['-92233720368.54775808', '-92233720368.54775808'],
    active: [true, true], mail: ['a@b.co', 'a@b.co'], site: ['https://x.dev/p?q=1', 'https://x.dev/p?q=1'],
    due: ['2024-03-05T06:07:08+02:00', '2024-03-05 04:07:08.000Z'], color: ['green', 'green'],
    tags: [['c', 'a', 'c'], ['c', 'a']], owner: [ID1, ID1], friends: [[ID2, ID1], [ID2, ID1]],
    stamp: ['1999-01-01', 'now'],
    meta: [{ a: [1, 'two', null, { b: true }], n: 1.5 }, { a: [1, 'two', null, { b: true }], n: 1.5 }],
  },
  {
    title: [undefined, null], body: [null, null], price: [0, 0], amount: ['-92233720368547758.08', '-92233720368547758.08'],
    tiny: [null, null], active: [undefined, false], mail: ['', null], site: [undefined, null],
    due: [undefined, null], color: [undefined, null], tags: [undefined, []], owner: [null, null],
    friends: [undefined, []], stamp: [undefined, 'now'], meta: [undefined, null],
  },
  {
    title: ['', ''], body: ['', ''], price: [1e300, 1e300], amount: ['90071992547409.93', '90071992547409.93'],
    tiny: ['.5', '0.50000000'], active: [false, false], mail: [undefined, null], site: [null, null],
    due: ['0001-01-01', '0001-01-01 00:00:00.000Z'], color: ['red', 'red'], tags: ['b', ['b']],
    owner: [[ID2], ID2], friends: [[], []], stamp: [null, 'now'], meta: ['just a string', 'just a string'],
  },
];

test('libsql round trip: encode → INSERT → SELECT (safeIntegers) → decode', () => {
  const db = new Database(':memory:');
  const cols = fields.map((f) => `"${f.name}" ${columnType(f)}`).join(', ');
  db.exec(`CREATE TABLE t (rowid_ INTEGER PRIMARY KEY, ${cols})`);
  const insert = db.prepare(`INSERT INTO t (rowid_, ${fields.map((f) => `"${f.name}"`).join(', ')}) VALUES (?${', ?'.repeat(fields.length)})`);
  const select = db.prepare(`SELECT ${fields.map((f) => `"${f.name}"`).join(', ')} FROM t WHERE rowid_ = ?`);
  select.safeIntegers(true);
  const serialize = fastJson({
    type: 'object',
    properties: Object.fromEntries(fields.map((f) => [f.name, jsonSchemaFor(f)])),
  });

  rows.forEach((row, n) => {
    const values: SqlValue[] = [];
    for (const f of fields) {
      const r = encodeValue(f, row[f.name]![0], 'create');
      assert.ok('value' in r, `${f.name}: ${'error' in r ? r.error.message : ''}`);
      values.push(r.value);
    }
    insert.run(bindAll([n, ...values]));
    const stored = select.raw().get(bindAll([n])) as SqlValue[];
    const decoded: Record<string, unknown> = {};
    fields.forEach((f, i) => {
      decoded[f.name] = decodeValue(f, stored[i]!);
      if (f.name === 'stamp') {
        assert.match(String(decoded.stamp), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      } else {
        assert.deepEqual(decoded[f.name], row[f.name]![1], `row ${n} field ${f.name}`);
      }
    });
    assert.deepEqual(JSON.parse(serialize(decoded)), JSON.parse(JSON.stringify(decoded)));
  });

  // the scaled integers really are stored as INTEGER at the int64 bounds
  const raw = db.prepare('SELECT amount, typeof(amount), typeof(active), typeof(price) FROM t ORDER BY rowid_');
  raw.safeIntegers(true);
  const all = raw.raw().all(bindAll([])) as unknown[][];
  assert.deepEqual(all.map((r) => r[0]), [INT64_MAX, INT64_MIN, 9007199254740993n]);
  assert.deepEqual(all.map((r) => r[1]), ['integer', 'integer', 'integer']);
  assert.deepEqual(all.map((r) => r[2]), ['integer', 'integer', 'integer']);
  assert.deepEqual(all.map((r) => r[3]), ['real', 'real', 'real']);
  db.close();
});

test('fixed values compare correctly in SQL (ORDER BY the scaled integer)', () => {
  const db = new Database(':memory:');
  const f = define({ name: 'v', type: 'number', mode: 'fixed', scale: 3 });
  db.exec(`CREATE TABLE t (v ${columnType(f)})`);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const inputs = ['-1.5', '0.001', '-0.001', '9223372036854775.807', '-9223372036854775.808', '2', '1.999'];
  for (const s of inputs) {
    const r = encodeValue(f, s, 'create');
    assert.ok('value' in r);
    insert.run(bindAll([r.value]));
  }
  const sel = db.prepare('SELECT v FROM t ORDER BY v');
  sel.safeIntegers(true);
  const out = (sel.raw().all(bindAll([])) as SqlValue[][]).map((r) => decodeValue(f, r[0]!));
  assert.deepEqual(out, ['-9223372036854775.808', '-1.500', '-0.001', '0.001', '1.999', '2.000', '9223372036854775.807']);
  db.close();
});
