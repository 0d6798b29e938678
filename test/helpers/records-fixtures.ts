/**
 * Shared helpers for the end-to-end API suites (e2e-collections, e2e-records, e2e-rules,
 * e2e-list): a PocketBase-style scenario-table runner, a deep partial matcher for expected
 * body fragments, error-envelope assertions and auth-user fixtures.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { ApiResponse, Svc } from './server.js';

/** Marks a key that must NOT be present in the actual object. */
export const ABSENT = Symbol('absent');
/** Matches any value that is present (not undefined). */
export const PRESENT = Symbol('present');

export type Fragment = unknown;

/**
 * Deep partial match: every key of `expected` must match in `actual`.
 * - objects: keys of `expected` only (extra keys in `actual` allowed); `ABSENT` value = key missing.
 * - arrays: same length, element-wise partial match.
 * - RegExp: tested against String(actual).
 * - function: predicate; must return true.
 * - anything else: strict equality.
 */
export function matches(actual: unknown, expected: Fragment, path = '$'): void {
  if (expected === PRESENT) {
    assert.notEqual(actual, undefined, `${path}: expected a value`);
    return;
  }
  if (expected instanceof RegExp) {
    assert.match(String(actual), expected, `${path}: ${JSON.stringify(actual)} !~ ${expected}`);
    return;
  }
  if (typeof expected === 'function') {
    assert.ok((expected as (v: unknown) => boolean)(actual), `${path}: predicate ${expected.toString().slice(0, 80)} failed for ${JSON.stringify(actual)?.slice(0, 300)}`);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array, got ${JSON.stringify(actual)?.slice(0, 300)}`);
    assert.equal((actual as unknown[]).length, expected.length, `${path}: array length (actual ${JSON.stringify(actual)?.slice(0, 300)})`);
    expected.forEach((e, i) => matches((actual as unknown[])[i], e, `${path}[${i}]`));
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object' && !Array.isArray(actual), `${path}: expected an object, got ${JSON.stringify(actual)?.slice(0, 300)}`);
    for (const [k, e] of Object.entries(expected)) {
      const a = (actual as Record<string, unknown>)[k];
      if (e === ABSENT) {
        assert.ok(!(k in (actual as object)), `${path}.${k}: must be absent, got ${JSON.stringify(a)}`);
        continue;
      }
      matches(a, e, `${path}.${k}`);
    }
    return;
  }
  assert.deepEqual(actual, expected, `${path}: ${JSON.stringify(actual)} !== ${JSON.stringify(expected)}`);
}

export interface Scenario {
  name: string;
  method: string;
  url: string;
  /** bearer token; null/undefined = anonymous */
  token?: string | null;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  status: number;
  /** partial match against the parsed JSON body */
  expect?: Fragment;
  /** substrings the raw response text must contain */
  contains?: string[];
  /** substrings the raw response text must NOT contain */
  notContains?: string[];
  /** extra assertions */
  check?: (r: ApiResponse) => void | Promise<void>;
}

/** Runs each scenario as a subtest: status, then body fragment, then text fragments, then check. */
export async function runScenarios(t: TestContext, srv: Svc, scenarios: Scenario[]): Promise<void> {
  for (const s of scenarios) {
    await t.test(s.name, async () => {
      const r = await srv.api(s.method, s.url, { body: s.body, raw: s.raw, token: s.token ?? null, headers: s.headers });
      const ctx = `${s.method} ${s.url} → ${r.status} ${r.text.slice(0, 600)}`;
      assert.equal(r.status, s.status, `status: ${ctx}`);
      if (r.status >= 400 && r.body !== null) {
        // spec "Errors": keys in this fixed order
        assert.deepEqual(Object.keys(r.body), ['status', 'code', 'message', 'data'], `error envelope keys: ${ctx}`);
        assert.equal(r.body.status, r.status, `envelope status: ${ctx}`);
      }
      if (s.expect !== undefined) {
        try {
          matches(r.body, s.expect);
        } catch (err) {
          (err as Error).message += `\n  response: ${ctx}`;
          throw err;
        }
      }
      for (const c of s.contains ?? []) assert.ok(r.text.includes(c), `body should contain ${JSON.stringify(c)}: ${ctx}`);
      for (const c of s.notContains ?? []) assert.ok(!r.text.includes(c), `body must not contain ${JSON.stringify(c)}: ${ctx}`);
      if (s.check) await s.check(r);
    });
  }
}

/** Error envelope: keys in order status, code, message, data. */
export function errorFragment(status: number, code?: string | RegExp, data?: Fragment): Fragment {
  return {
    status,
    code: code ?? ((c: unknown) => typeof c === 'string' && c.length > 0),
    message: (m: unknown) => typeof m === 'string' && m.length > 0,
    data: data ?? ((d: unknown) => d !== null && typeof d === 'object' && !Array.isArray(d)),
  };
}

/** 400 validation_failed with `data.<key>.code === code` for each entry. */
export function validation(fields: Record<string, string>): Fragment {
  const data: Record<string, unknown> = {};
  for (const [k, code] of Object.entries(fields)) data[k] = { code, message: (m: unknown) => typeof m === 'string' && m.length > 0 };
  return errorFragment(400, 'validation_failed', data);
}

/** Asserts the error envelope (status, code, key order) of a response. */
export function assertError(r: ApiResponse, status: number, code?: string): void {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`);
  assert.ok(r.body && typeof r.body === 'object', `error body is JSON: ${r.text.slice(0, 200)}`);
  assert.deepEqual(Object.keys(r.body), ['status', 'code', 'message', 'data'], `envelope keys: ${r.text.slice(0, 300)}`);
  assert.equal(r.body.status, status);
  if (code) assert.equal(r.body.code, code, `code: ${r.text.slice(0, 300)}`);
}

/** The record id format: 15 lowercase alphanumerics. */
export const RECORD_ID = /^[a-z0-9]{15}$/;
/** The stored date format. */
export const DATE_FMT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Sensitive auth fields that must never appear in any response. */
export const SECRET_KEYS = ['passwordHash', 'tokenKey', 'token_epoch', 'password', 'passwordConfirm'];

/** Asserts none of the hidden auth keys appear anywhere in a response text. */
export function assertNoSecrets(r: ApiResponse, label = ''): void {
  for (const k of ['passwordHash', 'tokenKey', 'token_epoch']) {
    assert.ok(!r.text.includes(`"${k}"`), `${label} response leaks ${k}: ${r.text.slice(0, 400)}`);
  }
}

/** Auth collection with open signup, used by every suite for non-superuser principals. */
export async function createUsers(srv: Svc, name = 'users', extra: Record<string, unknown> = {}): Promise<any> {
  return srv.createCollection({
    name,
    type: 'auth',
    fields: [{ name: 'nick', type: 'text' }],
    listRule: '@public',
    viewRule: '@public',
    createRule: '@public',
    updateRule: null,
    deleteRule: null,
    ...extra,
  });
}

export interface User {
  id: string;
  email: string;
  password: string;
  token: string;
  record: any;
}

/** Signs up through POST records (open create rule) and logs in with auth-with-password. */
export async function signup(srv: Svc, col: string, email: string, password = 'password123', extra: Record<string, unknown> = {}): Promise<User> {
  const c = await srv.api('POST', `/api/collections/${col}/records`, { body: { email, password, passwordConfirm: password, ...extra } });
  if (c.status !== 201) throw new Error(`signup ${email} failed (${c.status}): ${c.text}`);
  const l = await srv.api('POST', `/api/collections/${col}/auth-with-password`, { body: { identity: email, password } });
  if (l.status !== 200) throw new Error(`login ${email} failed (${l.status}): ${l.text}`);
  return { id: c.body.id, email, password, token: l.body.token, record: l.body.record };
}

/** Creates a record as superuser; throws unless 201. */
export async function seed(srv: Svc, col: string, body: Record<string, unknown>, token: string = srv.suToken): Promise<any> {
  const r = await srv.api('POST', `/api/collections/${col}/records`, { body, token });
  if (r.status !== 201) throw new Error(`seed ${col} failed (${r.status}): ${r.text}`);
  return r.body;
}

/** URL-encodes a query object into `?a=b&c=d`. */
export function qs(params: Record<string, string | number | boolean>): string {
  const s = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  return s ? `?${s}` : '';
}

/** `matches(r.body, expected)` with the response text appended to a failure message. */
export function expectBody(r: ApiResponse, expected: Fragment, label = ''): void {
  try {
    matches(r.body, expected);
  } catch (err) {
    (err as Error).message += `\n  ${label} response ${r.status}: ${r.text.slice(0, 800)}`;
    throw err;
  }
}

/** With SVC_DEBUG=1, prints the server's non-request log lines (call from `after`). */
export function dumpServerLog(srv: Svc | undefined): void {
  if (!srv || !process.env.SVC_DEBUG) return;
  const lines = srv.stderr().split('\n').filter((l) => l && !l.includes('"msg":"request"'));
  process.stderr.write(`--- server log ---\n${lines.join('\n')}\n`);
}
