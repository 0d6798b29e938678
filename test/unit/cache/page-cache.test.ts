/**
 * PageCache (src/cache/page-cache.ts): a page is kept on its second offer at one commit count,
 * served only at that count (as UTF-8 bytes, whether offered as a string or as bytes), bounded
 * by entries and bytes (oldest out first), and long keys or bodies are never kept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_CACHE_MAX_CHARS, PAGE_CACHE_MAX_ENTRIES, PageCache } from '../../../src/cache/page-cache.js';

test('kept on the second offer at the same commit; any later commit ends it', () => {
  const c = new PageCache();
  c.set('k', 1, 'body');
  assert.equal(c.get('k', 1), undefined, 'a first offer is only remembered');
  c.set('k', 1, 'body');
  assert.deepEqual(c.get('k', 1), Buffer.from('body'));
  assert.equal(c.get('k', 2), undefined, 'another commit count misses');
  assert.equal(c.get('k', 1), undefined, 'and the stale entry is gone');
  c.set('j', 3, 'a');
  c.set('j', 4, 'b');
  assert.equal(c.get('j', 4), undefined, 'offers at different commits do not admit');
});

test('bounded by entries and characters; long keys and bodies are not kept', () => {
  const c = new PageCache();
  const put = (k: string, body: string) => { c.set(k, 0, body); c.set(k, 0, body); };
  for (let i = 0; i < PAGE_CACHE_MAX_ENTRIES + 10; i++) put(`k${i}`, 'x');
  assert.equal(c.size, PAGE_CACHE_MAX_ENTRIES);
  assert.equal(c.get('k0', 0), undefined, 'the oldest went first');
  assert.deepEqual(c.get(`k${PAGE_CACHE_MAX_ENTRIES + 9}`, 0), Buffer.from('x'));
  const big = 'y'.repeat(200 * 1024);
  const d = new PageCache();
  for (let i = 0; i < 60; i++) {
    d.set(`b${i}`, 0, big);
    d.set(`b${i}`, 0, big);
  }
  assert.ok(d.size > 0);
  assert.ok(d.size * big.length <= PAGE_CACHE_MAX_CHARS, `${d.size} pages of ${big.length}`);
  const e = new PageCache();
  e.set('z'.repeat(3000), 0, 'b');
  e.set('z'.repeat(3000), 0, 'b');
  assert.equal(e.get('z'.repeat(3000), 0), undefined);
  e.set('huge', 0, 'h'.repeat(300 * 1024));
  e.set('huge', 0, 'h'.repeat(300 * 1024));
  assert.equal(e.get('huge', 0), undefined);
});

test('a body is kept as its UTF-8 bytes, in memory of its own (never a slice of a shared pool)', () => {
  const c = new PageCache();
  const text = '{"name":"Ḩalāqīm 😀"}';
  c.set('s', 0, text);
  c.set('s', 0, text);
  assert.equal(c.get('s', 0)?.toString('utf8'), text);
  assert.equal(c.get('s', 0)?.length, Buffer.byteLength(text));
  assert.equal(c.get('s', 0)?.buffer.byteLength, Buffer.byteLength(text), 'a backing store of its own');
  const bytes = Buffer.from('[1,2]'); // a slice of Node's 8 KiB pool
  assert.ok(bytes.buffer.byteLength > bytes.length);
  c.set('b', 0, bytes);
  c.set('b', 0, bytes);
  assert.deepEqual(c.get('b', 0), bytes);
  assert.equal(c.get('b', 0)?.buffer.byteLength, bytes.length, 'copied out of the pool');
});
