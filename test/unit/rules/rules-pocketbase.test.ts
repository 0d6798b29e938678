/**
 * PocketBase's additions to the filter grammar (docs/rules.md): datetime macros, request macros,
 * modifiers. Each form is compiled by both emitters (SQLite and PostgreSQL) and run on a real
 * SQLite database here; test/unit/pg/rule-sql.test.ts runs them on PostgreSQL against SQLite.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import { ApiError } from '../../../src/errors/api-error.js';
import { bindAll } from '../../../src/store/bind.js';
import type { Collection, Field, FieldType, FieldOptions } from '../../../src/model/schema.js';
import { bindParams, compileExpression, type RequestContext } from '../../../src/rules/compiler.js';
import { DATE_MACROS, dateMacroValue } from '../../../src/rules/datetime.js';
import type { CompileOptions, SchemaLookup } from '../../../src/store/rule-types.js';

const f = (name: string, type: FieldType, options: FieldOptions = {}): Field => ({ id: `f_${name}`, name, type, options });
const posts: Collection = {
  id: 'c_posts', name: 'posts', type: 'base', system: false, indexes: [], options: {},
  fields: [f('title', 'text'), f('views', 'number'), f('price', 'number', { mode: 'fixed', scale: 2 }), f('due', 'date'),
    f('labels', 'select', { values: ['a', 'b', 'c'], maxSelect: 3 }), f('status', 'select', { values: ['a', 'b'] })],
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
};
const schema: SchemaLookup = { byId: (id) => (id === posts.id ? posts : undefined), byName: (n) => (n === 'posts' ? posts : undefined) };
const FILTER: CompileOptions = { mode: 'filter', alias: 'r' };
const PG: CompileOptions = { ...FILTER, dialect: 'postgres' };
const ANON: RequestContext = { auth: null, data: null, method: 'GET' };

function assert400(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (err: unknown) => err instanceof ApiError && err.status === 400 && err.code === 'bad_request' && re.test(err.message));
}

const db = new Database(':memory:');
db.exec(`CREATE TABLE posts (id TEXT PRIMARY KEY, created TEXT NOT NULL DEFAULT '', updated TEXT NOT NULL DEFAULT '',
  title TEXT, views REAL, price INTEGER, due TEXT, labels TEXT, status TEXT)`);
const day = (offsetDays: number): string => new Date(Date.now() + offsetDays * 86_400_000).toISOString().replace('T', ' ');
const ROWS: Array<[string, string | null, number, string | null]> = [
  ['past', day(-3), 1, '["a","b"]'], ['soon', day(0.5), 2, '["b"]'], ['later', day(40), 3, '[]'], ['long', day(800), 4, null], ['none', null, 5, '["c","a"]'],
];
const TITLES: Record<string, string | null> = { past: 'Hello', soon: 'HELLO', later: 'Ünï', long: null, none: 'x' };
for (const [id, due, views, labels] of ROWS) db.prepare('INSERT INTO posts (id, due, views, labels, title) VALUES (?, ?, ?, ?, ?)').run([id, due, views, labels, TITLES[id]]);

/** Ids matching `src` on SQLite, after checking the PostgreSQL emitter compiles it with the same slots. */
function ids(src: string, ctx: RequestContext = ANON): string[] {
  const e = compileExpression(src, posts, schema, FILTER);
  const p = compileExpression(src, posts, schema, PG);
  const requestSlots = (slots: typeof e.params) => [...new Set(slots.filter((s) => s.kind !== 'value').map((s) => JSON.stringify(s)))].sort();
  assert.deepEqual(requestSlots(p.params), requestSlots(e.params), `request slots of ${src}`);
  const rows = db.prepare(`SELECT r.id FROM posts r WHERE ${e.sql} ORDER BY r.id`).raw(true).all(bindAll(bindParams(e, ctx))) as unknown[][];
  return rows.map((r) => String(r[0]));
}

test('datetime macros: values at a fixed instant (UTC)', () => {
  const at = Date.UTC(2024, 1, 29, 13, 45, 30, 250); // Thursday, a leap day
  const got = Object.fromEntries(DATE_MACROS.map((m) => [m, dateMacroValue(m, at)]));
  assert.deepEqual(got, {
    now: '2024-02-29 13:45:30.250Z', second: 30, minute: 45, hour: 13, weekday: 4, day: 29, month: 2, year: 2024,
    yesterday: '2024-02-28 13:45:30.250Z', tomorrow: '2024-03-01 13:45:30.250Z',
    todayStart: '2024-02-29 00:00:00.000Z', todayEnd: '2024-02-29 23:59:59.999Z',
    monthStart: '2024-02-01 00:00:00.000Z', monthEnd: '2024-02-29 23:59:59.999Z',
    yearStart: '2024-01-01 00:00:00.000Z', yearEnd: '2024-12-31 23:59:59.999Z',
  });
  assert.equal(dateMacroValue('monthEnd', Date.UTC(2023, 11, 31, 23, 59, 59, 999)), '2023-12-31 23:59:59.999Z');
  assert.equal(dateMacroValue('weekday', Date.UTC(2024, 2, 3)), 0); // Sunday
});

test('datetime macros compile to one slot each and bind one instant per request', () => {
  for (const opts of [FILTER, PG]) {
    const e = compileExpression('due > @now && due < @tomorrow && views = @year', posts, schema, opts);
    // PostgreSQL repeats a slot where it reads the value twice (its number and text parts)
    assert.deepEqual([...new Set(e.params.map((p) => JSON.stringify(p)))], ['now', 'tomorrow', 'year'].map((name) => JSON.stringify({ kind: 'date', name })));
    assert.equal(e.readsRecord, true);
    const bound = bindParams(e, ANON);
    const [now, tomorrow, year] = [bound[0], bound[1], bound[bound.length - 1]];
    assert.match(String(now), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(Date.parse(String(tomorrow).replace(' ', 'T')) - Date.parse(String(now).replace(' ', 'T')), 86_400_000);
    assert.equal(year, new Date(Date.parse(String(now).replace(' ', 'T'))).getUTCFullYear());
  }
  // a fixed-point field scales the number macros; `~` wraps them like any value
  assert.deepEqual(bindParams(compileExpression('price < @day', posts, schema, FILTER), ANON), [BigInt(new Date().getUTCDate() * 100)]);
  assert.match(String(bindParams(compileExpression('due ~ @year', posts, schema, FILTER), ANON)[0]), /^%\d{4}%$/);
  assert.equal(compileExpression('@now > @yesterday', posts, schema, FILTER).readsRecord, false);
});

test('datetime macros select rows by date on SQLite', () => {
  assert.deepEqual(ids('due < @now'), ['past']);
  assert.deepEqual(ids('due > @now'), ['later', 'long', 'soon']);
  assert.deepEqual(ids('due >= @yesterday && due <= @tomorrow'), ['soon']);
  assert.deepEqual(ids('due > @yearEnd'), ROWS.filter(([, d]) => d !== null && d > String(dateMacroValue('yearEnd', Date.now()))).map(([id]) => id).sort());
  assert.deepEqual(ids('@todayStart < @todayEnd && @monthStart <= @todayStart && @yearStart <= @monthStart && views = 1'), ['past']);
  assert.deepEqual(ids('@year > 2000 && @month >= 1 && @month <= 12 && @weekday < 7 && @hour < 24 && @minute < 60 && @second < 60 && @day >= 1'), ROWS.map(([id]) => id).sort());
  assert.deepEqual(ids('due = null || due > @monthEnd'), ROWS.filter(([, d]) => d === null || d > String(dateMacroValue('monthEnd', Date.now()))).map(([id]) => id).sort());
});

test('unknown macros are 400', () => {
  for (const src of ['due > @nowish', 'due > @Now', 'due > @request.now', 'due > @today']) {
    assert400(() => compileExpression(src, posts, schema, FILTER), /^Invalid filter: unknown macro "@/);
  }
  assert400(() => compileExpression('due > @now.x', posts, schema, FILTER), /^Invalid filter: unknown macro "@now\.x" at position 7\.$/);
});

test('@request.body is @request.data; query, headers and context macros compile to request slots', () => {
  for (const opts of [FILTER, PG]) {
    const c = (src: string) => compileExpression(src, posts, schema, opts);
    assert.deepEqual(c('title = @request.body.title').params, c('title = @request.data.title').params);
    assert.deepEqual(c('title = @request.body.a.b').params, [{ kind: 'data', path: 'a.b' }]);
    assert.deepEqual(new Set(c("@request.query.q = 'x' && @request.headers.user_agent ~ 'bot' && @request.context != 'realtime'").params.map((p) => p.kind)), new Set(['query', 'headers', 'context', 'value']));
    assert.deepEqual(c('price < @request.query.max').params, [{ kind: 'query', path: 'max', scale: 2 }]);
    assert.equal(c("@request.context = 'default'").readsRecord, false);
  }
  assert400(() => compileExpression("@request.headers.x.y = 'a'", posts, schema, FILTER), /^Invalid filter: unknown macro "@request\.headers\.x\.y" at position 1\.$/);
  assert400(() => compileExpression("@request.context.x = 'a'", posts, schema, FILTER), /unknown macro/);
  assert400(() => compileExpression("@request.body = 'a'", posts, schema, FILTER), /unknown macro/);
  assert400(() => compileExpression("@request.query = 'a'", posts, schema, FILTER), /unknown macro/);
});

test('query, header and context values bind per request, NULL when unknown', () => {
  const e = compileExpression(
    '@request.query.q = 1 && @request.query.n = 1 && @request.headers.user_agent = 1 && @request.headers.authorization = 1 && @request.headers.x_custom = 1 && @request.context = 1',
    posts, schema, FILTER,
  );
  const headers = { authorization: 'Bearer t', userAgent: 'agent/1', contentType: 'application/json', cookie: '' };
  const bind = (ctx: Partial<RequestContext>) => bindParams(e, { ...ANON, ...ctx }).filter((_, i) => e.params[i].kind !== 'value');
  // the first value of a repeated query parameter; a body-only header is not read on a GET
  assert.deepEqual(bind({ request: { method: 'GET', query: 'q=a%20b&q=c&n=', headers }, context: 'default' }), ['a b', '', null, 'Bearer t', null, 'default']);
  assert.deepEqual(bind({ request: { method: 'POST', query: '', headers }, context: 'realtime' }), [null, null, 'agent/1', 'Bearer t', null, 'realtime']);
  // no HTTP request (application code, a realtime event): NULL
  assert.deepEqual(bind({}), [null, null, null, null, null, null]);
  assert.deepEqual(bindParams(compileExpression('title ~ @request.query.q', posts, schema, FILTER), { ...ANON, request: { query: 'q=a_b' } }), ['%a\\_b%']);
});

test('request macros select rows on SQLite', () => {
  const ctx: RequestContext = { ...ANON, data: { n: 3 }, request: { method: 'PATCH', query: 'min=2&id=soon', headers: { userAgent: 'x' } }, context: 'default' };
  assert.deepEqual(ids('views >= @request.query.min && views <= @request.body.n', ctx), ['later', 'soon']);
  assert.deepEqual(ids('id = @request.query.id', ctx), ['soon']);
  assert.deepEqual(ids("@request.headers.user_agent = 'x' && @request.context = 'default' && views = 1", ctx), ['past']);
  assert.deepEqual(ids("@request.context = 'realtime'", ctx), []);
  assert.deepEqual(ids('id = @request.query.missing || @request.query.missing != null', ctx), []);
});

test('field modifiers: :lower, :length, :each', () => {
  assert.deepEqual(ids("title:lower = 'hello'"), ['past', 'soon']);
  assert.deepEqual(ids("title:lower = 'ünï'"), []); // ASCII letters only, on both backends
  assert.deepEqual(ids("title:lower = 'Ünï'"), ['later']);
  assert.deepEqual(ids("title:lower ~ 'ELL'"), ['past', 'soon']); // LIKE folds ASCII anyway
  assert.deepEqual(ids("'hello' = title:lower"), ['past', 'soon']);
  assert.deepEqual(ids("labels:lower = 'a'"), ['none', 'past']);
  assert.deepEqual(ids('labels:length = 2'), ['none', 'past']);
  assert.deepEqual(ids('labels:length = 0'), ['later', 'long']);
  assert.deepEqual(ids('labels:length < views'), ['later', 'long', 'none', 'soon']);
  assert.deepEqual(ids('labels:length in (1, 2)'), ['none', 'past', 'soon']);
  assert.deepEqual(ids("labels:each = 'b'"), ['soon']);
  assert.deepEqual(ids("labels = 'b'"), ['past', 'soon']); // svc's `=` on a set: some value
  assert.deepEqual(ids("labels:each != 'c'"), ['past', 'soon']);
  assert.deepEqual(ids("labels:each ~ 'a%'"), []);
  assert.deepEqual(ids("labels:each !~ 'c'"), ['past', 'soon']);
  assert.deepEqual(ids("labels:each in ('a', 'b')"), ['past', 'soon']);
  assert.deepEqual(ids("labels:each > 'a' || labels:length = 0"), ['later', 'long', 'soon']);
  const e = compileExpression("labels:each = 'b'", posts, schema, FILTER);
  assert.equal(e.drivers.length, 0);
  assert.match(e.sql, /^\(EXISTS \(SELECT 1 FROM json_each\(.*\) AND NOT EXISTS \(SELECT 1 FROM json_each\(.* WHERE NOT COALESCE\(\(r_1\.value = \?\), 0\)\)\)$/);
});

test('request modifiers: :isset, :length, :lower, :changed', () => {
  const ctx = (data: Record<string, unknown> | null, query = ''): RequestContext => ({ ...ANON, method: 'PATCH', data, request: { method: 'PATCH', query } });
  const all = ['later', 'long', 'none', 'past', 'soon'];
  assert.deepEqual(ids('@request.body.title:isset = true', ctx({ title: null })), all);
  assert.deepEqual(ids('@request.body.title:isset = false', ctx({})), all);
  assert.deepEqual(ids('@request.body.title:isset = true', ctx(null)), []);
  assert.deepEqual(ids('@request.body.a.b:isset = true', ctx({ a: { b: 1 } })), all);
  assert.deepEqual(ids('@request.query.q:isset = true', ctx(null, 'q=')), all);
  assert.deepEqual(ids('@request.query.q:isset = true', ctx(null, 'p=1')), []);
  assert.deepEqual(ids('@request.headers.user_agent:isset = true', { ...ANON, request: { method: 'POST', headers: { userAgent: 'x' } } }), all);
  assert.deepEqual(ids('@request.body.labels:length = views', ctx({ labels: ['a', 'b'] })), ['soon']);
  assert.deepEqual(ids('@request.body.labels:length = 0', ctx({ labels: '' })), all);
  assert.deepEqual(ids('@request.body.labels:length = 1', ctx({ labels: 'a' })), all);
  assert.deepEqual(ids('title:lower = @request.body.t:lower', ctx({ t: 'hELLO' })), ['past', 'soon']);
  assert.deepEqual(ids("@request.query.q:lower = 'abc'", ctx(null, 'q=ABC')), all);
  // :changed: sent and different from the stored value (NULL counts as different)
  assert.deepEqual(ids('@request.body.title:changed = true', ctx({ title: 'Hello' })), ['later', 'long', 'none', 'soon']);
  assert.deepEqual(ids('@request.body.title:changed = false', ctx({ title: 'Hello' })), ['past']);
  assert.deepEqual(ids('@request.body.title:changed = true', ctx({ views: 1 })), []);
  assert.deepEqual(bindParams(compileExpression('@request.body.title:isset = true && @request.body.n:length > 0', posts, schema, FILTER), ctx({ title: 1 })), [1, 1, 0, 0]);
});

test('a modifier where it cannot apply is 400', () => {
  const bad: Array<[string, RegExp]> = [
    ["title:upper = 'a'", /^Invalid filter: unknown modifier ":upper" at position 1\.$/],
    ["title: = 'a'", /^Invalid filter: expected a modifier name after ":" at position 7\.$/],
    ['title:length = 1', /^Invalid filter: the modifier ":length" cannot apply to "title": it applies to select, relation and file fields holding several values\.$/],
    ["status:each = 'a'", /cannot apply to "status"/],
    ["views:lower = 'a'", /^Invalid filter: the modifier ":lower" cannot apply to "views": it applies to text values\.$/],
    ['title:isset = true', /^Invalid filter: the modifier ":isset" cannot apply to "title" \(position 1\): it applies to @request\.\* values\.$/],
    ['@request.auth.id:length = 1', /cannot apply to "@request\.auth\.id"/],
    ['@request.auth.id:isset = true', /it applies to @request\.body, \.query and \.headers/],
    ['@request.body.a.b:changed = true', /it applies to @request\.body\.<field>/],
    ['@request.body.nope:changed = true', /^Invalid filter: unknown field "nope"\.$/],
    ['@request.body.labels:changed = true', /^Invalid filter: the modifier ":changed" cannot apply to "@request\.body\.labels": it applies to fields holding one value\.$/],
    ["@request.body.labels:each = 'a'", /svc does not support it on request values/],
    ['@request.query.q:each = 1', /it applies to fields/],
    ['@now:lower = 1', /it applies to text values/],
    ['labels:each = null', /^Invalid filter: a ":each" path cannot be compared with null \(position 13\)\.$/],
    ["labels:each in ('a', null)", /cannot be with null in the "in" list/],
  ];
  for (const [src, re] of bad) {
    for (const opts of [FILTER, PG]) assert400(() => compileExpression(src, posts, schema, opts), re);
  }
});

test('any-of operators: some value satisfies the comparison', () => {
  // for = < <= > >= ~ svc's own operators already mean "some value": ?op compiles to the same SQL
  for (const [any, plain] of [["labels ?= 'a'", "labels = 'a'"], ["labels ?> 'a'", "labels > 'a'"], ["labels ?~ 'A'", "labels ~ 'A'"], ['labels ?<= views', 'labels <= views'], ["title ?= 'x'", "title = 'x'"]]) {
    for (const opts of [FILTER, PG]) assert.equal(compileExpression(any, posts, schema, opts).sql, compileExpression(plain, posts, schema, opts).sql, any);
  }
  assert.deepEqual(ids("labels ?= 'a'"), ['none', 'past']);
  // `!=` on a set: no value equals; `?!=`: some value differs
  assert.deepEqual(ids("labels != 'a'"), ['later', 'long', 'soon']);
  assert.deepEqual(ids("labels ?!= 'a'"), ['none', 'past', 'soon']);
  assert.deepEqual(ids("labels !~ 'b'"), ['later', 'long', 'none']);
  assert.deepEqual(ids("labels ?!~ 'b'"), ['none', 'past']);
  assert.deepEqual(ids("labels ?>= 'b' && labels ?< 'b'"), ['none', 'past']);
  assert.deepEqual(ids("title ?!= 'Hello'"), ['later', 'long', 'none', 'soon']); // a scalar: as !=
  assert.deepEqual(ids("title ?!~ 'hello'"), ['later', 'long', 'none']);
  assert.deepEqual(ids('labels ?= null'), ids('labels = null'));
  assert.deepEqual(ids('labels ?!= null'), ids('labels != null'));
  assert.equal(compileExpression("labels ?!= 'a'", posts, schema, FILTER).drivers.length, 0);
  assert400(() => compileExpression("labels:each ?= 'a'", posts, schema, FILTER), /any-of operator "\?="/);
  assert400(() => compileExpression("labels ? = 'a'", posts, schema, FILTER), /^Invalid filter: expected a comparison operator after "\?" at position 8\.$/);
  assert400(() => compileExpression("labels ?in ('a')", posts, schema, FILTER), /expected a comparison operator after "\?"/);
  assert400(() => compileExpression("labels ?? 'a'", posts, schema, FILTER), /expected a comparison operator after "\?"/);
});
