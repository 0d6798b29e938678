// Field definition validation: normalizeFieldDefinition (spec 1-core-api.md "Field", 0-conventions.md codes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeFieldDefinition, RESERVED_FIELD_NAMES, AUTH_RESERVED_FIELD_NAMES } from '../../../src/collections/fields/index.js';
import type { Field } from '../../../src/model/schema.js';

function def(input: unknown, ids = new Set<string>()): Field {
  const r = normalizeFieldDefinition(input, ids);
  assert.ok('field' in r, JSON.stringify(r));
  return r.field;
}
function errs(input: unknown): Record<string, string> {
  const r = normalizeFieldDefinition(input, new Set());
  assert.ok('errors' in r, `expected errors for ${JSON.stringify(input)}`);
  const out: Record<string, string> = {};
  for (const [k, e] of Object.entries(r.errors)) {
    assert.ok(e.message.length > 0 && /[.!]$/.test(e.message), `message: ${e.message}`);
    out[k] = e.code;
  }
  return out;
}

test('text definition: defaults filled, unknown keys dropped, id generated', () => {
  const f = def({ name: 'title', type: 'text', options: { min: 2, foo: 1 }, presentable: true });
  assert.match(f.id, /^f[a-z0-9]{9}$/);
  assert.deepEqual(f, {
    id: f.id, name: 'title', type: 'text',
    options: { required: false, unique: false, hidden: false, encrypted: false, searchable: false, min: 2, max: null, pattern: null },
  });
});

test('flat options (PocketBase SDK shape) are accepted; nested win', () => {
  const f = def({ name: 'n', type: 'text', required: true, max: 10, system: true, options: { max: 5 } });
  assert.equal(f.options.required, true);
  assert.equal(f.options.max, 5);
  assert.equal(f.system, undefined);
});

test('ids: valid input id kept, invalid replaced, generated ids avoid existing', () => {
  assert.equal(def({ id: 'abc_123', name: 'a', type: 'bool' }).id, 'abc_123');
  assert.match(def({ id: 'Bad-Id', name: 'a', type: 'bool' }).id, /^f[a-z0-9]{9}$/);
  assert.match(def({ id: 'x'.repeat(31), name: 'a', type: 'bool' }).id, /^f[a-z0-9]{9}$/);
  assert.match(def({ id: 7, name: 'a', type: 'bool' }).id, /^f[a-z0-9]{9}$/);
  const existing = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const id = def({ name: 'a', type: 'bool' }, existing).id;
    assert.ok(!existing.has(id));
    existing.add(id);
  }
});

test('names: invalid and reserved', () => {
  for (const name of ['', '1abc', 'a-b', 'a b', 'é', 'a'.repeat(64), undefined, 5]) {
    assert.deepEqual(errs({ name, type: 'text' }), { name: 'validation_invalid_name' }, String(name));
  }
  assert.ok(def({ name: 'a'.repeat(63), type: 'text' }));
  assert.ok(def({ name: '_x9', type: 'text' }));
  for (const name of RESERVED_FIELD_NAMES) assert.deepEqual(errs({ name, type: 'text' }), { name: 'validation_reserved_name' });
  assert.deepEqual(errs({ name: 'ID', type: 'text' }), { name: 'validation_reserved_name' });
  assert.equal(RESERVED_FIELD_NAMES.length, 10);
  // Auth-only names (email, verified, …) are legal in base collections; collection-input rejects them in auth ones.
  for (const name of AUTH_RESERVED_FIELD_NAMES) assert.ok(def({ name, type: 'text' }), name);
});

test('types: unknown, missing, non-object field', () => {
  assert.deepEqual(errs({ name: 'a', type: 'blob' }), { type: 'validation_type' });
  assert.deepEqual(errs({ name: 'a' }), { type: 'validation_type' });
  assert.deepEqual(errs('text'), { field: 'validation_type' });
  assert.deepEqual(errs(null), { field: 'validation_type' });
  assert.deepEqual(errs({ name: 'a', type: 'text', options: 'x' }), { options: 'validation_type' });
  assert.deepEqual(errs({ name: 'a', type: 'text', required: 'yes' }), { required: 'validation_type' });
  for (const type of ['text', 'number', 'bool', 'email', 'url', 'date', 'autodate', 'json', 'editor', 'file']) {
    assert.equal(def({ name: 'a', type }).type, type);
  }
});

test('file options: defaults, bounds and MIME type list', () => {
  const f = def({ name: 'a', type: 'file' });
  assert.equal(f.options.maxSelect, 1);
  assert.equal(f.options.maxSize, 5 * 1024 * 1024);
  assert.deepEqual(f.options.mimeTypes, []);
  assert.equal(f.options.protected, false);
  const g = def({ name: 'a', type: 'file', options: { maxSelect: 3, maxSize: 1000, mimeTypes: ['Image/PNG', 'image/*'], protected: true } });
  assert.deepEqual([g.options.maxSelect, g.options.maxSize, g.options.mimeTypes, g.options.protected], [3, 1000, ['image/png', 'image/*'], true]);
  assert.deepEqual(errs({ name: 'a', type: 'file', maxSize: -1 }), { maxSize: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'file', mimeTypes: 'image/png' }), { mimeTypes: 'validation_value' });
  assert.deepEqual(errs({ name: 'a', type: 'file', mimeTypes: ['png'] }), { mimeTypes: 'validation_value' });
  assert.deepEqual(errs({ name: 'a', type: 'file', encrypted: true }), { encrypted: 'validation_encrypted_type' });
});

test('common options: encrypted / searchable rules', () => {
  for (const type of ['text', 'editor', 'json']) assert.equal(def({ name: 'a', type, encrypted: true }).options.encrypted, true);
  for (const type of ['number', 'bool', 'email', 'url', 'date']) {
    assert.deepEqual(errs({ name: 'a', type, encrypted: true }), { encrypted: 'validation_encrypted_type' });
  }
  assert.deepEqual(errs({ name: 'a', type: 'text', encrypted: true, unique: true }), { encrypted: 'validation_encrypted_unique' });
  for (const type of ['text', 'editor']) assert.equal(def({ name: 'a', type, searchable: true }).options.searchable, true);
  for (const type of ['json', 'number', 'email']) {
    assert.equal(errs({ name: 'a', type, searchable: true }).searchable, 'validation_searchable_type');
  }
  assert.deepEqual(errs({ name: 'a', type: 'text', searchable: true, encrypted: true }), { searchable: 'validation_searchable_encrypted' });
  const f = def({ name: 'a', type: 'json', hidden: true, unique: true, required: true });
  assert.equal(f.options.hidden && f.options.unique && f.options.required, true);
});

test('text / editor options', () => {
  assert.deepEqual(errs({ name: 'a', type: 'text', min: -1 }), { min: 'validation_min' });
  assert.deepEqual(errs({ name: 'a', type: 'text', min: 1.5 }), { min: 'validation_min' });
  assert.deepEqual(errs({ name: 'a', type: 'text', max: -3 }), { max: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'text', min: 5, max: 3 }), { max: 'validation_max' });
  assert.equal(def({ name: 'a', type: 'text', max: 0 }).options.max, null); // PocketBase "no limit"
  assert.deepEqual(errs({ name: 'a', type: 'text', pattern: '(' }), { pattern: 'validation_pattern' });
  assert.deepEqual(errs({ name: 'a', type: 'text', pattern: 3 }), { pattern: 'validation_pattern' });
  assert.equal(def({ name: 'a', type: 'text', pattern: '^[a-z]+$' }).options.pattern, '^[a-z]+$');
  assert.equal(def({ name: 'a', type: 'text', pattern: '' }).options.pattern, null);
  const e = def({ name: 'a', type: 'editor', min: 1, max: 9, pattern: 'x' });
  assert.deepEqual(e.options, { required: false, unique: false, hidden: false, encrypted: false, searchable: false, min: 1, max: 9 });
  assert.deepEqual(errs({ name: 'a', type: 'editor', min: -1 }), { min: 'validation_min' });
});

test('number options: float and fixed', () => {
  assert.deepEqual(def({ name: 'a', type: 'number', min: 0, max: 10, scale: 3 }).options,
    { required: false, unique: false, hidden: false, encrypted: false, searchable: false, mode: null, scale: null, min: 0, max: 10 });
  assert.deepEqual(errs({ name: 'a', type: 'number', min: '1' }), { min: 'validation_min' });
  assert.deepEqual(errs({ name: 'a', type: 'number', max: 'x' }), { max: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'number', min: 3, max: 2 }), { max: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'decimal' }), { mode: 'validation_value' });
  for (const scale of [0, 9, 2.5, '2', undefined, null]) {
    assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale }), { scale: 'validation_invalid_scale' }, String(scale));
  }
  for (const scale of [1, 8]) assert.equal(def({ name: 'a', type: 'number', mode: 'fixed', scale }).options.scale, scale);
  const f = def({ name: 'a', type: 'number', options: { mode: 'fixed', scale: 2, min: '-1.5', max: 100 } });
  assert.equal(f.options.min, '-1.50');
  assert.equal(f.options.max, '100.00');
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale: 2, min: '1.234' }), { min: 'validation_min' });
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale: 2, max: '1e3' }), { max: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale: 2, min: '2.01', max: '2.00' }), { max: 'validation_max' });
  // a bound beyond 2^53 compares exactly
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale: 1, min: '90071992547409.93', max: '90071992547409.92' }),
    { min: 'validation_min', max: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'number', mode: 'fixed', scale: 2, min: '9007199254740993.01', max: '9007199254740993.00' }),
    { max: 'validation_max' });
});

test('date and autodate options', () => {
  const f = def({ name: 'a', type: 'date', min: '2024-01-01', max: '2024-12-31T23:59:59+01:00' });
  assert.equal(f.options.min, '2024-01-01 00:00:00.000Z');
  assert.equal(f.options.max, '2024-12-31 22:59:59.000Z');
  assert.deepEqual(errs({ name: 'a', type: 'date', min: 'yesterday' }), { min: 'validation_date' });
  assert.deepEqual(errs({ name: 'a', type: 'date', min: '2025-01-01', max: '2024-01-01' }), { max: 'validation_date' });
  const a = def({ name: 'a', type: 'autodate' });
  assert.equal(a.options.onCreate, true);
  assert.equal(a.options.onUpdate, false);
  assert.equal(def({ name: 'a', type: 'autodate', onCreate: false, onUpdate: true }).options.onCreate, false);
  assert.deepEqual(errs({ name: 'a', type: 'autodate', onUpdate: 1 }), { onUpdate: 'validation_type' });
});

test('select options', () => {
  const f = def({ name: 'a', type: 'select', values: ['x', 'y'] });
  assert.deepEqual(f.options.values, ['x', 'y']);
  assert.equal(f.options.maxSelect, 1);
  assert.equal(def({ name: 'a', type: 'select', values: ['x'], maxSelect: 0 }).options.maxSelect, 1);
  assert.equal(def({ name: 'a', type: 'select', values: ['x'], maxSelect: 3 }).options.maxSelect, 3);
  for (const values of [undefined, [], ['a', 'a'], ['a', 1], ['', 'b'], 'a']) {
    assert.deepEqual(errs({ name: 'a', type: 'select', values }), { values: 'validation_select' }, JSON.stringify(values));
  }
  assert.deepEqual(errs({ name: 'a', type: 'select', values: ['a'], maxSelect: -1 }), { maxSelect: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'select', values: ['a'], maxSelect: 1.5 }), { maxSelect: 'validation_max' });
});

test('relation options', () => {
  const f = def({ name: 'a', type: 'relation', collectionId: 'pbc_123' });
  assert.deepEqual(f.options, {
    required: false, unique: false, hidden: false, encrypted: false, searchable: false,
    collectionId: 'pbc_123', cascadeDelete: false, maxSelect: 1, minSelect: null,
  });
  assert.deepEqual(errs({ name: 'a', type: 'relation' }), { collectionId: 'validation_relation' });
  assert.deepEqual(errs({ name: 'a', type: 'relation', collectionId: 5 }), { collectionId: 'validation_relation' });
  assert.deepEqual(errs({ name: 'a', type: 'relation', collectionId: 'c', cascadeDelete: 'y' }), { cascadeDelete: 'validation_type' });
  assert.deepEqual(errs({ name: 'a', type: 'relation', collectionId: 'c', minSelect: -1 }), { minSelect: 'validation_min' });
  assert.deepEqual(errs({ name: 'a', type: 'relation', collectionId: 'c', maxSelect: -2 }), { maxSelect: 'validation_max' });
  assert.deepEqual(errs({ name: 'a', type: 'relation', collectionId: 'c', minSelect: 3, maxSelect: 2 }), { maxSelect: 'validation_max' });
  const m = def({ name: 'a', type: 'relation', options: { collectionId: 'c', cascadeDelete: true, minSelect: 2, maxSelect: 5 } });
  assert.deepEqual([m.options.cascadeDelete, m.options.minSelect, m.options.maxSelect], [true, 2, 5]);
});

test('several errors are reported together', () => {
  assert.deepEqual(errs({ name: 'id', type: 'text', min: -1, encrypted: 'x' }),
    { name: 'validation_reserved_name', min: 'validation_min', encrypted: 'validation_type' });
});

test('a __proto__ key in options is ignored', () => {
  const input = JSON.parse('{"name":"a","type":"text","__proto__":{"min":4},"options":{"__proto__":{"max":2}}}');
  const f = def(input);
  assert.equal(f.options.min, null);
  assert.equal(f.options.max, null);
  assert.equal(Object.getPrototypeOf(f.options), Object.prototype);
});
