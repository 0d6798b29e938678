/**
 * A bounded cache of rendered records for reads whose answer does not depend on the caller: base
 * collections (auth records hide `email` per caller), a `@public` view rule or a superuser, no
 * expand or fields projection, no ttl_field (expiry is time-dependent).
 *
 * Why: a read-by-id answered from memory measured well under half the cost of one that runs the
 * libsql point read (bench/README.md, "Record read by id"), so a hot record is served from memory.
 *
 * Coherence: every write goes through this process's writer, whose change feed reaches Caches
 * (caches.ts) after each commit: a changed or deleted record drops its entry (`drop`), cascades
 * and trigger side effects arrive as changes of their own, a bulk change too large to list drops
 * the collection's entries by bumping its generation, and a schema change changes the
 * collection's registry version, part of each entry.
 * Writes by other processes to record tables are not seen until those entries change here; the
 * `svc` CLI only writes `_superusers` (an auth collection, never cached).
 */
import { boundedCache } from './bounded.js';

export interface CachedRecord<B extends string | Buffer = string> {
  body: B;
  version: number;
  /** the stored row (raw values), for rules decided against it (see RuleBook.ownerColumn) */
  row?: unknown[];
}

const MAX_BYTES = 16 * 1024 * 1024;
const MAX_BODY = 64 * 1024;

/** One collection's entries, keyed by record id, with the body characters they hold. */
interface Bucket<B extends string | Buffer> {
  entries: Map<string, CachedRecord<B>>;
  bytes: number;
}

/**
 * Entries live in one map per collection, keyed by the record id alone: a list page looks up 20
 * ids, and a lookup by a fresh `collection + id` string paid for building and hashing that string
 * each time (bench/README.md, "List pages").
 *
 * `B`: the body's form, a string (records as get-by-id answers them) or UTF-8 bytes (list rows,
 * which are copied into the page's bytes: see PageRenderer.pageFromRowCache (src/records/list/render.ts); each in memory of
 * its own, never a slice of a shared pool). Sizes count the body's `length` (characters of a
 * string, bytes of a Buffer) plus `entryOverhead` per entry (a Buffer's own backing store and
 * objects, about 150 bytes).
 *
 * Not an lru-cache (src/cache/bounded.ts): a plain page looks up 20 ids here, and lru-cache's
 * lookup (its recency bookkeeping) measured dearer than a Map's, a share of a plain page's
 * main-thread cost worth keeping (bench/README.md, "Bounded caches through lru-cache").
 */
export class RecordCache<B extends string | Buffer = string> {
  private buckets = new Map<string, Bucket<B>>();
  private bytes = 0;
  /** Look-ups that found a valid entry, and those that did not, since start (read by the metrics: docs/operations.md, "Metrics"). */
  hits = 0;
  misses = 0;

  /**
   * @param maxBytes body characters (or bytes) kept at most before the cache starts over (default 16 MiB)
   * @param entryOverhead what each entry counts beyond its body's length (default 0)
   */
  constructor(private readonly maxBytes = MAX_BYTES, private readonly entryOverhead = 0) {}

  /** The cached body, if still valid for this registry version. */
  get(collectionId: string, id: string, version: number): B | undefined {
    return this.entry(collectionId, id, version)?.body;
  }

  /** The cached entry (body and stored row), if still valid for this registry version. */
  entry(collectionId: string, id: string, version: number): CachedRecord<B> | undefined {
    const e = this.buckets.get(collectionId)?.entries.get(id);
    if (e === undefined || e.version !== version) {
      this.misses++;
      if (e !== undefined) this.drop(collectionId, id);
      return undefined;
    }
    this.hits++;
    return e;
  }

  set(collectionId: string, id: string, version: number, body: B, row?: unknown[]): void {
    if (body.length > MAX_BODY) return;
    const size = body.length + this.entryOverhead;
    if (this.bytes + size > this.maxBytes) this.clear();
    let bucket = this.buckets.get(collectionId);
    if (bucket === undefined) {
      bucket = { entries: new Map(), bytes: 0 };
      this.buckets.set(collectionId, bucket);
    }
    const old = bucket.entries.get(id);
    const delta = size - (old ? old.body.length + this.entryOverhead : 0);
    bucket.entries.set(id, { body, version, row });
    bucket.bytes += delta;
    this.bytes += delta;
  }

  /** One record changed or was deleted. */
  drop(collectionId: string, id: string): void {
    const bucket = this.buckets.get(collectionId);
    const old = bucket?.entries.get(id);
    if (bucket && old) {
      bucket.bytes -= old.body.length + this.entryOverhead;
      this.bytes -= old.body.length + this.entryOverhead;
      bucket.entries.delete(id);
    }
  }

  /** Rows of a collection changed in ways not known record by record. */
  dropCollection(collectionId: string): void {
    const bucket = this.buckets.get(collectionId);
    if (bucket === undefined) return;
    this.bytes -= bucket.bytes;
    this.buckets.delete(collectionId);
  }

  clear(): void {
    this.buckets.clear();
    this.bytes = 0;
  }
}

/**
 * Auth records by id, for resolving the caller of a request without a point read each time.
 * The same coherence as RecordCache: every change of an auth row made by this process reaches it
 * through the change feed (Caches). `_superusers` is never cached: the CLI changes
 * it from another process (`svc superuser upsert` must end the old tokens at once).
 */
export class AuthRecordCache {
  private static readonly MAX = 20_000;
  private entries = boundedCache<string, { rec: Record<string, unknown>; version: number; gen: number }>(AuthRecordCache.MAX);
  private gens = new Map<string, number>();
  /** Look-ups that found a valid entry, and those that did not, since start (the metrics). */
  hits = 0;
  misses = 0;

  private gen(collectionId: string): number {
    return this.gens.get(collectionId) ?? 0;
  }

  get(collectionId: string, id: string, version: number): Record<string, unknown> | undefined {
    const k = `${collectionId}\u0000${id}`;
    const e = this.entries.get(k);
    if (e === undefined || e.version !== version || e.gen !== this.gen(collectionId)) {
      this.misses++;
      if (e !== undefined) this.entries.delete(k);
      return undefined;
    }
    this.hits++;
    return e.rec;
  }

  set(collectionId: string, id: string, version: number, rec: Record<string, unknown>): void {
    this.entries.set(`${collectionId}\u0000${id}`, { rec, version, gen: this.gen(collectionId) });
  }

  drop(collectionId: string, id: string): void {
    this.entries.delete(`${collectionId}\u0000${id}`);
  }

  dropCollection(collectionId: string): void {
    this.gens.set(collectionId, this.gen(collectionId) + 1);
  }
}
