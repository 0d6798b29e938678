/**
 * `GET /api/metrics` (docs/operations.md, "Metrics") against the real server: who may read it,
 * its content type, an exposition that a strict parser of the Prometheus text format accepts, and
 * numbers that move with what the server does (requests by route pattern, a realtime connection,
 * a write's group commit, the record cache). Runs on PostgreSQL too through test/pg-suite.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startSvc, type Svc } from '../helpers/server.js';
import { signup, type User } from '../helpers/records-fixtures.js';
import { until } from '../helpers/wait.js';

const TOKEN = 'metrics-token-0123456789abcdef';
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

let srv: Svc;
let user: User;
let postId: string;

before(async () => {
  srv = await startSvc({ env: { SERVICE_METRICS_TOKEN: TOKEN, SERVICE_RATE_LIMIT_MAX: '0' } });
  await srv.createCollection({ name: 'members', type: 'auth', createRule: '@public' });
  await srv.createCollection({ name: 'posts', fields: [{ name: 'title', type: 'text' }], viewRule: '@public', createRule: '@public' });
  user = await signup(srv, 'members', 'reader@example.com');
  const r = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'first' } });
  assert.equal(r.status, 201, r.text);
  postId = r.body.id;
});
after(async () => { await srv?.stop(); });

// ---- a strict parser of the text format (version 0.0.4) ----

interface Sample { name: string; labels: Record<string, string>; value: number }
interface Family { name: string; type: string; help: string; samples: Sample[] }

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
/** Suffixes a sample may add to its family's name, per type. */
const SUFFIXES: Record<string, string[]> = { counter: [''], gauge: [''], untyped: [''], histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };

function parseValue(s: string, line: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  assert.match(s, /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/, `bad value in ${line}`);
  return Number(s);
}

/** `{a="x",b="y"}` from position `i` of `line`: the labels and the position after `}`. */
function parseLabels(line: string, i: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  i++; // '{'
  while (line[i] !== '}') {
    const eq = line.indexOf('=', i);
    assert.ok(eq > i, `label without '=' in ${line}`);
    const name = line.slice(i, eq);
    assert.match(name, LABEL, `bad label name in ${line}`);
    assert.equal(line[eq + 1], '"', `unquoted label value in ${line}`);
    let v = '';
    let j = eq + 2;
    for (;; j++) {
      assert.ok(j < line.length, `unterminated label value in ${line}`);
      const ch = line[j];
      if (ch === '"') break;
      if (ch === '\\') {
        const next = line[++j];
        assert.ok(next === '\\' || next === '"' || next === 'n', `bad escape in ${line}`);
        v += next === 'n' ? '\n' : next;
      } else v += ch;
    }
    assert.ok(!(name in labels), `label ${name} twice in ${line}`);
    labels[name] = v;
    i = j + 1;
    if (line[i] === ',') i++;
    else assert.equal(line[i], '}', `expected ',' or '}' in ${line}`);
  }
  return [labels, i + 1];
}

/** Parses an exposition, failing on any line the format does not allow. */
function parseExposition(text: string): Map<string, Family> {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const families = new Map<string, Family>();
  let current: Family | null = null;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      assert.match(name, NAME, `bad metric name in ${line}`);
      let f = families.get(name);
      if (!f) {
        f = { name, type: 'untyped', help: '', samples: [] };
        families.set(name, f);
      } else assert.equal(f.samples.length, 0, `${kind} after samples of ${name}`);
      if (kind === 'TYPE') {
        assert.ok(TYPES.has(rest), `bad type in ${line}`);
        f.type = rest;
      } else f.help = rest;
      current = f;
      continue;
    }
    assert.ok(!line.startsWith('#'), `unexpected comment ${line}`);
    const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    assert.ok(m, `bad sample line ${line}`);
    const name = m[0];
    let i = name.length;
    let labels: Record<string, string> = {};
    if (line[i] === '{') [labels, i] = parseLabels(line, i);
    assert.equal(line[i], ' ', `expected a space before the value in ${line}`);
    const value = parseValue(line.slice(i + 1), line);
    assert.ok(current, `sample before any TYPE: ${line}`);
    const suffix = name.slice(current.name.length);
    assert.ok(name.startsWith(current.name) && SUFFIXES[current.type].includes(suffix), `${name} is not of family ${current.name} (${current.type})`);
    if (suffix === '_bucket') assert.ok('le' in labels, `bucket without le: ${line}`);
    current.samples.push({ name, labels, value });
  }
  return families;
}

async function scrape(token = srv.suToken): Promise<Map<string, Family>> {
  const r = await srv.api('GET', '/api/metrics', { token });
  assert.equal(r.status, 200, r.text);
  return parseExposition(r.text);
}

/** The value of the sample `name` whose labels include `labels` (0 when absent). */
function value(fams: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  for (const f of fams.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return 0;
}

function has(fams: Map<string, Family>, name: string): boolean {
  return [...fams.values()].some((f) => f.samples.some((s) => s.name === name));
}

// ---- tests ----

test('access: 401 without credentials or with a wrong token, 403 for a non-superuser, 200 for a superuser or the token', async () => {
  const none = await srv.api('GET', '/api/metrics');
  assert.equal(none.status, 401);
  assert.equal(none.body.status, 401);
  assert.equal(typeof none.body.message, 'string');
  const wrong = await srv.api('GET', '/api/metrics', { token: `${TOKEN}x` });
  assert.equal(wrong.status, 401);
  const member = await srv.api('GET', '/api/metrics', { token: user.token });
  assert.equal(member.status, 403);
  assert.equal(member.body.status, 403);
  for (const token of [srv.suToken, TOKEN]) {
    const ok = await srv.api('GET', '/api/metrics', { token });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers.get('content-type'), CONTENT_TYPE);
    assert.match(ok.text, /^# HELP svc_/);
  }
  // any case of `Bearer`, or the raw token (as the PocketBase SDK sends credentials)
  for (const authorization of [`bearer ${TOKEN}`, TOKEN]) {
    const ok = await srv.api('GET', '/api/metrics', { headers: { authorization } });
    assert.equal(ok.status, 200, authorization);
  }
});

test('the exposition parses strictly; every series is svc_-prefixed; the documented families are there', async () => {
  const fams = await scrape(TOKEN);
  for (const name of fams.keys()) assert.ok(name.startsWith('svc_'), name);
  for (const f of fams.values()) assert.ok(f.help.length > 0, `${f.name} has help`);
  const expected: Record<string, string> = {
    svc_http_requests_total: 'counter',
    svc_http_request_duration_seconds: 'histogram',
    svc_writer_queue_jobs: 'gauge',
    svc_writer_commits_total: 'counter',
    svc_writer_commit_duration_seconds: 'histogram',
    svc_cache_hits_total: 'counter',
    svc_cache_misses_total: 'counter',
    svc_reader_pool_size: 'gauge',
    svc_reader_pool_busy_reads: 'gauge',
    svc_reader_pool_waiting_reads: 'gauge',
    svc_reader_pool_reads_total: 'counter',
    svc_reader_pool_busy_seconds_total: 'counter',
    svc_realtime_connections: 'gauge',
    svc_realtime_subscriptions: 'gauge',
    svc_realtime_deliveries_total: 'counter',
    svc_realtime_dropped_consumers_total: 'counter',
    svc_realtime_refused_connections_total: 'counter',
    svc_realtime_delivery_seconds: 'gauge',
    svc_mail_queue_messages: 'gauge',
    svc_password_hash_threads: 'gauge',
    svc_password_hash_waiting: 'gauge',
    svc_password_hashes_total: 'counter',
    svc_password_hash_busy_seconds_total: 'counter',
    svc_process_resident_memory_bytes: 'gauge',
    svc_nodejs_eventloop_lag_seconds: 'gauge',
    svc_nodejs_heap_size_used_bytes: 'gauge',
  };
  for (const [name, type] of Object.entries(expected)) assert.equal(fams.get(name)?.type, type, name);
  assert.ok(value(fams, 'svc_process_resident_memory_bytes') > 0);
  assert.ok(has(fams, 'svc_nodejs_eventloop_lag_p99_seconds'));
  assert.ok(value(fams, 'svc_reader_pool_size') >= 1);
  for (const state of ['pending', 'failed']) assert.ok(has(fams, 'svc_mail_queue_messages') && fams.get('svc_mail_queue_messages')!.samples.some((s) => s.labels.state === state), state);
  for (const cache of ['records', 'list_rows', 'auth_records', 'pages', 'counts', 'walks', 'rule_parse']) {
    assert.ok(fams.get('svc_cache_hits_total')!.samples.some((s) => s.labels.cache === cache), cache);
  }
});

test('N requests to a route grow its counter by N under the route pattern, never the raw path', async () => {
  const N = 7;
  const route = '/api/collections/:col/records/:id';
  const labels = { route, method: 'GET', status: '200' };
  const before = await scrape();
  for (let i = 0; i < N; i++) {
    const r = await srv.api('GET', `/api/collections/posts/records/${postId}`);
    assert.equal(r.status, 200);
  }
  const missing = await srv.api('GET', '/api/collections/posts/records/nosuchrecord00');
  assert.equal(missing.status, 404);
  const after = await scrape();
  assert.equal(value(after, 'svc_http_requests_total', labels) - value(before, 'svc_http_requests_total', labels), N);
  assert.equal(value(after, 'svc_http_requests_total', { ...labels, status: '404' }) - value(before, 'svc_http_requests_total', { ...labels, status: '404' }), 1);
  const count = { route, method: 'GET' };
  assert.equal(value(after, 'svc_http_request_duration_seconds_count', count) - value(before, 'svc_http_request_duration_seconds_count', count), N + 1);
  assert.equal(value(after, 'svc_http_request_duration_seconds_bucket', { ...count, le: '+Inf' }), value(after, 'svc_http_request_duration_seconds_count', count));
  // the buckets are cumulative
  const buckets = after.get('svc_http_request_duration_seconds')!.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.route === route && s.labels.method === 'GET');
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value);
  // no label carries a record id
  const text = (await srv.api('GET', '/api/metrics', { token: TOKEN })).text;
  assert.ok(!text.includes(postId));
  assert.ok(!text.includes('nosuchrecord00'));
  // the record cache saw the repeated reads as hits
  assert.ok(value(after, 'svc_cache_hits_total', { cache: 'records' }) - value(before, 'svc_cache_hits_total', { cache: 'records' }) >= N - 1);
});

test('a realtime connection shows in the connections gauge while it is open', async () => {
  const labels = { transport: 'websocket' };
  const before = value(await scrape(), 'svc_realtime_connections', labels);
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
  await new Promise<void>((res, rej) => {
    ws.once('message', () => res()); // the connect frame: the hub counted it
    ws.once('error', rej);
  });
  try {
    assert.equal(value(await scrape(), 'svc_realtime_connections', labels), before + 1);
  } finally {
    ws.close();
  }
  await until(async () => value(await scrape(), 'svc_realtime_connections', labels) === before, 5000);
});

test('a write raises the commit count and the commit-latency histogram', async () => {
  const before = await scrape();
  const r = await srv.api('POST', '/api/collections/posts/records', { body: { title: 'second' } });
  assert.equal(r.status, 201, r.text);
  const after = await scrape();
  assert.ok(value(after, 'svc_writer_commit_duration_seconds_count') > value(before, 'svc_writer_commit_duration_seconds_count'));
  assert.ok(value(after, 'svc_writer_commits_total') > value(before, 'svc_writer_commits_total'));
  assert.ok(value(after, 'svc_writer_commit_duration_seconds_sum') > 0);
  assert.ok(value(after, 'svc_writer_queue_jobs') >= 0);
});

test('a password sign-in counts on the hashing threads', async () => {
  const before = await scrape();
  const r = await srv.api('POST', '/api/collections/members/auth-with-password', { body: { identity: user.email, password: user.password } });
  assert.equal(r.status, 200, r.text);
  const after = await scrape();
  assert.ok(value(after, 'svc_password_hashes_total') > value(before, 'svc_password_hashes_total'));
  assert.ok(value(after, 'svc_password_hash_busy_seconds_total') > value(before, 'svc_password_hash_busy_seconds_total'));
});
