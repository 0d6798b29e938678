/**
 * `?` slots to PostgreSQL's `$n` (src/store/pg/placeholders.ts): slots numbered in order, every
 * `?` inside strings, quoted identifiers, dollar quotes and comments left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, postgresSkipReason } from '../../helpers/postgres.js';
import { PLACEHOLDER_CACHE_MAX, placeholderCacheSize, toPgPlaceholders } from '../../../src/store/pg/placeholders.js';

test('slots are numbered in order of appearance', () => {
  assert.equal(toPgPlaceholders('SELECT * FROM t WHERE a = ? AND b IN (?, ?)'), 'SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)');
  assert.equal(toPgPlaceholders('INSERT INTO t VALUES (?,?)'), 'INSERT INTO t VALUES ($1,$2)');
  assert.equal(toPgPlaceholders('?'), '$1');
  assert.equal(toPgPlaceholders('SELECT ?::jsonb'), 'SELECT $1::jsonb');
  assert.equal(toPgPlaceholders('SELECT ??'), 'SELECT $1$2');
});

test('a statement without a slot comes back as it is', () => {
  const sql = 'SELECT 1';
  assert.equal(toPgPlaceholders(sql), sql);
  assert.equal(toPgPlaceholders(''), '');
  assert.equal(toPgPlaceholders(`SELECT '?'`), `SELECT '?'`);
});

test('a ? in a single-quoted string is no slot, doubled quotes included', () => {
  assert.equal(toPgPlaceholders(`SELECT '?', ? FROM t`), `SELECT '?', $1 FROM t`);
  assert.equal(toPgPlaceholders(`SELECT 'it''s ?', ?`), `SELECT 'it''s ?', $1`);
  assert.equal(toPgPlaceholders(`SELECT '', ?`), `SELECT '', $1`);
  // a plain string takes no backslash escape (standard_conforming_strings): the quote closes it
  assert.equal(toPgPlaceholders(`SELECT 'a\\', ?`), `SELECT 'a\\', $1`);
});

test('an E string takes backslash escapes', () => {
  assert.equal(toPgPlaceholders(`SELECT E'\\'?', ?`), `SELECT E'\\'?', $1`);
  assert.equal(toPgPlaceholders(`SELECT e'?\\\\', ?`), `SELECT e'?\\\\', $1`);
  // `name'…'` is no E string: an identifier ending in e before a quote (not valid SQL, but no escape)
  assert.equal(toPgPlaceholders(`SELECT typename'a\\', ?`), `SELECT typename'a\\', $1`);
});

test('a ? in a double-quoted identifier is no slot', () => {
  assert.equal(toPgPlaceholders(`SELECT "a?b", "x""?" FROM t WHERE c = ?`), `SELECT "a?b", "x""?" FROM t WHERE c = $1`);
});

test('comments are skipped, block comments nest', () => {
  assert.equal(toPgPlaceholders('SELECT ? -- why?\n, ?'), 'SELECT $1 -- why?\n, $2');
  assert.equal(toPgPlaceholders('SELECT ? -- why?'), 'SELECT $1 -- why?');
  assert.equal(toPgPlaceholders('SELECT /* a ? /* b ? */ c ? */ ?'), 'SELECT /* a ? /* b ? */ c ? */ $1');
  assert.equal(toPgPlaceholders('SELECT ? /* unterminated ?'), 'SELECT $1 /* unterminated ?');
  // a lone minus or slash is an operator
  assert.equal(toPgPlaceholders('SELECT ? - ?, ? / ?'), 'SELECT $1 - $2, $3 / $4');
});

test('dollar-quoted strings are skipped; $n and identifiers with $ are not quotes', () => {
  assert.equal(toPgPlaceholders('SELECT $$ ? $$, ?'), 'SELECT $$ ? $$, $1');
  assert.equal(toPgPlaceholders('SELECT $fn$ ? $x$ ? $fn$, ?'), 'SELECT $fn$ ? $x$ ? $fn$, $1');
  assert.equal(toPgPlaceholders('SELECT a$b, ? FROM t'), 'SELECT a$b, $1 FROM t');
  assert.equal(toPgPlaceholders('SELECT $1, ?'), 'SELECT $1, $1');
  assert.equal(toPgPlaceholders('SELECT $ ?'), 'SELECT $ $1');
  assert.equal(toPgPlaceholders('SELECT $$ never closed ?'), 'SELECT $$ never closed ?');
});

test('quotes inside comments and comments inside strings do not confuse each other', () => {
  assert.equal(toPgPlaceholders(`SELECT '--', ? /* ' */ , ?`), `SELECT '--', $1 /* ' */ , $2`);
  assert.equal(toPgPlaceholders(`SELECT '/*', ?, '*/'`), `SELECT '/*', $1, '*/'`);
  assert.equal(toPgPlaceholders(`SELECT "--", ?`), `SELECT "--", $1`);
});

test('conversions are cached and the cache is bounded', () => {
  const sql = 'SELECT ? AS cached';
  const a = toPgPlaceholders(sql);
  assert.equal(toPgPlaceholders(sql), a);
  for (let i = 0; i < PLACEHOLDER_CACHE_MAX + 50; i++) toPgPlaceholders(`SELECT ? AS c${i}`);
  assert.ok(placeholderCacheSize() <= PLACEHOLDER_CACHE_MAX, `cache holds ${placeholderCacheSize()}`);
  assert.equal(toPgPlaceholders('SELECT ? AS c0'), 'SELECT $1 AS c0');
});

test('PostgreSQL agrees: converted statements bind every slot and keep every other ?', { skip: postgresSkipReason() ?? false }, async () => {
  const server = await startPostgres();
  const client = new pg.Client({ connectionString: server.url });
  try {
    await client.connect();
    const run = async (sql: string, params: unknown[]) => (await client.query({ text: toPgPlaceholders(sql), values: params, rowMode: 'array' })).rows[0];
    assert.deepEqual(await run(`SELECT ?::int + ?::int, '?', E'\\'?', "?"."a?" FROM (SELECT ?::text AS "a?") AS "?" -- ?\n WHERE ?::bool`, [1, 2, 'x', true]), [3, '?', "'?", 'x']);
    assert.deepEqual(await run(`SELECT $$ ? $$, $q$?$q$, /* ? /* ? */ */ ?::text`, ['y']), [' ? ', '?', 'y']);
  } finally {
    await client.end().catch(() => undefined);
    await server.stop();
  }
});
