// RouteTable.match (the node:http engine's router) against a brute-force oracle: every route is
// tried, its segment kinds compared as uWS orders them (static > parameter > wildcard, first
// difference decides, longer wins a tie, equal: the first route given).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RouteTable } from '../../../src/http/pipeline.js';
import type { Route } from '../../../src/http/types.js';

const PATTERNS: Array<[Route['method'], string]> = [
  ['any', '/*'],
  ['options', '/*'],
  ['get', '/*'],
  ['get', '/_'],
  ['get', '/_/'],
  ['get', '/_/*'],
  ['get', '/api/health'],
  ['get', '/api/collections'],
  ['post', '/api/collections'],
  ['get', '/api/collections/:idOrName'],
  ['patch', '/api/collections/:idOrName'],
  ['del', '/api/collections/:idOrName'],
  ['get', '/api/collections/:collection/records'],
  ['post', '/api/collections/:collection/records'],
  ['get', '/api/collections/:collection/records/:id'],
  ['patch', '/api/collections/:collection/records/:id'],
  ['del', '/api/collections/:collection/records/:id'],
  ['get', '/api/collections/_externalAuths/records'],
  ['del', '/api/collections/_externalAuths/records/:id'],
  ['get', '/api/collections/:col/auth-methods'],
  ['post', '/api/collections/:col/auth/:method/complete'],
  ['post', '/api/collections/:col/auth/two-factor/:action'],
  ['post', '/api/collections/:col/records/:id/uploads'],
  ['get', '/api/files/:collection/:recordId/:filename'],
  ['get', '/api/logs/:id'],
  ['get', '/api/logs/stats'],
  ['get', '/api/x/*'],
  ['get', '/api/x/:a'],
  ['get', '/api/x'],
  ['any', '/api/realtime/*'],
  ['get', '/api/realtime'],
  ['post', '/api/realtime'],
];

const routes: Route[] = PATTERNS.map(([method, pattern]) => ({ method, pattern, handler: () => ({ status: 200, body: '' }) }));
const METHOD: Record<Route['method'], string | null> = { get: 'GET', post: 'POST', patch: 'PATCH', put: 'PUT', del: 'DELETE', options: 'OPTIONS', any: null };

/** Every route tried: the kinds of its segments if it matches, and the best by uWS's order. */
function oracle(method: string, path: string): { route: Route; params: string[] } | undefined {
  const parts = path.split('/').slice(1);
  let best: { route: Route; params: string[]; kinds: number[] } | undefined;
  for (const route of routes) {
    const m = METHOD[route.method];
    if (m !== null && m !== method && !(m === 'GET' && method === 'HEAD')) continue;
    const star = route.pattern.endsWith('/*');
    const segs = (star ? route.pattern.slice(0, -2) : route.pattern).split('/').slice(1).filter((s, i, a) => !(a.length === 1 && s === ''));
    if (star ? parts.length < segs.length : parts.length !== segs.length) continue;
    const kinds: number[] = [];
    const params: string[] = [];
    const ok = segs.every((s, i) => {
      if (s.startsWith(':')) {
        params.push(parts[i]);
        kinds.push(1);
        return parts[i] !== '';
      }
      kinds.push(2);
      return s === parts[i];
    });
    if (!ok) continue;
    if (star) kinds.push(0);
    const wins = (a: number[], b: number[]): boolean => {
      const d = a.findIndex((v, i) => i < b.length && v !== b[i]);
      return d >= 0 ? a[d] > b[d] : a.length > b.length;
    };
    if (!best || wins(kinds, best.kinds)) best = { route, params, kinds };
  }
  return best && { route: best.route, params: best.params };
}

const PATHS = [
  '/', '', '/_', '/_/', '/_/a', '/_/a/b', '/api', '/api/', '/api/health', '/api/health/', '/api/collections', '/api/collections/',
  '/api/collections/posts', '/api/collections/posts/records', '/api/collections/posts/records/abc', '/api/collections/posts/records/',
  '/api/collections//records/abc', '/api/collections/_externalAuths/records', '/api/collections/_externalAuths/records/x',
  '/api/collections/users/auth-methods', '/api/collections/users/auth/otp/complete', '/api/collections/users/auth/two-factor/enable',
  '/api/collections/posts/records/abc/uploads', '/api/files/a/b/c', '/api/files/a/b', '/api/logs/stats', '/api/logs/7', '/api/x',
  '/api/x/', '/api/x/1', '/api/x/1/2', '/api/realtime', '/api/realtime/', '/api/realtime/a/b', '/nothing/here',
  '*', 'http://h/api/health', 'x/api/logs/1', '//', '/api//', '/api/logs//', '/api/collections/posts/records/a%2Fb',
  '/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s', '/_/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q', '/api/collections/posts/records/abc/d/e/f/g/h/i/j/k/l/m/n/o/p',
];

test('match agrees with trying every route, for every method and path', () => {
  const table = new RouteTable(routes);
  for (const method of ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS', 'PROPFIND']) {
    for (const path of PATHS) {
      const got = table.match(method, path);
      const want = oracle(method, path);
      assert.equal(got?.route.pattern, want?.route.pattern, `${method} ${path}`);
      assert.equal(got?.route.method, want?.route.method, `${method} ${path}`);
      assert.deepEqual(got?.params, want?.params, `${method} ${path}`);
    }
  }
});

test('a parameter beats the wildcard, a static segment beats a parameter, ties go to the first route', () => {
  const table = new RouteTable(routes);
  assert.equal(table.match('GET', '/api/collections/posts/records/abc')?.route.pattern, '/api/collections/:collection/records/:id');
  assert.deepEqual(table.match('GET', '/api/collections/posts/records/abc')?.params, ['posts', 'abc']);
  assert.equal(table.match('DELETE', '/api/collections/_externalAuths/records/x')?.route.pattern, '/api/collections/_externalAuths/records/:id');
  assert.equal(table.match('GET', '/api/logs/stats')?.route.pattern, '/api/logs/stats');
  assert.equal(table.match('GET', '/nothing')?.route.method, 'any');
  assert.equal(table.match('PUT', '/api/collections/posts/records/abc')?.route.method, 'any');
});
