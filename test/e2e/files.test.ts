/**
 * File fields end to end (spec 1-core-api.md "Records" (multipart create/update, files route),
 * "Errors" (416), "Limits" (maxUploadSize)). Real multipart bodies built with FormData and Blob.
 * One server for the file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, createUsers, dumpServerLog, signup, type User } from '../helpers/records-fixtures.js';
import { tokenSecret, withDb } from '../helpers/auth-helpers.js';
import { tamperBase64url } from '../helpers/tamper.js';

/** A 1×1 PNG. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201ff9b4d0a0000000049454e44ae426082', 'hex');
const TEXT100 = Buffer.from('0123456789'.repeat(10));
const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };

let srv: Svc;
let alice: User;
let bob: User;
let docs: any;
let priv: any;

type Part = [name: string, filename: string, data: Buffer | string, type?: string];

function form(fields: Record<string, string | string[]>, files: Part[] = []): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) fd.append(k, x);
  for (const [name, filename, data, type] of files) fd.append(name, new Blob([data], { type: type ?? 'application/octet-stream' }), filename);
  return fd;
}

async function send(method: string, path: string, fd: FormData, token?: string): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(srv.url + path, { method, body: fd, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(srv.url + path, { method, headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const onDisk = (cid: string, rid: string, name?: string) => join(srv.dataDir, 'storage', cid, rid, ...(name ? [name] : []));
const fileUrl = (col: string, rid: string, name: string) => `/api/files/${col}/${rid}/${name}`;

before(async () => {
  srv = await startSvc();
  await createUsers(srv, 'users');
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
  bob = await signup(srv, 'users', 'bob@example.com', 'bob-password');
  docs = await srv.createCollection({
    name: 'docs', type: 'base', ...PUBLIC,
    fields: [
      { name: 'title', type: 'text' },
      { name: 'count', type: 'number' },
      { name: 'flag', type: 'bool' },
      { name: 'meta', type: 'json' },
      { name: 'tags', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 3 } },
      { name: 'avatar', type: 'file', options: { maxSize: 1000, mimeTypes: ['image/png', 'image/jpeg'] } },
      { name: 'attachments', type: 'file', options: { maxSelect: 3, maxSize: 64 * 1024 } },
      { name: 'big', type: 'file', options: { maxSize: 4 * 1024 * 1024 } },
      { name: 'secret', type: 'file', options: { protected: true } },
    ],
  });
  priv = await srv.createCollection({
    name: 'private_docs', type: 'base',
    listRule: '@request.auth.id != ""', viewRule: 'owner = @request.auth.id', createRule: '@request.auth.id != ""', updateRule: null, deleteRule: null,
    fields: [{ name: 'owner', type: 'relation', options: { collectionId: (await srv.api('GET', '/api/collections/users', { token: srv.suToken })).body.id } }, { name: 'doc', type: 'file' }],
  });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('multipart create: form fields by type, files under the field name, randomized stored names on disk', async () => {
  const fd = form({ title: 'first', count: '42', flag: 'true', meta: '{"a":[1,2]}', tags: ['a', 'c'] }, [
    ['avatar', 'My Photo!.png', PNG, 'image/png'],
    ['attachments', 'notes.txt', 'hello notes', 'text/plain'],
    ['attachments', 'notes.txt', 'hello again', 'text/plain'],
  ]);
  const r = await send('POST', '/api/collections/docs/records', fd);
  assert.equal(r.status, 201, r.text);
  const rec = r.body;
  assert.deepEqual([rec.title, rec.count, rec.flag, rec.meta, rec.tags], ['first', 42, true, { a: [1, 2] }, ['a', 'c']]);
  assert.match(rec.avatar, /^My_Photo_[a-z0-9]{10}\.png$/);
  assert.equal(rec.attachments.length, 2);
  for (const n of rec.attachments) assert.match(n, /^notes_[a-z0-9]{10}\.txt$/);
  assert.notEqual(rec.attachments[0], rec.attachments[1], 'the same client name gets two stored names');
  assert.equal(rec.big, null);
  assert.deepEqual(rec.secret, null);
  assert.deepEqual(readFileSync(onDisk(docs.id, rec.id, rec.avatar)), PNG);
  assert.deepEqual(readFileSync(onDisk(docs.id, rec.id, rec.attachments[0]), 'utf8'), 'hello notes');
  const view = await srv.api('GET', `/api/collections/docs/records/${rec.id}`);
  assert.deepEqual(view.body.attachments, rec.attachments);

  // The PocketBase SDK's shape: non-file fields in @jsonPayload.
  const p = await send('POST', '/api/collections/docs/records', form({ '@jsonPayload': JSON.stringify({ title: 'sdk', count: 7, tags: ['b'] }) }, [['avatar', 'x.png', PNG]]));
  assert.equal(p.status, 201, p.text);
  assert.deepEqual([p.body.title, p.body.count, p.body.tags], ['sdk', 7, ['b']]);
  assert.match(p.body.avatar, /^x_[a-z0-9]{10}\.png$/);
});

test('maxSelect, maxSize and mimeTypes (sniffed from the bytes, the client type ignored); nothing stored on failure', async () => {
  const before = readdirSync(join(srv.dataDir, 'storage', docs.id)).length;
  const P = '/api/collections/docs/records';
  const tooMany = await send('POST', P, form({}, [1, 2, 3, 4].map((i): Part => ['attachments', `f${i}.txt`, `file ${i}`])));
  assertError(tooMany, 400, 'validation_failed');
  assert.equal(tooMany.body.data.attachments.code, 'validation_max');
  const tooBig = await send('POST', P, form({}, [['avatar', 'big.png', Buffer.concat([PNG, Buffer.alloc(2000)]), 'image/png']]));
  assert.equal(tooBig.body.data?.avatar?.code, 'validation_max', tooBig.text);
  const liar = await send('POST', P, form({}, [['avatar', 'fake.png', 'just some text, not an image', 'image/png']]));
  assert.equal(liar.status, 400, liar.text);
  assert.equal(liar.body.data.avatar.code, 'validation_value');
  assert.match(liar.body.data.avatar.message, /text\/plain/);
  const wrongName = await send('POST', P, form({ title: 'x' }, [['title', 'a.txt', 'text']]));
  assert.equal(wrongName.body.data?.title?.code, 'validation_type', wrongName.text);
  const jsonName = await srv.api('POST', P, { body: { attachments: ['someone_elses_0123456789.txt'] } });
  assert.equal(jsonName.body.data?.attachments?.code, 'validation_value', jsonName.text);
  assert.equal(readdirSync(join(srv.dataDir, 'storage', docs.id)).length, before, 'failed writes leave no files');

  // A PNG named .txt and sent as text/plain is an image/png: accepted by the avatar field, served as image/png.
  const renamed = await send('POST', P, form({}, [['avatar', 'photo.txt', PNG, 'text/plain']]));
  assert.equal(renamed.status, 201, renamed.text);
  assert.match(renamed.body.avatar, /^photo_[a-z0-9]{10}\.txt$/);
  const dl = await get(fileUrl('docs', renamed.body.id, renamed.body.avatar));
  assert.equal(dl.status, 200);
  assert.equal(dl.headers.get('content-type'), 'image/png');
  assert.deepEqual(dl.bytes, PNG);
});

test('update: <field>+ appends, <field>- and subsets remove, uploads replace; dropped files are deleted after the commit', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({ title: 'u' }, [['attachments', 'a.txt', 'A'], ['attachments', 'b.txt', 'B'], ['avatar', 'one.png', PNG]]));
  assert.equal(c.status, 201, c.text);
  const id = c.body.id;
  const [a, b] = c.body.attachments;
  const P = `/api/collections/docs/records/${id}`;

  const plus = await send('PATCH', P, form({}, [['attachments+', 'c.txt', 'C']]));
  assert.equal(plus.status, 200, plus.text);
  assert.equal(plus.body.attachments.length, 3);
  assert.deepEqual(plus.body.attachments.slice(0, 2), [a, b]);
  const cName = plus.body.attachments[2];
  assert.ok(existsSync(onDisk(docs.id, id, a)) && existsSync(onDisk(docs.id, id, cName)));

  const minus = await srv.api('PATCH', P, { body: { 'attachments-': [a] } });
  assert.deepEqual(minus.body.attachments, [b, cName], minus.text);
  assert.ok(!existsSync(onDisk(docs.id, id, a)), 'removed file deleted');

  const subset = await srv.api('PATCH', P, { body: { attachments: [cName] } });
  assert.deepEqual(subset.body.attachments, [cName]);
  assert.ok(!existsSync(onDisk(docs.id, id, b)));

  const notMine = await srv.api('PATCH', P, { body: { attachments: [cName, 'other_0123456789.txt'] } });
  assert.equal(notMine.body.data?.attachments?.code, 'validation_value', notMine.text);
  assert.ok(existsSync(onDisk(docs.id, id, cName)));

  const oldAvatar = c.body.avatar;
  const newAvatar = await send('PATCH', P, form({ title: 'u2' }, [['avatar', 'two.png', PNG]]));
  assert.equal(newAvatar.status, 200, newAvatar.text);
  assert.match(newAvatar.body.avatar, /^two_/);
  assert.equal(newAvatar.body.title, 'u2');
  assert.ok(!existsSync(onDisk(docs.id, id, oldAvatar)), 'replaced single file deleted');
  assert.ok(existsSync(onDisk(docs.id, id, newAvatar.body.avatar)));

  const replace = await send('PATCH', P, form({}, [['attachments', 'd.txt', 'D']]));
  assert.equal(replace.body.attachments.length, 1);
  assert.match(replace.body.attachments[0], /^d_/);
  assert.ok(!existsSync(onDisk(docs.id, id, cName)), 'files replaced by an upload deleted');

  const keepAndAdd = await send('PATCH', P, form({ attachments: replace.body.attachments[0] }, [['attachments', 'e.txt', 'E']]));
  assert.equal(keepAndAdd.body.attachments.length, 2, keepAndAdd.text);
  assert.equal(keepAndAdd.body.attachments[0], replace.body.attachments[0]);

  const cleared = await srv.api('PATCH', P, { body: { attachments: null, avatar: null } });
  assert.deepEqual([cleared.body.attachments, cleared.body.avatar], [[], null], cleared.text);
  assert.deepEqual(readdirSync(onDisk(docs.id, id)), [], 'no file left for the record');
});

test('concurrent uploads to one field: each answers 200 or 409, and exactly the referenced file stays on disk', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({}, [['avatar', 'start.png', PNG]]));
  const P = `/api/collections/docs/records/${c.body.id}`;
  const results = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => send('PATCH', P, form({}, [['avatar', `race${i}.png`, PNG]]))));
  const statuses = results.map((r) => r.status);
  assert.ok(statuses.every((s) => s === 200 || s === 409), statuses.join(','));
  assert.ok(statuses.includes(200));
  for (const r of results) if (r.status === 409) assert.equal(r.body.code, 'conflict');
  const final = (await srv.api('GET', P)).body.avatar;
  assert.deepEqual(readdirSync(onDisk(docs.id, c.body.id)), [final], 'no orphaned or lost file');
});

test('record delete removes its files; cascaded deletes, dropped file fields and collection delete remove theirs', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({}, [['attachments', 'x.txt', 'X']]));
  assert.ok(existsSync(onDisk(docs.id, c.body.id)));
  assert.equal((await srv.api('DELETE', `/api/collections/docs/records/${c.body.id}`)).status, 204);
  assert.ok(!existsSync(onDisk(docs.id, c.body.id)), 'record folder deleted');

  const parent = await srv.createCollection({ name: 'albums', type: 'base', ...PUBLIC, fields: [{ name: 'name', type: 'text' }] });
  const child = await srv.createCollection({
    name: 'photos', type: 'base', ...PUBLIC,
    fields: [{ name: 'album', type: 'relation', options: { collectionId: parent.id, cascadeDelete: true } }, { name: 'img', type: 'file' }],
  });
  const album = await srv.api('POST', '/api/collections/albums/records', { body: { name: 'holiday' } });
  const photo = await send('POST', '/api/collections/photos/records', form({ album: album.body.id }, [['img', 'p.png', PNG]]));
  assert.equal(photo.status, 201, photo.text);
  assert.ok(existsSync(onDisk(child.id, photo.body.id, photo.body.img)));
  assert.equal((await srv.api('DELETE', `/api/collections/albums/records/${album.body.id}`)).status, 204);
  assert.equal((await srv.api('GET', `/api/collections/photos/records/${photo.body.id}`)).status, 404, 'cascaded');
  assert.ok(!existsSync(onDisk(child.id, photo.body.id)), 'files of cascaded records deleted');

  // Dropping a file field deletes its files; the other fields' files stay.
  const two = await srv.createCollection({ name: 'twofiles', type: 'base', ...PUBLIC, fields: [{ name: 'a', type: 'file' }, { name: 'b', type: 'file' }] });
  const rec = (await send('POST', '/api/collections/twofiles/records', form({}, [['a', 'a.txt', 'A'], ['b', 'b.txt', 'B']]))).body;
  const dropB = await srv.api('PATCH', '/api/collections/twofiles', { token: srv.suToken, body: { fields: [two.schema[0]] } });
  assert.equal(dropB.status, 200, dropB.text);
  assert.deepEqual(readdirSync(onDisk(two.id, rec.id)), [rec.a]);

  const keep = await send('POST', '/api/collections/photos/records', form({}, [['img', 'q.png', PNG]]));
  assert.ok(existsSync(onDisk(child.id, keep.body.id)));
  assert.equal((await srv.api('DELETE', '/api/collections/photos', { token: srv.suToken })).status, 204);
  assert.ok(!existsSync(join(srv.dataDir, 'storage', child.id)), 'collection storage folder deleted');
});

test('download: Content-Type, ETag with If-None-Match → 304, Cache-Control, HEAD, 404 for unknown names', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({}, [['avatar', 'a.png', PNG], ['attachments', 'page.html', '<script>alert(1)</script>', 'text/html']]));
  const url = fileUrl('docs', c.body.id, c.body.avatar);
  const r = await get(url);
  assert.equal(r.status, 200);
  assert.deepEqual(r.bytes, PNG);
  assert.equal(r.headers.get('content-type'), 'image/png');
  assert.equal(r.headers.get('content-length'), String(PNG.length));
  assert.match(r.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
  assert.equal(r.headers.get('accept-ranges'), 'bytes');
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.match(r.headers.get('content-disposition') ?? '', /^inline; filename="a_[a-z0-9]{10}\.png"$/);
  const etag = r.headers.get('etag')!;
  assert.match(etag, /^"[a-z0-9]+-[a-z0-9]+"$/);

  const cached = await get(url, { 'if-none-match': etag });
  assert.equal(cached.status, 304);
  assert.equal(cached.bytes.length, 0);
  assert.equal(cached.headers.get('etag'), etag);
  assert.equal((await get(url, { 'if-none-match': '"other"' })).status, 200);

  const head = await get(url, {}, 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(PNG.length));
  assert.equal(head.headers.get('content-type'), 'image/png');
  assert.equal(head.bytes.length, 0);

  const html = await get(fileUrl('docs', c.body.id, c.body.attachments[0]));
  assert.equal(html.headers.get('content-type'), 'text/html');
  assert.match(html.headers.get('content-disposition') ?? '', /^attachment;/, 'active content is never inline');
  assert.match(html.headers.get('content-security-policy') ?? '', /sandbox/);
  assert.match((await get(`${url}?download=1`)).headers.get('content-disposition') ?? '', /^attachment;/);

  const other = await send('POST', '/api/collections/docs/records', form({}, [['avatar', 'b.png', PNG]]));
  for (const bad of [
    fileUrl('docs', c.body.id, 'missing_0123456789.png'),
    fileUrl('docs', other.body.id, c.body.avatar), // a file of another record
    fileUrl('docs', 'aaaaaaaaaaaaaaa', c.body.avatar),
    fileUrl('nope', c.body.id, c.body.avatar),
    fileUrl('docs', c.body.id, '..%2F..%2Fdata.db'),
  ]) assert.equal((await get(bad)).status, 404, bad);
});

test('Range: 206 with Content-Range, suffix and open ranges, 416 with an empty body and bytes */size', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({}, [['attachments', 'digits.txt', TEXT100]]));
  const url = fileUrl('docs', c.body.id, c.body.attachments[0]);
  const cases: Array<[string, number, string, string | null]> = [
    ['bytes=0-3', 206, '0123', 'bytes 0-3/100'],
    ['bytes=-5', 206, '56789', 'bytes 95-99/100'],
    ['bytes=95-', 206, '56789', 'bytes 95-99/100'],
    ['bytes=98-200', 206, '89', 'bytes 98-99/100'],
    ['bytes=5-2', 200, TEXT100.toString(), null], // invalid: ignored
    ['bytes=0-1,5-6', 200, TEXT100.toString(), null], // multiple ranges: the whole file
  ];
  for (const [range, status, body, contentRange] of cases) {
    const r = await get(url, { range });
    assert.equal(r.status, status, range);
    assert.equal(r.bytes.toString(), body, range);
    assert.equal(r.headers.get('content-range'), contentRange, range);
    assert.equal(r.headers.get('content-length'), String(body.length), range);
  }
  for (const range of ['bytes=100-', 'bytes=500-600', 'bytes=-0']) {
    const r = await get(url, { range });
    assert.equal(r.status, 416, range);
    assert.equal(r.bytes.length, 0, `${range}: empty body`);
    assert.equal(r.headers.get('content-range'), 'bytes */100', range);
  }
});

test('large files are streamed whole and by range; HEAD reports their length', async () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 123);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 10)) & 0xff;
  const c = await send('POST', '/api/collections/docs/records', form({}, [['big', 'blob.bin', big]]));
  assert.equal(c.status, 201, c.text);
  const url = fileUrl('docs', c.body.id, c.body.big);
  const r = await get(url);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/octet-stream');
  assert.equal(r.headers.get('content-length'), String(big.length));
  assert.ok(r.bytes.equals(big), 'streamed bytes match');
  const part = await get(url, { range: 'bytes=1000000-2500000' });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 1000000-2500000/${big.length}`);
  assert.ok(part.bytes.equals(big.subarray(1000000, 2500001)));
  const head = await get(url, {}, 'HEAD');
  assert.equal(head.headers.get('content-length'), String(big.length));
  // Parallel downloads (backpressure on several responses at once).
  const all = await Promise.all([1, 2, 3].map(() => get(url)));
  for (const x of all) assert.ok(x.bytes.equals(big));
  // A client that goes away mid-download: the server closes the stream and keeps serving.
  const ac = new AbortController();
  const res = await fetch(srv.url + url, { signal: ac.signal });
  const reader = res.body!.getReader();
  await reader.read();
  ac.abort();
  await reader.read().catch(() => undefined);
  const again = await get(url, { range: 'bytes=0-9' });
  assert.equal(again.status, 206);
  assert.ok(again.bytes.equals(big.subarray(0, 10)));
  assert.equal(srv.proc.exitCode, null, 'server still running');
});

test('access: a protected collection needs a bearer token, the auth cookie or a file token', async () => {
  const own = await send('POST', '/api/collections/private_docs/records', form({ owner: alice.id }, [['doc', 'report.txt', 'for alice only']]), alice.token);
  assert.equal(own.status, 201, own.text);
  const url = fileUrl('private_docs', own.body.id, own.body.doc);
  assert.equal((await get(url)).status, 404, 'anonymous: hidden like the record');
  assert.equal((await get(url, { authorization: `Bearer ${bob.token}` })).status, 404, 'view rule denies bob');
  const viaBearer = await get(url, { authorization: `Bearer ${alice.token}` });
  assert.equal(viaBearer.status, 200);
  assert.equal(viaBearer.bytes.toString(), 'for alice only');
  assert.equal(viaBearer.headers.get('cache-control'), 'private, no-cache');
  assert.equal((await get(url, { cookie: `svc_auth=${alice.token}` })).status, 200, 'auth cookie');
  assert.equal((await get(url, { authorization: 'Bearer not.a.token' })).status, 401);

  assertError(await srv.api('POST', '/api/files/token'), 401, 'unauthorized');
  const minted = await srv.api('POST', '/api/files/token', { token: alice.token });
  assert.equal(minted.status, 200, minted.text);
  const ft = minted.body.token as string;
  assert.equal((await get(`${url}?token=${ft}`)).status, 200, 'file token');
  const bobToken = (await srv.api('POST', '/api/files/token', { token: bob.token })).body.token;
  assert.equal((await get(`${url}?token=${bobToken}`)).status, 404, "bob's file token: view rule still applies");

  const [h, p, s] = ft.split('.');
  const forged = `${h}.${p}.${tamperBase64url(s)}`;
  assert.equal((await get(`${url}?token=${forged}`)).status, 401, 'forged signature');
  assert.equal((await get(`${url}?token=${alice.token}`)).status, 401, 'an auth token is not a file token');
  assert.equal((await get(`${url}?token=garbage`)).status, 401);

  // An expired token signed with the real key (secret + the record's token key) is still refused.
  const secret = tokenSecret(srv.dataDir);
  const [tokenKey, epoch] = withDb(srv.dataDir, (db) => db.prepare('SELECT "tokenKey", "token_epoch" FROM "users" WHERE "id" = ?').raw(true).get([alice.id]) as [string, number]);
  const key = createHmac('sha256', secret).update(`file:${tokenKey}`).digest();
  const sign = (exp: number) => new SignJWT({ id: alice.id, collectionId: alice.record.collectionId, type: 'file', ep: Number(epoch) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt(exp - 120).setExpirationTime(exp).sign(key);
  const fresh = await sign(Math.floor(Date.now() / 1000) + 60);
  assert.equal((await get(`${url}?token=${fresh}`)).status, 200, 'control: a fresh token signed the same way works');
  assert.equal((await get(`${url}?token=${await sign(Math.floor(Date.now() / 1000) - 10)}`)).status, 401, 'expired');
});

test('a protected file field needs a caller even when the view rule is public', async () => {
  const c = await send('POST', '/api/collections/docs/records', form({}, [['secret', 's.txt', 'classified'], ['avatar', 'open.png', PNG]]));
  const url = fileUrl('docs', c.body.id, c.body.secret);
  assert.equal((await get(url)).status, 404);
  const ft = (await srv.api('POST', '/api/files/token', { token: bob.token })).body.token;
  const r = await get(`${url}?token=${ft}`);
  assert.equal(r.status, 200);
  assert.equal(r.bytes.toString(), 'classified');
  assert.equal(r.headers.get('cache-control'), 'private, no-cache');
  assert.equal((await get(fileUrl('docs', c.body.id, c.body.avatar))).status, 200, 'other fields of the record stay public');
});

test('meta: capabilities.files and limits.maxUploadSize is the enforced request limit (413 above it)', async () => {
  const meta = await srv.api('GET', '/api/meta');
  assert.equal(meta.body.capabilities.files, true);
  const limit = meta.body.limits.maxUploadSize;
  assert.equal(limit, 32 * 1024 * 1024);
  const declared = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const u = new URL(srv.url);
    const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/collections/docs/records', headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(limit + 1) } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.write('--x\r\n');
  });
  assert.equal(declared.status, 413);
  assert.equal(JSON.parse(declared.body).code, 'payload_too_large');
  // A body just over the limit, really sent.
  const fd = form({}, [['big', 'huge.bin', Buffer.alloc(limit + 1)]]);
  const sent = (await fetch(`${srv.url}/api/collections/docs/records`, { method: 'POST', body: fd })).status;
  assert.equal(sent, 413);
});
