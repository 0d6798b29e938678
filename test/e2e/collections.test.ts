/**
 * Collections API end to end (spec 1-core-api.md "Collection", "Collections (superuser only)";
 * 0-conventions.md "Points the spec leaves open", "Error codes"). One server for the file.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import {
  ABSENT, assertError, dumpServerLog, expectBody, createUsers, errorFragment, matches, runScenarios, seed, signup, validation,
  type Scenario, type User,
} from '../helpers/records-fixtures.js';

let srv: Svc;
let su: string;
let user: User;
let users: any;

before(async () => {
  srv = await startSvc();
  su = srv.suToken;
  users = await createUsers(srv);
  user = await signup(srv, 'users', 'alice@example.com');
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

const RULES = ['listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule'] as const;
const nonEmpty = (m: unknown) => typeof m === 'string' && m.length > 0;
/** A 400 validation_failed whose `data` holds some entry with `code` (key not fixed by the spec). */
const someDataCode = (code: string) => errorFragment(400, 'validation_failed', (d: any) =>
  d && typeof d === 'object' && Object.values(d).some((e: any) => e && e.code === code));

test('collection routes: 401 without auth, 401 with a bad token, 403 for a non-superuser', async (t) => {
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/api/collections'],
    ['POST', '/api/collections', { name: 'nope', type: 'base', fields: [] }],
    ['GET', '/api/collections/users'],
    ['PATCH', '/api/collections/users', { listRule: null }],
    ['DELETE', '/api/collections/users'],
  ];
  const scenarios: Scenario[] = [];
  for (const [method, url, body] of routes) {
    scenarios.push({ name: `${method} ${url} anonymous → 401`, method, url, body, status: 401, expect: errorFragment(401, 'unauthorized') });
    scenarios.push({ name: `${method} ${url} garbage token → 401`, method, url, body, token: 'not.a.jwt', status: 401, expect: errorFragment(401, 'unauthorized') });
    scenarios.push({ name: `${method} ${url} user token → 403`, method, url, body, token: user.token, status: 403, expect: errorFragment(403, 'forbidden') });
  }
  await runScenarios(t, srv, scenarios);
  // nothing changed by the denied requests
  const g = await srv.api('GET', '/api/collections/users', { token: su });
  assert.equal(g.status, 200);
  assert.equal(g.body.listRule, '@public');
  assert.equal((await srv.api('GET', '/api/collections/nope', { token: su })).status, 404);
});

test('create answers 201 with schema, indexes [], options and the five rules; list, get by id and by name', async () => {
  const r = await srv.api('POST', '/api/collections', {
    token: su,
    body: {
      name: 'posts',
      type: 'base',
      fields: [
        { name: 'title', type: 'text', options: { required: true, max: 100 } },
        { name: 'views', type: 'number' },
      ],
      listRule: '@public',
      viewRule: "title != ''",
    },
  });
  assert.equal(r.status, 201, r.text);
  matches(r.body, {
    id: (v: unknown) => typeof v === 'string' && v.length > 0,
    name: 'posts',
    type: 'base',
    system: false,
    schema: [
      { id: nonEmpty, name: 'title', type: 'text', options: { required: true, max: 100 } },
      { id: nonEmpty, name: 'views', type: 'number', options: (o: unknown) => !!o && typeof o === 'object' },
    ],
    indexes: [],
    options: (o: unknown) => !!o && typeof o === 'object' && !Array.isArray(o),
    listRule: '@public',
    viewRule: "title != ''",
    createRule: null,
    updateRule: null,
    deleteRule: null,
  });
  for (const k of RULES) assert.ok(k in r.body, `rule ${k} present`);
  assert.equal(r.body.options.ttl_field ?? null, null, 'ttl_field defaults to null');
  const id = r.body.id;

  const byId = await srv.api('GET', `/api/collections/${id}`, { token: su });
  const byName = await srv.api('GET', '/api/collections/posts', { token: su });
  assert.equal(byId.status, 200, byId.text);
  assert.equal(byName.status, 200, byName.text);
  assert.deepEqual(byId.body, r.body);
  assert.deepEqual(byName.body, r.body);

  const list = await srv.api('GET', '/api/collections', { token: su });
  assert.equal(list.status, 200);
  assert.ok(Array.isArray(list.body.items), 'list is an {items} envelope');
  const names = list.body.items.map((c: any) => c.name);
  for (const n of ['_superusers', 'users', 'posts']) assert.ok(names.includes(n), `${n} listed: ${names}`);
  const su_ = list.body.items.find((c: any) => c.name === '_superusers');
  matches(su_, { type: 'auth', system: true });
  assert.deepEqual(list.body.items.find((c: any) => c.name === 'posts'), r.body);

  // auth collection: options.auth with defaults
  matches(users, { type: 'auth', system: false, options: { auth: { minPasswordLength: 8 } } });
});

test('unknown collection: GET, PATCH, DELETE → 404 not_found', async (t) => {
  await runScenarios(t, srv, [
    { name: 'GET unknown', method: 'GET', url: '/api/collections/nosuchcol', token: su, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'PATCH unknown', method: 'PATCH', url: '/api/collections/nosuchcol', token: su, body: { listRule: null }, status: 404, expect: errorFragment(404, 'not_found') },
    { name: 'DELETE unknown', method: 'DELETE', url: '/api/collections/nosuchcol', token: su, status: 404, expect: errorFragment(404, 'not_found') },
  ]);
});

test('create: every 400 cause, and nothing is created', async (t) => {
  await srv.createCollection({ name: 'authors', type: 'base', fields: [{ name: 'name', type: 'text' }] });
  const authors = (await srv.api('GET', '/api/collections/authors', { token: su })).body;
  const base = (name: string, extra: Record<string, unknown> = {}) => ({ name, type: 'base', fields: [{ name: 'title', type: 'text' }], ...extra });
  const rel = { name: 'author', type: 'relation', options: { collectionId: authors.id } };
  const cases: Array<{ name: string; body: unknown; expect: unknown; probe?: string }> = [
    { name: 'name with a space', body: base('bad name'), expect: validation({ name: 'validation_invalid_name' }), probe: 'bad%20name' },
    { name: 'name starting with a digit', body: base('1abc'), expect: validation({ name: 'validation_invalid_name' }), probe: '1abc' },
    { name: 'name with a dash', body: base('a-b'), expect: validation({ name: 'validation_invalid_name' }), probe: 'a-b' },
    { name: 'empty name', body: base(''), expect: errorFragment(400, 'validation_failed', { name: { code: (c: string) => /^validation_/.test(c) } }) },
    { name: 'leading underscore is reserved', body: base('_private'), expect: validation({ name: 'validation_reserved_name' }), probe: '_private' },
    { name: '_fts suffix is reserved', body: base('things_fts'), expect: validation({ name: 'validation_reserved_suffix' }), probe: 'things_fts' },
    { name: 'duplicate name', body: base('posts'), expect: validation({ name: 'validation_duplicate_name' }) },
    { name: 'bad type', body: { name: 'badtype', type: 'view', fields: [] }, expect: errorFragment(400, 'validation_failed'), probe: 'badtype' },
    { name: 'unknown field type', body: { name: 'badfield', type: 'base', fields: [{ name: 'x', type: 'blob' }] }, expect: someDataCode('validation_type'), probe: 'badfield' },
    { name: 'invalid field name', body: { name: 'badfname', type: 'base', fields: [{ name: 'a b', type: 'text' }] }, expect: someDataCode('validation_invalid_name'), probe: 'badfname' },
    { name: 'fixed number scale 0', body: { name: 'scale0', type: 'base', fields: [{ name: 'p', type: 'number', options: { mode: 'fixed', scale: 0 } }] }, expect: someDataCode('validation_invalid_scale'), probe: 'scale0' },
    { name: 'fixed number scale 9', body: { name: 'scale9', type: 'base', fields: [{ name: 'p', type: 'number', options: { mode: 'fixed', scale: 9 } }] }, expect: someDataCode('validation_invalid_scale'), probe: 'scale9' },
    { name: 'encrypted number', body: { name: 'encnum', type: 'base', fields: [{ name: 'n', type: 'number', options: { encrypted: true } }] }, expect: someDataCode('validation_encrypted_type'), probe: 'encnum' },
    { name: 'select without values', body: { name: 'novalues', type: 'base', fields: [{ name: 's', type: 'select', options: {} }] }, expect: errorFragment(400, 'validation_failed'), probe: 'novalues' },
    { name: 'select with empty values', body: { name: 'emptyvalues', type: 'base', fields: [{ name: 's', type: 'select', options: { values: [] } }] }, expect: errorFragment(400, 'validation_failed'), probe: 'emptyvalues' },
    { name: 'relation to a missing collection', body: { name: 'orphans', type: 'base', fields: [{ name: 'r', type: 'relation', options: { collectionId: 'doesnotexist123' } }] }, expect: someDataCode('validation_relation'), probe: 'orphans' },
    { name: 'malformed listRule', body: base('badrule1', { listRule: "title = " }), expect: errorFragment(400, 'validation_failed', { listRule: { code: /^validation_/, message: nonEmpty } }), probe: 'badrule1' },
    { name: 'malformed viewRule (unbalanced paren)', body: base('badrule2', { viewRule: "(title = 'x'" }), expect: errorFragment(400, 'validation_failed', { viewRule: { code: /^validation_/, message: nonEmpty } }), probe: 'badrule2' },
    { name: 'rule naming an unknown field', body: base('badrule3', { createRule: "nosuch = 'x'" }), expect: errorFragment(400, 'validation_failed', { createRule: { code: /^validation_/, message: nonEmpty } }), probe: 'badrule3' },
    { name: 'rule with an unresolvable relation path', body: { name: 'badrule4', type: 'base', fields: [rel], updateRule: "author.nosuch = 'x'" }, expect: errorFragment(400, 'validation_failed', { updateRule: { code: /^validation_/, message: nonEmpty } }), probe: 'badrule4' },
    { name: 'rule traversing a non-relation field', body: base('badrule5', { deleteRule: "title.name = 'x'" }), expect: errorFragment(400, 'validation_failed', { deleteRule: { code: /^validation_/, message: nonEmpty } }), probe: 'badrule5' },
    { name: 'index on an unknown field', body: base('badindex', { indexes: [{ name: 'idx_nosuch', fields: ['nosuch'], unique: false }] }), expect: errorFragment(400, 'validation_failed'), probe: 'badindex' },
    { name: 'JSON array body', body: [{ name: 'arr' }], expect: errorFragment(400, 'bad_request') },
  ];
  await runScenarios(t, srv, cases.map((c) => ({
    name: c.name, method: 'POST', url: '/api/collections', token: su, body: c.body, status: 400, expect: c.expect,
    check: async () => {
      if (!c.probe) return;
      const g = await srv.api('GET', `/api/collections/${c.probe}`, { token: su });
      assert.equal(g.status, 404, `collection ${c.probe} must not exist after a rejected create: ${g.text.slice(0, 200)}`);
    },
  })));
  // the valid relation rule compiles (control case for the unresolvable-path one)
  const ok = await srv.api('POST', '/api/collections', { token: su, body: { name: 'goodrule', type: 'base', fields: [rel], updateRule: "author.name = 'x'" } });
  assert.equal(ok.status, 201, ok.text);
  assert.equal((await srv.api('DELETE', '/api/collections/goodrule', { token: su })).status, 204);
});

test('malformed JSON body on create → 400 bad_request', async () => {
  const r = await srv.api('POST', '/api/collections', { token: su, raw: '{"name": "x",', headers: { 'content-type': 'application/json' } });
  assertError(r, 400, 'bad_request');
});

test('PATCH: rename a field by id keeps its data, a missing field is dropped, a field is added, rules change', async () => {
  const c = await srv.createCollection({
    name: 'articles',
    type: 'base',
    fields: [{ name: 'title', type: 'text' }, { name: 'body', type: 'text' }],
    listRule: null,
  });
  const titleId = c.schema.find((f: any) => f.name === 'title').id;
  const rec = await seed(srv, 'articles', { title: 'Hello', body: 'World' });

  const p = await srv.api('PATCH', '/api/collections/articles', {
    token: su,
    body: {
      fields: [
        { id: titleId, name: 'headline', type: 'text' },
        { name: 'tags', type: 'json' },
      ],
      listRule: '@public',
      viewRule: "headline != ''",
    },
  });
  assert.equal(p.status, 200, p.text);
  matches(p.body, {
    id: c.id,
    name: 'articles',
    schema: [
      { id: titleId, name: 'headline', type: 'text' },
      { name: 'tags', type: 'json', id: nonEmpty },
    ],
    listRule: '@public',
    viewRule: "headline != ''",
    createRule: null,
  });
  const g = await srv.api('GET', '/api/collections/articles', { token: su });
  assert.deepEqual(g.body.schema, p.body.schema, 'GET reflects the PATCH');

  const r = await srv.api('GET', `/api/collections/articles/records/${rec.id}`, { token: su });
  assert.equal(r.status, 200, r.text);
  expectBody(r, { id: rec.id, headline: 'Hello', tags: null, title: ABSENT, body: ABSENT });

  // the new rule applies: anonymous list now allowed
  const anon = await srv.api('GET', '/api/collections/articles/records');
  assert.equal(anon.status, 200, anon.text);
  assert.equal(anon.body.items.length, 1);

  // a dropped field cannot be written any more; a re-added field with the old name starts empty
  const p2 = await srv.api('PATCH', '/api/collections/articles', {
    token: su,
    body: { fields: [...p.body.schema, { name: 'body', type: 'text' }] },
  });
  assert.equal(p2.status, 200, p2.text);
  const r2 = await srv.api('GET', `/api/collections/articles/records/${rec.id}`, { token: su });
  expectBody(r2, { headline: 'Hello', body: (v: unknown) => v === null || v === '' });

  // PATCH rename of the collection itself, then addressable by the new name only
  const p3 = await srv.api('PATCH', `/api/collections/${c.id}`, { token: su, body: { name: 'stories' } });
  assert.equal(p3.status, 200, p3.text);
  assert.equal(p3.body.name, 'stories');
  assert.equal((await srv.api('GET', '/api/collections/stories', { token: su })).status, 200);
  assert.equal((await srv.api('GET', '/api/collections/articles', { token: su })).status, 404);
  const r3 = await srv.api('GET', `/api/collections/stories/records/${rec.id}`, { token: su });
  assert.equal(r3.status, 200, r3.text);
  assert.equal(r3.body.headline, 'Hello');
});

test('PATCH: invalid changes are rejected with 400 and change nothing', async (t) => {
  const c = await srv.createCollection({ name: 'gadgets', type: 'base', fields: [{ name: 'label', type: 'text' }], listRule: '@public' });
  const before_ = (await srv.api('GET', '/api/collections/gadgets', { token: su })).body;
  await runScenarios(t, srv, [
    { name: 'malformed listRule', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { listRule: 'label ==== 1' }, status: 400, expect: errorFragment(400, 'validation_failed', { listRule: { code: /^validation_/, message: nonEmpty } }) },
    { name: 'rule on unknown field', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { viewRule: "nosuch = 1" }, status: 400, expect: errorFragment(400, 'validation_failed', { viewRule: { code: /^validation_/, message: nonEmpty } }) },
    { name: 'own rule references a field being removed', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { fields: [{ name: 'other', type: 'text' }], listRule: "label != ''" }, status: 400, expect: errorFragment(400, 'validation_failed', { listRule: { code: /^validation_/ } }) },
    { name: 'rename to a duplicate', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { name: 'posts' }, status: 400, expect: validation({ name: 'validation_duplicate_name' }) },
    { name: 'rename to a reserved name', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { name: '_gadgets' }, status: 400, expect: validation({ name: 'validation_reserved_name' }) },
    { name: 'bad field type', method: 'PATCH', url: '/api/collections/gadgets', token: su, body: { fields: [{ name: 'x', type: 'nope' }] }, status: 400, expect: someDataCode('validation_type') },
  ]);
  const after_ = (await srv.api('GET', '/api/collections/gadgets', { token: su })).body;
  assert.deepEqual(after_, before_, 'rejected PATCHes change nothing');
  assert.equal(c.id, after_.id);
});

test('removing a field another collection\'s rule references is rejected (retained collection) and changes nothing', async () => {
  const owners = await srv.createCollection({ name: 'owners', type: 'base', fields: [{ name: 'name', type: 'text' }, { name: 'age', type: 'number' }] });
  await srv.createCollection({
    name: 'pets',
    type: 'base',
    fields: [{ name: 'nick', type: 'text' }, { name: 'owner', type: 'relation', options: { collectionId: owners.id } }],
    listRule: "owner.name != ''",
  });
  const before_ = (await srv.api('GET', '/api/collections/owners', { token: su })).body;
  const ageField = before_.schema.find((f: any) => f.name === 'age');
  const r = await srv.api('PATCH', '/api/collections/owners', { token: su, body: { fields: [ageField] } });
  assertError(r, 400);
  assert.ok(r.body.data['collections.pets.listRule'], `data key collections.pets.listRule: ${r.text}`);
  matches(r.body.data['collections.pets.listRule'], { code: /^validation_/, message: /retained collection/ });
  assert.match(r.body.data['collections.pets.listRule'].message, /pets/);
  const after_ = (await srv.api('GET', '/api/collections/owners', { token: su })).body;
  assert.deepEqual(after_.schema, before_.schema, 'owners schema unchanged');
  const pets = (await srv.api('GET', '/api/collections/pets', { token: su })).body;
  assert.equal(pets.listRule, "owner.name != ''");

  // renaming the referenced field (same id) is the same breakage
  const nameField = before_.schema.find((f: any) => f.name === 'name');
  const r2 = await srv.api('PATCH', '/api/collections/owners', { token: su, body: { fields: [{ ...nameField, name: 'fullname' }, ageField] } });
  assertError(r2, 400);
  assert.ok(r2.body.data['collections.pets.listRule'], `rename: data key collections.pets.listRule: ${r2.text}`);
  assert.deepEqual((await srv.api('GET', '/api/collections/owners', { token: su })).body.schema, before_.schema);

  // removing a field no rule references is fine
  const r3 = await srv.api('PATCH', '/api/collections/owners', { token: su, body: { fields: [nameField] } });
  assert.equal(r3.status, 200, r3.text);
  assert.deepEqual(r3.body.schema.map((f: any) => f.name), ['name']);
});

test('indexes: {name, fields, unique} accepted and echoed; a unique index turns a duplicate insert into 409', async () => {
  const r = await srv.api('POST', '/api/collections', {
    token: su,
    body: {
      name: 'slugs',
      type: 'base',
      fields: [{ name: 'slug', type: 'text' }, { name: 'lang', type: 'text' }],
      indexes: [
        { name: 'idx_slug_lang', fields: ['slug', 'lang'], unique: true },
        { name: 'idx_lang', fields: ['lang'], unique: false },
      ],
      createRule: '@public',
    },
  });
  assert.equal(r.status, 201, r.text);
  matches(r.body.indexes, [
    { name: 'idx_slug_lang', fields: ['slug', 'lang'], unique: true },
    { name: 'idx_lang', fields: ['lang'], unique: false },
  ]);
  const a = await srv.api('POST', '/api/collections/slugs/records', { body: { slug: 'hello', lang: 'en' } });
  assert.equal(a.status, 201, a.text);
  const b = await srv.api('POST', '/api/collections/slugs/records', { body: { slug: 'hello', lang: 'fr' } });
  assert.equal(b.status, 201, b.text);
  const dup = await srv.api('POST', '/api/collections/slugs/records', { body: { slug: 'hello', lang: 'en' } });
  assertError(dup, 409, 'conflict');
  // update into a conflict is also 409
  const upd = await srv.api('PATCH', `/api/collections/slugs/records/${b.body.id}`, { token: su, body: { lang: 'en' } });
  assertError(upd, 409, 'conflict');
  const list = await srv.api('GET', '/api/collections/slugs/records', { token: su });
  assert.equal(list.body.totalItems, 2);

  // adding a unique index over existing duplicates is refused (never 500)
  const p = await srv.api('PATCH', '/api/collections/slugs', { token: su, body: { indexes: [{ name: 'idx_slug_only', fields: ['slug'], unique: true }] } });
  assert.ok(p.status === 400 || p.status === 409, `unique index over duplicates: ${p.status} ${p.text}`);
  assert.equal(p.body?.status, p.status);
  matches((await srv.api('GET', '/api/collections/slugs', { token: su })).body.indexes, [{ name: 'idx_slug_lang' }, { name: 'idx_lang' }]);
});

test('DELETE: 204 then 404 (collection and its records); a relation target cannot be deleted; _superusers cannot be deleted', async () => {
  const countries = await srv.createCollection({ name: 'countries', type: 'base', fields: [{ name: 'name', type: 'text' }] });
  await srv.createCollection({ name: 'cities', type: 'base', fields: [{ name: 'name', type: 'text' }, { name: 'country', type: 'relation', options: { collectionId: countries.id } }] });
  const fr = await seed(srv, 'countries', { name: 'France' });
  await seed(srv, 'cities', { name: 'Paris', country: fr.id });

  const blocked = await srv.api('DELETE', '/api/collections/countries', { token: su });
  assertError(blocked, 400);
  assert.equal((await srv.api('GET', '/api/collections/countries', { token: su })).status, 200);
  const kept = await srv.api('GET', `/api/collections/countries/records/${fr.id}`, { token: su });
  assert.equal(kept.status, 200, `records kept: ${kept.text}`);

  const d = await srv.api('DELETE', '/api/collections/cities', { token: su });
  assert.equal(d.status, 204, d.text);
  assert.equal(d.text, '');
  assertError(await srv.api('GET', '/api/collections/cities', { token: su }), 404, 'not_found');
  assertError(await srv.api('GET', '/api/collections/cities/records', { token: su }), 404, 'not_found');
  assertError(await srv.api('DELETE', '/api/collections/cities', { token: su }), 404, 'not_found');

  // no longer a relation target: delete by id works
  const d2 = await srv.api('DELETE', `/api/collections/${countries.id}`, { token: su });
  assert.equal(d2.status, 204, d2.text);
  assert.equal((await srv.api('GET', `/api/collections/${countries.id}`, { token: su })).status, 404);

  // the name is free again
  const again = await srv.api('POST', '/api/collections', { token: su, body: { name: 'cities', type: 'base', fields: [] } });
  assert.equal(again.status, 201, again.text);
  assert.equal((await srv.api('GET', '/api/collections/cities/records', { token: su })).body.totalItems, 0, 'recreated collection starts empty');

  const s = await srv.api('DELETE', '/api/collections/_superusers', { token: su });
  assert.ok(s.status === 400 || s.status === 403, `_superusers delete refused: ${s.status} ${s.text}`);
  assert.equal(s.body?.status, s.status, 'error envelope');
  assert.equal((await srv.api('GET', '/api/collections/_superusers', { token: su })).status, 200);
  const login = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: 'admin@test.local', password: 'supersecret1' } });
  assert.equal(login.status, 200, 'superuser can still log in');
});
