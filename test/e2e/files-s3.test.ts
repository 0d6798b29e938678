/**
 * Stored files in an S3-compatible bucket (`SERVICE_STORAGE=s3://bucket/prefix`),
 * against a real S3-protocol server running in the test (s3rver) and checked with
 * `@aws-sdk/client-s3`: uploads land as objects (nothing in the data directory), downloads with
 * Range and ETag, protected files through file tokens, deletion after the commit, record and
 * collection deletes, resumable uploads, `/api/meta`, and the refusals.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import S3rver from 's3rver';
import { S3Client, ListObjectsV2Command, HeadObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { TEST_BACKEND } from '../helpers/backend.js';
import { startSvc, runCli, type Svc } from '../helpers/server.js';
import { createUsers, dumpServerLog, signup, type User } from '../helpers/records-fixtures.js';

const BUCKET = 'svc-test';
const PREFIX = 'app1';
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201ff9b4d0a0000000049454e44ae426082', 'hex');

let s3dir: string;
let s3: S3rver;
let endpoint: string;
let client: S3Client;
let env: Record<string, string>;
let srv: Svc;
let alice: User;
let docs: any;

async function keys(prefix = `${PREFIX}/`): Promise<string[]> {
  const out: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) out.push(o.Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out.sort();
}

async function upload(method: string, path: string, files: Array<[string, string, Buffer]>, fields: Record<string, string> = {}, token = srv.suToken): Promise<any> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const [name, filename, data] of files) fd.append(name, new Blob([data]), filename);
  const res = await fetch(srv.url + path, { method, body: fd, headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

before(async () => {
  s3dir = mkdtempSync(join(tmpdir(), 'svc-s3rver-'));
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
  const { port } = await s3.run();
  endpoint = `http://127.0.0.1:${port}`;
  client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  env = { SERVICE_STORAGE: `s3://${BUCKET}/${PREFIX}`, SERVICE_S3_ENDPOINT: endpoint, SERVICE_S3_ACCESS_KEY_ID: 'S3RVER', SERVICE_S3_SECRET_ACCESS_KEY: 'S3RVER' };
  srv = await startSvc({ env, args: ['--features=resumable-uploads'] });
  await createUsers(srv, 'users');
  alice = await signup(srv, 'users', 'alice@example.com', 'alice-password');
  docs = await srv.createCollection({
    name: 'docs', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@public', updateRule: '@public', deleteRule: '@public',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'file', type: 'file', options: { maxSize: 4 * 1024 * 1024 } },
      { name: 'files', type: 'file', options: { maxSelect: 5, maxSize: 4 * 1024 * 1024 } },
      { name: 'secret', type: 'file', options: { protected: true } },
    ],
  });
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
  await s3?.close();
  client?.destroy();
  if (s3dir) rmSync(s3dir, { recursive: true, force: true });
});

test('/api/meta reports the object store', async () => {
  assert.equal((await srv.api('GET', '/api/meta')).body.capabilities.objectStore, true);
});

test('an upload is an object under the prefix, nothing in the data directory; the download is byte-identical with the object\'s ETag', async () => {
  const big = randomBytes(700 * 1024); // over the inline read size: streamed from the bucket
  const rec = await upload('POST', '/api/collections/docs/records', [['file', 'photo.png', PNG], ['files', 'big.bin', big]], { title: 'one' });
  assert.deepEqual(await keys(`${PREFIX}/${docs.id}/${rec.id}/`), [`${PREFIX}/${docs.id}/${rec.id}/${rec.file}`, `${PREFIX}/${docs.id}/${rec.id}/${rec.files[0]}`].sort());
  const local = join(srv.dataDir, 'storage');
  assert.ok(!existsSync(local) || readdirSync(local).length === 0, 'no file in the data directory');

  const res = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.file}`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/png');
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(PNG));
  const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${docs.id}/${rec.id}/${rec.file}` }));
  assert.equal(res.headers.get('etag'), head.ETag);
  const again = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.file}`, { headers: { 'if-none-match': head.ETag! } });
  assert.equal(again.status, 304);

  const whole = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.files[0]}`);
  assert.ok(Buffer.from(await whole.arrayBuffer()).equals(big));
  const part = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.files[0]}`, { headers: { range: 'bytes=300000-500123' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 300000-500123/${big.length}`);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(big.subarray(300000, 500124)));
  const tail = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.files[0]}`, { headers: { range: 'bytes=-100' } });
  assert.ok(Buffer.from(await tail.arrayBuffer()).equals(big.subarray(big.length - 100)));
  assert.equal((await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.files[0]}`, { headers: { range: `bytes=${big.length}-` } })).status, 416);
  assert.equal((await fetch(`${srv.url}/api/files/docs/${rec.id}/nope_aaaaaaaaaa.png`)).status, 404);
});

test('protected files need a credential or a file token', async () => {
  const secret = Buffer.from('top secret text');
  const rec = await upload('POST', '/api/collections/docs/records', [['secret', 'note.txt', secret]]);
  assert.equal((await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.secret}`)).status, 404);
  const tok = await srv.api('POST', '/api/files/token', { token: alice.token });
  const ok = await fetch(`${srv.url}/api/files/docs/${rec.id}/${rec.secret}?token=${tok.body.token}`);
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), secret.toString());
});

test('a replaced file is deleted after the commit; a record delete and a collection delete empty their prefixes', async () => {
  const rec = await upload('POST', '/api/collections/docs/records', [['file', 'a.txt', Buffer.from('first')], ['files', 'b.txt', Buffer.from('b')]]);
  const replaced = await upload('PATCH', `/api/collections/docs/records/${rec.id}`, [['file', 'a2.txt', Buffer.from('second')]]);
  assert.notEqual(replaced.file, rec.file);
  const left = await keys(`${PREFIX}/${docs.id}/${rec.id}/`);
  assert.deepEqual(left, [`${PREFIX}/${docs.id}/${rec.id}/${replaced.file}`, `${PREFIX}/${docs.id}/${rec.id}/${rec.files[0]}`].sort());
  const obj = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${docs.id}/${rec.id}/${replaced.file}` }));
  assert.equal(await obj.Body!.transformToString(), 'second');
  // removing one of several files
  await srv.api('PATCH', `/api/collections/docs/records/${rec.id}`, { token: srv.suToken, body: { 'files-': rec.files[0] } });
  assert.deepEqual(await keys(`${PREFIX}/${docs.id}/${rec.id}/`), [`${PREFIX}/${docs.id}/${rec.id}/${replaced.file}`]);
  assert.equal((await srv.api('DELETE', `/api/collections/docs/records/${rec.id}`, { token: srv.suToken })).status, 204);
  assert.deepEqual(await keys(`${PREFIX}/${docs.id}/${rec.id}/`), []);

  const temp = await srv.createCollection({ name: 'temp', type: 'base', createRule: '@public', fields: [{ name: 'file', type: 'file' }] });
  const t = await upload('POST', '/api/collections/temp/records', [['file', 't.txt', Buffer.from('t')]]);
  assert.equal((await keys(`${PREFIX}/${temp.id}/`)).length, 1);
  assert.equal((await srv.api('DELETE', '/api/collections/temp', { token: srv.suToken })).status, 204);
  assert.deepEqual(await keys(`${PREFIX}/${temp.id}/`), []);
  assert.ok(t.id);
});

test('a resumable upload commits into the bucket', async () => {
  const rec = await upload('POST', '/api/collections/docs/records', [], { title: 'resumable' });
  const data = randomBytes(300 * 1024);
  const c = await srv.api('POST', `/api/collections/docs/records/${rec.id}/uploads`, { token: alice.token, body: { field: 'file', filename: 'r.bin', length: data.length } });
  assert.equal(c.status, 201, c.text);
  const p = await srv.api('PATCH', `/api/uploads/${c.body.id}`, { token: alice.token, raw: data, headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } });
  assert.equal(p.status, 204, p.text);
  assert.equal((await srv.api('POST', `/api/uploads/${c.body.id}/commit`, { token: alice.token })).status, 204);
  const after = (await srv.api('GET', `/api/collections/docs/records/${rec.id}`)).body;
  const obj = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${docs.id}/${rec.id}/${after.file}` }));
  assert.ok(Buffer.from(await obj.Body!.transformToByteArray()).equals(data));
});

test('refusals: a malformed SERVICE_STORAGE, a key without its secret, durable uploads on an object store; backup warns', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-s3-refuse-'));
  try {
    const bad = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`], { SERVICE_STORAGE: 'ftp://bucket' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /SERVICE_STORAGE/);
    const half = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`], { ...env, SERVICE_S3_SECRET_ACCESS_KEY: '' });
    assert.equal(half.status, 1);
    assert.match(half.stderr, /SERVICE_S3_ACCESS_KEY_ID and SERVICE_S3_SECRET_ACCESS_KEY/);
    const durable = runCli(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, '--features=resumable-uploads,durable-resumable-uploads'], env);
    assert.equal(durable.status, 1);
    assert.match(durable.stderr, /durable resumable uploads need the built-in local file storage/);
    const backup = runCli(['backup', `--data-dir=${srv.dataDir}`, join(dir, 'b.tar')], env);
    if (TEST_BACKEND === 'postgres') {
      // backup copies the SQLite file: on PostgreSQL it refuses, naming pg_dump (backup.test.ts)
      assert.equal(backup.status, 1, backup.stderr);
      assert.match(backup.stderr, /pg_dump/);
    } else {
      assert.equal(backup.status, 0, backup.stderr);
      assert.match(backup.stderr, /stored files live in s3:\/\/svc-test\/app1/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
