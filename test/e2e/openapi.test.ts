/**
 * `GET /api/openapi.json` end to end (docs/api.md, "OpenAPI document"): the document is a valid
 * OpenAPI 3.1 document, describes every route of docs/api.md's table and each collection's fields,
 * follows schema changes, answers only superusers unless SERVICE_OPENAPI_PUBLIC=1 (then only the
 * readable collections), and fits reality: real answers of the server validate against the
 * document's response schemas (ajv, JSON Schema 2020-12, OpenAPI 3.1's dialect).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROOT, startSvc, type ApiResponse, type Svc } from '../helpers/server.js';
import { assertError, createUsers, dumpServerLog, seed, signup, type User } from '../helpers/records-fixtures.js';

let srv: Svc;
let users: any;
let alice: User;

before(async () => {
  srv = await startSvc();
  users = await createUsers(srv, 'users');
  alice = await signup(srv, 'users', 'alice@example.com');
  await srv.createCollection({
    name: 'blog_posts', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public',
    fields: [
      { name: 'title', type: 'text', options: { required: true } },
      { name: 'published', type: 'bool' },
      { name: 'when', type: 'date' },
      { name: 'body', type: 'editor' },
      { name: 'status', type: 'select', options: { values: ['draft', 'published'] } },
      { name: 'tags', type: 'select', options: { values: ['news', 'tech'], maxSelect: 2 } },
      { name: 'price', type: 'number', options: { mode: 'fixed', scale: 2 } },
      { name: 'views', type: 'number' },
      { name: 'author', type: 'relation', options: { collectionId: users.id } },
      { name: 'site', type: 'url' },
      { name: 'readers', type: 'relation', options: { collectionId: users.id, maxSelect: 5 } },
      { name: 'meta', type: 'json' },
      { name: 'cover', type: 'file' },
      { name: 'gallery', type: 'file', options: { maxSelect: 3 } },
      { name: 'secret', type: 'text', options: { hidden: true } },
      { name: 'contact', type: 'email' },
      { name: 'touched', type: 'autodate', options: { onCreate: true, onUpdate: true } },
    ],
  });
  await srv.createCollection({ name: 'vault', type: 'base', fields: [{ name: 'code', type: 'text' }] });
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
});

async function getDoc(token: string | null = srv.suToken, s: Svc = srv): Promise<any> {
  const r = await s.api('GET', '/api/openapi.json', { token });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** A path template with its parameters' names erased, so `:col` and `{collection}` compare equal. */
const pathKey = (p: string): string => p.replace(/:[A-Za-z_]+/g, '{}').replace(/\{[^}]+\}/g, '{}');

/** Ajv over the document: `check(schema, value)` validates a value against a schema of it. */
function validatorOf(doc: any): (schema: any, value: unknown, label: string) => void {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  let n = 0;
  return (schema, value, label) => {
    const validate = ajv.compile({ ...schema, $id: `urn:svc-openapi:${n++}`, components: { schemas: doc.components.schemas } });
    assert.ok(validate(value), `${label}: ${JSON.stringify(validate.errors, null, 1)}\nvalue: ${JSON.stringify(value)}`);
  };
}

/** The JSON schema of an operation's answer with `status`. */
function responseSchema(doc: any, method: string, path: string, status: number): any {
  const op = doc.paths[path]?.[method];
  assert.ok(op, `${method} ${path} is in the document`);
  let resp = op.responses[String(status)];
  assert.ok(resp, `${method} ${path} answers ${status} in the document`);
  if (resp.$ref) resp = doc.components.responses[resp.$ref.split('/').pop()];
  return resp.content?.['application/json']?.schema;
}

/** The real answer `r` validates against the document's answer of `method path` with r's status. */
function checkReal(doc: any, method: string, path: string, r: ApiResponse, expected: number): void {
  assert.equal(r.status, expected, r.text);
  const schema = responseSchema(doc, method, path, r.status);
  if (r.status === 204) return assert.equal(r.text, '');
  assert.ok(schema, `${method} ${path} ${r.status} has a JSON schema`);
  validatorOf(doc)(schema, r.body, `${method} ${path} → ${r.status}`);
}

test('only superusers get the document by default, others the error envelope', async () => {
  const anon = await srv.api('GET', '/api/openapi.json');
  assertError(anon, 401, 'unauthorized');
  assert.deepEqual(Object.keys(anon.body), ['status', 'code', 'message', 'data']);
  assertError(await srv.api('GET', '/api/openapi.json', { token: alice.token }), 403, 'forbidden');
  assertError(await srv.api('GET', '/api/openapi.json', { token: 'not-a-token' }), 401, 'unauthorized');
  const r = await srv.api('GET', '/api/openapi.json', { token: srv.suToken });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(r.body.openapi, '3.1.0');
});

test('the document is a valid OpenAPI 3.1 document', async () => {
  const doc = await getDoc();
  const res = await new Validator().validate(doc);
  assert.equal(res.valid, true, JSON.stringify(res.errors, null, 1));
  const ids = Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId).filter(Boolean));
  assert.equal(new Set(ids).size, ids.length, 'operation ids are unique');
  assert.deepEqual(doc.components.schemas.Error.required, ['status', 'code', 'message', 'data']);
});

test('every route of docs/api.md\'s table and of its section tables is in the document', async () => {
  const doc = await getDoc();
  const have = new Set<string>();
  for (const [p, item] of Object.entries<any>(doc.paths)) for (const m of Object.keys(item)) have.add(`${m.toUpperCase()} ${pathKey(p)}`);
  const md = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
  const wanted = new Set<string>();
  // the index table (`GET /api/…`), and section tables (| GET | `/api/…` |)
  for (const m of md.matchAll(/^\| `(GET|POST|PATCH|PUT|DELETE) (\/api\/[^`?]+)`/gm)) wanted.add(`${m[1]} ${pathKey(m[2]!)}`);
  for (const m of md.matchAll(/^\| (GET|POST|PATCH|PUT|DELETE) \| `(\/api\/[^`?]+)[`?]/gm)) wanted.add(`${m[1]} ${pathKey(m[2]!)}`);
  // "…/magic_link/initiate" and the like: instances of the method routes
  const methodRoute = (k: string): string => k.replace(/\/auth\/(magic_link|otp|oauth2|webauthn|password)\/(initiate|complete)$/, '/auth/{}/$2');
  assert.ok(wanted.size > 40, `found ${wanted.size} routes in docs/api.md`);
  const missing = [...wanted].filter((k) => !have.has(k) && !have.has(methodRoute(k)));
  assert.deepEqual(missing, []);
});

test('each collection\'s record routes and fields are component schemas', async () => {
  const doc = await getDoc();
  const s = doc.components.schemas;
  const rec = s.BlogPostsRecord;
  assert.ok(rec, 'BlogPostsRecord');
  assert.equal(rec.properties.collectionName.const, 'blog_posts');
  assert.equal(rec.properties.secret, undefined, 'a hidden field is not in answers');
  assert.deepEqual(rec.properties.status, { type: ['string', 'null'], enum: ['draft', 'published', null] });
  assert.deepEqual(rec.properties.tags, { type: 'array', items: { type: 'string', enum: ['news', 'tech'] } });
  assert.deepEqual(rec.properties.author.type, ['string', 'null']);
  assert.equal(rec.properties.readers.type, 'array');
  assert.deepEqual(rec.properties.price.type, ['string', 'null'], 'a fixed number is a decimal string');
  assert.deepEqual(rec.properties.views.type, ['number', 'null']);
  assert.deepEqual(rec.properties.meta, {}, 'json: any value');
  assert.deepEqual(rec.properties.gallery, { type: 'array', items: { type: 'string' } });
  assert.equal(rec.properties.published.type, 'boolean');
  assert.ok(rec.required.includes('title') && rec.required.includes('id'));
  const create = s.BlogPostsCreate;
  assert.deepEqual(create.required, ['title']);
  assert.equal(create.properties.touched, undefined, 'autodate fields are not written');
  assert.ok(create.properties.secret, 'a hidden field may be written');
  assert.equal(create.properties.title.type, 'string', 'a required field is not nullable');
  assert.deepEqual(s.BlogPostsCreateForm.properties.cover, { type: ['string', 'null'], contentMediaType: 'application/octet-stream' });
  assert.deepEqual(s.BlogPostsUpdate.required, []);
  assert.equal(s.BlogPostsUpdate.properties.id, undefined);
  // auth collections: system fields, password on writes only
  const u = s.UsersRecord;
  for (const f of ['email', 'emailVisibility', 'verified', 'nick']) assert.ok(u.properties[f], f);
  assert.ok(!u.required.includes('email'), 'email is shown to others only when visible');
  for (const f of ['password', 'passwordHash', 'tokenKey']) assert.equal(u.properties[f], undefined, f);
  assert.ok(s.UsersCreate.required.includes('password') && s.UsersCreate.required.includes('email'));
  assert.ok(s.UsersUpdate.properties.oldPassword);
  // routes, with the rules (superuser document)
  const list = doc.paths['/api/collections/blog_posts/records'];
  assert.equal(list.get['x-svc-rule'], '@public');
  assert.equal(list.get.responses['200'].content['application/json'].schema.anyOf[0].properties.items.items.$ref, '#/components/schemas/BlogPostsRecord');
  assert.deepEqual(Object.keys(list.post.requestBody.content), ['application/json', 'multipart/form-data']);
  assert.equal(doc.paths['/api/collections/blog_posts/records/{id}'].delete['x-svc-rule'], null);
  assert.ok(doc.paths['/api/collections/users/auth-with-password'].post);
  assert.ok(doc.paths['/api/collections/vault/records'], 'superusers see locked collections');
  assert.ok(doc.paths['/api/collections/_superusers/records'], 'and the system ones');
});

test('the document follows schema changes: a new collection, a changed field, a deleted collection', async () => {
  const c = await srv.createCollection({ name: 'notes', type: 'base', fields: [{ name: 'text', type: 'text' }] });
  let doc = await getDoc();
  assert.deepEqual(Object.keys(doc.components.schemas.NotesRecord.properties).filter((k) => k === 'text' || k === 'level'), ['text']);
  assert.ok(doc.paths['/api/collections/notes/records/{id}']);
  const r = await srv.api('PATCH', '/api/collections/notes', { token: srv.suToken, body: { fields: [...c.fields, { name: 'level', type: 'select', options: { values: ['low', 'high'] } }], listRule: '@public' } });
  assert.equal(r.status, 200, r.text);
  doc = await getDoc();
  assert.deepEqual(doc.components.schemas.NotesRecord.properties.level.enum, ['low', 'high', null]);
  assert.equal(doc.paths['/api/collections/notes/records'].get['x-svc-rule'], '@public');
  assert.equal((await srv.api('DELETE', '/api/collections/notes', { token: srv.suToken })).status, 204);
  doc = await getDoc();
  assert.equal(doc.components.schemas.NotesRecord, undefined);
  assert.equal(doc.paths['/api/collections/notes/records'], undefined);
  assert.equal((await new Validator().validate(doc)).valid, true);
});

test('real answers validate against the document\'s response schemas', async () => {
  const doc = await getDoc();
  const P = '/api/collections/blog_posts/records';
  const empty = await srv.api('POST', P, { token: srv.suToken, body: { title: 'Empty' } });
  checkReal(doc, 'post', P, empty, 201);
  const full = await srv.api('POST', P, {
    token: srv.suToken,
    body: {
      title: 'Full', body: '<p>hi</p>', status: 'draft', tags: ['news', 'tech'], author: alice.id, readers: [alice.id], price: '12.50', views: 3,
      meta: { a: [1, 2] }, secret: 's', published: true, when: '2024-01-02 03:04:05.000Z', site: 'https://example.com', contact: 'c@example.com',
    },
  });
  checkReal(doc, 'post', P, full, 201);
  checkReal(doc, 'get', `${P}/{id}`, await srv.api('GET', `${P}/${full.body.id}`), 200);
  checkReal(doc, 'get', `${P}/{id}`, await srv.api('GET', `${P}/${full.body.id}?expand=author,readers`), 200);
  checkReal(doc, 'patch', `${P}/{id}`, await srv.api('PATCH', `${P}/${empty.body.id}`, { body: { views: 7, status: 'published' } }), 200);
  checkReal(doc, 'get', P, await srv.api('GET', `${P}?perPage=5&sort=-created`), 200);
  checkReal(doc, 'get', P, await srv.api('GET', `${P}?limit=1`), 200);
  checkReal(doc, 'get', `${P}/{id}`, await srv.api('GET', `${P}/aaaaaaaaaaaaaaa`), 404);
  checkReal(doc, 'post', P, await srv.api('POST', P, { body: { status: 'nope' } }), 400);
  checkReal(doc, 'delete', `${P}/{id}`, await srv.api('DELETE', `${P}/${empty.body.id}`), 404);
  checkReal(doc, 'delete', `${P}/{id}`, await srv.api('DELETE', `${P}/${empty.body.id}`, { token: srv.suToken }), 204);
  // auth records: as others see them, as the owner sees them, a sign-in
  const U = '/api/collections/users/records';
  checkReal(doc, 'get', U, await srv.api('GET', U), 200);
  checkReal(doc, 'get', `${U}/{id}`, await srv.api('GET', `${U}/${alice.id}`, { token: alice.token }), 200);
  checkReal(doc, 'post', U, await srv.api('POST', U, { body: { email: 'bob@example.com', password: 'password123', passwordConfirm: 'password123', nick: 'bob' } }), 201);
  checkReal(doc, 'post', '/api/collections/users/auth-with-password', await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'bob@example.com', password: 'password123' } }), 200);
  checkReal(doc, 'post', '/api/collections/users/auth-refresh', await srv.api('POST', '/api/collections/users/auth-refresh', { token: alice.token }), 200);
  // fixed routes
  checkReal(doc, 'get', '/api/health', await srv.api('GET', '/api/health'), 200);
  checkReal(doc, 'get', '/api/meta', await srv.api('GET', '/api/meta'), 200);
  checkReal(doc, 'get', '/api/collections', await srv.api('GET', '/api/collections', { token: srv.suToken }), 200);
  checkReal(doc, 'get', '/api/collections', await srv.api('GET', '/api/collections', { token: alice.token }), 403);
  checkReal(doc, 'get', '/api/collections/{idOrName}', await srv.api('GET', '/api/collections/blog_posts', { token: srv.suToken }), 200);
  checkReal(doc, 'get', '/api/collections/{collection}/records/{id}/abilities', await srv.api('GET', `${P}/${full.body.id}/abilities`), 200);
  checkReal(doc, 'post', '/api/batch', await srv.api('POST', '/api/batch', { token: srv.suToken, body: { requests: [{ method: 'POST', url: P, body: { title: 'In a batch' } }] } }), 200);
  checkReal(doc, 'get', '/api/settings', await srv.api('GET', '/api/settings', { token: srv.suToken }), 200);
  // a record the list answers must fit its collection's record schema item by item
  const page = await srv.api('GET', `${P}?perPage=50`);
  const check = validatorOf(doc);
  for (const item of page.body.items) check({ $ref: '#/components/schemas/BlogPostsRecord' }, item, `item ${item.id}`);
  // and the check is live: what the document does not allow fails it
  const item = full.body;
  for (const wrong of [{ ...item, secret: 's' }, { ...item, status: 'nope' }, { ...item, published: null }, { ...item, collectionName: 'users' }, { ...item, readers: alice.id }]) {
    assert.throws(() => check({ $ref: '#/components/schemas/BlogPostsRecord' }, wrong, 'wrong'), /wrong: /);
  }
  await seed(srv, 'vault', { code: 'x' });
});

test('SERVICE_OPENAPI_PUBLIC=1: anyone reads it, with only the readable collections and no rule text', async () => {
  const pub = await startSvc({ env: { SERVICE_OPENAPI_PUBLIC: '1' } });
  try {
    await createUsers(pub, 'members', { listRule: null, viewRule: '@request.auth.id != ""' });
    await pub.createCollection({ name: 'open_list', type: 'base', listRule: '@public', fields: [{ name: 'x', type: 'text' }] });
    await pub.createCollection({ name: 'locked', type: 'base', listRule: '', viewRule: null, createRule: '@public', fields: [{ name: 'y', type: 'text' }] });
    const doc = await getDoc(null, pub);
    assert.equal((await new Validator().validate(doc)).valid, true);
    assert.ok(doc.paths['/api/collections/open_list/records'], 'a public list rule');
    assert.ok(doc.paths['/api/collections/members/records/{id}'], 'a view rule that is not locked');
    assert.equal(doc.paths['/api/collections/locked/records'], undefined, 'superuser-only reads: not listed');
    assert.equal(doc.components.schemas.LockedRecord, undefined);
    assert.equal(doc.paths['/api/collections/_superusers/records'], undefined);
    assert.equal(JSON.stringify(doc).includes('x-svc-rule'), false, 'no rule text');
    assert.equal(doc.paths['/api/collections/open_list/records'].get.description, 'Who: anyone (`@public`).');
    // a superuser still gets the whole document
    const full = await getDoc(pub.suToken, pub);
    assert.ok(full.paths['/api/collections/locked/records']);
    assert.equal(full.paths['/api/collections/locked/records'].post['x-svc-rule'], '@public');
    assertError(await pub.api('GET', '/api/openapi.json', { token: 'bad' }), 401, 'unauthorized');
  } finally {
    await pub.stop();
  }
});

test('an app\'s routes are listed and a moved route is described where it is served', async () => {
  const app = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-features.mjs')}`] });
  try {
    const doc = await getDoc(app.suToken, app);
    assert.equal((await new Validator().validate(doc)).valid, true);
    assert.equal(doc.paths['/api/state'], undefined, 'the app moved the state route');
    assert.deepEqual(doc.paths['/api/flags-state'].get.tags, ['Other']);
    assert.deepEqual(doc.paths['/api/checkout'].get.tags, ['Other']);
    assert.ok(doc.paths['/api/health'].get && doc.paths['/api/collections'].get);
  } finally {
    await app.stop();
  }
});
