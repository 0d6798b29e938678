/**
 * ApiError (src/errors/api-error.ts): a client error (4xx) is an answer and carries no stack
 * trace (its capture cost more than the rest of a refused request); a server error (5xx) keeps
 * one for the log; either way the envelope is the same and the global stack limit is left as it was.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, writeErrorBody } from '../../../src/errors/api-error.js';

test('4xx errors carry no stack frames, 5xx errors do; the envelope is unchanged and Error.stackTraceLimit is restored', () => {
  const before = Error.stackTraceLimit;
  const refused = ApiError.forbidden();
  assert.equal(refused.stack?.split('\n').filter((l) => l.trim().startsWith('at ')).length, 0, refused.stack);
  assert.equal(writeErrorBody(refused), '{"status":403,"code":"forbidden","message":"You are not allowed to perform this request.","data":{}}');
  const fault = new ApiError(500, 'internal', 'boom');
  assert.ok((fault.stack?.split('\n').filter((l) => l.trim().startsWith('at ')).length ?? 0) > 0, fault.stack);
  assert.equal(Error.stackTraceLimit, before);
  assert.ok(refused instanceof Error && refused instanceof ApiError);
});
