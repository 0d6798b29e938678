/**
 * Hostile and extreme input for the rule compiler: every input either compiles to SQL that
 * libsql accepts (even wrapped in two levels of subquery, as callers may do) or is a quick 400.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import { ApiError } from '../../../src/errors/api-error.js';
import { bindAll } from '../../../src/store/bind.js';
import type { Collection, Field, FieldOptions, FieldType } from '../../../src/model/schema.js';
import { bindParams, compileExpression, compileSort } from '../../../src/rules/compiler.js';
import type { SchemaLookup } from '../../../src/store/rule-types.js';
import { leafShape } from '../../../src/store/sqlite/sql-shape.js';

const f = (name: string, type: FieldType, options: FieldOptions = {}): Field => ({ id: name, name, type, options });
const posts: Collection = {
  id: 'c_p', name: 'posts', type: 'base', system: false, indexes: [], options: {},
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
  fields: [f('a', 'text'), f('n', 'number', { mode: 'fixed', scale: 2 }), f('m', 'select', { maxSelect: 3 }), f('j', 'json'),
    f('b', 'relation', { collectionId: 'c_p' }), f('bs', 'relation', { collectionId: 'c_p', maxSelect: 5 })],
};
const schema: SchemaLookup = { byId: (id) => (id === 'c_p' ? posts : undefined), byName: (n) => (n === 'posts' ? posts : undefined) };
const db = new Database(':memory:');
db.exec(`CREATE TABLE "posts" (id TEXT, created TEXT, updated TEXT, a TEXT, n INTEGER, m TEXT, j TEXT, b TEXT, bs TEXT);
  INSERT INTO posts VALUES ('p1', '', '', 'x', 150, '["a"]', '{"x":{"y":1}}', 'p2', '["p1","p2"]'), ('p2', '', '', NULL, NULL, NULL, 'bad json', NULL, 'not json');`);
const ANON = { auth: null, data: null, method: 'GET' };

const compile = (src: string) => compileExpression(src, posts, schema, { mode: 'filter', alias: 'r' });
/** Runs the filter at the top level and nested two subqueries deep, as a caller might. */
function run(sql: string, params: unknown[]): void {
  db.prepare(`SELECT id FROM "posts" r WHERE ${sql}`).raw().all(bindAll(params));
  const wrapped = `SELECT count(*) FROM (SELECT o.id FROM "posts" o WHERE EXISTS (SELECT 1 FROM "posts" r WHERE r.id = o.id AND ${sql}))`;
  db.prepare(wrapped).raw().all(bindAll(params));
}
function isTooComplex(err: unknown): boolean {
  return err instanceof ApiError && err.status === 400 && /too complex/.test(err.message);
}

const HEAVY_LEAVES = [
  'a = 1', 'a != "x"', 'a ~ "x"', 'a !~ "x"', 'a !~ b.a', 'a ~ bs.a', 'a in (1, 2, null)', 'n > 1.5', 'm = "x"', 'm != null',
  'b.a = 1', 'bs.a !~ "x"', 'b.b.b.b.b.b.a != 1', 'bs.bs.bs.bs.bs.bs.m !~ bs.bs.bs.bs.bs.bs.m', 'bs.bs.bs.bs.bs.bs.m in (1, null)',
  'j.x.y = 1', '@request.auth.id in ("a")', 'a = @request.data.x',
];

test('leaf estimates are never below what libsql actually needs', () => {
  const fits = (sql: string) => { try { db.prepare(sql); return true; } catch { return false; } };
  const most = (gen: (n: number) => string) => {
    let lo = 0;
    let hi = 1200;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (fits(gen(mid))) lo = mid; else hi = mid - 1; }
    return lo;
  };
  const top = (w: string) => `SELECT id FROM "posts" r WHERE ${w}`;
  const stackRoom = most((n) => top(`${'('.repeat(n)}1${')'.repeat(n)}`));
  const heightRoom = most((n) => top(`1${' AND 1'.repeat(n)}`));
  for (const src of HEAVY_LEAVES) {
    const { sql } = compile(src);
    const est = leafShape(sql, []);
    const stack = stackRoom - most((n) => top(`${'('.repeat(n)}${sql}${')'.repeat(n)}`));
    const height = heightRoom - most((n) => top(`${sql}${' AND 1'.repeat(n)}`));
    assert.ok(est.stack >= stack && est.height >= height, `${src}: estimated ${est.stack}/${est.height}, actual ${stack}/${height}`);
  }
});

test('random deep and wide filters: valid SQL or a 400, never a database error', () => {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const gen = (depth: number): string => {
    if (depth === 0) return pick(HEAVY_LEAVES);
    const op = depth % 2 ? '&&' : '||'; // alternate, or the levels would merge into one chain
    const siblings = Array.from({ length: Math.floor(rnd() * 3) }, () => pick(rnd() < 0.2 ? HEAVY_LEAVES : SHORT_LEAVES));
    const parts = [...siblings, `(${gen(depth - 1)})`];
    if (rnd() < 0.5) parts.reverse();
    return parts.join(` ${op} `);
  };
  const SHORT_LEAVES = ['a=1', 'm="x"', 'b.a=1', 'a!~b.a', 'n>1', 'bs.m!=null'];
  let ok = 0;
  let rejected = 0;
  for (let i = 0; i < 200; i++) {
    const src = gen(1 + Math.floor(rnd() * 63));
    let compiled;
    try {
      compiled = compile(src);
    } catch (err) {
      assert.ok(isTooComplex(err), `unexpected error for ${src}: ${String(err)}`);
      rejected++;
      continue;
    }
    run(compiled.sql, bindParams(compiled, ANON));
    ok++;
  }
  assert.ok(ok > 50 && rejected > 5, `ok ${ok}, rejected ${rejected}`);
});

test('extreme but legal shapes compile and run', () => {
  const shapes = [
    Array.from({ length: 1000 }, () => 'a=1').join('||'), // 1000 terms in one chain
    Array.from({ length: 1000 }, () => 'a=1').join('&&'),
    `a in (${Array.from({ length: 999 }, (_, i) => i).join(',')})`,
    Array.from({ length: 200 }, () => 'bs.bs.bs.bs.bs.bs.m!~bs.m').join('||').slice(0, 8150).replace(/\|\|[^|]*$/, ''),
    '('.repeat(64) + 'a = 1' + ')'.repeat(64), // redundant parentheses collapse
    'j' + '.x'.repeat(4000) + ' = 1', // a long json path is just a long '$.x.x…' string
    Array.from({ length: 30 }, (_, i) => `(a = ${i} ${i % 2 ? '&&' : '||'} `).join('') + 'a = 1' + ')'.repeat(30),
  ];
  for (const src of shapes) {
    const start = performance.now();
    const compiled = compile(src);
    run(compiled.sql, bindParams(compiled, ANON));
    assert.ok(performance.now() - start < 2000, `slow: ${src.slice(0, 40)}`);
  }
});

test('hostile sources are clear 400s, quickly', () => {
  const sources = [
    'a = "' + 'x'.repeat(100_000) + '"', '('.repeat(10_000) + 'a = 1' + ')'.repeat(10_000), 'a = "never closed', "a = 'x\\",
    'a = "\\x41"', 'ä = 1', 'a = 1 🙂', '\u202e a = 1', 'a = 1; DROP TABLE posts', 'a = 1 OR 1=1', 'a = "1" OR "1" = "1"', "a = '1' -- ",
    'posts.a = 1', 'sqlite_master.sql = 1', 'a = x\'00\'', 'rowid = 1', '@request.auth.id = @', '@public', '',
    Array.from({ length: 80 }, () => '(a = 1 || ').join('') + 'a = 1' + ')'.repeat(80),
    'b.'.repeat(7) + 'a = 1', 'a' + '.x'.repeat(4000) + ' = 1',
  ];
  for (const src of sources) {
    const start = performance.now();
    assert.throws(() => compile(src), (err: unknown) => err instanceof ApiError && err.status === 400 && err.message.startsWith('Invalid filter: '), src.slice(0, 60));
    assert.ok(performance.now() - start < 500, `slow rejection: ${src.slice(0, 40)}`);
  }
  for (const sort of ['x'.repeat(100_000), 'a,'.repeat(20), '-a"', 'a DESC', 'a;DROP TABLE posts', '@random()', 'ä']) {
    assert.throws(() => compileSort(sort, posts, schema, 'r'), (err: unknown) => err instanceof ApiError && err.status === 400 && err.message.startsWith('Invalid sort: '));
  }
  assert.equal((db.prepare('SELECT count(*) FROM posts').raw().get([]) as unknown[])[0], 2);
});

test('malformed stored JSON never makes a query fail', () => {
  for (const src of ['m = "a"', 'm != null', 'bs.a = "x"', 'j.x.y = 1', 'j.x != null']) {
    const compiled = compile(src);
    db.prepare(`UPDATE posts SET m = 'bad json', j = '{' WHERE id = 'p1'`).run([]);
    run(compiled.sql, bindParams(compiled, ANON));
  }
});
