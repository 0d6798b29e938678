import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/errors/api-error.js';
import { tokenize } from '../../../src/rules/lexer.js';
import { parseFilter } from '../../../src/rules/parser.js';
import type { Expr } from '../../../src/store/rule-types.js';

/** Asserts `fn` throws a 400 bad_request ApiError whose message matches `re`. */
function assert400(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError, `expected ApiError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'bad_request');
    assert.match(err.message, re);
    return true;
  });
}

/** Compact rendering of an AST for readable assertions. */
function show(e: Expr): string {
  if (e.type === 'and' || e.type === 'or') return `(${e.terms.map(show).join(e.type === 'and' ? ' && ' : ' || ')})`;
  const operand = (o: Extract<Expr, { type: 'compare' }>['left']): string =>
    o.type === 'field' ? o.path.join('.') : o.type === 'macro' ? `@${o.macro}${o.path ? ':' + o.path : ''}` : JSON.stringify(o.value);
  if (e.type === 'in') return `${operand(e.left)} in ${e.accountIds ? '@ids' : `[${e.items.map((i) => JSON.stringify(i.value)).join(',')}]`}`;
  return `${operand(e.left)} ${e.op} ${operand(e.right)}`;
}

test('every comparison operator parses', () => {
  for (const op of ['=', '!=', '>', '>=', '<', '<=', '~', '!~']) {
    assert.equal(show(parseFilter(`a ${op} 1`)), `a ${op} 1`);
    assert.equal(show(parseFilter(`a${op}1`)), `a ${op} 1`);
  }
});

test('&& binds tighter than ||, parentheses override', () => {
  assert.equal(show(parseFilter('a = 1 || b = 2 && c = 3')), '(a = 1 || (b = 2 && c = 3))');
  assert.equal(show(parseFilter('(a = 1 || b = 2) && c = 3')), '((a = 1 || b = 2) && c = 3)');
  assert.equal(show(parseFilter('a = 1 && b = 2 && c = 3 || d = 4')), '((a = 1 && b = 2 && c = 3) || d = 4)');
  assert.equal(show(parseFilter('((a = 1))')), 'a = 1');
});

test('literals: strings, numbers, booleans, null', () => {
  assert.equal(show(parseFilter(`a = 'x' && b = "y" && c = -1.25 && d = 0 && e = true && f = false && g = null`)),
    '(a = "x" && b = "y" && c = -1.25 && d = 0 && e = true && f = false && g = null)');
  assert.equal(show(parseFilter(`'x' = a`)), '"x" = a');
  assert.equal(show(parseFilter(`a.b.c = 1`)), 'a.b.c = 1');
});

test('string escapes: the six allowed ones unescape, others are rejected', () => {
  const cmp = parseFilter(String.raw`a = 'q\'s \"d\" back\\slash \n\t\r' && b = "it\"s"`);
  assert.equal(cmp.type, 'and');
  const [first, second] = (cmp as Extract<Expr, { type: 'and' }>).terms as Extract<Expr, { type: 'compare' }>[];
  assert.deepEqual(first.right, { type: 'literal', value: `q's "d" back\\slash \n\t\r`, raw: '', pos: 5 });
  assert.equal((second.right as { value: unknown }).value, 'it"s');
  assert.equal((parseFilter(`a = "it's"`) as Extract<Expr, { type: 'compare' }>).right.type, 'literal');
  for (const bad of [String.raw`a = 'x\y'`, String.raw`a = 'x\u0041'`, String.raw`a = 'x\0'`, String.raw`a = "x\%"`]) {
    assert400(() => parseFilter(bad), /^Invalid filter: unsupported escape "\\\\.+" at position 7\.$/);
  }
});

test('in lists: literals, empty, the account list macro', () => {
  assert.equal(show(parseFilter(`a in ('x', 2, true, null)`)), 'a in ["x",2,true,null]');
  assert.equal(show(parseFilter(`a in ()`)), 'a in []');
  assert.equal(show(parseFilter(`a in @request.account.ids`)), 'a in @ids');
  assert.equal(show(parseFilter(`@request.auth.id in ('a')`)), '@auth:id in ["a"]');
  assert400(() => parseFilter(`in = 1`), /"in" is reserved/);
  assert400(() => parseFilter(`in.x = 1`), /"in" is reserved/);
  assert400(() => parseFilter(`a in (b)`), /may only hold literals/);
  assert400(() => parseFilter(`a in ('x',)`), /unexpected token "\)"/);
  assert400(() => parseFilter(`a in ('x' 'y')`), /expected "," or "\)"/);
  assert400(() => parseFilter(`a in 'x'`), /expected "\(" or @request.account.ids/);
  assert400(() => parseFilter(`a = @request.account.ids`), /list and may only follow "in"/);
});

test('macros', () => {
  assert.equal(show(parseFilter('@request.auth.id != ""')), '@auth:id != ""');
  assert.equal(show(parseFilter('@request.data.owner.id = a')), '@data:owner.id = a');
  assert.equal(show(parseFilter('@request.method = "GET"')), '@method = "GET"');
  assert.equal(show(parseFilter('@request.account.id = a && @request.account.role = "x"')), '(@account.id = a && @account.role = "x")');
  for (const bad of ['@public', '@request.auth = 1', '@request.foo = 1', '@request.method.x = 1']) {
    assert400(() => parseFilter(bad), /^Invalid filter: unknown macro "@.*" at position 1\.$/);
  }
  assert400(() => parseFilter('@ = 1'), /expected a macro name after "@"/);
  // joins: the alias is not part of the path; a join names at least one field
  const joined = parseFilter('@collection.Members:m.user.name:lower = 1');
  assert.deepEqual(joined.type === 'compare' && joined.left, { type: 'field', path: ['user', 'name'], join: { collection: 'Members', alias: 'm', key: 'members:m' }, pos: 1, modifier: 'lower' });
  const plain = parseFilter('@collection.members.user = 1');
  assert.deepEqual(plain.type === 'compare' && plain.left, { type: 'field', path: ['user'], join: { collection: 'members', alias: 'members', key: 'members:members' }, pos: 1 });
  assert400(() => parseFilter('@collection.x = 1'), /"@collection.x" names no field/);
  assert400(() => parseFilter('@collection.x:m = 1'), /"@collection.x" names no field/);
  assert400(() => parseFilter('@collection.x:m. = 1'), /expected a field name after "."/);
});

test('syntax errors name the token and position', () => {
  assert400(() => parseFilter('title = "x" )'), /^Invalid filter: unexpected token "\)" at position 13\.$/);
  assert400(() => parseFilter(''), /empty expression/);
  assert400(() => parseFilter('   '), /empty expression/);
  assert400(() => parseFilter('a'), /unexpected end of expression at position 2; expected a comparison operator/);
  assert400(() => parseFilter('a = '), /unexpected end of expression at position 5/);
  assert400(() => parseFilter('(a = 1'), /expected "\)" to close "\(" at position 1/);
  assert400(() => parseFilter('a = 1 && '), /unexpected end of expression/);
  assert400(() => parseFilter('a == 1'), /unexpected token "=" at position 4/);
  assert400(() => parseFilter('a = 1 & b = 2'), /unexpected character "&" at position 7/);
  assert400(() => parseFilter('a = 1 b = 2'), /unexpected token "b" at position 7/);
  assert400(() => parseFilter('a. = 1'), /expected a field name after "\." at position 3/);
  assert400(() => parseFilter('a = 1.'), /malformed number at position 5/);
  assert400(() => parseFilter('a = 12abc'), /malformed number/);
  assert400(() => parseFilter('a = 1e5'), /malformed number/);
  assert400(() => parseFilter('a = .5'), /unexpected character "\." at position 5/);
  assert400(() => parseFilter('a = -x'), /unexpected character "-"/);
  assert400(() => parseFilter('a = 1 = 2'), /unexpected token "="/);
  assert400(() => parseFilter('a = 1; DROP TABLE posts'), /unexpected character ";"/);
  assert400(() => parseFilter('a = 1 -- comment'), /unexpected character "-"/);
  assert400(() => parseFilter('a = 1 /* c */'), /unexpected character "\/"/);
});

test('lexer is one pass and reports tokens with 1-based positions', () => {
  assert.deepEqual(tokenize('a>=1').map((t) => [t.kind, t.text, t.pos]), [
    ['path', 'a', 1], ['op', '>=', 2], ['number', '1', 4], ['eof', '', 5],
  ]);
});

test('hostile input: each is a quick, clear 400', () => {
  const cases: [string, RegExp][] = [
    ['a = "' + 'x'.repeat(100_000) + '"', /too long \(100006 characters, at most 8192\)/],
    ['('.repeat(10_000) + 'a = 1' + ')'.repeat(10_000), /too long/],
    ['('.repeat(4000) + 'a = 1' + ')'.repeat(4000), /nested too deeply \(more than 64 levels\) at position 65/],
    ['a = "unterminated', /unterminated string starting at position 5/],
    ["a = 'ends with backslash\\", /unterminated string/],
    ['a = "x" || b = \'', /unterminated string starting at position 16/],
    ['título = 1', /unexpected character "í" at position 2/],
    ['a = 1 || 😀 = 2', /unexpected character "😀" at position 10/],
    ['a\u0000 = 1', /unexpected character "\\u0000"/],
    ['a = 1 ' + '\ud800', /unexpected character "\\ud800"/],
    [Array.from({ length: 1001 }, (_, i) => `a=${i}`).join('||').slice(0, 8192), /too many terms \(more than 1000\)/],
    [`a in (${Array.from({ length: 1500 }, () => '1').join(',')})`, /too many terms/],
    ['a'.repeat(8192), /unexpected end of expression/],
  ];
  for (const [src, re] of cases) {
    const start = performance.now();
    assert400(() => parseFilter(src), re);
    assert.ok(performance.now() - start < 200, `slow rejection for ${src.slice(0, 30)}`);
  }
  // 64 levels are fine; unicode inside strings is just data.
  assert.equal(show(parseFilter('('.repeat(64) + 'a = 1' + ')'.repeat(64))), 'a = 1');
  assert.equal(show(parseFilter('a = "título 😀 \u0000"')), 'a = "título 😀 \\u0000"');
});

test('worst-case sized valid inputs parse fast (linear lexing)', () => {
  const chain = Array.from({ length: 1000 }, (_, i) => `f${i % 10} != "${i}"`).join(' && ');
  const manyEscapes = `a = "${'\\"'.repeat(4000)}"`;
  const longPath = `${Array.from({ length: 1000 }, () => 'ab').join('.').slice(0, 8000)} = 1`;
  for (const src of [chain.slice(0, 8192).replace(/ && [^&]*$/, ''), manyEscapes, longPath]) {
    const start = performance.now();
    parseFilter(src);
    assert.ok(performance.now() - start < 200);
  }
});

test('parsed trees are cached by source', () => {
  const a = parseFilter('cached = 1');
  assert.equal(parseFilter('cached = 1'), a);
  for (let i = 0; i < 1100; i++) parseFilter(`x = ${i}`);
  assert.notEqual(parseFilter('cached = 1'), a); // evicted, re-parsed
});
