/**
 * Password hashing on its own thread pool (docs/operations.md, "Threads"; src/auth/passwords.ts):
 * a burst of sign-ins leaves libuv's shared threads to file reads. The server runs with one libuv
 * thread (UV_THREADPOOL_SIZE=1), so a hash on libuv's pool would hold every file read behind it;
 * the test checks the order of answers, not their times: of five file downloads made one after
 * the other while sixteen sign-ins are being verified, the first finishes before a quarter of the
 * sign-ins and the last before all of them (hashing on libuv's thread: the first download waited
 * for 13 of the 16).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSvc, type Svc } from '../helpers/server.js';
import { createUsers, dumpServerLog, signup } from '../helpers/records-fixtures.js';

let srv: Svc;

before(async () => {
  srv = await startSvc({ env: { UV_THREADPOOL_SIZE: '1', SERVICE_RATE_LIMIT_MAX: '0' } });
});
after(async () => { dumpServerLog(srv); await srv?.stop(); });

test('file downloads are not held behind password hashing (one libuv thread, sixteen sign-ins in flight)', async () => {
  await createUsers(srv, 'users');
  const user = await signup(srv, 'users', 'hasher@example.com', 'hasher-password');
  await srv.createCollection({ name: 'docs', type: 'base', viewRule: '@public', createRule: '@public', fields: [{ name: 'doc', type: 'file', options: { maxSize: 1 << 20 } }] });
  const fd = new FormData();
  fd.append('doc', new Blob([Buffer.alloc(64 * 1024, 7)]), 'data.bin');
  const made = await fetch(`${srv.url}/api/collections/docs/records`, { method: 'POST', body: fd });
  const rec = (await made.json()) as { id: string; doc: string };
  assert.equal(made.status, 201);
  const fileUrl = `${srv.url}/api/files/docs/${rec.id}/${rec.doc}`;
  assert.equal((await fetch(fileUrl)).status, 200);

  let signedIn = 0;
  const signIns = Array.from({ length: 16 }, async () => {
    const r = await srv.api('POST', '/api/collections/users/auth-with-password', { body: { identity: user.email, password: user.password } });
    assert.equal(r.status, 200, r.text);
    signedIn++;
  });
  const doneBefore: number[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await fetch(fileUrl);
    assert.equal(r.status, 200);
    assert.equal((await r.arrayBuffer()).byteLength, 64 * 1024);
    doneBefore.push(signedIn);
  }
  await Promise.all(signIns);
  assert.equal(signedIn, 16);
  const order = `sign-ins answered before each download finished: ${doneBefore.join(', ')}`;
  assert.ok(doneBefore[0]! <= 4, order);
  assert.ok(doneBefore[4]! < 16, order);
});
