/**
 * Thumbnails (src/files/thumbs.ts) over a real local blob store: the size grammar, the bound on
 * generations running at once, one generation per thumbnail for concurrent callers, and the
 * memo of sources that cannot be decoded.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { FileStorage } from '../../../src/files/files.js';
import { LocalBlobStore } from '../../../src/files/blob-store.js';
import { Thumbnails, thumbKey } from '../../../src/files/thumbs.js';
import { parseThumbSize } from '../../../src/collections/fields/index.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-thumbs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A FileStorage counting whole reads and the generations under way (a read starts one, a thumbnail's put ends it). */
function counted() {
  const storage = new FileStorage(new LocalBlobStore(dir));
  const stats = { reads: 0, active: 0, maxActive: 0 };
  const readAll = storage.readAll.bind(storage);
  storage.readAll = async (key) => {
    stats.reads++;
    stats.maxActive = Math.max(stats.maxActive, ++stats.active);
    return readAll(key);
  };
  const put = storage.blobs.put.bind(storage.blobs);
  storage.blobs.put = async (key, data) => {
    if (key.includes('/thumbs_')) stats.active--;
    return put(key, data);
  };
  return { storage, stats };
}

test('parseThumbSize: the six forms and what is refused', () => {
  assert.deepEqual(parseThumbSize('100x50'), { width: 100, height: 50, mode: 'c' });
  assert.deepEqual(parseThumbSize('100x50t'), { width: 100, height: 50, mode: 't' });
  assert.deepEqual(parseThumbSize('100x50b'), { width: 100, height: 50, mode: 'b' });
  assert.deepEqual(parseThumbSize('100x50f'), { width: 100, height: 50, mode: 'f' });
  assert.deepEqual(parseThumbSize('0x50'), { width: 0, height: 50, mode: 'c' });
  assert.deepEqual(parseThumbSize('100x0'), { width: 100, height: 0, mode: 'c' });
  for (const s of ['0x0', '0x50t', '100x0f', '4097x10', '10x4097', '100X50', '100x50c', ' 100x50', '100x', 'x50', '-1x5', '1.5x2', '00001x1'])
    assert.equal(parseThumbSize(s), null, s);
  assert.deepEqual(parseThumbSize('4096x4096'), { width: 4096, height: 4096, mode: 'c' });
});

test('thumbKey: beside the original, PocketBase-style', () => {
  assert.equal(thumbKey('col/abcdefghij12345/a_1234567890.png', '10x10t'), 'col/abcdefghij12345/thumbs_a_1234567890.png/10x10t_a_1234567890.png');
});

test('at most two generations at once; concurrent callers share one', async () => {
  const { storage, stats } = counted();
  const thumbs = new Thumbnails(storage, 2);
  const keys: string[] = [];
  for (let i = 0; i < 6; i++) {
    const name = `p${i}_abcdefghij.png`;
    await storage.write('col', 'abcdefghij12345', name, await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: i * 40, g: 0, b: 0 } } }).png().toBuffer());
    keys.push(`col/abcdefghij12345/${name}`);
  }
  const sizes = ['10x10', '0x12', '20x0'];
  const calls = keys.flatMap((k) => sizes.flatMap((s) => [1, 2, 3, 4].map(() => thumbs.ensure(k, 'image/png', s))));
  assert.deepEqual(new Set(await Promise.all(calls)), new Set([true]));
  assert.equal(stats.reads, keys.length * sizes.length, 'one read (one generation) per thumbnail');
  assert.ok(stats.maxActive <= 2, `at most two at once, saw ${stats.maxActive}`);
  assert.equal(stats.maxActive, 2, 'the bound is used');
  const meta = await sharp(await storage.readAll(thumbKey(keys[0]!, '0x12'))).metadata();
  assert.deepEqual([meta.width, meta.height, meta.format], [16, 12, 'png']);

  // made already: no new read
  const before = stats.reads;
  assert.equal(await thumbs.ensure(keys[0]!, 'image/png', '10x10'), true);
  assert.equal(stats.reads, before);
});

test('no thumbnail: not an image type, a bad size, an undecodable source (remembered), a missing original', async () => {
  const { storage, stats } = counted();
  const thumbs = new Thumbnails(storage);
  await storage.write('col', 'zzzzzzzzzzzzzzz', 'bad_abcdefghij.png', Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(300, 1)]));
  const key = 'col/zzzzzzzzzzzzzzz/bad_abcdefghij.png';
  assert.equal(await thumbs.ensure(key, 'text/plain', '10x10'), false);
  assert.equal(await thumbs.ensure(key, 'image/png', '0x0'), false);
  assert.equal(stats.reads, 0, 'nothing read for those');
  assert.equal(await thumbs.ensure(key, 'image/png', '10x10'), false);
  assert.equal(await thumbs.ensure(key, 'image/png', '10x10'), false);
  assert.equal(stats.reads, 1, 'an undecodable source is read once');
  assert.equal(await storage.stat(thumbKey(key, '10x10')), null);
  assert.equal(await thumbs.ensure('col/zzzzzzzzzzzzzzz/gone_abcdefghij.png', 'image/png', '10x10'), false);
});
