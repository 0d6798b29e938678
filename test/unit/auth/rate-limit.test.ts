/**
 * Unit: the auth rate limiter (spec 1-core-api.md, "Rate limiting"): fixed windows, budgets and
 * per-method overrides, client keys, and bounded memory under a flood of distinct keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateLimiter, AuthRateLimits, rateLimitOptionError } from '../../../src/auth/rate-limit.js';
import { ApiError } from '../../../src/errors/api-error.js';
import type { Collection } from '../../../src/model/schema.js';
import type { Req } from '../../../src/http/types.js';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

function col(methods: Record<string, unknown> = {}): Collection {
  return {
    id: 'c1', name: 'users', type: 'auth', system: false, fields: [], indexes: [],
    options: { auth: { identityFields: ['email'], minPasswordLength: 8, methods } },
    listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
  };
}

function req(h: Partial<Req['headers']> = {}, remoteAddress = '10.0.0.9'): Req {
  return {
    method: 'POST', path: '/', query: '', params: [], body: null, remoteAddress,
    headers: { authorization: '', contentType: '', cookie: '', csrf: '', userAgent: '', forwardedFor: '', realIp: '', origin: '', accept: '', range: '', ifNoneMatch: '', ...h },
  };
}

test('a fixed window allows max hits, refuses the next, and restarts after window seconds', () => {
  const c = clock();
  const l = new RateLimiter(100, c.now);
  const b = { max: 3, windowS: 10 };
  assert.deepEqual([1, 2, 3, 4, 5].map(() => l.hit('k', b)), [true, true, true, false, false]);
  assert.equal(l.hit('other', b), true, 'keys are independent');
  c.advance(9_999);
  assert.equal(l.hit('k', b), false, 'still inside the window');
  c.advance(1);
  assert.equal(l.hit('k', b), true, 'a new window starts');
});

test('bounded memory: a flood of distinct keys never grows the map past its cap', () => {
  const c = clock();
  const l = new RateLimiter(1_000, c.now);
  const b = { max: 5, windowS: 60 };
  for (let i = 0; i < 200_000; i++) {
    l.hit(`flood-${i}`, b);
    if (i % 10_000 === 0) c.advance(1);
  }
  assert.ok(l.size <= 1_000, `size ${l.size}`);
});

test('eviction drops the least recently hit key (here the expired one), not a live one hit since', () => {
  const c = clock();
  const l = new RateLimiter(3, c.now);
  l.hit('short', { max: 1, windowS: 1 });
  l.hit('long-a', { max: 1, windowS: 600 });
  l.hit('long-b', { max: 1, windowS: 600 });
  c.advance(2_000);
  l.hit('new', { max: 1, windowS: 600 });
  assert.equal(l.size, 3);
  assert.equal(l.hit('long-a', { max: 1, windowS: 600 }), false, 'live window kept (the least recent one was evicted)');
});

test('budgets: global default, max 0 disables only the global limiter, per-method off and custom', () => {
  const on = new AuthRateLimits({ max: 10, windowS: 60 }, false);
  const off = new AuthRateLimits({ max: 0, windowS: 60 }, false);
  assert.deepEqual(on.budget(col(), 'password'), { max: 10, windowS: 60 });
  assert.equal(off.budget(col(), 'password'), null);
  assert.equal(off.budget(col()), null);
  const custom = col({ password: { rate_limit: { max: 2, window_s: 5 } } });
  assert.deepEqual(off.budget(custom, 'password'), { max: 2, windowS: 5 }, 'a custom limit applies even when the global one is off');
  assert.deepEqual(on.budget(custom, 'password'), { max: 2, windowS: 5 }, 'and overrides the global one');
  assert.equal(on.budget(col({ password: { rate_limit: 'off' } }), 'password'), null);
  assert.deepEqual(on.budget(col({ password: { rate_limit: 'default' } }), 'password'), { max: 10, windowS: 60 });
  assert.deepEqual(on.budget(custom), { max: 10, windowS: 60 }, 'endpoints without a method use the global budget');
});

test('enforce rejects with 429 too_many_requests with the documented message, per scope and collection', async () => {
  const l = new AuthRateLimits({ max: 2, windowS: 60 }, false);
  const c = col();
  await l.enforce('auth-with-password', c, ['id:a']);
  await l.enforce('auth-with-password', c, ['id:a']);
  await assert.rejects(l.enforce('auth-with-password', c, ['id:a']), (e: unknown) => e instanceof ApiError && e.status === 429 && e.code === 'too_many_requests' && e.message === 'Too many requests. Try again later.');
  await l.enforce('request-password-reset', c, ['id:a']); // another endpoint has its own counter
  await l.enforce('auth-with-password', { ...c, id: 'c2' }, ['id:a']); // and another collection
});

test('client keys: submitted identity by default; with trust-proxy the forwarded address and the identity', () => {
  const plain = new AuthRateLimits({ max: 1, windowS: 1 }, false);
  const proxy = new AuthRateLimits({ max: 1, windowS: 1 }, true);
  const fwd = req({ forwardedFor: ' 203.0.113.7 , 10.0.0.1', realIp: '198.51.100.2' });
  assert.deepEqual(plain.clientKeys(fwd, ' Alice@Example.com '), ['id:alice@example.com']);
  assert.deepEqual(plain.clientKeys(fwd, undefined), ['ip:10.0.0.9'], 'no identity: the socket address');
  assert.deepEqual(proxy.clientKeys(fwd, 'alice@example.com'), ['ip:203.0.113.7', 'id:alice@example.com'], 'first forwarded hop and identity');
  assert.deepEqual(proxy.clientKeys(fwd, ''), ['ip:203.0.113.7'], 'no identity: the forwarded hop alone');
  assert.deepEqual(proxy.clientKeys(req({ realIp: '198.51.100.2' }), 'alice@example.com'), ['ip:198.51.100.2', 'id:alice@example.com'], 'real-IP header');
  assert.deepEqual(proxy.clientKeys(req(), 'alice@example.com'), ['id:alice@example.com'], 'no header: identity');
});

test('enforce counts every key: a rotating address meets the identity budget, one address meets its own', async () => {
  const l = new AuthRateLimits({ max: 2, windowS: 60 }, true);
  const c = col();
  const from = (ip: string, who: string) => l.clientKeys(req({ forwardedFor: ip }), who);
  await l.enforce('auth-with-password', c, from('203.0.113.1', 'ann'));
  await l.enforce('auth-with-password', c, from('203.0.113.2', 'ann'));
  await assert.rejects(l.enforce('auth-with-password', c, from('203.0.113.3', 'ann')), (e: unknown) => e instanceof ApiError && e.status === 429);
  await l.enforce('auth-with-password', c, from('203.0.113.4', 'bob'));
  await l.enforce('auth-with-password', c, from('203.0.113.4', 'cy'));
  await assert.rejects(l.enforce('auth-with-password', c, from('203.0.113.4', 'dan')), (e: unknown) => e instanceof ApiError && e.status === 429, 'the address is at its budget too');
});

test('rate_limit option validation', () => {
  for (const ok of ['default', 'off', { max: 1, window_s: 1 }, { max: 100, window_s: 3600 }]) assert.equal(rateLimitOptionError(ok), null, JSON.stringify(ok));
  for (const bad of ['on', 5, null, [], { max: 0, window_s: 60 }, { max: 5 }, { max: 5, window_s: 0 }, { max: 1.5, window_s: 1 }, { max: 1, window_s: 1, x: 1 }]) {
    assert.equal(typeof rateLimitOptionError(bad), 'string', JSON.stringify(bad));
  }
});
