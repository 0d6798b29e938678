/**
 * Resumable uploads end to end, in RAM (2-uploads-and-mail.md: "Upload session", "Upload budgets",
 * the Upload session state machine, the endpoints' six rules, "Errors", "Limits"). The real server
 * with `--features=resumable-uploads`, real HTTP, byte-level checks on the stored file. The
 * persistence mode is test/e2e/uploads-durable.test.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Upload } from 'tus-js-client';
import WebSocket from 'ws';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, createUsers, dumpServerLog, signup, type User } from '../helpers/records-fixtures.js';
import { sleep } from '../helpers/auth-helpers.js';
import { jsonRecordsSince } from '../helpers/proc.js';
import { waitFor } from '../helpers/wait.js';

/** A 1×1 PNG. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201ff9b4d0a0000000049454e44ae426082', 'hex');
const KIB = 1024;

let srv: Svc;
let alice: User;
let bob: User;
let users: any;
let docs: any;

const auth = (u: User | string) => ({ authorization: `Bearer ${typeof u === 'string' ? u : u.token}` });

async function call(method: string, path: string, opts: { token?: User | string | null; body?: unknown; raw?: Buffer; offset?: number | string; headers?: Record<string, string>; server?: Svc } = {}): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const headers: Record<string, string> = { ...(opts.token ? auth(opts.token) : {}), ...opts.headers };
  let body: BodyInit | undefined;
  if (opts.raw !== undefined) {
    body = opts.raw;
    headers['content-type'] ??= 'application/octet-stream';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  if (opts.offset !== undefined) headers['upload-offset'] = String(opts.offset);
  const res = await fetch((opts.server ?? srv).url + path, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers, text };
}

async function newDoc(owner: User, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await call('POST', '/api/collections/docs/records', { token: owner, body: { owner: owner.id, title: 'doc', ...extra } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

const create = (doc: string, body: Record<string, unknown>, token: User | string | null = alice, col = 'docs', server?: Svc) =>
  call('POST', `/api/collections/${col}/records/${doc}/uploads`, { token, body, server });

/**
 * Waits until `server` has logged a `method` request to `path` written after `mark`: a request the
 * client cut off is let go of (its chunk no longer being received) when the server notices, in
 * its own time.
 */
async function logged(server: Svc, mark: number, method: string, path: string): Promise<void> {
  const seen = () => jsonRecordsSince(server.stderr(), mark).some((r) => r.scope === 'http' && r.method === method && r.path === path);
  await waitFor(seen, 10_000);
  assert.ok(seen(), `the server logged the cut-off ${method} ${path}`);
}

/** Sends `data` in chunks of `size` from offset 0. */
async function sendAll(id: string, data: Buffer, size: number, token: User = alice, server?: Svc): Promise<void> {
  for (let at = 0; at < data.length; at += size) {
    const r = await call('PATCH', `/api/uploads/${id}`, { token, raw: data.subarray(at, at + size), offset: at, server });
    assert.equal(r.status, 204, `chunk at ${at}: ${JSON.stringify(r.body)}`);
    assert.equal(r.headers.get('upload-offset'), String(Math.min(at + size, data.length)));
  }
}

async function download(col: string, rid: string, name: string, server: Svc = srv, token: User | string = alice): Promise<Buffer> {
  const res = await fetch(`${server.url}/api/files/${col}/${rid}/${name}`, { headers: auth(token) });
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

before(async () => {
  // roomy session quotas (terminal sessions keep their slot for the TTL); the quotas are tested on a server of their own
  srv = await startSvc({
    args: ['--features=resumable-uploads'],
    env: { SERVICE_UPLOAD_MAX_SESSIONS: '200', SERVICE_UPLOAD_MAX_SESSIONS_PER_PRINCIPAL: '200', SERVICE_UPLOAD_MAX_TOTAL_BYTES: String(64 * 1024 * KIB), SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(64 * KIB), SERVICE_UPLOAD_MAX_UPLOAD_BYTES: String(2 * 1024 * KIB) },
  });
  users = await createUsers(srv, 'users');
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
  bob = await signup(srv, 'users', 'bob@example.com', 'bob-password');
  docs = await srv.createCollection({
    name: 'docs', type: 'base',
    listRule: '@request.auth.id != ""', viewRule: '@request.auth.id != ""', createRule: '@request.auth.id != ""',
    updateRule: 'owner = @request.auth.id', deleteRule: 'owner = @request.auth.id',
    fields: [
      { name: 'owner', type: 'relation', options: { collectionId: users.id } },
      { name: 'title', type: 'text' },
      { name: 'file', type: 'file', options: { maxSize: 1024 * KIB } },
      { name: 'files', type: 'file', options: { maxSelect: 5, maxSize: 1024 * KIB } },
      { name: 'image', type: 'file', options: { maxSize: 64 * KIB, mimeTypes: ['image/png'] } },
    ],
  });
  // an update rule that needs a proposed body field: creation is denied by rule 1
  await srv.createCollection({
    name: 'strict', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public',
    updateRule: "@request.data.title != ''", fields: [{ name: 'title', type: 'text' }, { name: 'file', type: 'file' }],
  });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('create, chunks, GET, commit: the file lands as a multipart upload would, byte for byte', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(300 * KIB + 123);
  const c = await create(doc, { field: 'file', filename: 'report final.bin', length: data.length, mimetype: 'application/octet-stream' });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.deepEqual(Object.keys(c.body).sort(), ['durability', 'expiresAt', 'id', 'length', 'offset', 'state']);
  assert.equal(c.body.offset, 0);
  assert.equal(c.body.length, data.length);
  assert.equal(c.body.state, 'receiving');
  assert.equal(c.body.durability, 'process-local');
  assert.match(c.body.id, /^[A-Za-z0-9_-]{32}$/);
  const expires = Date.parse(c.body.expiresAt.replace(' ', 'T'));
  assert.ok(Math.abs(expires - (Date.now() + 900_000)) < 60_000, `expiresAt ${c.body.expiresAt} is 900 s ahead`);
  assert.equal(c.headers.get('location'), `/api/uploads/${c.body.id}`);

  await sendAll(c.body.id, data.subarray(0, 128 * KIB), 64 * KIB);
  const g = await call('GET', `/api/uploads/${c.body.id}`, { token: alice });
  assert.equal(g.status, 200);
  assert.deepEqual(g.body, { ...c.body, offset: 128 * KIB });
  // chunks never extend the expiry
  assert.equal(g.body.expiresAt, c.body.expiresAt);
  for (let at = 128 * KIB; at < data.length; at += 64 * KIB) {
    const r = await call('PATCH', `/api/uploads/${c.body.id}`, { token: alice, raw: data.subarray(at, at + 64 * KIB), offset: at });
    assert.equal(r.status, 204);
  }
  const done = await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice });
  assert.equal(done.status, 204, JSON.stringify(done.body));
  const rec = await call('GET', `/api/collections/docs/records/${doc}`, { token: alice });
  assert.match(rec.body.file, /^report_final_[a-z0-9]{10}\.bin$/);
  assert.ok((await download('docs', doc, rec.body.file)).equals(data));
  const after = await call('GET', `/api/uploads/${c.body.id}`, { token: alice });
  assert.equal(after.body.state, 'completed');
  assert.equal(after.body.offset, data.length);
});

test('a repeated commit of a completed session is acknowledged without touching the record; abort then is 409', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(1000);
  const c = await create(doc, { field: 'file', filename: 'a.bin', length: data.length });
  await sendAll(c.body.id, data, 64 * KIB);
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
  const first = (await call('GET', `/api/collections/docs/records/${doc}`, { token: alice })).body;
  // the record is deleted meanwhile: a real re-run would fail, the acknowledgement does not read it
  assert.equal((await call('DELETE', `/api/collections/docs/records/${doc}`, { token: alice })).status, 204);
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
  assert.ok(first.file);
  assertError(await call('DELETE', `/api/uploads/${c.body.id}`, { token: alice }), 409, 'conflict');
  // another principal cannot see or acknowledge it
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: bob })).status, 404);
});

test('authentication: a bearer credential on every call; cookies alone are ignored; another principal gets 404', async () => {
  const doc = await newDoc(alice);
  assertError(await create(doc, { field: 'file', filename: 'x.bin', length: 10 }, null), 401);
  assertError(await create(doc, { field: 'file', filename: 'x.bin', length: 10 }, 'not-a-token'), 401);
  const c = await create(doc, { field: 'file', filename: 'x.bin', length: 10 });
  const id = c.body.id;
  // the session cookie of a password login is not a credential here
  const login = await fetch(`${srv.url}/api/collections/users/auth-with-password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: alice.email, password: alice.password }) });
  const cookie = login.headers.getSetCookie().map((x) => x.split(';')[0]).join('; ');
  assert.ok(cookie.includes('='), 'the login set a cookie');
  for (const [method, path] of [['GET', `/api/uploads/${id}`], ['POST', `/api/uploads/${id}/commit`], ['DELETE', `/api/uploads/${id}`]]) {
    assertError(await call(method, path, { headers: { cookie } }), 401);
    assertError(await call(method, path, { token: bob }), 404);
  }
  assertError(await call('PATCH', `/api/uploads/${id}`, { headers: { cookie }, raw: Buffer.alloc(5), offset: 0 }), 401);
  assertError(await call('PATCH', `/api/uploads/${id}`, { token: bob, raw: Buffer.alloc(5), offset: 0 }), 404);
  // nothing moved
  assert.equal((await call('GET', `/api/uploads/${id}`, { token: alice })).body.offset, 0);
  assertError(await call('GET', '/api/uploads/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', { token: alice }), 404);
  assert.equal((await call('DELETE', `/api/uploads/${id}`, { token: alice })).status, 204);
});

test('rule 1: create preauthorizes against the record (update rule, empty proposed update); no record edits ride along', async () => {
  const doc = await newDoc(alice);
  assertError(await create(doc, { field: 'file', filename: 'x.bin', length: 10 }, bob), 404);
  assertError(await create('aaaaaaaaaaaaaaa', { field: 'file', filename: 'x.bin', length: 10 }), 404);
  assertError(await create(doc, { field: 'file', filename: 'x.bin', length: 10 }, alice, 'nope'), 404);
  const strict = await srv.api('POST', '/api/collections/strict/records', { body: { title: 't' } });
  assertError(await create(strict.body.id, { field: 'file', filename: 'x.bin', length: 10 }), 404);
  // the denial came before field-shape validation: an invalid body is still 404
  assertError(await create(doc, { field: 'nope' }, bob), 404);
  const edit = await create(doc, { field: 'file', filename: 'x.bin', length: 10, title: 'changed' });
  assertError(edit , 400);
  assert.equal(edit.body.data.title.code, 'validation_value');
});

test('create validation: 400 for bad metadata or past the upload budget, 413 above maxSize without using a slot', async () => {
  const doc = await newDoc(alice);
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ filename: 'x', length: 1 }, 'field'],
    [{ field: 'title', filename: 'x', length: 1 }, 'field'],
    [{ field: 'file', length: 1 }, 'filename'],
    [{ field: 'file', filename: 'a/b', length: 1 }, 'filename'],
    [{ field: 'file', filename: 'x', length: 0 }, 'length'],
    [{ field: 'file', filename: 'x', length: 1.5 }, 'length'],
    [{ field: 'file', filename: 'x', length: '5' }, 'length'],
    [{ field: 'file', filename: 'x', length: 5, mimetype: 'not a type' }, 'mimetype'],
  ];
  for (const [body, field] of bad) {
    const r = await create(doc, body);
    assertError(r , 400);
    assert.ok(r.body.data[field], `${JSON.stringify(body)} names ${field}: ${JSON.stringify(r.body)}`);
  }
  assertError(await call('POST', `/api/collections/docs/records/${doc}/uploads`, { token: alice, body: [1] }), 400);
  assertError(await create(doc, { field: 'file', filename: 'x'.repeat(2400), length: 5 }), 400);
  // the field's maxSize (1 MiB) is checked first: 413, many times, and no slot is used
  for (let i = 0; i < 4; i++) assertError(await create(doc, { field: 'file', filename: 'x', length: 1024 * KIB + 1 }), 413, 'payload_too_large');
  // a field without maxSize: the store's max_upload_bytes (2 MiB here) is a 400
  const schema = (await srv.api('GET', '/api/collections/docs', { token: srv.suToken })).body.schema;
  const roomy = schema.map((f: any) => (f.name === 'files' ? { ...f, options: { ...f.options, maxSize: 4096 * KIB } } : f));
  assert.equal((await srv.api('PATCH', '/api/collections/docs', { token: srv.suToken, body: { schema: roomy } })).status, 200);
  assertError(await create(doc, { field: 'files', filename: 'x', length: 2048 * KIB + 1 }), 400);
  assert.equal((await srv.api('PATCH', '/api/collections/docs', { token: srv.suToken, body: { schema } })).status, 200);
  const a = await create(doc, { field: 'file', filename: 'x', length: 10 });
  const b = await create(doc, { field: 'file', filename: 'y', length: 10 });
  assert.equal(a.status, 201);
  assert.equal(b.status, 201);
  await call('DELETE', `/api/uploads/${a.body.id}`, { token: alice });
  await call('DELETE', `/api/uploads/${b.body.id}`, { token: alice });
});

test('rule 3: chunk offsets (exact append, idempotent re-send, differing bytes, holes, partial overlaps, past the end) and chunk sizes', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(100 * KIB);
  const c = await create(doc, { field: 'file', filename: 'x.bin', length: data.length });
  const id = c.body.id;
  const patch = (at: number | string, bytes: Buffer, headers: Record<string, string> = {}) => call('PATCH', `/api/uploads/${id}`, { token: alice, raw: bytes, offset: at, headers });
  const offset = async () => (await call('GET', `/api/uploads/${id}`, { token: alice })).body.offset;
  assert.equal((await patch(0, data.subarray(0, 40 * KIB))).status, 204);
  // the same acknowledged bytes again, whole or a part inside: 204, nothing moves
  assert.equal((await patch(0, data.subarray(0, 40 * KIB))).status, 204);
  assert.equal((await patch(10 * KIB, data.subarray(10 * KIB, 20 * KIB))).status, 204);
  assert.equal(await offset(), 40 * KIB);
  // different bytes on an acknowledged range
  const other = Buffer.from(data.subarray(10 * KIB, 20 * KIB));
  other[5] ^= 0xff;
  assertError(await patch(10 * KIB, other), 409, 'conflict');
  // a hole, a partial overlap, past the declared length
  assertError(await patch(41 * KIB, data.subarray(41 * KIB, 42 * KIB)), 409, 'conflict');
  assertError(await patch(30 * KIB, data.subarray(30 * KIB, 50 * KIB)), 409, 'conflict');
  assertError(await patch(40 * KIB, Buffer.concat([data.subarray(40 * KIB), Buffer.alloc(1)])), 409, 'conflict');
  assert.equal(await offset(), 40 * KIB, 'no progress from refused chunks');
  // empty and oversized (max_chunk_bytes 64 KiB) chunks; bad headers
  assertError(await patch(40 * KIB, Buffer.alloc(0)), 400);
  assertError(await patch(40 * KIB, randomBytes(64 * KIB + 1)), 400);
  assertError(await call('PATCH', `/api/uploads/${id}`, { token: alice, raw: data.subarray(40 * KIB, 41 * KIB) }), 400);
  assertError(await patch('-1', data.subarray(40 * KIB, 41 * KIB)), 400);
  assertError(await patch('0x10', data.subarray(40 * KIB, 41 * KIB)), 400);
  assertError(await patch(40 * KIB, data.subarray(40 * KIB, 41 * KIB), { 'content-type': 'application/json' }), 400);
  assert.equal(await offset(), 40 * KIB);
  // a commit before every byte is acknowledged
  assertError(await call('POST', `/api/uploads/${id}/commit`, { token: alice }), 409, 'conflict');
  assert.equal((await patch(40 * KIB, data.subarray(40 * KIB, 100 * KIB))).status, 204);
  assert.equal((await call('POST', `/api/uploads/${id}/commit`, { token: alice })).status, 204);
  // chunks after the commit
  assertError(await patch(0, data.subarray(0, KIB)), 409, 'conflict');
  const rec = await call('GET', `/api/collections/docs/records/${doc}`, { token: alice });
  assert.ok((await download('docs', doc, rec.body.file)).equals(data));
});

test('a chunk cut off mid-body acknowledges nothing; the re-sent chunk then completes', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(60 * KIB);
  const c = await create(doc, { field: 'file', filename: 'x.bin', length: data.length });
  const { request } = await import('node:http');
  const url = new URL(`${srv.url}/api/uploads/${c.body.id}`);
  const mark = srv.stderr().length;
  await new Promise<void>((resolve) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'PATCH', headers: { ...auth(alice), 'content-type': 'application/octet-stream', 'content-length': String(data.length), 'upload-offset': '0' } });
    req.on('error', () => resolve());
    req.write(data.subarray(0, 20 * KIB));
    setTimeout(() => { req.destroy(); resolve(); }, 200);
  });
  await logged(srv, mark, 'PATCH', url.pathname);
  assert.equal((await call('GET', `/api/uploads/${c.body.id}`, { token: alice })).body.offset, 0);
  await sendAll(c.body.id, data, 64 * KIB);
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
});

test('rule 6: abort removes a receiving session (then 404); unknown ids are 404', async () => {
  const doc = await newDoc(alice);
  const c = await create(doc, { field: 'file', filename: 'x.bin', length: 10 });
  assert.equal((await call('DELETE', `/api/uploads/${c.body.id}`, { token: alice })).status, 204);
  for (const [method, path] of [['GET', `/api/uploads/${c.body.id}`], ['DELETE', `/api/uploads/${c.body.id}`], ['POST', `/api/uploads/${c.body.id}/commit`]]) {
    assertError(await call(method, path, { token: alice }), 404);
  }
  assertError(await call('PATCH', `/api/uploads/${c.body.id}`, { token: alice, raw: Buffer.alloc(10), offset: 0 }), 404);
  // the record was never touched
  assert.equal((await call('GET', `/api/collections/docs/records/${doc}`, { token: alice })).body.file, null);
});

test('rule 5: commit keeps other changes made meanwhile, appends to a multi-file field, rechecks rules and constraints', async () => {
  const doc = await newDoc(alice);
  // a file already there (multipart) stays; the title changed during the transfer stays
  const fd = new FormData();
  fd.append('files', new Blob([Buffer.from('first file')]), 'first.txt');
  assert.equal((await fetch(`${srv.url}/api/collections/docs/records/${doc}`, { method: 'PATCH', body: fd, headers: auth(alice) })).status, 200);
  const data = randomBytes(5000);
  const c = await create(doc, { field: 'files', filename: 'second.bin', length: data.length });
  await sendAll(c.body.id, data, 64 * KIB);
  assert.equal((await call('PATCH', `/api/collections/docs/records/${doc}`, { token: alice, body: { title: 'renamed meanwhile' } })).status, 200);
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
  const rec = (await call('GET', `/api/collections/docs/records/${doc}`, { token: alice })).body;
  assert.equal(rec.title, 'renamed meanwhile');
  assert.equal(rec.files.length, 2);
  assert.match(rec.files[0], /^first_/);
  assert.ok((await download('docs', doc, rec.files[1])).equals(data));

  // sniffed type checked at commit: a non-PNG into the PNG-only field fails and the session is failed
  const img = await create(doc, { field: 'image', filename: 'fake.png', length: 100, mimetype: 'image/png' });
  await sendAll(img.body.id, Buffer.alloc(100, 7), 64 * KIB);
  const bad = await call('POST', `/api/uploads/${img.body.id}/commit`, { token: alice });
  assertError(bad , 400);
  assert.equal(bad.body.data.image.code, 'validation_value');
  assert.equal((await call('GET', `/api/uploads/${img.body.id}`, { token: alice })).body.state, 'failed');
  assertError(await call('POST', `/api/uploads/${img.body.id}/commit`, { token: alice }), 409);
  assertError(await call('DELETE', `/api/uploads/${img.body.id}`, { token: alice }), 409);
  // a real PNG passes
  const ok = await create(doc, { field: 'image', filename: 'dot.png', length: PNG.length });
  await sendAll(ok.body.id, PNG, 64 * KIB);
  assert.equal((await call('POST', `/api/uploads/${ok.body.id}/commit`, { token: alice })).status, 204);

  // the update rule is checked again: the record changes owner during the transfer
  const doc2 = await newDoc(alice);
  const moved = await create(doc2, { field: 'file', filename: 'm.bin', length: 10 });
  await sendAll(moved.body.id, Buffer.alloc(10, 1), 64 * KIB);
  assert.equal((await call('PATCH', `/api/collections/docs/records/${doc2}`, { token: alice, body: { owner: bob.id } })).status, 200);
  assertError(await call('POST', `/api/uploads/${moved.body.id}/commit`, { token: alice }), 404);
  assert.equal((await call('GET', `/api/uploads/${moved.body.id}`, { token: alice })).body.state, 'failed');
  assert.equal((await call('GET', `/api/collections/docs/records/${doc2}`, { token: bob })).body.file, null);
});

test('rule 5: a collection replaced under the same name cannot receive an old upload', async () => {
  await srv.createCollection({ name: 'temp', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', fields: [{ name: 'file', type: 'file' }] });
  const rec = await srv.api('POST', '/api/collections/temp/records', { body: {} });
  const c = await create(rec.body.id, { field: 'file', filename: 'x.bin', length: 10 }, alice, 'temp');
  await sendAll(c.body.id, Buffer.alloc(10, 2), 64 * KIB);
  assert.equal((await srv.api('DELETE', '/api/collections/temp', { token: srv.suToken })).status, 204);
  await srv.createCollection({ name: 'temp', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', fields: [{ name: 'file', type: 'file' }] });
  await srv.api('POST', '/api/collections/temp/records', { body: { id: rec.body.id } });
  assertError(await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice }), 404);
  assert.equal((await srv.api('GET', `/api/collections/temp/records/${rec.body.id}`)).body.file, null);
});

test('competing commits: one commits, the other is refused, and the file lands once', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(512 * KIB);
  const c = await create(doc, { field: 'files', filename: 'race.bin', length: data.length });
  await sendAll(c.body.id, data, 64 * KIB);
  const results = await Promise.all([0, 1, 2].map(() => call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })));
  const statuses = results.map((r) => r.status);
  assert.ok(statuses.includes(204), `statuses ${statuses}`);
  assert.ok(statuses.every((s) => s === 204 || s === 409), `statuses ${statuses}`);
  const rec = (await call('GET', `/api/collections/docs/records/${doc}`, { token: alice })).body;
  assert.equal(rec.files.length, 1);
});

test('the feature off: no upload routes', async () => {
  const plain = await startSvc();
  try {
    assert.equal((await plain.api('GET', '/api/uploads/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', { token: plain.suToken })).status, 404);
    assert.equal((await plain.api('POST', '/api/collections/x/records/y/uploads', { token: plain.suToken, body: {} })).status, 404);
    assert.equal((await plain.api('GET', '/api/meta')).body.capabilities.resumableUploads, false);
  } finally {
    await plain.stop();
  }
  assert.equal((await srv.api('GET', '/api/meta')).body.capabilities.resumableUploads, true);
});

test('budgets: sessions per principal, sessions in all, payload bytes (429), terminal slots kept until expiry, expiry sweeps', async () => {
  const small = await startSvc({
    args: ['--features=resumable-uploads'],
    // every client here has one address: its share is every slot (the address share has its own test)
    env: { SERVICE_UPLOAD_MAX_SESSIONS: '3', SERVICE_UPLOAD_MAX_SESSIONS_PER_PRINCIPAL: '2', SERVICE_UPLOAD_MAX_SESSIONS_PER_ADDRESS: '3', SERVICE_UPLOAD_MAX_UPLOAD_BYTES: String(64 * KIB), SERVICE_UPLOAD_MAX_TOTAL_BYTES: String(100 * KIB), SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(16 * KIB), SERVICE_UPLOAD_TTL_SECONDS: '5' },
  });
  try {
    const u = await createUsers(small, 'users');
    const a = await signup(small, 'users', 'a@example.com', 'a-password');
    const b = await signup(small, 'users', 'b@example.com', 'b-password');
    const cc = await signup(small, 'users', 'c@example.com', 'c-password');
    await small.createCollection({ name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@request.auth.id != ""', fields: [{ name: 'file', type: 'file' }, { name: 'owner', type: 'relation', options: { collectionId: u.id } }] });
    const doc = (await small.api('POST', '/api/collections/docs/records', { body: {} })).body.id;
    const mk = (who: User, length: number) => create(doc, { field: 'file', filename: 'f.bin', length }, who, 'docs', small);
    const a1 = await mk(a, 40 * KIB);
    assert.equal(a1.status, 201);
    // a1 completes: its slot stays until its expiry, its payload bytes are released
    await sendAll(a1.body.id, Buffer.alloc(40 * KIB, 1), 16 * KIB, a, small);
    assert.equal((await call('POST', `/api/uploads/${a1.body.id}/commit`, { token: a, server: small })).status, 204);
    const a2 = await mk(a, 60 * KIB);
    assert.equal(a2.status, 201);
    assertError(await mk(a, 1), 429, 'too_many_requests'); // per principal (2), a terminal slot included
    assertError(await mk(b, 50 * KIB), 429, 'too_many_requests'); // payload bytes: 60 + 50 > 100 KiB
    const b1 = await mk(b, 40 * KIB);
    assert.equal(b1.status, 201); // 60 + 40 = 100 KiB
    assertError(await mk(cc, 1), 429, 'too_many_requests'); // sessions in all (3)
    // aborting releases a slot and its bytes at once
    assert.equal((await call('DELETE', `/api/uploads/${b1.body.id}`, { token: b, server: small })).status, 204);
    const c1 = await mk(cc, 40 * KIB);
    assert.equal(c1.status, 201);
    // after the expiry (5 s: every check above runs while a1 still holds its slot, however slow
    // the machine) every session is gone, terminal or not
    await sleep(5300);
    assertError(await call('GET', `/api/uploads/${a1.body.id}`, { token: a, server: small }), 404);
    assertError(await call('GET', `/api/uploads/${a2.body.id}`, { token: a, server: small }), 404);
    assertError(await call('POST', `/api/uploads/${a1.body.id}/commit`, { token: a, server: small }), 404);
    assertError(await call('PATCH', `/api/uploads/${c1.body.id}`, { token: cc, raw: Buffer.alloc(10), offset: 0, server: small }), 404);
    assert.equal((await mk(a, 60 * KIB)).status, 201);
    assert.equal((await mk(a, 40 * KIB)).status, 201);
  } finally {
    await small.stop();
  }
});

test('a few sign-ups from one address cannot take every slot: the per-address share (default half of max_sessions, 429 past it); an abort gives the slot back', async () => {
  // behind a trusted proxy the client address is the first X-Forwarded-For hop
  const proxied = await startSvc({ args: ['--features=resumable-uploads', '--trust-proxy'], env: { SERVICE_UPLOAD_MAX_SESSIONS: '4', SERVICE_UPLOAD_MAX_SESSIONS_PER_PRINCIPAL: '2' } });
  try {
    await createUsers(proxied, 'users');
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((n) => signup(proxied, 'users', `${n}@example.com`, `${n}-password`)));
    await proxied.createCollection({ name: 'docs', type: 'base', createRule: '@public', updateRule: '@request.auth.id != ""', fields: [{ name: 'file', type: 'file' }] });
    const doc = (await proxied.api('POST', '/api/collections/docs/records', { body: {} })).body.id;
    const mk = (who: User, address: string) => call('POST', `/api/collections/docs/records/${doc}/uploads`, { token: who, body: { field: 'file', filename: 'f.bin', length: 16 }, headers: { 'x-forwarded-for': address }, server: proxied });
    const ATTACKER = '203.0.113.9';
    const a1 = await mk(a, ATTACKER);
    assert.equal(a1.status, 201, a1.text);
    assert.equal((await mk(b, ATTACKER)).status, 201);
    // the address holds its share (2 of 4): a third account from it gets 429, whoever it is
    const over = await mk(c, ATTACKER);
    assertError(over, 429, 'too_many_requests');
    assert.match(over.body.message, /per address/);
    assertError(await mk(a, `${ATTACKER}, 10.0.0.1`), 429, 'too_many_requests');
    // another address still gets the slots left
    assert.equal((await mk(c, '198.51.100.7')).status, 201);
    assert.equal((await mk(d, '198.51.100.8')).status, 201);
    // the cap (4) is reached; aborting one of the attacker's sessions gives its slot back at once
    assertError(await mk(d, '198.51.100.8'), 429, 'too_many_requests');
    assert.equal((await call('DELETE', `/api/uploads/${a1.body.id}`, { token: a, server: proxied })).status, 204);
    const again = await mk(d, '198.51.100.8');
    assert.equal(again.status, 201, again.text);
  } finally {
    await proxied.stop();
  }
});

test('tus-js-client resumes and sends the chunks of a session created through the API', async () => {
  const doc = await newDoc(alice);
  const data = randomBytes(200 * KIB + 7);
  const c = await create(doc, { field: 'file', filename: 'tus.bin', length: data.length });
  // a first part by hand, as if an earlier attempt had stopped
  await sendAll(c.body.id, data.subarray(0, 64 * KIB), 64 * KIB);
  let progress = 0;
  await new Promise<void>((resolve, reject) => {
    const up = new Upload(data, {
      uploadUrl: `${srv.url}/api/uploads/${c.body.id}`,
      chunkSize: 64 * KIB,
      headers: auth(alice),
      retryDelays: [],
      onProgress: (sent) => { progress = sent; },
      onError: reject,
      onSuccess: () => resolve(),
    });
    up.start();
  });
  assert.equal(progress, data.length);
  assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
  const rec = (await call('GET', `/api/collections/docs/records/${doc}`, { token: alice })).body;
  assert.ok((await download('docs', doc, rec.file)).equals(data));
});

test('the node:http engine takes chunks through the same sink: offsets, a re-send, a differing byte, a cut-off chunk, commit', async () => {
  const nodeSrv = await startSvc({ args: ['--features=resumable-uploads'], env: { SERVICE_HTTP_ENGINE: 'node', SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(64 * KIB) } });
  try {
    assert.equal((await nodeSrv.api('GET', '/api/health')).body.http.engine, 'node:http');
    await createUsers(nodeSrv, 'users');
    const u = await signup(nodeSrv, 'users', 'n@example.com', 'n-password');
    await nodeSrv.createCollection({ name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@request.auth.id != ""', fields: [{ name: 'file', type: 'file' }] });
    const doc = (await nodeSrv.api('POST', '/api/collections/docs/records', { body: {} })).body.id;
    const data = randomBytes(150 * KIB);
    const c = await create(doc, { field: 'file', filename: 'n.bin', length: data.length }, u, 'docs', nodeSrv);
    assert.equal(c.status, 201);
    const { request } = await import('node:http');
    const url = new URL(`${nodeSrv.url}/api/uploads/${c.body.id}`);
    const mark = nodeSrv.stderr().length;
    await new Promise<void>((resolve) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'PATCH', headers: { ...auth(u), 'content-type': 'application/octet-stream', 'content-length': String(64 * KIB), 'upload-offset': '0' } });
      req.on('error', () => resolve());
      req.write(data.subarray(0, 10 * KIB));
      setTimeout(() => { req.destroy(); resolve(); }, 200);
    });
    await logged(nodeSrv, mark, 'PATCH', url.pathname);
    assert.equal((await call('GET', `/api/uploads/${c.body.id}`, { token: u, server: nodeSrv })).body.offset, 0);
    await sendAll(c.body.id, data.subarray(0, 64 * KIB), 64 * KIB, u, nodeSrv);
    assert.equal((await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: data.subarray(0, 64 * KIB), offset: 0, server: nodeSrv })).status, 204);
    const other = Buffer.from(data.subarray(0, 64 * KIB));
    other[100] ^= 1;
    assertError(await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: other, offset: 0, server: nodeSrv }), 409, 'conflict');
    assertError(await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: data.subarray(100 * KIB, 110 * KIB), offset: 100 * KIB, server: nodeSrv }), 409, 'conflict');
    for (let at = 64 * KIB; at < data.length; at += 64 * KIB) {
      assert.equal((await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: data.subarray(at, at + 64 * KIB), offset: at, server: nodeSrv })).status, 204);
    }
    assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: u, server: nodeSrv })).status, 204);
    const rec = (await nodeSrv.api('GET', `/api/collections/docs/records/${doc}`)).body;
    assert.ok((await download('docs', doc, rec.file, nodeSrv, u)).equals(data));
  } finally {
    await nodeSrv.stop();
  }
});

test('the server\'s request body limit (32 MiB) applies to each chunk: 413 even under a larger chunk budget', async () => {
  const big = await startSvc({ args: ['--features=resumable-uploads'], env: { SERVICE_UPLOAD_MAX_CHUNK_BYTES: String(64 * 1024 * KIB), SERVICE_UPLOAD_MAX_UPLOAD_BYTES: String(64 * 1024 * KIB), SERVICE_UPLOAD_MAX_TOTAL_BYTES: String(64 * 1024 * KIB) } });
  try {
    await createUsers(big, 'users');
    const u = await signup(big, 'users', 'big@example.com', 'big-password');
    await big.createCollection({ name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@request.auth.id != ""', fields: [{ name: 'file', type: 'file', options: { maxSize: 64 * 1024 * KIB } }] });
    const doc = (await big.api('POST', '/api/collections/docs/records', { body: {} })).body.id;
    const c = await create(doc, { field: 'file', filename: 'big.bin', length: 40 * 1024 * KIB }, u, 'docs', big);
    assert.equal(c.status, 201, c.text);
    assertError(await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: Buffer.alloc(32 * 1024 * KIB + 1), offset: 0, server: big }), 413, 'payload_too_large');
    const ok = await call('PATCH', `/api/uploads/${c.body.id}`, { token: u, raw: Buffer.alloc(32 * 1024 * KIB, 5), offset: 0, server: big });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('upload-offset'), String(32 * 1024 * KIB));
  } finally {
    await big.stop();
  }
});

test('events: a commit sends the normal realtime update with the new file name', async () => {
  const doc = await newDoc(alice);
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
  const frames: any[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
  await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('error', rej); });
  const until = async (pred: (f: any) => boolean) => {
    for (let i = 0; i < 100; i++) {
      const hit = frames.find(pred);
      if (hit) return hit;
      await sleep(50);
    }
    throw new Error(`no such frame: ${JSON.stringify(frames)}`);
  };
  try {
    await until((f) => f.type === 'connect');
    ws.send(JSON.stringify({ action: 'auth', token: alice.token }));
    await until((f) => f.type === 'auth');
    ws.send(JSON.stringify({ action: 'subscribe', topic: 'docs' }));
    await until((f) => f.type === 'ack');
    const c = await create(doc, { field: 'file', filename: 'live.txt', length: 5 });
    await sendAll(c.body.id, Buffer.from('hello'), 64 * KIB);
    assert.equal((await call('POST', `/api/uploads/${c.body.id}/commit`, { token: alice })).status, 204);
    const ev = await until((f) => f.type === 'event' && f.action === 'update' && f.record.id === doc);
    assert.match(ev.record.file, /^live_[a-z0-9]{10}\.txt$/);
  } finally {
    ws.close();
  }
});

test('rule 4: after a restart, in-memory sessions are gone (404) while the credential still works', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'svc-uploads-ram-'));
  try {
    let s = await startSvc({ dataDir: dir, args: ['--features=resumable-uploads'] });
    await createUsers(s, 'users');
    const u = await signup(s, 'users', 'r@example.com', 'r-password');
    await s.createCollection({ name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@request.auth.id != ""', fields: [{ name: 'file', type: 'file' }] });
    const doc = (await s.api('POST', '/api/collections/docs/records', { body: {} })).body.id;
    const c = await create(doc, { field: 'file', filename: 'r.bin', length: 100 }, u, 'docs', s);
    await sendAll(c.body.id, randomBytes(50), 64 * KIB, u, s);
    assert.equal((await call('GET', `/api/uploads/${c.body.id}`, { token: u, server: s })).body.offset, 50);
    await s.stop();
    s = await startSvc({ dataDir: dir, args: ['--features=resumable-uploads'] });
    try {
      assertError(await call('GET', `/api/uploads/${c.body.id}`, { token: u, server: s }), 404);
      assert.equal((await create(doc, { field: 'file', filename: 'r.bin', length: 100 }, u, 'docs', s)).status, 201, 'the same credential works');
    } finally {
      await s.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
