/**
 * Every data cache of the server in one place, with its bounds, and the one way they are kept
 * coherent: the change feed (src/store/change-feed.ts). Each committed transaction's changes
 * reach `apply` before any write of that commit is answered, so a reader never meets a stale
 * entry for a write it saw acknowledged. Another instance's commits arrive by notification
 * (src/store/pg/cluster-feed.ts), a moment after that instance answered: in that window this
 * instance can still serve the entry from before (docs/deployment.md, "Several instances").
 * Records written to the database by another process are not seen (the CLI writes only
 * `_superusers`, which is never cached).
 *
 * | cache        | holds                                                        | bound                   | ends on                         |
 * |--------------|--------------------------------------------------------------|-------------------------|---------------------------------|
 * | records      | a view's rendered JSON and stored row (base, caller-free)     | 8 MiB (record-cache.ts) | a change of the record          |
 * | listRows     | records as list pages render them (json_object), UTF-8 bytes  | 8 MiB                   | a change of the record          |
 * | authRecords  | callers' whole auth records (never `_superusers`)             | 20,000 entries          | a change of the record          |
 * | pages        | rendered offset-mode list pages                               | 512 pages, 8 MiB        | any commit (page-cache.ts)      |
 * | counts       | COUNT(*) of a list scope; rows matching a relation semi-join  | 4,000 entries           | a create/delete (unfiltered); any change of the collection (filtered); any commit (relation paths) |
 * | walks        | offset-walk checkpoints of a scope and one-column sort        | 256 walks               | as counts                       |
 *
 * Compiled statements, rules, filters and serializers are memoized beside their compilers and
 * key on the schema version, which every schema change bumps.
 */
import type { ChangeBatch, ChangeFeed } from '../store/change-feed.js';
import type { SqlValue } from '../store/bind.js';
import { AuthRecordCache, RecordCache } from './record-cache.js';
import { PageCache } from './page-cache.js';
import { boundedCache } from './bounded.js';

/**
 * Counts cached at most (the least recently used forgotten first past it). A list over a relation filter keeps two
 * (its count, and the count deciding its plan: records/list/plan.ts), so a few thousand distinct
 * filters of a read-mostly workload stay counted; an entry is its SQL text and values, well
 * under 1 KB.
 */
export const COUNT_CACHE_MAX = 4000;
/** Offset walks kept at most (the least recently used forgotten first past it). */
export const WALK_CACHE_MAX = 256;

/**
 * The checkpoints of an offset walk (records/list/offset.ts, walkFrom): the sort value and rowid of
 * every WALK_STEP-th row of one scope in page order, found so far; `end` when no more exist;
 * `pending` while a request is finding more.
 */
export interface OffsetWalk {
  points: Array<{ value: SqlValue; rowid: SqlValue }>;
  end: boolean;
  pending: Promise<void> | null;
}

/** Offset walks keyed by scope and sort, each valid for one generation string (like counts). */
export class WalkCache {
  private entries = boundedCache<string, { gen: string; walk: OffsetWalk }>(WALK_CACHE_MAX);
  /** Look-ups that found a walk of the same generation, and those that did not, since start (the metrics). */
  hits = 0;
  misses = 0;

  get(key: string, gen: string): OffsetWalk | undefined {
    const hit = this.entries.get(key);
    if (hit && hit.gen === gen) {
      this.hits++;
      return hit.walk;
    }
    this.misses++;
    return undefined;
  }

  set(key: string, gen: string, walk: OffsetWalk): void {
    this.entries.set(key, { gen, walk });
  }
}

/** COUNT(*) results keyed by scope, each valid for one generation string. */
export class CountCache {
  private entries = boundedCache<string, { gen: string; count: number }>(COUNT_CACHE_MAX);
  /** Look-ups that found a count of the same generation, and those that did not, since start (the metrics). */
  hits = 0;
  misses = 0;

  get(key: string, gen: string): number | undefined {
    const hit = this.entries.get(key);
    if (hit && hit.gen === gen) {
      this.hits++;
      return hit.count;
    }
    this.misses++;
    return undefined;
  }

  set(key: string, gen: string, count: number): void {
    this.entries.set(key, { gen, count });
  }
}

export class Caches {
  /** rendered records of views (base collections whose view answer does not depend on the caller) */
  readonly records = new RecordCache();
  /** records as list pages render them, as UTF-8 bytes, so plain pages assemble hot rows from memory (records/list/render.ts) */
  readonly listRows = new RecordCache<Buffer>(8 * 1024 * 1024, 150);
  readonly authRecords = new AuthRecordCache();
  readonly pages = new PageCache();
  readonly counts = new CountCache();
  /** checkpoints of deep offset pages, valid like counts (records/list/offset.ts, walkFrom) */
  readonly walks = new WalkCache();
  /*
   * Two write generations per collection key the counts: `rows` moves when rows may have been
   * added or removed, `values` when existing rows changed. A count without a WHERE clause depends
   * on `rows` alone, so updates (the common concurrent write) keep it cached.
   */
  private rowsGen = new Map<string, number>();
  private valuesGen = new Map<string, number>();

  constructor(feed: ChangeFeed) {
    feed.subscribe((batch) => this.apply(batch));
  }

  /** Invalidates what one committed transaction made stale. */
  private apply(batch: ChangeBatch): void {
    for (const ch of batch.changes) {
      if (ch.op === 'create') bump(this.rowsGen, ch.collection);
      else {
        bump(ch.op === 'update' ? this.valuesGen : this.rowsGen, ch.collection);
        this.records.drop(ch.collection, ch.id);
        this.listRows.drop(ch.collection, ch.id);
        this.authRecords.drop(ch.collection, ch.id);
      }
    }
    for (const cid of batch.truncated) {
      bump(this.rowsGen, cid);
      bump(this.valuesGen, cid);
      this.records.dropCollection(cid);
      this.listRows.dropCollection(cid);
      this.authRecords.dropCollection(cid);
    }
  }

  /** The generation a cached count of the collection is valid for (see the write generations above). */
  generation(collectionId: string, filtered = true): string {
    const rows = this.rowsGen.get(collectionId) ?? 0;
    return filtered ? `${rows}:${this.valuesGen.get(collectionId) ?? 0}` : `${rows}`;
  }
}

function bump(map: Map<string, number>, collectionId: string): void {
  map.set(collectionId, (map.get(collectionId) ?? 0) + 1);
}
