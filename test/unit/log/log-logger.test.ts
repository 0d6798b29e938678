import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapLogger, createLogger, parseLogLevel, timestamp, MAX_MESSAGE_LENGTH, type LoggerOptions } from '../../../src/log/logger.js';

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

function capture(opts: Omit<LoggerOptions, 'write'>) {
  const lines: string[] = [];
  const logger = createLogger({ ...opts, write: (l) => lines.push(l) });
  return { logger, lines };
}

test('json records have keys ts, level, scope, msg in that order', () => {
  const { logger, lines } = capture({ format: 'json', level: 'debug', requests: true });
  logger.info('hello');
  logger.warn('careful', 'mail');
  const a = JSON.parse(lines[0]);
  assert.deepEqual(Object.keys(a), ['ts', 'level', 'scope', 'msg']);
  assert.match(a.ts, TS);
  assert.deepEqual({ ...a, ts: 'x' }, { ts: 'x', level: 'info', scope: 'default', msg: 'hello' });
  assert.equal(JSON.parse(lines[1]).scope, 'mail');
  assert.equal(JSON.parse(lines[1]).level, 'warn');
});

test('json request records add method, path, status, duration_ms', () => {
  const { logger, lines } = capture({ format: 'json', level: 'info', requests: true });
  logger.request('GET', '/api/health', 200, 3.6);
  const r = JSON.parse(lines[0]);
  assert.deepEqual(Object.keys(r), ['ts', 'level', 'scope', 'msg', 'method', 'path', 'status', 'duration_ms']);
  assert.deepEqual({ ...r, ts: 'x' }, {
    ts: 'x', level: 'info', scope: 'http', msg: 'request', method: 'GET', path: '/api/health', status: 200, duration_ms: 4,
  });
});

test('text format: default scope omitted, named scope in parentheses, request form', () => {
  const { logger, lines } = capture({ format: 'text', level: 'debug', requests: true });
  logger.debug('a');
  logger.error('b', 'db');
  logger.info('c', 'default');
  logger.request('POST', '/api/x', 201, 12);
  assert.match(lines[0], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z debug: a$/);
  assert.match(lines[1], /^\S+Z err\(db\): b$/);
  assert.match(lines[2], /^\S+Z info: c$/);
  assert.match(lines[3], /^\S+Z info\(http\): POST \/api\/x 201 12ms$/);
});

test('levels filter below the threshold; error is accepted as err', () => {
  const { logger, lines } = capture({ format: 'text', level: 'warn', requests: true });
  logger.debug('d');
  logger.info('i');
  logger.warn('w');
  logger.error('e');
  assert.deepEqual(lines.map((l) => l.split(' ')[1]), ['warn:', 'err:']);
  assert.equal(parseLogLevel('error'), 'err');
  assert.equal(parseLogLevel(' ERR '), 'err');
  assert.equal(parseLogLevel('verbose'), undefined);
});

test('request records are silenced by level warn and by requests=false', () => {
  for (const opts of [{ level: 'warn' as const, requests: true }, { level: 'err' as const, requests: true }, { level: 'info' as const, requests: false }]) {
    const { logger, lines } = capture({ format: 'json', ...opts });
    assert.equal(logger.requestsEnabled, false);
    logger.request('GET', '/', 200, 1);
    assert.equal(lines.length, 0);
  }
  const { logger } = capture({ format: 'json', level: 'debug', requests: true });
  assert.equal(logger.requestsEnabled, true);
});

test('a crafted path cannot forge a second record, in either encoding', () => {
  const path = '/api/a\n2020-01-01T00:00:00Z err: forged "x" \\ \u2028';
  const text = capture({ format: 'text', level: 'info', requests: true });
  text.logger.request('GET', path, 404, 0);
  assert.equal(text.lines.length, 1);
  assert.ok(!/[\n\r\u2028]/.test(text.lines[0]));
  assert.ok(text.lines[0].includes('/api/a\\n2020'));
  assert.ok(text.lines[0].includes('\\"x\\" \\\\ \\u2028'));
  // The text form's path is the body of a JSON string: unescaping it yields the original.
  const m = /info\(http\): GET (.*) 404 0ms$/.exec(text.lines[0]);
  assert.ok(m);
  assert.equal(JSON.parse(`"${m[1]}"`), path);

  const json = capture({ format: 'json', level: 'info', requests: true });
  json.logger.request('GET', path, 404, 0);
  assert.ok(!json.lines[0].includes('\n'));
  assert.equal(JSON.parse(json.lines[0]).path, path);
});

test('text messages escape control characters and newlines', () => {
  const { logger, lines } = capture({ format: 'text', level: 'info', requests: true });
  logger.info('line1\nline2\r\ttab\u0000');
  assert.equal(lines.length, 1);
  assert.ok(lines[0].endsWith('info: line1\\nline2\\r\\ttab\\u0000'));
});

test('over-long messages are clamped so each line stays one parseable object', () => {
  const { logger, lines } = capture({ format: 'json', level: 'info', requests: true });
  const long = 'x'.repeat(100_000);
  logger.info(long);
  const rec = JSON.parse(lines[0]);
  assert.ok(rec.msg.length < MAX_MESSAGE_LENGTH + 64);
  assert.ok(rec.msg.startsWith('x'.repeat(MAX_MESSAGE_LENGTH)));
  assert.match(rec.msg, /truncated 91808 chars/);
  // A surrogate pair straddling the limit is not split.
  const emoji = 'a'.repeat(MAX_MESSAGE_LENGTH - 1) + '😀' + 'b'.repeat(10);
  logger.info(emoji);
  const msg2: string = JSON.parse(lines[1]).msg;
  assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])/.test(msg2));
});

test('timestamp is second precision UTC and cached per second', () => {
  assert.equal(timestamp(Date.UTC(2024, 0, 2, 3, 4, 5, 678)), '2024-01-02T03:04:05Z');
  assert.equal(timestamp(Date.UTC(2024, 0, 2, 3, 4, 5, 999)), '2024-01-02T03:04:05Z');
  assert.equal(timestamp(Date.UTC(2024, 0, 2, 3, 4, 6, 0)), '2024-01-02T03:04:06Z');
  assert.match(timestamp(), TS);
});

test('bootstrapLogger ignores invalid values and reads only format and level', () => {
  const a = bootstrapLogger({ SERVICE_LOG_FORMAT: 'xml', SERVICE_LOG_LEVEL: 'loud' });
  assert.equal(a.format, 'text');
  assert.equal(a.level, 'info');
  const lines: string[] = [];
  const b = bootstrapLogger({ SERVICE_LOG_FORMAT: 'json', SERVICE_LOG_LEVEL: 'error', SERVICE_LOG_REQUESTS: 'garbage' }, (l) => lines.push(l));
  assert.equal(b.format, 'json');
  assert.equal(b.level, 'err');
  b.warn('dropped');
  b.error('kept');
  assert.equal(lines.length, 1);
  assert.equal(JSON.parse(lines[0]).msg, 'kept');
});
