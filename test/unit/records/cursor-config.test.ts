/**
 * Pagination configuration end to end (spec 1-core-api.md, "Pagination configuration"; env
 * SERVICE_PAGINATION_OFFSET, SERVICE_PAGINATION_CURSOR, SERVICE_CURSOR_TOKEN, SERVICE_CURSOR_TTL):
 * signed tokens (forgery 400), stateful tokens (unknown or expired 410), offset paging off, cursor
 * paging off, and both off (serve exits 1). The servers run one after another.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, startSvc, type Svc } from '../../helpers/server.js';
import { assertError, qs, seed } from '../../helpers/records-fixtures.js';
import { ConfigError, loadPagination } from '../../../src/config/config.js';

const URL = '/api/collections/notes/records';

async function withServer(env: Record<string, string>, fn: (srv: Svc) => Promise<void>): Promise<void> {
  const srv = await startSvc({ env });
  try {
    await srv.createCollection({ name: 'notes', type: 'base', listRule: '@public', fields: [{ name: 'n', type: 'number' }] });
    for (let i = 0; i < 12; i += 4) await Promise.all([0, 1, 2, 3].map((k) => seed(srv, 'notes', { n: i + k })));
    await fn(srv);
  } finally {
    await srv.stop();
  }
}

const get = (srv: Svc, params: Record<string, string | number | boolean>) => srv.api('GET', `${URL}${qs(params)}`);

/** Every n value of a full forward walk, and the pages' bodies. */
async function walk(srv: Svc, params: Record<string, string | number>): Promise<any[]> {
  const pages: any[] = [];
  let cursor = '';
  for (let i = 0; i < 50; i++) {
    const r = await get(srv, { ...params, cursor });
    assert.equal(r.status, 200, r.text);
    pages.push(r.body);
    if (!r.body.nextCursor) return pages;
    cursor = r.body.nextCursor;
  }
  throw new Error('walk did not end');
}
const values = (pages: any[]) => pages.flatMap((p) => p.items.map((x: any) => x.n));

test('signed tokens: walks work; a forged, re-tagged or unsigned token is 400', async () => {
  await withServer({ SERVICE_CURSOR_TOKEN: 'signed' }, async (srv) => {
    const pages = await walk(srv, { sort: '-n', limit: 5 });
    assert.deepEqual(values(pages), [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const token: string = pages[0].nextCursor;
    const [body, tag] = token.split('.');
    assert.ok(body && tag, 'payload.tag');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    payload.k[0] = 100; // skip ahead by editing the boundary
    const forged = `${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${tag}`;
    for (const bad of [forged, body, `${body}.${'A'.repeat(43)}`, `${body}.`]) {
      const r = await get(srv, { sort: '-n', limit: 5, cursor: bad });
      assertError(r, 400, 'bad_request');
    }
    assert.equal((await get(srv, { sort: '-n', limit: 5, cursor: pages[1].prevCursor })).status, 200);
    assertError(await get(srv, { sort: 'n', limit: 5, cursor: token }), 400, 'bad_request');
  });
});

test('stateful tokens: random ids; unknown or expired ids are 410, malformed 400', async () => {
  await withServer({ SERVICE_CURSOR_TOKEN: 'stateful', SERVICE_CURSOR_TTL: '2' }, async (srv) => {
    const pages = await walk(srv, { sort: 'n', limit: 5 });
    assert.deepEqual(values(pages), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const token: string = pages[0].nextCursor;
    assert.match(token, /^[A-Za-z0-9_-]{22}n$/);
    const back = await get(srv, { sort: 'n', limit: 5, cursor: pages[2].prevCursor });
    assert.deepEqual(back.body.items.map((x: any) => x.n), [5, 6, 7, 8, 9]);
    assertError(await get(srv, { sort: '-n', limit: 5, cursor: token }), 400, 'bad_request');
    assertError(await get(srv, { sort: 'n', limit: 5, cursor: `${'Q'.repeat(22)}n` }), 410, 'gone');
    assertError(await get(srv, { sort: 'n', limit: 5, cursor: 'not-a-state-id' }), 400, 'bad_request');
    await new Promise((r) => setTimeout(r, 2300));
    assertError(await get(srv, { sort: 'n', limit: 5, cursor: token }), 410, 'gone');
  });
});

test('offset paging off: page and perPage are 400; lists are cursor pages', async () => {
  await withServer({ SERVICE_PAGINATION_OFFSET: 'false' }, async (srv) => {
    assertError(await get(srv, { page: 1 }), 400, 'bad_request');
    assertError(await get(srv, { perPage: 5 }), 400, 'bad_request');
    const r = await get(srv, {});
    assert.equal(r.body.page, 0);
    assert.ok('nextCursor' in r.body);
    assert.deepEqual(values(await walk(srv, { limit: 5, sort: 'n' })), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const meta = await srv.api('GET', '/api/meta');
    assert.equal(meta.body.capabilities.offsetPaging, false);
    assert.equal(meta.body.capabilities.cursorPaging, true);
  });
});

test('cursor paging off: cursor and limit are 400; offset paging works', async () => {
  await withServer({ SERVICE_PAGINATION_CURSOR: 'false' }, async (srv) => {
    assertError(await get(srv, { cursor: '' }), 400, 'bad_request');
    assertError(await get(srv, { limit: 5 }), 400, 'bad_request');
    const r = await get(srv, { perPage: 5 });
    assert.deepEqual([r.body.page, r.body.perPage, r.body.totalItems], [1, 5, 12]);
  });
});

test('both paging modes off, or a bad token kind: serve exits 1 naming the variables', () => {
  const both = runCli(['serve', '--http=127.0.0.1:0', '--data-dir=/tmp/svc-cursor-config-never'], { SERVICE_PAGINATION_OFFSET: 'false', SERVICE_PAGINATION_CURSOR: 'off' });
  assert.equal(both.status, 1, both.stderr);
  assert.match(both.stderr, /SERVICE_PAGINATION_OFFSET/);
  assert.match(both.stderr, /SERVICE_PAGINATION_CURSOR/);
  const kind = runCli(['serve', '--http=127.0.0.1:0', '--data-dir=/tmp/svc-cursor-config-never'], { SERVICE_CURSOR_TOKEN: 'opaque' });
  assert.equal(kind.status, 1, kind.stderr);
  assert.match(kind.stderr, /SERVICE_CURSOR_TOKEN/);
  const ttl = runCli(['serve', '--http=127.0.0.1:0', '--data-dir=/tmp/svc-cursor-config-never'], { SERVICE_CURSOR_TTL: '0' });
  assert.equal(ttl.status, 1, ttl.stderr);
  assert.match(ttl.stderr, /SERVICE_CURSOR_TTL/);
});

test('loadPagination: defaults, values, and errors naming the variable', () => {
  assert.deepEqual(loadPagination({}), { offset: true, cursor: true, cursorToken: 'stateless', cursorTtlS: 600, listTimeBudgetMs: 5000 });
  assert.deepEqual(
    loadPagination({ SERVICE_PAGINATION_OFFSET: 'off', SERVICE_CURSOR_TOKEN: 'Signed', SERVICE_CURSOR_TTL: '30', SERVICE_LIST_TIME_BUDGET_MS: '0' }),
    { offset: false, cursor: true, cursorToken: 'signed', cursorTtlS: 30, listTimeBudgetMs: 0 },
  );
  for (const [env, name] of [
    [{ SERVICE_PAGINATION_OFFSET: 'false', SERVICE_PAGINATION_CURSOR: 'false' }, /SERVICE_PAGINATION_OFFSET and SERVICE_PAGINATION_CURSOR/],
    [{ SERVICE_PAGINATION_CURSOR: 'maybe' }, /SERVICE_PAGINATION_CURSOR/],
    [{ SERVICE_CURSOR_TOKEN: 'jwt' }, /SERVICE_CURSOR_TOKEN/],
    [{ SERVICE_CURSOR_TTL: '-5' }, /SERVICE_CURSOR_TTL/],
    [{ SERVICE_LIST_TIME_BUDGET_MS: '1.5' }, /SERVICE_LIST_TIME_BUDGET_MS/],
  ] as const) {
    assert.throws(() => loadPagination(env), (err: Error) => err instanceof ConfigError && name.test(err.message));
  }
});
