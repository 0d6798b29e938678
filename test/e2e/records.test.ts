/**
 * Records API end to end (spec 1-core-api.md "Record", "Records", "Field", "Errors";
 * 0-conventions.md "Points the spec leaves open"). One server for the file.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSvc, type Svc } from '../helpers/server.js';
import {
  ABSENT, DATE_FMT, RECORD_ID, assertError, assertNoSecrets, createUsers, dumpServerLog, errorFragment, expectBody,
  runScenarios, seed, signup, validation, type Scenario, type User,
} from '../helpers/records-fixtures.js';

let srv: Svc;
let su: string;
let alice: User;
let bob: User;
let countries: any;
let fr: any;
let de: any;

const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };

before(async () => {
  srv = await startSvc();
  su = srv.suToken;
  await createUsers(srv, 'users', { updateRule: 'id = @request.auth.id' });
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
  bob = await signup(srv, 'users', 'bob@example.com', 'bob-password', { emailVisibility: true });

  countries = await srv.createCollection({ name: 'countries', type: 'base', fields: [{ name: 'name', type: 'text' }, { name: 'code', type: 'text' }], ...PUBLIC });
  await srv.createCollection({
    name: 'cities', type: 'base', ...PUBLIC,
    fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'relation', options: { collectionId: countries.id, cascadeDelete: true } }],
  });
  await srv.createCollection({
    name: 'landmarks', type: 'base', ...PUBLIC,
    fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'relation', options: { collectionId: countries.id, cascadeDelete: false } }],
  });
  await srv.createCollection({
    name: 'things', type: 'base', ...PUBLIC,
    fields: [
      { name: 'name', type: 'text', options: { min: 2, max: 10 } },
      { name: 'code', type: 'text', options: { pattern: '^[A-Z]{3}$' } },
      { name: 'qty', type: 'number', options: { min: 0, max: 100 } },
      { name: 'price', type: 'number', options: { mode: 'fixed', scale: 2 } },
      { name: 'flag', type: 'bool' },
      { name: 'mail', type: 'email' },
      { name: 'site', type: 'url' },
      { name: 'when', type: 'date' },
      { name: 'made', type: 'autodate', options: { onCreate: true } },
      { name: 'touched', type: 'autodate', options: { onCreate: true, onUpdate: true } },
      { name: 'color', type: 'select', options: { values: ['red', 'green', 'blue'] } },
      { name: 'colors', type: 'select', options: { values: ['red', 'green', 'blue'], maxSelect: 2 } },
      { name: 'country', type: 'relation', options: { collectionId: countries.id } },
      { name: 'visited', type: 'relation', options: { collectionId: countries.id, maxSelect: 5 } },
      { name: 'meta', type: 'json' },
      { name: 'doc', type: 'editor' },
    ],
  });
  await srv.createCollection({
    name: 'strict', type: 'base', ...PUBLIC,
    fields: [{ name: 'title', type: 'text', options: { required: true } }, { name: 'sku', type: 'text', options: { unique: true } }],
  });
  fr = await seed(srv, 'countries', { name: 'France', code: 'FR' });
  de = await seed(srv, 'countries', { name: 'Germany', code: 'DE' });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('record lifecycle: create 201, view, partial PATCH, delete 204, then 404 everywhere', async () => {
  const c = await srv.api('POST', '/api/collections/things/records', { body: { name: 'widget', qty: 5, flag: true, meta: { a: 1 } } });
  assert.equal(c.status, 201, c.text);
  expectBody(c, {
    id: RECORD_ID,
    collectionId: (await srv.api('GET', '/api/collections/things', { token: su })).body.id,
    collectionName: 'things',
    created: DATE_FMT,
    updated: DATE_FMT,
    name: 'widget', qty: 5, flag: true, meta: { a: 1 },
    code: (v: unknown) => v === null || v === '',
    colors: [], visited: [], country: null, color: null,
  });
  const id = c.body.id;

  const v = await srv.api('GET', `/api/collections/things/records/${id}`);
  assert.equal(v.status, 200, v.text);
  assert.deepEqual(v.body, c.body, 'view equals the create response');

  await sleep(5);
  const p = await srv.api('PATCH', `/api/collections/things/records/${id}`, { body: { qty: 7 } });
  assert.equal(p.status, 200, p.text);
  expectBody(p, { id, name: 'widget', qty: 7, flag: true, meta: { a: 1 }, created: c.body.created });
  assert.ok(p.body.updated > c.body.updated, `updated moves forward: ${c.body.updated} → ${p.body.updated}`);
  assert.deepEqual((await srv.api('GET', `/api/collections/things/records/${id}`)).body, p.body, 'view equals the PATCH response');

  const d = await srv.api('DELETE', `/api/collections/things/records/${id}`);
  assert.equal(d.status, 204, d.text);
  assert.equal(d.text, '');
  assertError(await srv.api('GET', `/api/collections/things/records/${id}`), 404, 'not_found');
  assertError(await srv.api('PATCH', `/api/collections/things/records/${id}`, { body: { qty: 1 } }), 404, 'not_found');
  assertError(await srv.api('DELETE', `/api/collections/things/records/${id}`), 404, 'not_found');
  assertError(await srv.api('GET', `/api/collections/things/records/${id}`, { token: su }), 404, 'not_found');
});

test('create reply honours ?fields and ?expand; a create rule on request data alone is decided per caller', async () => {
  const f = await srv.api('POST', '/api/collections/cities/records?fields=id,name', { body: { name: 'Lyon', country: fr.id } });
  assert.equal(f.status, 201, f.text);
  assert.deepEqual(Object.keys(f.body).sort(), ['id', 'name']);
  const stored = await srv.api('GET', `/api/collections/cities/records/${f.body.id}`);
  assert.equal(stored.body.country, fr.id, 'the projection shapes the reply, not what is stored');

  const e = await srv.api('POST', '/api/collections/cities/records?expand=country', { body: { name: 'Bonn', country: de.id } });
  assert.equal(e.status, 201, e.text);
  assert.equal(e.body.expand?.country?.name, 'Germany');

  await srv.createCollection({ name: 'notes_gated', type: 'base', fields: [{ name: 'text', type: 'text' }], createRule: "@request.auth.id != ''", viewRule: '@public' });
  assertError(await srv.api('POST', '/api/collections/notes_gated/records', { body: { text: 'anon' } }), 403, 'forbidden');
  const ok = await srv.api('POST', '/api/collections/notes_gated/records', { token: alice.token, body: { text: 'signed in' } });
  assert.equal(ok.status, 201, ok.text);
  // the verdict is cached per caller: an anonymous create after a signed-in one is still refused
  assertError(await srv.api('POST', '/api/collections/notes_gated/records', { body: { text: 'anon again' } }), 403, 'forbidden');
  const list = await srv.api('GET', `/api/collections/notes_gated/records`, { token: su });
  assert.deepEqual(list.body.items.map((r: any) => r.text), ['signed in'], 'refused creates wrote nothing');
});

test('record ids: a valid client id is honoured, a duplicate is 409, an invalid one is 400 data.id', async (t) => {
  const r = await srv.api('POST', '/api/collections/things/records', { body: { id: 'abcdefghij12345', name: 'mine' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.id, 'abcdefghij12345');
  assert.equal((await srv.api('GET', '/api/collections/things/records/abcdefghij12345')).body.name, 'mine');
  const bad = (id: unknown) => ({ name: `id ${JSON.stringify(id)}`, method: 'POST', url: '/api/collections/things/records', body: { id, name: 'x1' }, status: 400, expect: errorFragment(400, 'validation_failed', { id: { code: /^validation_/, message: /./ } }) });
  await runScenarios(t, srv, [
    { name: 'duplicate client id → 409', method: 'POST', url: '/api/collections/things/records', body: { id: 'abcdefghij12345', name: 'again' }, status: 409, expect: errorFragment(409, 'conflict') },
    bad('ABCDEFGHIJ12345'),
    bad('short'),
    bad('abcdefghij123456'),
    bad('abcdefghij1234_'),
    bad('abcdefghij 1234'),
    bad(123456789012345),
  ]);
  assert.equal((await srv.api('GET', '/api/collections/things/records/abcdefghij12345')).body.name, 'mine', 'duplicate did not overwrite');
});

test('field types round-trip and reject invalid values with their codes', async (t) => {
  const P = '/api/collections/things/records';
  const ok = (name: string, body: Record<string, unknown>, expect: Record<string, unknown>): Scenario => ({ name, method: 'POST', url: P, body, status: 201, expect });
  const bad = (name: string, body: Record<string, unknown>, fields: Record<string, string>): Scenario => ({ name, method: 'POST', url: P, body, status: 400, expect: validation(fields) });
  const bad400 = (name: string, body: Record<string, unknown>, field: string): Scenario => ({ name, method: 'POST', url: P, body, status: 400, expect: errorFragment(400, 'validation_failed', { [field]: { code: /^validation_/, message: /./ } }) });
  await runScenarios(t, srv, [
    // text
    ok('text within min/max', { name: 'ab' }, { name: 'ab' }),
    ok('text at max', { name: 'abcdefghij' }, { name: 'abcdefghij' }),
    bad('text below min', { name: 'a' }, { name: 'validation_min' }),
    bad('text above max', { name: 'abcdefghijk' }, { name: 'validation_max' }),
    ok('text matching pattern', { code: 'ABC' }, { code: 'ABC' }),
    bad('text not matching pattern', { code: 'abc' }, { code: 'validation_pattern' }),
    bad('text pattern is anchored', { code: 'ABCD' }, { code: 'validation_pattern' }),
    bad400('text given a number', { name: 12345 }, 'name'),
    // number
    ok('number float', { qty: 42.5 }, { qty: 42.5 }),
    ok('number at bounds', { qty: 0 }, { qty: 0 }),
    bad('number below min', { qty: -1 }, { qty: 'validation_min' }),
    bad('number above max', { qty: 100.5 }, { qty: 'validation_max' }),
    bad400('number given a string', { qty: 'many' }, 'qty'),
    // fixed-point
    ok('fixed "12.34" in and out as a string', { price: '12.34' }, { price: '12.34' }),
    ok('fixed negative', { price: '-0.05' }, { price: '-0.05' }),
    ok('fixed 64-bit max', { price: '92233720368547758.07' }, { price: '92233720368547758.07' }),
    ok('fixed 64-bit min', { price: '-92233720368547758.08' }, { price: '-92233720368547758.08' }),
    bad('fixed too precise', { price: '1.234' }, { price: 'validation_too_precise' }),
    bad('fixed too precise (trailing zero)', { price: '1.230' }, { price: 'validation_too_precise' }),
    bad('fixed huge', { price: '100000000000000000000' }, { price: 'validation_overflow' }),
    bad('fixed one above 64-bit max', { price: '92233720368547758.08' }, { price: 'validation_overflow' }),
    bad('fixed one below 64-bit min', { price: '-92233720368547758.09' }, { price: 'validation_overflow' }),
    bad400('fixed not a number', { price: '12,34' }, 'price'),
    // bool
    ok('bool true', { flag: true }, { flag: true }),
    ok('bool absent is false', { name: 'nobool' }, { flag: false }),
    bad400('bool given a string', { flag: 'yes' }, 'flag'),
    // email / url
    ok('email', { mail: 'someone@example.org' }, { mail: 'someone@example.org' }),
    bad('email invalid', { mail: 'not-an-email' }, { mail: 'validation_invalid_email' }),
    bad('email missing domain', { mail: 'someone@' }, { mail: 'validation_invalid_email' }),
    ok('url', { site: 'https://example.com/a?b=1' }, { site: 'https://example.com/a?b=1' }),
    bad400('url invalid', { site: 'not a url' }, 'site'),
    // date
    ok('date Z normalised', { when: '2024-01-02T03:04:05Z' }, { when: '2024-01-02 03:04:05.000Z' }),
    ok('date offset normalised to UTC', { when: '2024-01-02T05:04:05+02:00' }, { when: '2024-01-02 03:04:05.000Z' }),
    ok('date with millis', { when: '2024-06-30 23:59:59.123Z' }, { when: '2024-06-30 23:59:59.123Z' }),
    ok('date only', { when: '2024-02-29' }, { when: '2024-02-29 00:00:00.000Z' }),
    bad('date impossible day', { when: '2023-02-29' }, { when: 'validation_date' }),
    bad('date garbage', { when: 'tomorrow' }, { when: 'validation_date' }),
    // select
    ok('select single', { color: 'red' }, { color: 'red' }),
    bad('select single not allowed', { color: 'purple' }, { color: 'validation_select' }),
    bad('select single given two values', { color: ['red', 'green'] }, { color: 'validation_select' }),
    ok('select multi', { colors: ['red', 'blue'] }, { colors: ['red', 'blue'] }),
    ok('select multi from a single string', { colors: 'green' }, { colors: ['green'] }),
    bad('select multi too many', { colors: ['red', 'green', 'blue'] }, { colors: 'validation_select' }),
    bad('select multi value not allowed', { colors: ['red', 'nope'] }, { colors: 'validation_select' }),
    // json / editor
    ok('json object', { meta: { a: [1, 2, { b: null }], s: 'x' } }, { meta: { a: [1, 2, { b: null }], s: 'x' } }),
    ok('json array', { meta: [1, 'two', false] }, { meta: [1, 'two', false] }),
    ok('json scalar', { meta: 'just a string' }, { meta: 'just a string' }),
    ok('editor html', { doc: '<p>Hello <b>world</b></p>' }, { doc: '<p>Hello <b>world</b></p>' }),
    // several errors at once
    bad('every offending field is reported', { name: 'a', qty: 1000, mail: 'x' }, { name: 'validation_min', qty: 'validation_max', mail: 'validation_invalid_email' }),
  ]);
});

test('relations: single and multiple, missing target → 400 data.<field>.code validation_not_found', async (t) => {
  const P = '/api/collections/things/records';
  const missing = 'zzzzzzzzzzzzzzz';
  await runScenarios(t, srv, [
    { name: 'single relation', method: 'POST', url: P, body: { country: fr.id }, status: 201, expect: { country: fr.id } },
    { name: 'multiple relation', method: 'POST', url: P, body: { visited: [fr.id, de.id] }, status: 201, expect: { visited: [fr.id, de.id] } },
    { name: 'single relation to a missing record', method: 'POST', url: P, body: { country: missing }, status: 400, expect: validation({ country: 'validation_not_found' }) },
    { name: 'multiple relation with one missing record', method: 'POST', url: P, body: { visited: [fr.id, missing] }, status: 400, expect: validation({ visited: 'validation_not_found' }) },
    { name: 'single relation given two ids', method: 'POST', url: P, body: { country: [fr.id, de.id] }, status: 400, expect: errorFragment(400, 'validation_failed', { country: { code: /^validation_/ } }) },
    { name: 'relation id not a record id', method: 'POST', url: P, body: { country: 'NOT-AN-ID' }, status: 400, expect: errorFragment(400, 'validation_failed', { country: { code: /^validation_/ } }) },
  ]);
  // update to a missing target is rejected too, and nothing changes
  const rec = await seed(srv, 'things', { country: fr.id });
  const u = await srv.api('PATCH', `${P}/${rec.id}`, { body: { country: missing } });
  assertError(u, 400, 'validation_failed');
  assert.equal(u.body.data.country?.code, 'validation_not_found', u.text);
  assert.equal((await srv.api('GET', `${P}/${rec.id}`)).body.country, fr.id);
  // clearing a relation
  const c = await srv.api('PATCH', `${P}/${rec.id}`, { body: { country: null } });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.body.country, null);
});

test('autodate: set on create (client value ignored); onUpdate refreshes on PATCH, onCreate-only does not', async () => {
  const c = await srv.api('POST', '/api/collections/things/records', { body: { name: 'clock', made: '2001-01-01 00:00:00.000Z', touched: '2001-01-01 00:00:00.000Z' } });
  assert.equal(c.status, 201, c.text);
  expectBody(c, { made: DATE_FMT, touched: DATE_FMT });
  assert.notEqual(c.body.made, '2001-01-01 00:00:00.000Z', 'client value ignored');
  assert.ok(Math.abs(Date.parse(c.body.made.replace(' ', 'T')) - Date.now()) < 60_000, `made is now: ${c.body.made}`);
  await sleep(10);
  const p = await srv.api('PATCH', `/api/collections/things/records/${c.body.id}`, { body: { name: 'clock2', made: '2002-01-01 00:00:00.000Z' } });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.body.made, c.body.made, 'onCreate-only autodate unchanged by update');
  assert.ok(p.body.touched > c.body.touched, `onUpdate autodate moves: ${c.body.touched} → ${p.body.touched}`);
});

test('required and unique: validation_required, 409 on conflict (never 500)', async (t) => {
  const P = '/api/collections/strict/records';
  await runScenarios(t, srv, [
    { name: 'required missing', method: 'POST', url: P, body: { sku: 'A0' }, status: 400, expect: validation({ title: 'validation_required' }) },
    { name: 'required empty string', method: 'POST', url: P, body: { title: '', sku: 'A0' }, status: 400, expect: validation({ title: 'validation_required' }) },
    { name: 'required null', method: 'POST', url: P, body: { title: null }, status: 400, expect: validation({ title: 'validation_required' }) },
    { name: 'first unique value', method: 'POST', url: P, body: { title: 'one', sku: 'A1' }, status: 201, expect: { sku: 'A1' } },
    { name: 'duplicate unique value → 409', method: 'POST', url: P, body: { title: 'two', sku: 'A1' }, status: 409, expect: errorFragment(409, 'conflict') },
  ]);
  const two = await seed(srv, 'strict', { title: 'two', sku: 'A2' });
  const u = await srv.api('PATCH', `${P}/${two.id}`, { body: { sku: 'A1' } });
  assertError(u, 409, 'conflict');
  const clear = await srv.api('PATCH', `${P}/${two.id}`, { body: { title: '' } });
  assertError(clear, 400, 'validation_failed');
  assert.equal(clear.body.data.title?.code, 'validation_required');
  const list = await srv.api('GET', `${P}?sort=sku`);
  assert.deepEqual(list.body.items.map((r: any) => r.sku), ['A1', 'A2']);
});

test('malformed bodies and unknown collections/records', async (t) => {
  const P = '/api/collections/things/records';
  const json = { 'content-type': 'application/json' };
  await runScenarios(t, srv, [
    { name: 'malformed JSON → 400 bad_request', method: 'POST', url: P, raw: '{"name": "x",', headers: json, status: 400, expect: errorFragment(400, 'bad_request') },
    { name: 'JSON array body → 400', method: 'POST', url: P, raw: '[{"name":"xx"}]', headers: json, status: 400, expect: errorFragment(400) },
    { name: 'JSON string body → 400', method: 'POST', url: P, raw: '"xx"', headers: json, status: 400, expect: errorFragment(400) },
    { name: 'malformed JSON on PATCH → 400 bad_request', method: 'PATCH', url: `${P}/abcdefghij12345`, raw: '{', headers: json, status: 400, expect: errorFragment(400, 'bad_request') },
    { name: 'unknown collection list → 404', method: 'GET', url: '/api/collections/nope/records', status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown collection view → 404', method: 'GET', url: '/api/collections/nope/records/abcdefghij12345', status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown collection create → 404', method: 'POST', url: '/api/collections/nope/records', body: { a: 1 }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown collection create as superuser → 404', method: 'POST', url: '/api/collections/nope/records', token: su, body: { a: 1 }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown collection delete → 404', method: 'DELETE', url: '/api/collections/nope/records/abcdefghij12345', status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'unknown record view → 404', method: 'GET', url: `${P}/zzzzzzzzzzzzzzz`, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'malformed record id view → 404', method: 'GET', url: `${P}/..%2F..%2Fetc`, status: 404 },
  ]);
  const count = (await srv.api('GET', `${P}?filter=${encodeURIComponent("name = 'xx'")}`)).body.totalItems;
  assert.equal(count, 0, 'the array body created nothing');
});

test('auth records: password rules, duplicate email 409, verified forced false', async (t) => {
  const P = '/api/collections/users/records';
  await runScenarios(t, srv, [
    { name: 'password too short', method: 'POST', url: P, body: { email: 'short@example.com', password: 'short', passwordConfirm: 'short' }, status: 400, expect: validation({ password: 'validation_min' }) },
    { name: 'password missing', method: 'POST', url: P, body: { email: 'nopw@example.com' }, status: 400, expect: errorFragment(400, 'validation_failed', { password: { code: /^validation_/ } }) },
    { name: 'passwordConfirm mismatch', method: 'POST', url: P, body: { email: 'mm@example.com', password: 'password123', passwordConfirm: 'password124' }, status: 400, expect: errorFragment(400, 'validation_failed', { passwordConfirm: { code: /^validation_/ } }) },
    { name: 'invalid email', method: 'POST', url: P, body: { email: 'nope', password: 'password123', passwordConfirm: 'password123' }, status: 400, expect: errorFragment(400, 'validation_failed', { email: { code: /^validation_/ } }) },
    { name: 'existing email → 409', method: 'POST', url: P, body: { email: 'alice@example.com', password: 'password123', passwordConfirm: 'password123' }, status: 409, expect: errorFragment(409, 'conflict') },
    {
      name: 'verified: true in signup is forced false', method: 'POST', url: P, body: { email: 'carol@example.com', password: 'password123', passwordConfirm: 'password123', verified: true }, status: 201,
      expect: { id: RECORD_ID, verified: false, password: ABSENT, passwordConfirm: ABSENT, passwordHash: ABSENT, tokenKey: ABSENT, token_epoch: ABSENT },
    },
    {
      name: 'superuser create shows the email', method: 'POST', url: P, token: su, body: { email: 'erin@example.com', password: 'password123', passwordConfirm: 'password123' }, status: 201,
      expect: { id: RECORD_ID, email: 'erin@example.com', verified: false, password: ABSENT, passwordHash: ABSENT, tokenKey: ABSENT, token_epoch: ABSENT },
    },
  ]);
  // the short-password user was not created: logging in fails
  const l = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'short@example.com', password: 'short' } });
  assert.equal(l.status, 400, l.text);
  // alice's password still works after the 409 attempt
  const l2 = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'alice@example.com', password: 'alice-password' } });
  assert.equal(l2.status, 200, l2.text);
  const carol = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'carol@example.com', password: 'password123' } });
  assert.equal(carol.status, 200, `new user can log in: ${carol.text}`);
  assert.equal(carol.body.record.verified, false);
  assert.equal(carol.body.record.email, 'carol@example.com');
});

test('auth records: passwordHash, tokenKey, token_epoch never serialized (create, view, list, update, auth)', async () => {
  const u = `/api/collections/users/records`;
  const responses: Array<[string, Awaited<ReturnType<Svc['api']>>]> = [];
  const created = await srv.api('POST', u, { body: { email: 'dave@example.com', password: 'password123', passwordConfirm: 'password123' } });
  responses.push(['create', created]);
  const login = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'dave@example.com', password: 'password123' } });
  responses.push(['auth-with-password', login]);
  assert.equal(login.status, 200, login.text);
  expectBody(login, { token: /^[\w-]+\.[\w-]+\.[\w-]+$/, record: { id: created.body.id, email: 'dave@example.com' } });
  const token = login.body.token;
  responses.push(['view self', await srv.api('GET', `${u}/${created.body.id}`, { token })]);
  responses.push(['view anon', await srv.api('GET', `${u}/${created.body.id}`)]);
  responses.push(['view su', await srv.api('GET', `${u}/${created.body.id}`, { token: su })]);
  responses.push(['list anon', await srv.api('GET', u)]);
  responses.push(['list su', await srv.api('GET', u, { token: su })]);
  responses.push(['list su fields=*', await srv.api('GET', `${u}?fields=*`, { token: su })]);
  responses.push(['list su fields=passwordHash,tokenKey', await srv.api('GET', `${u}?fields=id,passwordHash,tokenKey,token_epoch`, { token: su })]);
  responses.push(['update self', await srv.api('PATCH', `${u}/${created.body.id}`, { token, body: { nick: 'dd' } })]);
  responses.push(['update su', await srv.api('PATCH', `${u}/${created.body.id}`, { token: su, body: { nick: 'dd2' } })]);
  responses.push(['auth-refresh', await srv.api('POST', '/api/collections/users/auth-refresh', { token })]);
  for (const [label, r] of responses) {
    assert.ok(r.status >= 200 && r.status < 300, `${label}: ${r.status} ${r.text.slice(0, 300)}`);
    assertNoSecrets(r, label);
    assert.ok(!r.text.includes('password123'), `${label} leaks the plaintext password`);
    assert.ok(!/"password"\s*:/.test(r.text), `${label} has a password key`);
  }
  // writes of hidden fields are ignored (never become readable / usable)
  const w = await srv.api('PATCH', `${u}/${created.body.id}`, { token: su, body: { tokenKey: 'attacker', passwordHash: 'x' } });
  assert.ok(w.status === 200 || w.status === 400, `${w.status} ${w.text}`);
  assertNoSecrets(w, 'hidden write');
  const again = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'dave@example.com', password: 'password123' } });
  assert.equal(again.status, 200, 'password still works after a passwordHash write attempt');
});

test('auth records: email hidden from others unless emailVisibility, visible to owner and superuser', async () => {
  const u = '/api/collections/users/records';
  // alice: emailVisibility false (default); bob: true
  const anonAlice = await srv.api('GET', `${u}/${alice.id}`);
  assert.equal(anonAlice.status, 200, anonAlice.text);
  assert.ok(!anonAlice.text.includes('alice@example.com'), `anonymous sees alice's email: ${anonAlice.text}`);
  const bobSeesAlice = await srv.api('GET', `${u}/${alice.id}`, { token: bob.token });
  assert.ok(!bobSeesAlice.text.includes('alice@example.com'), `bob sees alice's email: ${bobSeesAlice.text}`);
  const aliceSelf = await srv.api('GET', `${u}/${alice.id}`, { token: alice.token });
  assert.equal(aliceSelf.body.email, 'alice@example.com', `owner sees own email: ${aliceSelf.text}`);
  const suAlice = await srv.api('GET', `${u}/${alice.id}`, { token: su });
  assert.equal(suAlice.body.email, 'alice@example.com', `superuser sees email: ${suAlice.text}`);
  assert.equal(alice.record.email, 'alice@example.com', 'auth response record carries the owner\'s email');

  const anonBob = await srv.api('GET', `${u}/${bob.id}`);
  assert.equal(anonBob.body.email, 'bob@example.com', `emailVisibility true: ${anonBob.text}`);
  assert.equal(anonBob.body.emailVisibility, true);

  const list = await srv.api('GET', `${u}?perPage=100`, { token: bob.token });
  assert.equal(list.status, 200, list.text);
  const a = list.body.items.find((r: any) => r.id === alice.id);
  const b = list.body.items.find((r: any) => r.id === bob.id);
  assert.ok(a && b, 'both listed');
  assert.ok(!JSON.stringify(a).includes('alice@example.com'), `list leaks alice's email to bob: ${JSON.stringify(a)}`);
  assert.equal(b.email, 'bob@example.com');
  // a filter on a hidden email must not reveal it either
  const probe = await srv.api('GET', `${u}?filter=${encodeURIComponent("email = 'alice@example.com'")}`, { token: bob.token });
  assert.ok(probe.status === 400 || (probe.status === 200 && !probe.text.includes('alice@example.com')), `${probe.status} ${probe.text}`);

  // turning visibility on makes it public
  const on = await srv.api('PATCH', `${u}/${alice.id}`, { token: alice.token, body: { emailVisibility: true } });
  assert.equal(on.status, 200, on.text);
  assert.equal((await srv.api('GET', `${u}/${alice.id}`)).body.email, 'alice@example.com');
});

test('cascadeDelete: deleting a country deletes cascading cities; a non-cascading reference is cleared to null', async () => {
  const it = await seed(srv, 'countries', { name: 'Italy', code: 'IT' });
  const rome = await seed(srv, 'cities', { name: 'Rome', country: it.id });
  const milan = await seed(srv, 'cities', { name: 'Milan', country: it.id });
  const berlin = await seed(srv, 'cities', { name: 'Berlin', country: de.id });
  const colosseum = await seed(srv, 'landmarks', { name: 'Colosseum', country: it.id });
  const d = await srv.api('DELETE', `/api/collections/countries/records/${it.id}`);
  assert.equal(d.status, 204, d.text);
  assertError(await srv.api('GET', `/api/collections/cities/records/${rome.id}`), 404, 'not_found');
  assertError(await srv.api('GET', `/api/collections/cities/records/${milan.id}`), 404, 'not_found');
  assert.equal((await srv.api('GET', `/api/collections/cities/records/${berlin.id}`)).status, 200, 'unrelated city kept');
  const l = await srv.api('GET', `/api/collections/landmarks/records/${colosseum.id}`);
  assert.equal(l.status, 200, l.text);
  assert.equal(l.body.country, null, `reference cleared: ${l.text}`);
  assert.equal(l.body.name, 'Colosseum');
});

test('relation minSelect/maxSelect: too few or too many ids → 400 validation_relation (create and update); empty allowed unless required', async (t) => {
  await srv.createCollection({
    name: 'trips', type: 'base', ...PUBLIC,
    fields: [{ name: 'stops', type: 'relation', options: { collectionId: countries.id, minSelect: 2, maxSelect: 3 } }],
  });
  const es = await seed(srv, 'countries', { name: 'Spain', code: 'ES' });
  const pt = await seed(srv, 'countries', { name: 'Portugal', code: 'PT' });
  const P = '/api/collections/trips/records';
  await runScenarios(t, srv, [
    { name: 'one id, below minSelect', method: 'POST', url: P, body: { stops: [fr.id] }, status: 400, expect: validation({ stops: 'validation_relation' }) },
    { name: 'a bare id string counts as one', method: 'POST', url: P, body: { stops: fr.id }, status: 400, expect: validation({ stops: 'validation_relation' }) },
    { name: 'four ids, above maxSelect', method: 'POST', url: P, body: { stops: [fr.id, de.id, es.id, pt.id] }, status: 400, expect: validation({ stops: 'validation_relation' }) },
    { name: 'duplicates collapse before counting', method: 'POST', url: P, body: { stops: [fr.id, fr.id] }, status: 400, expect: validation({ stops: 'validation_relation' }) },
    { name: 'two ids', method: 'POST', url: P, body: { stops: [fr.id, de.id] }, status: 201, expect: { stops: [fr.id, de.id] } },
    { name: 'empty is allowed (not required)', method: 'POST', url: P, body: { stops: [] }, status: 201, expect: { stops: [] } },
  ]);
  const trip = await seed(srv, 'trips', { stops: [fr.id, de.id, es.id] });
  const u = `${P}/${trip.id}`;
  assert.equal((await srv.api('PATCH', u, { body: { stops: [fr.id, de.id, es.id, pt.id] } })).body.data?.stops?.code, 'validation_relation');
  assert.equal((await srv.api('PATCH', u, { body: { stops: [pt.id] } })).body.data?.stops?.code, 'validation_relation');
  const ok = await srv.api('PATCH', u, { body: { stops: [pt.id, es.id] } });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body.stops, [pt.id, es.id]);
});

test('many views at once: each caller gets its own record under its own rule, or a 404', async () => {
  // reads made together (on PostgreSQL those of one turn run as one statement: ARCHITECTURE.md,
  // `src/store/pg/`) must each answer as if made alone; a projection keeps the record cache out
  await srv.createCollection({
    name: 'burst', type: 'base', listRule: '@public', viewRule: 'owner = @request.auth.id',
    fields: [{ name: 'title', type: 'text' }, { name: 'owner', type: 'text' }],
  });
  const owners = [alice.id, bob.id, ''];
  const recs: Array<{ id: string; title: string; owner: string }> = [];
  for (let i = 0; i < 24; i++) recs.push(await seed(srv, 'burst', { title: `burst ${i}`, owner: owners[i % 3] }));
  const callers = [{ name: 'alice', token: alice.token, id: alice.id }, { name: 'bob', token: bob.token, id: bob.id }, { name: 'anonymous', token: null, id: '' }];
  const asks = callers.flatMap((c) => [...recs.map((r) => ({ c, id: r.id, want: r.owner === c.id ? r : null })), { c, id: 'nosuchrecord123', want: null }]);
  const answers = await Promise.all(asks.map((a) => srv.api('GET', `/api/collections/burst/records/${a.id}?fields=id,title,owner`, { token: a.c.token })));
  answers.forEach((r, k) => {
    const { c, id, want } = asks[k];
    if (want) {
      assert.equal(r.status, 200, `${c.name} reads ${id}: ${r.text}`);
      assert.deepEqual(r.body, { id: want.id, title: want.title, owner: want.owner });
    } else {
      assert.equal(r.status, 404, `${c.name} reads ${id}: ${r.text}`);
    }
  });
});
