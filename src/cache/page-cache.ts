/**
 * Rendered list pages (docs/api.md, "List records"), kept until the next commit.
 *
 * An offset-mode list body depends only on the database (every table a rule, filter or expand
 * may read), the collection's schema and rules, the request's query string and, through rules,
 * `hidePrivate` and expand, on who asks. The cache key holds the collection id and schema
 * version, the caller's identity, the compiled WHERE clause with its bound values, and the query
 * string; an entry is valid only while the writer's commit count is unchanged, so any committed
 * write anywhere ends every cached page. Pages whose content depends on the clock (collections
 * with `ttl_field`, random sorts) and cursor pages (their tokens) are never cached. Like the
 * record cache, this assumes this process makes every write to record tables (docs/internals.md).
 *
 * Bodies are kept as UTF-8 bytes, so a hit is sent without transcoding the string again (measured
 * on pages of mostly non-ASCII names: bench/README.md, "Lists over the cities").
 *
 * Bounded by entries and by bytes of body text (an lru-cache size budget); the least recently used
 * entries go first. A page is kept only when the same key was asked for before at the same commit
 * count (a doorkeeper of recent keys): a stream of one-off queries (distinct filters, vector
 * points) would otherwise fill the cache with pages nobody asks for again, and every such page
 * survives long enough to be promoted into V8's old generation, which then grows (measured:
 * bench/README.md, "The page cache's doorkeeper").
 */
import { LRUCache } from 'lru-cache';
import { boundedCache } from './bounded.js';

/** Entries kept at most. */
export const PAGE_CACHE_MAX_ENTRIES = 512;
/** Body bytes (and key characters) kept at most, 8 MiB. */
export const PAGE_CACHE_MAX_CHARS = 8 * 1024 * 1024;
/** Bodies longer than this (characters or bytes) are not cached. */
const MAX_BODY = 256 * 1024;
/** Keys remembered by the doorkeeper (the least recently offered forgotten first when full). */
const SEEN_MAX = 4096;
/** Longer keys (long filters or embeddings) are neither cached nor remembered: 4096 × 2 KiB bounds the doorkeeper. */
const MAX_KEY = 2048;

interface Entry {
  commit: number;
  body: Buffer;
}

/**
 * `body` as UTF-8 bytes in memory of their own: a small Buffer from Node's pool (or a page
 * assembled in one) would keep its whole 8 KiB pool slab alive while cached.
 */
function exactCopy(body: string | Buffer): Buffer {
  const n = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
  const out = Buffer.allocUnsafeSlow(n);
  if (typeof body === 'string') out.write(body, 0, 'utf8');
  else out.set(body, 0);
  return out;
}

/** What an entry counts against PAGE_CACHE_MAX_CHARS: its body's bytes and its key's characters. */
const entryChars = (e: Entry, key: string): number => e.body.length + key.length;

export class PageCache {
  private entries = new LRUCache<string, Entry>({ max: PAGE_CACHE_MAX_ENTRIES, maxSize: PAGE_CACHE_MAX_CHARS, sizeCalculation: entryChars });
  /** key → commit count at which it was last asked for without being kept */
  private seen = boundedCache<string, number>(SEEN_MAX);
  /** Look-ups that found a page of the same commit count, and those that did not, since start (the metrics). */
  hits = 0;
  misses = 0;

  /** The cached body for `key` if it was rendered at commit count `commit`, else undefined. */
  get(key: string, commit: number): Buffer | undefined {
    const e = this.entries.get(key);
    if (e !== undefined && e.commit === commit) {
      this.hits++;
      return e.body;
    }
    this.misses++;
    if (e !== undefined) this.entries.delete(key);
    return undefined;
  }

  /**
   * Offers `body` for `key`, rendered from a snapshot no older than commit count `commit`; kept
   * when `key` was offered before at the same count (see the doorkeeper above).
   */
  set(key: string, commit: number, body: string | Buffer): void {
    if (body.length > MAX_BODY || key.length > MAX_KEY) return;
    if (this.seen.get(key) !== commit) {
      this.seen.set(key, commit);
      return;
    }
    this.seen.delete(key);
    this.entries.set(key, { commit, body: exactCopy(body) });
  }

  /** Number of cached pages. */
  get size(): number {
    return this.entries.size;
  }
}
