/**
 * Malformed input gets a clear 400 in the envelope, never a 500: every malformed list
 * parameter, and a value of the wrong JSON type for every field type (`validation_type`, while
 * `validation_number` and the others stay for values of the right type that fail their check).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError } from '../helpers/records-fixtures.js';

let srv: Svc;

before(async () => {
  srv = await startSvc();
  const users = await srv.createCollection({ name: 'people', type: 'auth', fields: [], createRule: '@public', listRule: '@public', viewRule: '@public' });
  await srv.createCollection({
    name: 'things', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public',
    fields: [
      { name: 'text', type: 'text' }, { name: 'editor', type: 'editor' }, { name: 'email', type: 'email' }, { name: 'url', type: 'url' },
      { name: 'num', type: 'number' }, { name: 'fixed', type: 'number', options: { mode: 'fixed', scale: 2 } }, { name: 'flag', type: 'bool' },
      { name: 'date', type: 'date' }, { name: 'one', type: 'select', options: { values: ['a', 'b'] } },
      { name: 'many', type: 'select', options: { values: ['a', 'b'], maxSelect: 2 } },
      { name: 'ref', type: 'relation', options: { collectionId: users.id } },
      { name: 'refs', type: 'relation', options: { collectionId: users.id, maxSelect: 3 } },
      { name: 'doc', type: 'file' },
    ],
  });
  await srv.api('POST', '/api/collections/things/records', { body: { text: 'one' } });
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('every malformed list parameter answers 400 with the envelope', async () => {
  const bad = [
    'sort=,', 'sort=,,', 'sort=%20,%20', 'sort=-', 'sort=nope', 'sort=text;drop', 'cursor=&sort=,', 'limit=5&sort=,,',
    'page=abc', 'page=1.5', 'perPage=-1', 'perPage=1e3', 'limit=abc', 'limit=-2', 'skipTotal=maybe', 'cursor=abc', 'cursor=%00',
    'filter=(', "filter=text%20%3D%20'", 'filter=nope%20%3D%201', 'vector=x', 'search=hello',
  ];
  for (const q of bad) {
    const r = await srv.api('GET', `/api/collections/things/records?${q}`);
    assertError(r, 400, 'bad_request');
    assert.ok(r.body.message.length > 0, q);
  }
  // blank values keep their documented meaning
  for (const q of ['sort=', 'sort=text,', 'expand=', 'fields=', 'filter=', 'page=', 'cursor=']) {
    const r = await srv.api('GET', `/api/collections/things/records?${q}`);
    assert.equal(r.status, 200, `${q}: ${r.text}`);
  }
  assert.equal((await srv.api('GET', '/api/health')).status, 200);
});

test('a value of the wrong JSON type is validation_type for every field type', async () => {
  const wrong: Record<string, unknown[]> = {
    text: [{}, [], 5, true], editor: [{}, [], 5], email: [{}, [], 5], url: [{}, [], 5], num: [{}, [], 'x', '5', true],
    fixed: [{}, [], true], flag: [{}, [], 'yes', 1], date: [{}, [], true], one: [{}, 5, [5]], many: [{}, 5, [{}]],
    ref: [{}, 5, [{}]], refs: [{}, 5, [{}]], doc: [{}, 5, [{}]],
  };
  // (an array is a valid JSON type for a single select or relation: `[]` is empty, as the
  // PocketBase SDK sends it)
  const misses: string[] = [];
  for (const [field, values] of Object.entries(wrong)) {
    for (const v of values) {
      const r = await srv.api('POST', '/api/collections/things/records', { body: { [field]: v } });
      if (r.status !== 400 || r.body?.code !== 'validation_failed' || r.body.data?.[field]?.code !== 'validation_type') {
        misses.push(`${field} = ${JSON.stringify(v)} → ${r.status} ${r.status === 400 ? JSON.stringify(r.body.data) : ''}`);
      }
    }
  }
  assert.deepEqual(misses, []);
  // the right type with a failing check keeps its own code
  const own: Array<[string, unknown, string]> = [
    ['num', Number.MAX_VALUE * 0 + 1, ''], ['fixed', '1e5', 'validation_number'], ['fixed', '1.234', 'validation_too_precise'],
    ['email', 'not-an-email', 'validation_invalid_email'], ['one', 'zzz', 'validation_select'], ['date', 'yesterday', 'validation_date'],
  ];
  for (const [field, v, code] of own) {
    const r = await srv.api('POST', '/api/collections/things/records', { body: { [field]: v } });
    if (!code) assert.equal(r.status, 201, r.text);
    else assert.equal(r.body.data?.[field]?.code, code, `${field} = ${JSON.stringify(v)}: ${r.text}`);
  }
});

test('a multipart body that ends inside a file part is a 400, and the server lives on (it crashed the process)', async () => {
  const body = '--b0\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n--b0\r\nContent-Disposition: form-data; name="doc"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\npartial file';
  for (const [method, path] of [['POST', '/api/collections/things/records'], ['PATCH', '/api/collections/things/records/aaaaaaaaaaaaaaa']]) {
    const r = await fetch(srv.url + path, { method, headers: { 'content-type': 'multipart/form-data; boundary=b0' }, body });
    const parsed = { status: r.status, headers: r.headers, body: JSON.parse(await r.text()), text: '' };
    assertError(parsed, 400, 'bad_request');
  }
  assert.equal((await srv.api('GET', '/api/health')).status, 200);
});

test('a multipart update of an id no record can have is a 404 before any file is written (it was a 500; fuzz seed 265793528)', async () => {
  const B = 'x'.repeat(80);
  const body = `--${B}\r\nContent-Disposition: form-data; name="doc"; filename="../../etc/passwd"\r\n\r\n{bad json\r\n--${B}--\r\n`;
  for (const id of ['8t%609g2', 'short', 'UPPERCASEID0000']) {
    const r = await fetch(`${srv.url}/api/collections/things/records/${id}`, { method: 'PATCH', headers: { 'content-type': `multipart/form-data; boundary=${B}` }, body });
    assertError({ status: r.status, headers: r.headers, body: JSON.parse(await r.text()), text: '' }, 404, 'not_found');
  }
});

test('a multipart part without a name is a 400 (it was a 500)', async () => {
  const B = 'x'.repeat(80);
  const body = `--${B}\r\nContent-Disposition: form-data; name=""; filename="a.txt"\r\nContent-Transfer-Encoding: base64\r\n\r\nabc\r\n--${B}\r\nContent-Disposition: form-data; name=""\r\n\r\nv\r\n--${B}--\r\n`;
  const r = await fetch(`${srv.url}/api/collections/things/records`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${B}` }, body });
  assertError({ status: r.status, headers: r.headers, body: JSON.parse(await r.text()), text: '' }, 400, 'bad_request');
});
