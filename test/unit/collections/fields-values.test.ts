// Value codecs of text, editor, email, url, bool, json, select, relation, autodate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeValue, encodeValue, shouldEncode, jsonSchemaFor, JSON_MAX_BYTES } from '../../../src/collections/fields/index.js';
import { columnType } from '../../../src/store/sqlite/column-types.js';
import type { Field, FieldOptions, FieldType } from '../../../src/model/schema.js';
import type { SqlValue } from '../../../src/store/bind.js';

const show = (v: unknown): string => (typeof v === 'bigint' || typeof v === 'function' ? String(v) : JSON.stringify(v));
const field = (type: FieldType, options: FieldOptions = {}): Field => ({ id: 'f1', name: 'x', type, options });
function enc(f: Field, input: unknown, mode: 'create' | 'update' = 'create'): SqlValue {
  const r = encodeValue(f, input, mode);
  assert.ok('value' in r, `expected a value for ${show(input)}: ${show(r)}`);
  return r.value;
}
function code(f: Field, input: unknown, mode: 'create' | 'update' = 'create'): string {
  const r = encodeValue(f, input, mode);
  assert.ok('error' in r, `expected an error for ${show(input)}`);
  assert.match(r.error.message, /^[A-Z"].*[.]$/);
  return r.error.code;
}
const roundTrip = (f: Field, input: unknown) => decodeValue(f, enc(f, input));

test('text: type, empty values, required', () => {
  const f = field('text');
  assert.equal(enc(f, undefined), null);
  assert.equal(enc(f, null), null);
  assert.equal(enc(f, ''), '');
  assert.equal(enc(f, 'héllo'), 'héllo');
  for (const bad of [1, true, ['a'], { a: 1 }]) assert.equal(code(f, bad), 'validation_type');
  const r = field('text', { required: true });
  for (const empty of [undefined, null, '']) assert.equal(code(r, empty), 'validation_required');
  assert.equal(code(r, undefined, 'update'), 'validation_required');
  assert.equal(decodeValue(f, null), null);
  assert.equal(decodeValue(f, 'a'), 'a');
  assert.equal(decodeValue(f, 12), '12');
});

test('text: min / max count code points, pattern', () => {
  const f = field('text', { min: 3, max: 5 });
  assert.equal(code(f, 'ab'), 'validation_min');
  const r = encodeValue(f, 'ab', 'create');
  assert.ok('error' in r && r.error.message === 'Must be at least 3 characters.');
  assert.equal(enc(f, 'abc'), 'abc');
  assert.equal(enc(f, '😀😀😀'), '😀😀😀'); // 6 UTF-16 units, 3 code points
  assert.equal(enc(f, '😀😀😀😀😀'), '😀😀😀😀😀');
  assert.equal(code(f, 'abcdef'), 'validation_max');
  assert.equal(enc(f, ''), ''); // empty optional value skips min
  assert.equal(code(field('text', { min: 1, required: true }), ''), 'validation_required');
  const p = field('text', { pattern: '^[a-z]+$' });
  assert.equal(enc(p, 'abc'), 'abc');
  assert.equal(code(p, 'Abc'), 'validation_pattern');
  assert.equal(code(p, 'abc1'), 'validation_pattern');
  assert.equal(enc(field('text', { pattern: 'b' }), 'abc'), 'abc'); // unanchored
  // bounds near the UTF-16 length still count code points (the count is skipped only when it cannot matter)
  assert.equal(code(field('text', { min: 3 }), '😀😀'), 'validation_min'); // 4 units, 2 code points
  assert.equal(enc(field('text', { min: 2 }), '😀😀'), '😀😀');
  assert.equal(enc(field('text', { max: 4 }), '😀😀😀'), '😀😀😀'); // 6 units, 3 code points
  assert.equal(code(field('text', { max: 2 }), '😀😀😀'), 'validation_max');
  assert.equal(enc(field('text', { max: 480 }), 'x'.repeat(480)), 'x'.repeat(480));
  assert.equal(code(field('text', { max: 480 }), 'x'.repeat(481)), 'validation_max');
  assert.equal(code(field('text', { min: 241 }), 'x'.repeat(240)), 'validation_min');
  const one = encodeValue(field('text', { min: 1, max: 1 }), 'ab', 'create');
  assert.ok('error' in one && one.error.message === 'Must be at most 1 character.');
});

test('editor: string with min/max, no pattern', () => {
  const f = field('editor', { min: 2, max: 20, pattern: '^x$' });
  assert.equal(enc(f, '<p>hi</p>'), '<p>hi</p>');
  assert.equal(code(f, 'a'), 'validation_min');
  assert.equal(code(f, '<p>' + 'x'.repeat(30) + '</p>'), 'validation_max');
  assert.equal(code(f, 5), 'validation_type');
  assert.equal(code(field('editor', { required: true }), ''), 'validation_required');
});

test('email', () => {
  const f = field('email');
  for (const ok of ['a@b.co', 'first.last+tag@example.com', 'user@localhost', "o'neil@x.org"]) assert.equal(enc(f, ok), ok);
  for (const bad of ['plain', 'a@', '@b.com', 'a b@c.com', 'a@b..com', 'a@-b.com', `${'x'.repeat(65)}@b.com`, `a@${'b'.repeat(250)}.com`]) {
    assert.equal(code(f, bad), 'validation_invalid_email', bad);
  }
  assert.equal(code(f, 42), 'validation_type');
  assert.equal(enc(f, ''), null);
  assert.equal(enc(f, null), null);
  assert.equal(code(field('email', { required: true }), ''), 'validation_required');
});

test('url', () => {
  const f = field('url');
  for (const ok of ['https://example.com', 'http://localhost:8090/a?b=c#d', 'https://例え.jp/パス']) assert.equal(enc(f, ok), ok);
  for (const bad of ['example.com', 'ftp://example.com', 'javascript:alert(1)', 'mailto:a@b.c', 'http//x', 'https://']) {
    assert.equal(code(f, bad), 'validation_value', bad);
  }
  assert.equal(code(f, {}), 'validation_type');
  assert.equal(enc(f, ''), null);
  assert.equal(code(field('url', { required: true }), null), 'validation_required');
});

test('bool: absent false, required must be true, strict type', () => {
  const f = field('bool');
  assert.equal(enc(f, undefined), 0);
  assert.equal(enc(f, null), 0);
  assert.equal(enc(f, true), 1);
  assert.equal(enc(f, false), 0);
  for (const bad of ['true', 1, 0, [], {}]) assert.equal(code(f, bad), 'validation_type');
  const r = field('bool', { required: true });
  assert.equal(code(r, false), 'validation_required');
  assert.equal(code(r, undefined), 'validation_required');
  assert.equal(enc(r, true), 1);
  assert.equal(decodeValue(f, 1), true);
  assert.equal(decodeValue(f, 1n), true);
  assert.equal(decodeValue(f, 0), false);
  assert.equal(decodeValue(f, 0n), false);
  assert.equal(decodeValue(f, null), false);
  assert.equal(columnType(f), 'INTEGER');
  assert.deepEqual(jsonSchemaFor(f), { type: 'boolean' });
});

test('json: any value, size limit, required emptiness', () => {
  const f = field('json');
  for (const v of [1, -2.5, 'str', true, false, [1, 'a', null], { a: { b: [1, 2] } }, [], {}, '']) {
    assert.deepEqual(roundTrip(f, v), v);
  }
  assert.equal(enc(f, undefined), null);
  assert.equal(enc(f, null), null);
  assert.equal(decodeValue(f, null), null);
  assert.equal(enc(f, { a: 1 }), '{"a":1}');
  const big = 'x'.repeat(JSON_MAX_BYTES - 2); // serialises to exactly 1 MiB with the quotes
  assert.equal((enc(f, big) as string).length, JSON_MAX_BYTES);
  assert.equal(code(f, big + 'x'), 'validation_max');
  assert.equal(code(f, 'é'.repeat(JSON_MAX_BYTES / 2)), 'validation_max'); // 2 bytes per char in UTF-8
  assert.equal(code(f, 10n), 'validation_type');
  assert.equal(code(f, () => 1), 'validation_type');
  const r = field('json', { required: true });
  for (const empty of [undefined, null, '', [], {}]) assert.equal(code(r, empty), 'validation_required');
  assert.equal(enc(r, 0), '0');
  assert.equal(enc(r, false), 'false');
  assert.equal(decodeValue(f, 'not json'), 'not json');
  assert.deepEqual(jsonSchemaFor(f), {});
});

test('select single', () => {
  const f = field('select', { values: ['a', 'b', 'c'], maxSelect: 1 });
  assert.equal(enc(f, 'a'), 'a');
  assert.equal(enc(f, ['b']), 'b');
  assert.equal(enc(f, ['b', 'b']), 'b');
  assert.equal(enc(f, undefined), null);
  assert.equal(enc(f, ''), null);
  assert.equal(enc(f, []), null);
  assert.equal(code(f, 'z'), 'validation_select');
  assert.equal(code(f, ['a', 'b']), 'validation_select');
  assert.equal(code(f, 1), 'validation_type');
  assert.equal(code(f, [1]), 'validation_type');
  assert.equal(code(field('select', { values: ['a'], required: true }), ''), 'validation_required');
  assert.equal(decodeValue(f, 'a'), 'a');
  assert.equal(decodeValue(f, null), null);
  assert.equal(decodeValue(f, '["a","b"]'), 'b'); // written while multiple
  assert.deepEqual(jsonSchemaFor(f), { type: ['string', 'null'] });
  assert.equal(columnType(f), 'TEXT');
});

test('select multiple', () => {
  const f = field('select', { values: ['a', 'b', 'c'], maxSelect: 2 });
  assert.equal(enc(f, undefined), '[]');
  assert.equal(enc(f, null), '[]');
  assert.equal(enc(f, 'a'), '["a"]');
  assert.equal(enc(f, ['b', 'a', 'b']), '["b","a"]');
  assert.equal(code(f, ['a', 'b', 'c']), 'validation_select');
  assert.equal(code(f, ['a', 'x']), 'validation_select');
  assert.equal(code(f, { a: 1 }), 'validation_type');
  const r = field('select', { values: ['a'], maxSelect: 3, required: true });
  for (const empty of [undefined, null, '', []]) assert.equal(code(r, empty), 'validation_required');
  assert.deepEqual(roundTrip(f, ['c', 'a']), ['c', 'a']);
  assert.deepEqual(decodeValue(f, '[]'), []);
  assert.deepEqual(decodeValue(f, null), []);
  assert.deepEqual(decodeValue(f, 'a'), ['a']); // written while single
  assert.deepEqual(jsonSchemaFor(f), { type: 'array', items: { type: 'string' } });
});

test('relation single and multiple', () => {
  const id1 = 'abcdefghij12345';
  const id2 = '0123456789abcde';
  const s = field('relation', { collectionId: 'c', maxSelect: 1 });
  assert.equal(enc(s, id1), id1);
  assert.equal(enc(s, [id1]), id1);
  assert.equal(enc(s, null), null);
  for (const bad of ['short', 'ABCDEFGHIJ12345', 'abcdefghij123456', 'abcdefghij-2345']) {
    assert.equal(code(s, bad), 'validation_relation', JSON.stringify(bad));
  }
  for (const bad of [7, [7], { id: id1 }]) assert.equal(code(s, bad), 'validation_type', JSON.stringify(bad));
  assert.equal(code(s, [id1, id2]), 'validation_relation');
  assert.equal(code(field('relation', { collectionId: 'c', required: true }), []), 'validation_required');
  const m = field('relation', { collectionId: 'c', maxSelect: 3, minSelect: 2 });
  assert.equal(enc(m, [id1, id2]), JSON.stringify([id1, id2]));
  assert.equal(code(m, [id1]), 'validation_relation'); // fewer than minSelect
  assert.equal(code(m, [id1, id1]), 'validation_relation'); // dedupes to one
  assert.equal(enc(m, []), '[]'); // empty optional skips minSelect
  assert.equal(code(m, ['aaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbb', 'ccccccccccccccc', 'ddddddddddddddd']), 'validation_relation');
  assert.deepEqual(roundTrip(m, [id2, id1]), [id2, id1]);
  assert.deepEqual(decodeValue(m, null), []);
  assert.equal(decodeValue(s, id1), id1);
});

test('autodate: server-set, client value ignored', () => {
  const c = field('autodate', { onCreate: true, onUpdate: false });
  const v = enc(c, '1999-01-01 00:00:00.000Z');
  assert.match(String(v), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.notEqual(v, '1999-01-01 00:00:00.000Z');
  assert.equal(shouldEncode(c, undefined, 'create'), true);
  assert.equal(shouldEncode(c, 'x', 'update'), false);
  const u = field('autodate', { onCreate: false, onUpdate: true });
  assert.equal(enc(u, 'x'), null);
  assert.match(String(enc(u, undefined, 'update')), /Z$/);
  assert.equal(shouldEncode(u, undefined, 'update'), true);
  assert.equal(enc(field('autodate', { required: true, onCreate: false }), undefined), null);
  assert.deepEqual(jsonSchemaFor(u), { type: ['string', 'null'] });
});

test('shouldEncode: update writes only fields present in the body', () => {
  const t = field('text');
  assert.equal(shouldEncode(t, undefined, 'create'), true);
  assert.equal(shouldEncode(t, undefined, 'update'), false);
  assert.equal(shouldEncode(t, null, 'update'), true);
});

test('file: stored names (single as TEXT, multiple as a JSON array), bad names and too many rejected', () => {
  const one = field('file');
  const many = field('file', { maxSelect: 2 });
  assert.equal(columnType(one), 'TEXT');
  assert.equal(enc(one, 'a_0123456789.png'), 'a_0123456789.png');
  assert.equal(enc(one, null), null);
  assert.equal(enc(many, ['a.png', 'b.png']), '["a.png","b.png"]');
  assert.equal(enc(many, []), '[]');
  assert.equal(code(one, ['a.png', 'b.png']), 'validation_max');
  assert.equal(code(one, '../etc/passwd'), 'validation_value');
  assert.equal(code(one, 5), 'validation_type');
  assert.equal(code(field('file', { required: true }), null), 'validation_required');
  assert.deepEqual(decodeValue(many, '["a.png"]'), ['a.png']);
  assert.equal(decodeValue(one, '["a.png","b.png"]'), 'b.png');
  assert.deepEqual(jsonSchemaFor(many), { type: 'array', items: { type: 'string' } });
});
