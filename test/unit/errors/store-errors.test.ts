/**
 * The one mapping of storage's typed errors (src/store/errors/store-errors.ts) to the API's answers
 * (knownApiError, src/errors/api-error.ts): each kind gives exactly the envelope the API gave when
 * storage still threw ApiError (docs/api.md, "Errors"). The envelopes below are those the old code
 * built, byte for byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, knownApiError, toApiError, writeErrorBody } from '../../../src/errors/api-error.js';
import * as storeErrors from '../../../src/store/errors/store-errors.js';
import { ConstraintViolation, GuardFailed, InvalidQuery, InvalidValue, NotFound, QueryTooComplex, StoreError, UniqueViolation, UnsupportedSchema, WriterClosed } from '../../../src/store/errors/store-errors.js';
import { sqliteDialect } from '../../../src/store/sqlite/dialect.js';
import { WriteError } from '../../../src/store/sqlite/writer-client.js';
import { pgDialect } from '../../../src/store/pg/dialect.js';
import { PgWriteError } from '../../../src/store/pg/writer.js';

const envelope = (err: unknown): string => {
  const api = knownApiError(err);
  assert.ok(api instanceof ApiError, `no answer for ${String(err)}`);
  return writeErrorBody(api);
};

const relationData = { author: { code: 'validation_not_found', message: 'The related record does not exist.' } };

/** Every typed error kind with the envelope the API answers for it. */
const CASES: Array<[StoreError, string]> = [
  [
    new GuardFailed(1, { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: relationData }),
    '{"status":400,"code":"validation_failed","message":"Failed to validate the submitted data.","data":{"author":{"code":"validation_not_found","message":"The related record does not exist."}}}',
  ],
  [new GuardFailed(0, { status: 403, code: 'forbidden', message: 'You are not allowed to create this record.' }), '{"status":403,"code":"forbidden","message":"You are not allowed to create this record.","data":{}}'],
  [new GuardFailed(2), '{"status":404,"code":"not_found","message":"The requested resource was not found.","data":{}}'],
  [new NotFound('collection', 'Missing collection context.'), '{"status":404,"code":"not_found","message":"Missing collection context.","data":{}}'],
  [new InvalidQuery('sort', 'Invalid sort: @random cannot be used with cursor paging.'), '{"status":400,"code":"bad_request","message":"Invalid sort: @random cannot be used with cursor paging.","data":{}}'],
  [new InvalidQuery('filter', 'Invalid filter: field "title" has no sub-fields.'), '{"status":400,"code":"bad_request","message":"Invalid filter: field \\"title\\" has no sub-fields.","data":{}}'],
  [
    new QueryTooComplex('Invalid filter: the expression is too complex (too deeply nested or too many relation lookups).'),
    '{"status":400,"code":"bad_request","message":"Invalid filter: the expression is too complex (too deeply nested or too many relation lookups).","data":{}}',
  ],
  [new InvalidValue('Text may not contain the NUL character (U+0000) on this server.'), '{"status":400,"code":"bad_request","message":"Text may not contain the NUL character (U+0000) on this server.","data":{}}'],
  [new UnsupportedSchema('posts', 'The field name "_rowid" is reserved on the PostgreSQL backend.'), '{"status":400,"code":"bad_request","message":"The field name \\"_rowid\\" is reserved on the PostgreSQL backend.","data":{}}'],
  [new WriterClosed(), '{"status":503,"code":"overloaded","message":"The server is shutting down.","data":{}}'],
  [new UniqueViolation('posts', ['slug'], undefined, 'UNIQUE constraint failed: posts.slug'), '{"status":409,"code":"conflict","message":"The value of \\"slug\\" conflicts with an existing record.","data":{}}'],
  [new ConstraintViolation('posts', ['title'], 'NOT NULL constraint failed: posts.title'), '{"status":409,"code":"conflict","message":"The value of \\"title\\" conflicts with an existing record.","data":{}}'],
  [new ConstraintViolation(undefined, [], 'CHECK constraint failed: positive'), '{"status":409,"code":"conflict","message":"The record conflicts with an existing record.","data":{}}'],
];

test('each typed storage error answers the envelope the API gave before', () => {
  for (const [err, body] of CASES) {
    assert.equal(envelope(err), body, err.kind);
    assert.equal(writeErrorBody(toApiError(err)), body, `toApiError agrees for ${err.kind}`);
  }
});

test('every typed error class of src/store/errors/ has a case (a new one must be mapped)', () => {
  const classes = Object.entries(storeErrors).filter(([name, v]) => typeof v === 'function' && name !== 'StoreError').map(([name]) => name).sort();
  const covered = [...new Set(CASES.map(([e]) => e.constructor.name))].sort();
  assert.deepEqual(covered, classes);
});

test('a guard failure answers the step\'s data object as given, and its message is the fail\'s', () => {
  const fail = { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: relationData };
  const e = new GuardFailed(1, fail);
  assert.equal(e.message, fail.message);
  assert.equal(knownApiError(e)!.data, relationData);
  assert.equal(new GuardFailed(3).step, 3);
});

test('ApiError passes through; anything else is no known error (500, reported by the caller)', () => {
  const api = new ApiError(418, 'teapot', 'x');
  assert.equal(knownApiError(api), api);
  for (const other of [new Error('boom'), new WriteError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: t.id', 0), 'text', null, undefined]) {
    assert.equal(knownApiError(other), null);
    assert.equal(writeErrorBody(toApiError(other)), '{"status":500,"code":"internal","message":"Something went wrong while processing your request.","data":{}}');
  }
});

test('SQLite constraint failures become UniqueViolation or ConstraintViolation with table, fields and index', () => {
  const unique = sqliteDialect.constraintError(new WriteError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: posts.slug, posts.site', 1));
  assert.ok(unique instanceof UniqueViolation);
  assert.equal(unique.table, 'posts');
  assert.deepEqual(unique.fields, ['slug', 'site']);
  assert.equal(unique.message, 'UNIQUE constraint failed: posts.slug, posts.site');
  const pk = sqliteDialect.constraintError(new WriteError('SQLITE_CONSTRAINT_PRIMARYKEY', 'UNIQUE constraint failed: posts.id', 0));
  assert.ok(pk instanceof UniqueViolation);
  const expr = sqliteDialect.constraintError(new WriteError('SQLITE_CONSTRAINT_UNIQUE', "UNIQUE constraint failed: index 'idx_users_email'", 0));
  assert.ok(expr instanceof UniqueViolation);
  assert.equal(expr.index, 'idx_users_email');
  assert.deepEqual(expr.fields, []);
  const notNull = sqliteDialect.constraintError(new WriteError('SQLITE_CONSTRAINT_NOTNULL', 'NOT NULL constraint failed: posts.title', 0));
  assert.ok(notNull instanceof ConstraintViolation && !(notNull instanceof UniqueViolation));
  assert.deepEqual(notNull.fields, ['title']);
  assert.equal(sqliteDialect.constraintError(new WriteError('SQLITE_ERROR', 'no such table: t', 0)), null);
  assert.equal(sqliteDialect.constraintError(new GuardFailed(0)), null);
  // the 409 names the same field the records writer named before (WriteFailure.column)
  const failure = new WriteError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: posts.slug', 0);
  assert.equal(sqliteDialect.constraintError(failure)!.fields[0], sqliteDialect.writeFailure(failure)!.column);
});

test('PostgreSQL constraint failures become UniqueViolation or ConstraintViolation with table, fields and index', () => {
  const dup = new PgWriteError('23505', 'duplicate key value violates unique constraint "users_email_key"', 0, Object.assign(new Error('x'), {
    detail: 'Key (lower(email))=(a@b.c) already exists.', constraint: 'users_email_key', table: 'users',
  }) as never);
  const unique = pgDialect.constraintError(dup);
  assert.ok(unique instanceof UniqueViolation);
  assert.equal(unique.table, 'users');
  assert.equal(unique.index, 'users_email_key');
  assert.deepEqual(unique.fields, ['email']);
  assert.equal(unique.fields[0], pgDialect.writeFailure(dup)!.column);
  const two = pgDialect.constraintError(new PgWriteError('23505', 'dup', 1, Object.assign(new Error('x'), { detail: 'Key (title, site)=(a, b) already exists.' }) as never));
  assert.deepEqual(two!.fields, ['title', 'site']);
  const notNull = pgDialect.constraintError(new PgWriteError('23502', 'null value in column "title"', 0, Object.assign(new Error('x'), { column: 'title', table: 'posts' }) as never));
  assert.ok(notNull instanceof ConstraintViolation && !(notNull instanceof UniqueViolation));
  assert.deepEqual(notNull.fields, ['title']);
  assert.equal(pgDialect.constraintError(new PgWriteError('42P01', 'relation "t" does not exist', 0)), null);
  assert.equal(pgDialect.constraintError(new WriterClosed()), null);
});
