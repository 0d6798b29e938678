/**
 * Cursor paging end to end on the default server (stateless tokens; spec 1-core-api.md "List
 * query parameters", 0-conventions.md "Points the spec leaves open"): mode selection, the
 * envelope, walks forward and backward over sorts with NULLs and mixed directions (checked
 * against offset mode's ORDER BY as the oracle), rows inserted and deleted during a walk,
 * binding to sort/filter/search, malformed and oversized tokens, list rules and filters on every
 * page, bound cursor values, expand and projection. One server for the file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, dumpServerLog, qs, seed, signup, type User } from '../helpers/records-fixtures.js';
import { bindingHash } from '../../src/records/cursor.js';

let srv: Svc;
let alice: User;
let bob: User;
let itemsId = '';
const URL = '/api/collections/items/records';
const WORDS = ['amber', 'basalt', 'cedar', 'dune', 'ember'];

before(async () => {
  srv = await startSvc();
  await srv.createCollection({ name: 'users', type: 'auth', fields: [], listRule: '@public', viewRule: '@public', createRule: '@public' });
  alice = await signup(srv, 'users', 'alice@example.com');
  bob = await signup(srv, 'users', 'bob@example.com');
  const items = await srv.createCollection({
    name: 'items', type: 'base',
    listRule: 'owner = @request.auth.id', viewRule: 'owner = @request.auth.id',
    fields: [
      { name: 'name', type: 'text', options: { searchable: true } },
      { name: 'score', type: 'number' },
      { name: 'tag', type: 'text' },
      { name: 'flag', type: 'bool' },
      { name: 'owner', type: 'relation', options: { collectionId: (await srv.api('GET', '/api/collections/users', { token: srv.suToken })).body.id } },
    ],
  });
  itemsId = items.id;
  await srv.createCollection({ name: 'other', type: 'base', listRule: '@public', fields: [{ name: 'x', type: 'text' }] });
  for (let i = 0; i < 46; i += 2) {
    await Promise.all([i, i + 1].map((k) => seed(srv, 'items', {
      name: `${WORDS[k % 5]} item ${k}`,
      score: k % 4 === 0 ? null : k % 6,
      tag: k % 3 === 0 ? null : ['x', 'y'][k % 2],
      flag: k % 5 === 0,
      owner: k % 3 === 1 ? bob.id : alice.id,
    })));
  }
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

const get = (params: Record<string, string | number | boolean>, token: string | null = srv.suToken, path = URL) =>
  srv.api('GET', `${path}${qs(params)}`, { token });

/** Follows nextCursor from the first page; returns every page body. */
async function walk(params: Record<string, string | number | boolean>, token: string | null = srv.suToken, between?: (page: any) => Promise<void>): Promise<any[]> {
  const pages: any[] = [];
  let cursor = '';
  for (let guard = 0; guard < 500; guard++) {
    const r = await get({ ...params, cursor }, token);
    assert.equal(r.status, 200, r.text);
    pages.push(r.body);
    if (!r.body.nextCursor) return pages;
    if (between) await between(r.body);
    cursor = r.body.nextCursor;
  }
  throw new Error('walk did not end');
}

/** Offset mode with the same sort plus `id`: an ORDER BY without any keyset predicate. */
async function oracle(sort: string, extra: Record<string, string> = {}, token: string | null = srv.suToken): Promise<string[]> {
  const r = await get({ sort: sort ? `${sort},id` : 'id', perPage: 500, ...extra }, token);
  assert.equal(r.status, 200, r.text);
  return r.body.items.map((x: any) => x.id);
}

const ids = (pages: any[]) => pages.flatMap((p) => p.items.map((x: any) => x.id));

test('cursor mode: selected by cursor or limit, page 0, envelope keys in order, totals only on request', async () => {
  const a = await get({ cursor: '' });
  assert.deepEqual(Object.keys(a.body), ['page', 'perPage', 'nextCursor', 'prevCursor', 'hasNext', 'hasPrev', 'items']);
  assert.equal(a.body.page, 0);
  assert.equal(a.body.perPage, 30);
  assert.equal(a.body.items.length, 30);
  assert.equal(a.body.hasNext, true);
  assert.equal(a.body.hasPrev, false);
  assert.equal(a.body.prevCursor, null);
  assert.equal(typeof a.body.nextCursor, 'string');
  const b = await get({ limit: 7, skipTotal: false });
  assert.deepEqual(Object.keys(b.body), ['page', 'perPage', 'totalItems', 'totalPages', 'nextCursor', 'prevCursor', 'hasNext', 'hasPrev', 'items']);
  assert.deepEqual([b.body.page, b.body.perPage, b.body.totalItems, b.body.totalPages, b.body.items.length], [0, 7, 46, 7, 7]);
  assert.equal((await get({ limit: 1000 })).body.perPage, 500, 'limit clamped to 500');
  assert.equal((await get({ cursor: '', perPage: 9 })).body.perPage, 9, 'perPage is the page size too');
  assert.equal((await get({ limit: 5, page: 3 })).body.page, 0, 'page is 0 in cursor mode');
  assert.equal((await get({})).body.page, 1, 'no cursor and no limit: offset mode');
  assertError(await get({ limit: 'x' }), 400, 'bad_request');
});

test('forward walks match the ORDER BY oracle: NULLs, mixed asc/desc, ties, id tiebreaker', async () => {
  for (const sort of ['', '-score', 'score', 'score,-tag', '-tag,score', 'flag,-score,tag', '-created', 'tag,-name', '-id', '@rowid']) {
    const expected = await oracle(sort);
    for (const limit of [1, 7, 46, 50]) {
      const pages = await walk({ sort, limit });
      assert.deepEqual(ids(pages), expected, `sort=${sort} limit=${limit}`);
      assert.equal(pages[0].hasPrev, false);
      assert.equal(pages.at(-1).hasNext, false);
      assert.equal(pages.at(-1).nextCursor, null);
      for (const p of pages.slice(1)) assert.equal(p.hasPrev, true);
    }
  }
});

test('walking backward with prevCursor retraces the pages', async () => {
  for (const sort of ['-score,tag', 'tag', '']) {
    const pages = await walk({ sort, limit: 6 });
    let cursor = pages.at(-1).prevCursor;
    const back: any[] = [pages.at(-1)];
    while (cursor) {
      const r = await get({ sort, limit: 6, cursor });
      assert.equal(r.status, 200, r.text);
      back.unshift(r.body);
      cursor = r.body.prevCursor;
    }
    assert.deepEqual(back.map((p) => p.items.map((x: any) => x.id)), pages.map((p) => p.items.map((x: any) => x.id)), `sort=${sort}`);
    assert.equal(back[0].hasPrev, false);
    for (const p of back.slice(0, -1)) assert.equal(p.hasNext, true);
    // and forward again from a page reached backward
    const again = await get({ sort, limit: 6, cursor: back[1].nextCursor });
    assert.deepEqual(again.body.items.map((x: any) => x.id), pages[2].items.map((x: any) => x.id));
  }
});

test('rows inserted and deleted during a walk are never repeated or skipped (rows present throughout)', async () => {
  const sort = '-score,tag';
  const before = new Set(await oracle(sort));
  const deleted = new Set<string>();
  let k = 0;
  const pages = await walk({ sort, limit: 5 }, srv.suToken, async (page) => {
    await Promise.all([0, 1].map(() => seed(srv, 'items', { name: `churn ${k}`, score: k % 3 === 0 ? null : k % 7, tag: k++ % 2 ? 'x' : null, owner: alice.id })));
    // delete the boundary row itself, and one row not seen yet
    const victims = [page.items.at(-1).id, [...before].find((id) => !deleted.has(id) && !page.items.some((x: any) => x.id === id) && id !== page.items.at(-1).id)];
    for (const v of victims.filter(Boolean)) {
      const r = await srv.api('DELETE', `${URL}/${v}`, { token: srv.suToken });
      assert.equal(r.status, 204, r.text);
      deleted.add(v);
    }
  });
  const seen = ids(pages);
  assert.equal(new Set(seen).size, seen.length, 'no row twice');
  for (const id of before) if (!deleted.has(id)) assert.ok(seen.includes(id), `row ${id} present throughout was skipped`);
});

test('a cursor is bound to its collection, sort, filter and search; malformed or oversized tokens are 400', async () => {
  const first = await get({ sort: '-score', filter: 'score > 0', search: 'item', limit: 3 });
  const cursor = first.body.nextCursor;
  assert.equal((await get({ sort: '-score', filter: 'score > 0', search: 'item', limit: 3, cursor })).status, 200);
  assert.equal((await get({ sort: '-score', filter: 'score > 0', search: 'item', limit: 10, cursor })).status, 200, 'page size may change');
  for (const [label, params] of [
    ['another sort', { sort: 'score', filter: 'score > 0', search: 'item' }],
    ['another direction', { sort: '-score,-id', filter: 'score > 0', search: 'item' }],
    ['another filter', { sort: '-score', filter: 'score > 1', search: 'item' }],
    ['no filter', { sort: '-score', search: 'item' }],
    ['another search', { sort: '-score', filter: 'score > 0', search: 'amber' }],
    ['no search', { sort: '-score', filter: 'score > 0' }],
  ] as const) {
    const r = await get({ ...params, cursor });
    assertError(r, 400, 'bad_request');
    assert.match(r.body.message, /cursor/i, label);
  }
  assertError(await get({ cursor }, null, '/api/collections/other/records'), 400, 'bad_request');
  for (const bad of ['not a cursor', 'eyJ9', Buffer.from('{"h":"x","d":"n","k":[1]}').toString('base64url'), 'A'.repeat(2049)]) {
    assertError(await get({ cursor: bad }), 400, 'bad_request');
  }
  assertError(await get({ cursor: '', sort: '@random' }), 400, 'bad_request');
  assertError(await get({ cursor: '', sort: 'nope' }), 400, 'bad_request');
});

test('list rules and filters apply on every page; cursor values are bound parameters', async () => {
  const mine = await oracle('-score', {}, alice.token);
  assert.ok(mine.length > 0);
  const pages = await walk({ sort: '-score', limit: 4 }, alice.token);
  assert.deepEqual(ids(pages), mine);
  for (const p of pages) for (const it of p.items) assert.equal(it.owner, alice.id);
  const filtered = await walk({ filter: 'score >= 2', limit: 3 }, bob.token);
  for (const it of filtered.flatMap((p) => p.items)) assert.ok(it.owner === bob.id && it.score >= 2);
  assert.deepEqual(ids(filtered), await oracle('', { filter: 'score >= 2' }, bob.token));
  // a hand-made stateless cursor: the value is bound, never spliced; the rule still applies
  const h = bindingHash([itemsId, 'r."id"', '', '']);
  const forged = Buffer.from(JSON.stringify({ h, d: 'n', k: ["' OR 1=1 --"] })).toString('base64url');
  const r = await get({ cursor: forged, limit: 500 }, bob.token);
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.items.length > 0);
  for (const it of r.body.items) assert.equal(it.owner, bob.id);
  const wrongArity = Buffer.from(JSON.stringify({ h, d: 'n', k: [1, 2] })).toString('base64url');
  assertError(await get({ cursor: wrongArity }, bob.token), 400, 'bad_request');
});

test('anonymous callers list nothing under an owner rule, in cursor mode too', async () => {
  const r = await get({ cursor: '' }, null);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.items, []);
  assert.equal(r.body.nextCursor, null);
});

test('expand, fields and search work in cursor mode', async () => {
  const r = await get({ limit: 2, expand: 'owner', fields: 'id,owner,expand.owner.email' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body.items[0]).sort(), ['expand', 'id', 'owner']);
  assert.ok(r.body.items[0].expand.owner.email.endsWith('@example.com'));
  assert.ok('nextCursor' in r.body, 'the envelope is never projected');
  const offsetIds = (await get({ search: 'amber', perPage: 500, sort: 'id' })).body.items.map((x: any) => x.id);
  assert.ok(offsetIds.length > 0);
  assert.deepEqual(ids(await walk({ search: 'amber', limit: 2 })), offsetIds);
});

test('sort values too long for a token: the cursor carries the record id, looked up within the scope', async () => {
  const longs = await srv.createCollection({ name: 'longs', type: 'base', listRule: 'visible = true', fields: [{ name: 'body', type: 'text' }, { name: 'visible', type: 'bool' }] });
  const made: any[] = [];
  for (let i = 0; i < 7; i++) made.push(await seed(srv, 'longs', { body: `${'w'.repeat(3000)}${i}`, visible: i !== 3 }));
  const path = '/api/collections/longs/records';
  const pages: any[] = [];
  let cursor = '';
  for (;;) {
    const r = await get({ sort: '-body', limit: 2, cursor }, null, path);
    assert.equal(r.status, 200, r.text);
    pages.push(r.body);
    if (!r.body.nextCursor) break;
    assert.ok(r.body.nextCursor.length <= 2048);
    cursor = r.body.nextCursor;
  }
  assert.deepEqual(ids(pages), [6, 5, 4, 2, 1, 0].map((i) => made[i].id));
  const h = bindingHash([longs.id, '-r."body",r."id"', '', '']);
  const at = (id: string) => Buffer.from(JSON.stringify({ h, d: 'n', r: id })).toString('base64url');
  const ok = await get({ sort: '-body', limit: 10, cursor: at(made[4].id) }, null, path);
  assert.deepEqual(ok.body.items.map((x: any) => x.id), [2, 1, 0].map((i) => made[i].id));
  assertError(await get({ sort: '-body', cursor: at(made[3].id) }, null, path), 400, 'bad_request');
  assertError(await get({ sort: '-body', cursor: at('nosuchrecord000') }, null, path), 400, 'bad_request');
});
