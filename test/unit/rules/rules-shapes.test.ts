/**
 * Client filters compiled once per shape (src/rules/compiler.ts, compileFilter): texts differing
 * only in their string and number literals share one compiled expression, each bound with its own
 * values, and answer exactly what compiling the text itself answers: the same SQL, the same bound
 * parameters, the same 400 with the same message. Checked on both dialects' SQL (no database
 * needed: the emitters are pure), over fixed cases and random fillings of filter templates (fast-check).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ApiError } from '../../../src/errors/api-error.js';
import type { Collection, Field, FieldOptions, FieldType } from '../../../src/model/schema.js';
import { bindParams, compileExpression, compileFilter, filterCache, type RequestContext } from '../../../src/rules/compiler.js';
import type { CompileOptions, SchemaLookup, SqlDialectName } from '../../../src/store/rule-types.js';

const f = (name: string, type: FieldType, options: FieldOptions = {}): Field => ({ id: `f_${name}`, name, type, options });
const coll = (id: string, name: string, fields: Field[], type: 'base' | 'auth' = 'base', viewRule: string | null = '@public'): Collection => ({
  id, name, type, system: false, fields, indexes: [], options: {},
  listRule: null, viewRule, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
});
// the tags' view rule holds literals of its own: they stay fixed values of the relation hops
const tags = coll('c_tags', 'tags', [f('name', 'text'), f('rank', 'number')], 'base', 'rank > 2 && name != "hidden"');
const users = coll('c_users', 'users', [f('name', 'text'), f('age', 'number')], 'auth');
const posts = coll('c_posts', 'posts', [
  f('title', 'text'), f('views', 'number'), f('price', 'number', { mode: 'fixed', scale: 2 }), f('published', 'bool'),
  f('labels', 'select', { values: ['a', 'b', 'c'], maxSelect: 3 }), f('author', 'relation', { collectionId: 'c_users' }),
  f('tags', 'relation', { collectionId: 'c_tags', maxSelect: 5 }), f('parent', 'relation', { collectionId: 'c_posts' }), f('meta', 'json'),
]);
const all = [tags, users, posts];
const schema: SchemaLookup = { byId: (id) => all.find((c) => c.id === id), byName: (n) => all.find((c) => c.name === n) };
const ctx: RequestContext = { auth: { id: 'u1', collectionId: 'c_users', name: 'Bo', age: 3 }, data: null, method: 'GET', context: 'default' };

const opts = (dialect: SqlDialectName, superuser: boolean): CompileOptions => ({ mode: 'filter', alias: 'r', superuser, dialect });

/** What compiling the text itself answers: the SQL with its bound parameters, or the error's status and message. */
function direct(src: string, o: CompileOptions): unknown {
  try {
    const e = compileExpression(src, posts, schema, o);
    return { sql: e.sql, params: bindParams(e, ctx), drivers: e.drivers.map((d) => [d.sql, bindParams({ ...e, params: d.params }, ctx)]) };
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return { status: err.status, code: err.code, message: err.message };
  }
}

/** The same through compileFilter and `cache`. */
function shaped(src: string, o: CompileOptions, cache = filterCache(100)): unknown {
  try {
    const { expr: e, literals } = compileFilter(src, posts, schema, o, cache, 'scope');
    return { sql: e.sql, params: bindParams(e, ctx, literals), drivers: e.drivers.map((d) => [d.sql, bindParams({ ...e, params: d.params }, ctx, literals)]) };
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return { status: err.status, code: err.code, message: err.message };
  }
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  test(`${dialect}: texts differing in literals share one compiled entry and bind their own values`, () => {
    const cache = filterCache(100);
    const o = opts(dialect, false);
    const a = compileFilter('title ~ "ab" && price > 1.5 && created > "2024-01-01" && views = 7', posts, schema, o, cache, 's');
    const b = compileFilter("title ~ 'it\\'s \\\\ \"q\" 5_%' && price > 12.25 && created > '2025-02-03 10:00:00.000Z' && views = 9", posts, schema, o, cache, 's');
    assert.equal(cache.shapes.size, 1);
    assert.equal(a.expr, b.expr);
    // a text met again is answered as it was, without being lexed
    assert.equal(compileFilter('title ~ "ab" && price > 1.5 && created > "2024-01-01" && views = 7', posts, schema, o, cache, 's'), a);
    assert.equal(cache.texts.size, 2);
    assert.equal(a.expr.literals?.length, 4);
    const pa = bindParams(a.expr, ctx, a.literals);
    const pb = bindParams(b.expr, ctx, b.literals);
    // LIKE wrapping (a value with `%` is a pattern as written), exact fixed-point scaling, dates and strings as written
    const lits = (p: unknown[]) => p.filter((v) => v !== 'u1' && v !== 'c_users' && v !== 'c_posts');
    if (dialect === 'sqlite') {
      assert.deepEqual(lits(pa), ['%ab%', 150n, '2024-01-01', 7]);
      assert.deepEqual(lits(pb), ['it\'s \\ "q" 5_%', 1225n, '2025-02-03 10:00:00.000Z', 9]);
    }
    // each text binds what compiling it alone binds
    const texts = ['title ~ "ab" && price > 1.5 && created > "2024-01-01" && views = 7', "title ~ 'it\\'s \\\\ \"q\" 5_%' && price > 12.25 && created > '2025-02-03 10:00:00.000Z' && views = 9"];
    for (const src of texts) assert.deepEqual(shaped(src, o), direct(src, o));
    // another scope (caller kind, schema generation, collection) is another entry
    compileFilter('views = 1', posts, schema, o, cache, 's');
    compileFilter('views = 2', posts, schema, o, cache, 't');
    assert.equal(cache.shapes.size, 3);
    // true, false and null are part of the shape
    compileFilter('views = 1 && published = true', posts, schema, o, cache, 's');
    compileFilter('views = 1 && published = false', posts, schema, o, cache, 's');
    compileFilter('views = null', posts, schema, o, cache, 's');
    assert.equal(cache.shapes.size, 6);
  });

  test(`${dialect}: a value-dependent error of a cached shape answers the same 400`, () => {
    const cache = filterCache(100);
    const o = opts(dialect, true);
    shaped('price = 1.5 && views > 2', o, cache);
    assert.equal(cache.shapes.size, 1);
    const tooPrecise = shaped('price = 1.005 && views > 2', o, cache);
    assert.deepEqual(tooPrecise, direct('price = 1.005 && views > 2', o));
    assert.deepEqual(tooPrecise, { status: 400, code: 'bad_request', message: 'Invalid filter: 1.005 at position 9 is not a decimal with at most 2 decimal places, as the fixed-point field it is compared with requires.' });
    // a string compared with the fixed-point field
    shaped('price = "1.5"', o, cache);
    assert.deepEqual(shaped('price = "abc"', o, cache), direct('price = "abc"', o));
    // the first failing literal in the emitter's order, at its own position
    assert.deepEqual(shaped('price in (1, 2.001, "x")', o, cache), direct('price in (1, 2.001, "x")', o));
    shaped('price in (1, 2, "3")', o, cache);
    assert.deepEqual(shaped('price in (1, 2.001, "x")', o, cache), direct('price in (1, 2.001, "x")', o));
    // a number beyond the double range: the parser's error, at its position
    const huge = '9'.repeat(400);
    assert.deepEqual(shaped(`views > 1 && views < ${huge}`, o, cache), direct(`views > 1 && views < ${huge}`, o));
    assert.match(JSON.stringify(shaped(`views > 1 && views < ${huge}`, o, cache)), /number out of range at position 22/);
    // a literal beyond 64 bits once scaled (PostgreSQL casts it otherwise): the text compiled itself
    assert.deepEqual(shaped('price = 99999999999999999999 && views > 2', o, cache), direct('price = 99999999999999999999 && views > 2', o));
    assert.deepEqual(shaped('price = 99999999999999999998 && views > 2', o, cache), direct('price = 99999999999999999998 && views > 2', o));
  });
}

// Templates: `$s` a string literal, `$n` a number literal.
const TEMPLATES = [
  'title = $s', 'title != $s', 'title ~ $s', 'title !~ $s', '$s ~ title', '$n ~ title', 'title > $n', 'title = $n',
  'views > $n', 'views = $s', 'views ~ $n', 'views in ($n, $s, null)', 'title in ($s, $n)', 'views in ($s)',
  'price = $n', 'price > $s', 'price in ($n, $s, $n)', 'price != $n', 'price ~ $n',
  'labels ?= $s', 'labels ?!= $s', 'labels ~ $s', 'labels ?!~ $s', 'labels:length > $n', 'labels:each ~ $s', 'labels:each != $n',
  'tags.name ~ $s', 'tags.rank >= $n', 'tags.name ?!= $s', 'author.name = $s && views < $n', 'author.age > $s', 'parent.parent.title = $s',
  'meta.a.b = $n', 'meta.s ~ $s', 'meta = $s', 'meta.n > $s', 'created > $s && created < $s',
  '@collection.tags:t.name = $s && @collection.tags:t.rank > $n', '@collection.users.name = $s || title = $s',
  'posts_via_parent.title = $s', 'posts_via_parent.views > $n', 'title:lower = $s', 'title:lower ~ $s',
  '@request.auth.id = $s', '@request.auth.age > $n', 'author = @request.auth.id || title = $s',
  '$n = $n', '$s != $s', '$s = $n', '$n < $s', 'published = true && views >= $n', '(title = $s || views = $n) && price < $n',
];
const STRINGS = [
  '', 'a', 'Hello', 'a_b', 'a%b', '50%', '%', '_', 'x\\y', 'x\\', 'x%\\', '%\\\\', "it's", 'say "hi"', 'tab\there', 'new\nline',
  '5', ' 5 ', '-3', '1.5', '1.005', '1e3', '12345678901234567890', '9007199254740993', '0.5', 'abc', 'ünï', '2024-01-01', '2025-02-03 10:00:00.000Z',
];
const NUMBERS = ['0', '5', '-3', '1.5', '1.50', '2.25', '0.001', '1.005', '-0.25', '12345678901234567890', '99999999999999999999', '9007199254740993', '123.456'];

/** A string literal as written in a filter: double or single quotes, escapes where needed. */
function quote(s: string, single: boolean): string {
  const q = single ? "'" : '"';
  return q + s.replace(/\\/g, '\\\\').replace(single ? /'/g : /"/g, `\\${q}`).replace(/\n/g, '\\n').replace(/\t/g, '\\t') + q;
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  test(`${dialect}: random literals of every template answer as the text compiled alone`, () => {
    const text = fc.oneof(fc.constantFrom(...STRINGS), fc.string({ maxLength: 12 }));
    const holes = { strings: fc.array(text, { minLength: 4, maxLength: 4 }), numbers: fc.array(fc.constantFrom(...NUMBERS), { minLength: 4, maxLength: 4 }), single: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }) };
    for (const superuser of [true, false]) {
      const o = opts(dialect, superuser);
      const cache = filterCache(1000);
      let texts = 0;
      fc.assert(
        fc.property(fc.constantFrom(...TEMPLATES), fc.record(holes), (template, fill) => {
          let s = 0;
          let n = 0;
          const src = template.replace(/\$[sn]/g, (hole) => (hole === '$s' ? quote(fill.strings[s], fill.single[s++]) : fill.numbers[n++]));
          texts++;
          assert.deepEqual(shaped(src, o, cache), direct(src, o), `${dialect} ${superuser ? 'superuser' : 'guarded'}: ${src}`);
        }),
        { seed: Number(process.env.RULES_SEED ?? 20261128), numRuns: TEMPLATES.length * 12 },
      );
      // far fewer entries than texts: one per shape (and literal class, on PostgreSQL)
      assert.ok(cache.shapes.size < texts / 2, `${cache.shapes.size} entries for ${texts} texts`);
    }
  });
}
