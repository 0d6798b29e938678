/**
 * The pieces of GET /api/metrics that need no server (src/api/metrics.ts): the per-request HTTP
 * series as a registry formats them, and the metrics token's comparison.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { HttpSeries, NO_ROUTE, bearerMatches } from '../../../src/api/metrics.js';
import type { RequestEnd } from '../../../src/http/pipeline.js';

const end = (method: string, route: string | null, status: number, durationMs: number): RequestEnd =>
  ({ req: { method } as RequestEnd['req'], route, status, durationMs });

test('HttpSeries: counts by pattern, method and status code, with cumulative latency buckets', async () => {
  const series = new HttpSeries();
  const registry = new Registry();
  series.register(registry, 'svc_');
  series.observe(end('GET', '/items/:id', 200, 0.2));
  series.observe(end('GET', '/items/:id', 200, 3));
  series.observe(end('GET', '/items/:id', 404, 20_000));
  series.observe(end('BREW', '/*', 404, 1));
  series.observe(end('GET', null, 503, 0.1));
  const text = await registry.metrics();
  const lines = text.split('\n');
  const has = (line: string) => assert.ok(lines.includes(line), `missing ${line} in\n${text}`);
  has('# TYPE svc_http_requests_total counter');
  has('svc_http_requests_total{route="/items/:id",method="GET",status="200"} 2');
  has('svc_http_requests_total{route="/items/:id",method="GET",status="404"} 1');
  has('svc_http_requests_total{route="/*",method="other",status="404"} 1');
  has(`svc_http_requests_total{route="${NO_ROUTE}",method="GET",status="503"} 1`);
  has('# TYPE svc_http_request_duration_seconds histogram');
  has('svc_http_request_duration_seconds_bucket{route="/items/:id",method="GET",le="0.0005"} 1');
  has('svc_http_request_duration_seconds_bucket{route="/items/:id",method="GET",le="0.005"} 2');
  has('svc_http_request_duration_seconds_bucket{route="/items/:id",method="GET",le="10"} 2');
  has('svc_http_request_duration_seconds_bucket{route="/items/:id",method="GET",le="+Inf"} 3');
  has('svc_http_request_duration_seconds_sum{route="/items/:id",method="GET"} 20.0032');
  has('svc_http_request_duration_seconds_count{route="/items/:id",method="GET"} 3');
});

test('bearerMatches: the exact token, after Bearer in any case or raw; nothing else', () => {
  const token = 'a-metrics-token-of-some-length';
  assert.equal(bearerMatches(`Bearer ${token}`, token), true);
  assert.equal(bearerMatches(`bearer ${token}`, token), true);
  assert.equal(bearerMatches(token, token), true);
  assert.equal(bearerMatches(undefined, token), false);
  assert.equal(bearerMatches('', token), false);
  assert.equal(bearerMatches(`Bearer ${token}x`, token), false);
  assert.equal(bearerMatches(`Bearer ${token.slice(0, -1)}`, token), false);
  assert.equal(bearerMatches('Bearer ', token), false);
});
