/**
 * The request logs' store, buffer and query translation (src/logs/; docs/operations.md,
 * "Request logs"), over a real `logs.db` in a temporary directory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../../src/log/logger.js';
import { RequestLogs, LOG_LEVEL, logsOptions, teeLogger } from '../../../src/logs/request-logs.js';
import { logFilterSql, logSortSql } from '../../../src/logs/log-query.js';
import type { Req } from '../../../src/http/types.js';
import type { RequestEnd } from '../../../src/http/pipeline.js';

async function open(env: Record<string, string> = {}): Promise<{ logs: RequestLogs; dir: string; lines: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-logs-'));
  const lines: string[] = [];
  const logger = createLogger({ format: 'text', level: 'info', requests: false, write: (l) => lines.push(l) });
  const logs = (await RequestLogs.open(dir, { ...logsOptions({ SERVICE_LOGS_MIN_LEVEL: 'info', ...env }), flushMs: 60_000, pruneMs: 60_000 }, logger, () => 'guest'))!;
  return { logs, dir, lines };
}

function end(path: string, status: number, query = '', method = 'GET'): RequestEnd {
  const req = { method, path, query, params: [], body: null, remoteAddress: '10.0.0.1', headers: { userAgent: 'ua/1' } } as unknown as Req;
  return { req, route: path, status, durationMs: 1.23456 };
}

test('requests and server warnings are written when read, with PocketBase levels', async () => {
  const { logs, dir, lines } = await open();
  try {
    logs.observe(end('/api/a', 200, 'x=1&token=secret&filetoken=abc'));
    logs.observe(end('/api/b', 404));
    logs.observe(end('/api/c', 500, '', 'POST'));
    const tee = teeLogger(createLogger({ format: 'text', level: 'info', requests: false, write: (l) => lines.push(l) }), logs);
    tee.warn('disk nearly full', 'files');
    tee.error('boom');
    tee.info('not kept');
    assert.equal(lines.length, 3, 'the tee still writes every line');
    const page = await logs.list({ page: 1, perPage: 10, filter: null, sort: 'created', skipTotal: false });
    const items = JSON.parse(page.items);
    assert.equal(page.totalItems, 5);
    assert.deepEqual(items.map((e: any) => e.level), [0, 4, 8, 4, 8]);
    assert.equal(items[0].data.url, '/api/a?x=1&token=***&filetoken=***', 'token values are hidden');
    assert.deepEqual(items[0].data, { type: 'request', method: 'GET', url: items[0].data.url, status: 200, execTime: 1.235, auth: 'guest', ip: '10.0.0.1', userAgent: 'ua/1' });
    assert.deepEqual(items[3], { ...items[3], level: LOG_LEVEL.warn, message: 'disk nearly full', data: { type: 'server', scope: 'files' } });
    assert.equal(JSON.parse((await logs.get(items[1].id))!).message, 'GET /api/b');
    assert.equal(await logs.get('nope'), null);
    assert.equal(await logs.get(items[1].id.slice(0, 9) + 'zzzzzz'), null, 'the random part must match too');
    assert.deepEqual(await logs.stats(null), [{ total: 5, date: items[0].created.slice(0, 13) + ':00:00.000Z' }]);
  } finally {
    await logs.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a minimum level keeps only what reaches it; control characters cannot split an entry', async () => {
  const { logs, dir } = await open({ SERVICE_LOGS_MIN_LEVEL: 'warn' });
  try {
    logs.observe(end('/api/ok', 200));
    logs.observe(end('/api/a\u0001b\u0002c', 404, 'q=\u0002'));
    logs.note(LOG_LEVEL.warn, 'two\nlines\u0002', 'x');
    const items = JSON.parse((await logs.list({ page: 1, perPage: 10, filter: null, sort: 'created', skipTotal: false })).items);
    assert.deepEqual(items.map((e: any) => e.message), ['GET /api/a b c?q= ', 'two lines ']);
  } finally {
    await logs.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a batch of 250 entries is written whole, in order, with ids that find them', async () => {
  const { logs, dir } = await open();
  try {
    for (let i = 0; i < 250; i++) logs.observe(end(`/api/n/${i}`, 200));
    const page = await logs.list({ page: 1, perPage: 500, filter: null, sort: 'created', skipTotal: false });
    const items = JSON.parse(page.items);
    assert.equal(page.totalItems, 250);
    assert.deepEqual(items.map((e: any) => e.data.url), Array.from({ length: 250 }, (_, i) => `/api/n/${i}`));
    assert.equal(new Set(items.map((e: any) => e.id)).size, 250);
    assert.equal(JSON.parse((await logs.get(items[249].id))!).data.url, '/api/n/249');
  } finally {
    await logs.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the thread starts with the first entry on a new file, at the start on a file holding entries, retention first', async () => {
  const { logs, dir, lines } = await open({ SERVICE_LOGS_MAX_ROWS: '2' });
  try {
    assert.equal(existsSync(join(dir, 'logs.db')), true, 'the file is made at once, mode 0600');
    assert.equal(existsSync(join(dir, 'logs.db-wal')), false, 'no thread yet: nothing opened it');
    for (let i = 0; i < 4; i++) logs.observe(end(`/api/n/${i}`, 404));
    logs.flush();
    assert.equal(JSON.parse((await logs.list({ page: 1, perPage: 10, filter: null, sort: 'created', skipTotal: false })).items).length, 4, 'the first read sees the first batch');
  } finally {
    await logs.close();
  }
  // reopened over four entries with a cap of two: the retention delete runs before any read
  const again = (await RequestLogs.open(dir, { ...logsOptions({ SERVICE_LOGS_MIN_LEVEL: 'info', SERVICE_LOGS_MAX_ROWS: '2' }), flushMs: 60_000, pruneMs: 60_000 }, createLogger({ format: 'text', level: 'info', requests: false, write: (l) => lines.push(l) }), () => 'guest'))!;
  try {
    const page = await again.list({ page: 1, perPage: 10, filter: null, sort: 'created', skipTotal: false });
    assert.deepEqual(JSON.parse(page.items).map((e: any) => e.data.url), ['/api/n/2', '/api/n/3']);
  } finally {
    await again.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('filters and sorts become bound SQL over the log fields; everything else is a 400', () => {
  assert.deepEqual(logFilterSql(''), { sql: '1', params: [] });
  assert.deepEqual(logFilterSql('data.status >= 400 && level = 4'), { sql: `(json_extract(data, '$.status') >= ? AND level IS ?)`, params: [400, 4] });
  assert.deepEqual(logFilterSql('data.url ~ "a_b"'), { sql: `(COALESCE(json_extract(data, '$.url'), '') LIKE ? ESCAPE '\\')`, params: ['%a\\_b%'] });
  assert.deepEqual(logFilterSql('data.referer = null'), { sql: `json_extract(data, '$.referer') IS NULL`, params: [] });
  assert.equal(logSortSql(''), 'seq DESC');
  assert.equal(logSortSql('-created,data.execTime'), `created DESC, json_extract(data, '$.execTime') ASC, seq ASC`);
  for (const bad of ['data = 1', 'x.y = 1', `data.a' = 1`, 'level:lower = 1', '@now > created', 'data.tags ?= 1']) {
    assert.throws(() => logFilterSql(bad), (e: { status: number }) => e.status === 400, bad);
  }
  assert.throws(() => logSortSql('data'), (e: { status: number }) => e.status === 400);
});

test('the settings: defaults, zero, and a bad value named', () => {
  assert.deepEqual(logsOptions({}), { maxDays: 7, maxRows: 100_000, minLevel: 4, flushMs: 500, batch: 1000, pruneMs: 60_000 });
  assert.equal(logsOptions({ SERVICE_LOGS_MIN_LEVEL: 'info' }).minLevel, 0);
  assert.equal(logsOptions({ SERVICE_LOGS_MIN_LEVEL: 'warn' }).minLevel, 4);
  assert.equal(logsOptions({ SERVICE_LOGS_MIN_LEVEL: '8' }).minLevel, 8);
  assert.throws(() => logsOptions({ SERVICE_LOGS_MIN_LEVEL: 'loud' }), /SERVICE_LOGS_MIN_LEVEL/);
  assert.equal(logsOptions({ SERVICE_LOGS_MAX_DAYS: '0' }).maxDays, 0);
  assert.throws(() => logsOptions({ SERVICE_LOGS_MAX_ROWS: '1.5' }), /SERVICE_LOGS_MAX_ROWS/);
  assert.throws(() => logsOptions({ SERVICE_LOGS_MAX_DAYS: '-1' }), /SERVICE_LOGS_MAX_DAYS/);
});
