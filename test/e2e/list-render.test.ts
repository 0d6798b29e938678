/**
 * List pages are rendered to JSON inside SQLite (RecordCodec.jsonSql); views and projected lists
 * go through the JavaScript codec. Both must give the same records for every field type and for
 * awkward values (unicode, quotes, control characters, integral and fractional numbers, every JSON
 * shape). Hidden fields appear in neither.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';

let srv: Svc;
before(async () => {
  srv = await startSvc();
  const target = await srv.createCollection({ name: 'targets', fields: [{ name: 'name', type: 'text' }], viewRule: '@public', listRule: '@public' });
  await srv.createCollection({
    name: 'kinds',
    listRule: '@public',
    viewRule: '@public',
    fields: [
      { name: 'text', type: 'text' },
      { name: 'editor', type: 'editor' },
      { name: 'email', type: 'email' },
      { name: 'url', type: 'url' },
      { name: 'date', type: 'date' },
      { name: 'stamp', type: 'autodate', options: { onCreate: true, onUpdate: true } },
      { name: 'flag', type: 'bool' },
      { name: 'num', type: 'number' },
      { name: 'one', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 1 } },
      { name: 'many', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 3 } },
      { name: 'rel', type: 'relation', options: { collectionId: target.id, maxSelect: 1 } },
      { name: 'rels', type: 'relation', options: { collectionId: target.id, maxSelect: 5 } },
      { name: 'data', type: 'json' },
      { name: 'secret', type: 'text', options: { hidden: true } },
    ],
  });
  const t1 = (await srv.api('POST', '/api/collections/targets/records', { token: srv.suToken, body: { name: 't1' } })).body.id;
  const t2 = (await srv.api('POST', '/api/collections/targets/records', { token: srv.suToken, body: { name: 't2' } })).body.id;
  const rows: Record<string, unknown>[] = [
    {},
    { text: '', editor: '', num: 0, flag: false, many: [], rels: [], data: null },
    { text: 'plain', editor: '<p>hi</p>', email: 'a@b.co', url: 'https://x.test/p?q=1', date: '2024-02-29T12:34:56Z', flag: true, num: 42, one: 'b', many: ['a', 'c'], rel: t1, rels: [t1, t2], data: { k: [1, 2, { z: null }] }, secret: 's3cret' },
    { text: 'quote " backslash \\ tab \t newline \n ctrl \u0001 del \u007f', num: -0.5, data: [1, 'two', true, null] },
    { text: 'unicode: żółw 😀 中文 \u2028 \u2029', num: 1e21, data: 3.25 },
    { text: '/slashes/ <script>', num: -9007199254740991, data: 'a string' },
    { num: 123456.789, data: 7, one: 'a', many: ['b'] },
    { num: 1.0000000000000002, data: {} },
    // doubles needing 16 and 17 digits, the extremes, an integral double beyond 2^53
    { num: 0.30000000000000004 },
    { num: 1 / 3 },
    { num: 5e-324 },
    { num: 1.7976931348623157e308 },
    { num: 9007199254740994 },
  ];
  for (const body of rows) {
    const r = await srv.api('POST', '/api/collections/kinds/records', { token: srv.suToken, body });
    assert.equal(r.status, 201, r.text);
  }
});
after(async () => { await srv?.stop(); });

test('SQL-rendered list items equal the JavaScript codec, field by field', async () => {
  const fast = await srv.api('GET', '/api/collections/kinds/records?perPage=50&sort=created');
  const slow = await srv.api('GET', '/api/collections/kinds/records?perPage=50&sort=created&fields=*');
  assert.equal(fast.status, 200, fast.text);
  assert.equal(fast.body.items.length, 13);
  assert.deepEqual(fast.body.items, slow.body.items);
  assert.deepEqual(Object.keys(fast.body), ['page', 'perPage', 'totalItems', 'totalPages', 'items']);
  for (const item of fast.body.items) {
    const view = await srv.api('GET', `/api/collections/kinds/records/${item.id}`);
    assert.deepEqual(item, view.body);
    assert.deepEqual(Object.keys(item), Object.keys(view.body), 'same key order');
    assert.ok(!('secret' in item), 'hidden fields are never serialized');
  }
  const skip = await srv.api('GET', '/api/collections/kinds/records?perPage=3&page=2&skipTotal=true&sort=created');
  assert.equal(skip.body.totalItems, -1);
  assert.deepEqual(skip.body.items, fast.body.items.slice(3, 6));
});

test('pages assembled from cached records: same bytes as rendered, in page order, and a write shows at once', async () => {
  const all = (await srv.api('GET', '/api/collections/kinds/records?perPage=50&fields=*')).body.items as Array<{ id: string }>;
  const asc = all.map((r) => r.id).sort();
  // Distinct query strings (`n`) keep the page cache out: every request runs the page's id query,
  // the first renders the records it lacks, the second takes every record from memory.
  for (const sort of ['id', '-id', '']) {
    const got: string[] = [];
    for (let page = 1; page <= Math.ceil(all.length / 3); page++) {
      const url = `/api/collections/kinds/records?perPage=3&page=${page}&skipTotal=1${sort ? `&sort=${sort}` : ''}`;
      const first = await srv.api('GET', `${url}&n=a${sort}`);
      const second = await srv.api('GET', `${url}&n=b${sort}`);
      assert.equal(first.status, 200, first.text);
      assert.equal(second.text, first.text, 'a page from cached records is byte for byte the rendered one');
      assert.deepEqual(Object.keys(first.body), ['page', 'perPage', 'totalItems', 'totalPages', 'items']);
      got.push(...first.body.items.map((r: { id: string }) => r.id));
    }
    if (sort) assert.deepEqual(got, sort === 'id' ? asc : [...asc].reverse());
    else assert.deepEqual([...got].sort(), asc, 'an unsorted walk covers every record once');
  }
  const target = asc[1];
  const patched = await srv.api('PATCH', `/api/collections/kinds/records/${target}`, { token: srv.suToken, body: { text: 'changed żółw 😀' } });
  assert.equal(patched.status, 200, patched.text);
  const after1 = await srv.api('GET', '/api/collections/kinds/records?perPage=3&sort=id&n=c');
  assert.equal(after1.body.items[1].id, target);
  assert.equal(after1.body.items[1].text, 'changed żółw 😀');
  assert.deepEqual(after1.body.items[1], (await srv.api('GET', `/api/collections/kinds/records/${target}`)).body);
});
