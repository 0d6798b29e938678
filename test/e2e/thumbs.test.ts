/**
 * Image thumbnails end to end (docs/files.md, "Thumbnails"): `?thumb=` on a file URL for the
 * sizes a file field lists in `options.thumbs`. Real images are made with sharp here and the
 * answers read back with sharp: every size form, every source format, the fallbacks to the
 * original (unlisted size, not an image, undecodable), the access rules of the original, the
 * headers, one generation for concurrent requests, and deletion with the original, on local
 * storage and in an S3-compatible bucket (s3rver).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import S3rver from 's3rver';
import { S3Client, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, createUsers, dumpServerLog, signup, type User } from '../helpers/records-fixtures.js';

const PUBLIC = { listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public' };
const SIZES = ['50x50', '50x50t', '50x50b', '50x50f', '0x40', '40x0', '30x30'];
const RED = { r: 255, g: 0, b: 0 };
const BLUE = { r: 0, g: 0, b: 255 };

let srv: Svc;
let alice: User;
let bob: User;
let pics: any;

/** A 100×200 image, its top half red and its bottom half blue, in `format`. */
async function picture(format: 'png' | 'jpeg' | 'webp' | 'gif'): Promise<Buffer> {
  const raw = Buffer.alloc(100 * 200 * 3);
  for (let y = 0; y < 200; y++) for (let x = 0; x < 100; x++) raw.set(y < 100 ? [255, 0, 0] : [0, 0, 255], (y * 100 + x) * 3);
  return sharp(raw, { raw: { width: 100, height: 200, channels: 3 } }).toFormat(format).toBuffer();
}

/** The colour at the center of an image, rounded to pure red or blue. */
async function centerColour(img: Buffer, dy = 0): Promise<typeof RED | typeof BLUE | null> {
  const { data, info } = await sharp(img).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = ((Math.floor(info.height / 2) + dy) * info.width + Math.floor(info.width / 2)) * 3;
  if (data[i]! > 200 && data[i + 2]! < 60) return RED;
  if (data[i + 2]! > 200 && data[i]! < 60) return BLUE;
  return null;
}

async function upload(method: string, path: string, files: Array<[string, string, Buffer]>, token?: string): Promise<any> {
  const fd = new FormData();
  for (const [name, filename, data] of files) fd.append(name, new Blob([data]), filename);
  const res = await fetch(srv.url + path, { method, body: fd, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function get(url: string, headers: Record<string, string> = {}, base = srv.url): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(base + url, { headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const fileUrl = (col: string, rid: string, name: string, thumb?: string) => `/api/files/${col}/${rid}/${name}${thumb ? `?thumb=${thumb}` : ''}`;
const thumbsDir = (cid: string, rid: string, name: string) => join(srv.dataDir, 'storage', cid, rid, `thumbs_${name}`);

before(async () => {
  srv = await startSvc();
  await createUsers(srv, 'users');
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
  bob = await signup(srv, 'users', 'bob@example.com', 'bob-password');
  pics = await srv.createCollection({
    name: 'pics', type: 'base', ...PUBLIC,
    fields: [
      { name: 'image', type: 'file', options: { thumbs: SIZES } },
      { name: 'gallery', type: 'file', options: { maxSelect: 4, thumbs: ['20x20'] } },
      { name: 'plain', type: 'file' },
      { name: 'secret', type: 'file', options: { protected: true, thumbs: ['20x20'] } },
    ],
  });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('options.thumbs: validated on create and update, read back; absent when not given', async () => {
  const bad = async (thumbs: unknown) => {
    const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'bad_thumbs', type: 'base', fields: [{ name: 'f', type: 'file', options: { thumbs } }] } });
    assertError(r, 400);
    assert.equal(r.body.data['fields.0.thumbs']?.code, 'validation_value', r.text);
    assert.match(r.body.data['fields.0.thumbs'].message, /^Must be a list of thumbnail sizes such as "100x100"/);
  };
  for (const t of ['100x100', ['abc'], ['0x0'], ['100x100x'], ['0x100t'], ['5000x10'], [100], ['100X100'], {}]) await bad(t);

  const c = (await srv.api('GET', '/api/collections/pics', { token: srv.suToken })).body;
  const image = c.schema?.find?.((f: any) => f.name === 'image') ?? c.fields.find((f: any) => f.name === 'image');
  assert.deepEqual(image.options.thumbs, SIZES);
  const plain = (c.schema ?? c.fields).find((f: any) => f.name === 'plain');
  assert.equal('thumbs' in plain.options, false, 'a field without thumbs reads back as before');

  const other = await srv.createCollection({ name: 'upd_thumbs', type: 'base', fields: [{ name: 'f', type: 'file' }] });
  const fields = (other.schema ?? other.fields);
  const upd = await srv.api('PATCH', '/api/collections/upd_thumbs', { token: srv.suToken, body: { fields: [{ ...fields[0], options: { ...fields[0].options, thumbs: ['1x2y'] } }] } });
  assertError(upd, 400);
  assert.equal(upd.body.data['fields.0.thumbs']?.code, 'validation_value', upd.text);
  const ok = await srv.api('PATCH', '/api/collections/upd_thumbs', { token: srv.suToken, body: { fields: [{ ...fields[0], options: { ...fields[0].options, thumbs: ['10x10', '10x10'] } }] } });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual((ok.body.schema ?? ok.body.fields)[0].options.thumbs, ['10x10'], 'duplicates dropped');
  const none = await srv.api('PATCH', '/api/collections/upd_thumbs', { token: srv.suToken, body: { fields: [{ ...fields[0], options: { ...fields[0].options, thumbs: [] } }] } });
  assert.equal(none.status, 200, none.text);
  assert.equal('thumbs' in (none.body.schema ?? none.body.fields)[0].options, false, 'an empty list reads back as absent');
});

test('every size form gives its dimensions and crop; every source format keeps its format', async () => {
  const expected: Record<string, [number, number]> = { '50x50': [50, 50], '50x50t': [50, 50], '50x50b': [50, 50], '50x50f': [25, 50], '0x40': [20, 40], '40x0': [40, 80], '30x30': [30, 30] };
  for (const format of ['png', 'jpeg', 'webp', 'gif'] as const) {
    const rec = await upload('POST', '/api/collections/pics/records', [['image', `p.${format === 'jpeg' ? 'jpg' : format}`, await picture(format)]]);
    for (const [size, [w, h]] of Object.entries(expected)) {
      const r = await get(fileUrl('pics', rec.id, rec.image, size));
      assert.equal(r.status, 200, `${format} ${size}`);
      const meta = await sharp(r.bytes).metadata();
      assert.deepEqual([meta.width, meta.height, meta.format], [w, h, format], `${format} ${size}`);
      assert.equal(r.headers.get('content-type'), `image/${format}`);
    }
    // the crops: top keeps the red half, bottom the blue one, center shows both
    assert.deepEqual(await centerColour((await get(fileUrl('pics', rec.id, rec.image, '50x50t'))).bytes), RED, `${format} top`);
    assert.deepEqual(await centerColour((await get(fileUrl('pics', rec.id, rec.image, '50x50b'))).bytes), BLUE, `${format} bottom`);
    const center = (await get(fileUrl('pics', rec.id, rec.image, '50x50'))).bytes;
    assert.deepEqual([await centerColour(center, -12), await centerColour(center, 12)], [RED, BLUE], `${format} center`);
    // stored beside the original, once per size
    assert.deepEqual(readdirSync(thumbsDir(pics.id, rec.id, rec.image)).sort(), Object.keys(expected).map((s) => `${s}_${rec.image}`).sort());
  }
});

test('fallbacks serve the original: unlisted or malformed size, not an image, undecodable image', async () => {
  const png = await picture('png');
  const rec = await upload('POST', '/api/collections/pics/records', [['image', 'a.png', png], ['plain', 'b.png', png]]);
  for (const thumb of ['60x60', 'abc', '0x0', '', '50x50%20']) {
    const r = await get(fileUrl('pics', rec.id, rec.image, thumb));
    assert.equal(r.status, 200, thumb);
    assert.ok(r.bytes.equals(png), `thumb=${thumb}: the original`);
  }
  const plain = await get(fileUrl('pics', rec.id, rec.plain, '50x50'));
  assert.ok(plain.bytes.equals(png), 'a field without thumbs: the original');
  assert.equal(existsSync(thumbsDir(pics.id, rec.id, rec.image)), false, 'nothing generated');

  const text = Buffer.from('not an image at all\n');
  const corrupt = Buffer.concat([png.subarray(0, 33), Buffer.alloc(200, 7)]);
  const t = await upload('POST', '/api/collections/pics/records', [['image', 'notes.txt', text]]);
  const c = await upload('POST', '/api/collections/pics/records', [['image', 'broken.png', corrupt]]);
  for (let i = 0; i < 2; i++) {
    const rt = await get(fileUrl('pics', t.id, t.image, '50x50'));
    assert.deepEqual([rt.status, rt.bytes.equals(text)], [200, true], 'text: the original');
    assert.match(rt.headers.get('content-type')!, /^text\/plain/);
    const rc = await get(fileUrl('pics', c.id, c.image, '50x50'));
    assert.deepEqual([rc.status, rc.bytes.equals(corrupt)], [200, true], 'corrupt image: the original');
    assert.equal(rc.headers.get('content-type'), 'image/png');
  }
  assert.equal(existsSync(thumbsDir(pics.id, c.id, c.image)), false);
  assert.doesNotMatch(srv.stderr(), /"level":"error"/);
});

test('headers: ETag and 304, cache policy of the original, ranges', async () => {
  const rec = await upload('POST', '/api/collections/pics/records', [['image', 'h.png', await picture('png')]]);
  const orig = await get(fileUrl('pics', rec.id, rec.image));
  const first = await get(fileUrl('pics', rec.id, rec.image, '30x30'));
  const second = await get(fileUrl('pics', rec.id, rec.image, '30x30'));
  assert.ok(first.bytes.equals(second.bytes));
  const etag = first.headers.get('etag')!;
  assert.match(etag, /^".+"$/);
  assert.notEqual(etag, orig.headers.get('etag'), 'the thumbnail has its own validator');
  assert.equal(second.headers.get('etag'), etag);
  for (const h of ['cache-control', 'content-security-policy', 'x-content-type-options', 'accept-ranges']) assert.equal(first.headers.get(h), orig.headers.get(h), h);
  assert.equal((await get(fileUrl('pics', rec.id, rec.image, '30x30'), { 'if-none-match': etag })).status, 304);
  const part = await get(fileUrl('pics', rec.id, rec.image, '30x30'), { range: 'bytes=0-9' });
  assert.equal(part.status, 206);
  assert.ok(part.bytes.equals(first.bytes.subarray(0, 10)));
});

test('a protected field: the thumbnail needs what the original needs', async () => {
  const rec = await upload('POST', '/api/collections/pics/records', [['secret', 's.png', await picture('png')]]);
  const url = fileUrl('pics', rec.id, rec.secret, '20x20');
  assert.equal((await get(fileUrl('pics', rec.id, rec.secret))).status, 404, 'original: anonymous');
  assert.equal((await get(url)).status, 404, 'thumb: anonymous');
  assert.equal((await get(url, { authorization: 'Bearer not.a.token' })).status, 401);
  assert.equal((await get(`${url}&token=garbage`)).status, 401);
  assert.equal(existsSync(thumbsDir(pics.id, rec.id, rec.secret)), false, 'refused callers generate nothing');
  const ft = (await srv.api('POST', '/api/files/token', { token: alice.token })).body.token;
  const r = await get(`${url}&token=${ft}`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('cache-control'), 'private, no-cache');
  const meta = await sharp(r.bytes).metadata();
  assert.deepEqual([meta.width, meta.height], [20, 20]);
  assert.equal((await get(url, { authorization: `Bearer ${bob.token}` })).status, 200, 'any signed-in caller, as the original');
});

test('replacing or deleting a file deletes its thumbnails; deleting the record too', async () => {
  const rec = await upload('POST', '/api/collections/pics/records', [['image', 'r.png', await picture('png')], ['gallery', 'g1.png', await picture('png')], ['gallery', 'g2.png', await picture('png')]]);
  for (const n of [rec.image, ...rec.gallery]) assert.equal((await get(fileUrl('pics', rec.id, n, n === rec.image ? '30x30' : '20x20'))).status, 200);
  for (const n of [rec.image, ...rec.gallery]) assert.ok(existsSync(thumbsDir(pics.id, rec.id, n)), n);

  const replaced = await upload('PATCH', `/api/collections/pics/records/${rec.id}`, [['image', 'r2.png', await picture('jpeg')]]);
  assert.notEqual(replaced.image, rec.image);
  assert.equal(existsSync(thumbsDir(pics.id, rec.id, rec.image)), false, 'replaced: thumbs gone');
  const removed = await srv.api('PATCH', `/api/collections/pics/records/${rec.id}`, { body: { 'gallery-': rec.gallery[0] } });
  assert.equal(removed.status, 200, removed.text);
  assert.equal(existsSync(thumbsDir(pics.id, rec.id, rec.gallery[0])), false, 'removed: thumbs gone');
  assert.ok(existsSync(thumbsDir(pics.id, rec.id, rec.gallery[1])), 'the kept file keeps its thumbs');
  // a stale name's thumbnail is never served: the old URL is a 404
  assert.equal((await get(fileUrl('pics', rec.id, rec.image, '30x30'))).status, 404);

  assert.equal((await srv.api('DELETE', `/api/collections/pics/records/${rec.id}`)).status, 204);
  assert.equal(existsSync(join(srv.dataDir, 'storage', pics.id, rec.id)), false, 'record folder gone');
});

test('dropping a file field: the sweep deletes its files with their thumbnails and keeps the others', async () => {
  const col = await srv.createCollection({ name: 'sweepy', type: 'base', ...PUBLIC, fields: [{ name: 'a', type: 'file', options: { thumbs: ['20x20'] } }, { name: 'b', type: 'file', options: { thumbs: ['20x20'] } }] });
  const rec = await upload('POST', '/api/collections/sweepy/records', [['a', 'a.png', await picture('png')], ['b', 'b.png', await picture('png')]]);
  for (const n of [rec.a, rec.b]) assert.equal((await get(fileUrl('sweepy', rec.id, n, '20x20'))).status, 200);
  const fields = col.schema ?? col.fields;
  const r = await srv.api('PATCH', '/api/collections/sweepy', { token: srv.suToken, body: { fields: [fields[0]] } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(readdirSync(join(srv.dataDir, 'storage', col.id, rec.id)).sort(), [rec.a, `thumbs_${rec.a}`].sort());
  assert.deepEqual(readdirSync(thumbsDir(col.id, rec.id, rec.a)), [`20x20_${rec.a}`]);
});

test('HEAD of a thumbnail: the thumbnail\'s headers, no body', async () => {
  const rec = await upload('POST', '/api/collections/pics/records', [['image', 'hd.webp', await picture('webp')]]);
  const body = await get(fileUrl('pics', rec.id, rec.image, '40x0'));
  const res = await fetch(srv.url + fileUrl('pics', rec.id, rec.image, '40x0'), { method: 'HEAD' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/webp');
  assert.equal(res.headers.get('etag'), body.headers.get('etag'));
  assert.equal(res.headers.get('content-length'), String(body.bytes.length));
  assert.equal((await res.arrayBuffer()).byteLength, 0);
});

test('concurrent requests for a new thumbnail: all succeed with the same bytes, generated once', async () => {
  const rec = await upload('POST', '/api/collections/pics/records', [['gallery', 'c1.jpg', await picture('jpeg')], ['gallery', 'c2.webp', await picture('webp')], ['gallery', 'c3.png', await picture('png')]]);
  const all = await Promise.all(Array.from({ length: 24 }, (_, i) => get(fileUrl('pics', rec.id, rec.gallery[i % 3], '20x20'))));
  for (const [i, r] of all.entries()) {
    assert.equal(r.status, 200);
    assert.ok(r.bytes.equals(all[i % 3]!.bytes), 'identical bytes');
    const meta = await sharp(r.bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [20, 20]);
  }
  for (const n of rec.gallery) assert.deepEqual(readdirSync(thumbsDir(pics.id, rec.id, n)), [`20x20_${n}`]);
  assert.doesNotMatch(srv.stderr(), /thumbnail/);
});

test('S3-compatible bucket: thumbnails stored as objects beside the original, deleted with it', async () => {
  const s3dir = mkdtempSync(join(tmpdir(), 'svc-s3rver-'));
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3dir, configureBuckets: [{ name: 'thumbs', configs: [] }] });
  const { port } = await s3.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  const s3srv = await startSvc({ env: { SERVICE_STORAGE: 's3://thumbs/app', SERVICE_S3_ENDPOINT: endpoint, SERVICE_S3_ACCESS_KEY_ID: 'S3RVER', SERVICE_S3_SECRET_ACCESS_KEY: 'S3RVER' } });
  const keys = async () => ((await client.send(new ListObjectsV2Command({ Bucket: 'thumbs', Prefix: 'app/' }))).Contents ?? []).map((o) => o.Key!).sort();
  try {
    const col = await s3srv.createCollection({ name: 'pics', type: 'base', ...PUBLIC, fields: [{ name: 'image', type: 'file', options: { thumbs: ['20x20', '0x10'] } }] });
    const send = async (method: string, path: string, name: string, data: Buffer) => {
      const fd = new FormData();
      fd.append('image', new Blob([data]), name);
      return (await fetch(s3srv.url + path, { method, body: fd })).json() as Promise<any>;
    };
    const rec = await send('POST', '/api/collections/pics/records', 'a.png', await picture('png'));
    const rs = await Promise.all([0, 1, 2, 3].map(() => get(fileUrl('pics', rec.id, rec.image, '20x20'), {}, s3srv.url)));
    for (const r of rs) assert.ok(r.bytes.equals(rs[0]!.bytes));
    const meta = await sharp(rs[0]!.bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [20, 20]);
    assert.equal((await get(fileUrl('pics', rec.id, rec.image, '0x10'), {}, s3srv.url)).status, 200);
    const base = `app/${col.id}/${rec.id}/`;
    assert.deepEqual(await keys(), [base + rec.image, `${base}thumbs_${rec.image}/0x10_${rec.image}`, `${base}thumbs_${rec.image}/20x20_${rec.image}`].sort());
    assert.equal(existsSync(join(s3srv.dataDir, 'storage')), false, 'nothing on the local disk');

    // the sweep of a dropped field lists thumbnail folders too (a bucket lists them apart)
    const two = await s3srv.createCollection({ name: 'two', type: 'base', ...PUBLIC, fields: [{ name: 'image', type: 'file', options: { thumbs: ['20x20'] } }, { name: 'other', type: 'file', options: { thumbs: ['20x20'] } }] });
    const fd = new FormData();
    fd.append('image', new Blob([await picture('png')]), 'i.png');
    fd.append('other', new Blob([await picture('png')]), 'o.png');
    const rec2 = (await (await fetch(`${s3srv.url}/api/collections/two/records`, { method: 'POST', body: fd })).json()) as any;
    for (const n of [rec2.image, rec2.other]) assert.equal((await get(fileUrl('two', rec2.id, n, '20x20'), {}, s3srv.url)).status, 200);
    const dropped = await s3srv.api('PATCH', '/api/collections/two', { token: s3srv.suToken, body: { fields: [(two.schema ?? two.fields)[0]] } });
    assert.equal(dropped.status, 200, dropped.text);
    const base2 = `app/${two.id}/${rec2.id}/`;
    assert.deepEqual((await keys()).filter((k) => k.startsWith(base2)), [base2 + rec2.image, `${base2}thumbs_${rec2.image}/20x20_${rec2.image}`].sort());

    const upd = await send('PATCH', `/api/collections/pics/records/${rec.id}`, 'b.png', await picture('png'));
    const mine = async () => (await keys()).filter((k) => k.startsWith(base));
    assert.deepEqual(await mine(), [base + upd.image], 'replaced: the old file and its thumbs gone');
    assert.equal((await get(fileUrl('pics', rec.id, upd.image, '20x20'), {}, s3srv.url)).status, 200);
    assert.equal((await mine()).length, 2);
    assert.equal((await fetch(`${s3srv.url}/api/collections/pics/records/${rec.id}`, { method: 'DELETE' })).status, 204);
    assert.deepEqual(await mine(), [], 'record deleted: everything gone');
  } finally {
    dumpServerLog(s3srv);
    await s3srv.stop();
    await s3.close();
    client.destroy();
    rmSync(s3dir, { recursive: true, force: true });
  }
});
