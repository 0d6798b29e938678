/**
 * The one bounded in-memory map of the feature folders: a least-recently-used cache from the
 * `lru-cache` package (ARCHITECTURE.md, "Folders": `src/cache/`), so no folder keeps a
 * hand-written "clear when full" map of its own.
 *
 * `boundedCache(max)` holds at most `max` entries and, when full, forgets the entry read or
 * written least recently (`get` and `set` refresh an entry; `has` and `peek` do not). Its memory
 * grows with use: lru-cache sized by entry count (`max`) reserves its index arrays for `max`
 * entries when it is built, a few MB for the 100,000-entry caches (rate limits, sticky
 * assignments) even on a server that never fills them, so the count is kept as a size budget
 * of one unit per entry instead. Values may not be `undefined` or `null` (lru-cache's contract):
 * a cache of "no answer" stores a sentinel of its own.
 *
 * The storage layer (src/store/, workers/) may not import this folder and uses `LRUCache` with
 * `max` directly; its caches are small.
 */
import { LRUCache } from 'lru-cache';

export type { LRUCache } from 'lru-cache';

const ONE = (): number => 1;

/**
 * A least-recently-used map of at most `max` entries (a positive integer).
 * @throws TypeError when `max` is not a positive integer
 */
export function boundedCache<K extends {}, V extends {}>(max: number): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: max, sizeCalculation: ONE });
}
