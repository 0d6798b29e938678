/**
 * The local blob store (src/files/blob-store.ts): a stored object appears whole or not at all to a
 * concurrent reader, a key is written once, and the partial files are cleaned up.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalBlobStore, PARTIAL_DIR } from '../../../src/files/blob-store.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-blobs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a reader polling during a large put sees no object or the whole object, never a part', async () => {
  const blobs = new LocalBlobStore(dir);
  const data = Buffer.alloc(48 * 1024 * 1024, 7);
  const seen: number[] = [];
  let done = false;
  const poll = (async () => {
    while (!done) {
      const st = await blobs.stat('c/r/big.bin');
      seen.push(st ? st.size : -1);
      await new Promise((r) => setImmediate(r));
    }
  })();
  await blobs.put('c/r/big.bin', data);
  done = true;
  await poll;
  assert.ok(seen.length > 1, `the reader polled during the write (${seen.length} polls)`);
  const sizes = new Set(seen);
  sizes.delete(-1);
  sizes.delete(data.length);
  assert.deepEqual([...sizes], [], 'no partial size was visible');
  assert.equal((await blobs.stat('c/r/big.bin'))?.size, data.length);
  assert.ok((await blobs.readAll('c/r/big.bin')).equals(data));
});

test('a second put of a key fails with EEXIST and keeps the first bytes; no partial file stays', async () => {
  const blobs = new LocalBlobStore(dir);
  await blobs.put('c/r/once.txt', Buffer.from('first'));
  await assert.rejects(blobs.put('c/r/once.txt', Buffer.from('second')), (err: NodeJS.ErrnoException) => err.code === 'EEXIST');
  assert.equal((await blobs.readAll('c/r/once.txt')).toString(), 'first');
  assert.deepEqual(readdirSync(join(dir, PARTIAL_DIR)), []);
  assert.deepEqual(await blobs.listFiles('c/r/'), ['big.bin', 'once.txt']);
});
