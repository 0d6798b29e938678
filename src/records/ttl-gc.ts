/**
 * Expiring rows (`options.ttl_field`): reads hide rows whose expiry is set and at or before now
 * (see records-read.ts); this collector deletes them through the writer at startup and about every
 * five minutes (docs/api.md, "Collections": `ttl_field`). Deletes fire the relation triggers like
 * any other delete.
 */
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { SqlWriter } from '../store/backend.js';
import type { RecordSql } from '../store/record-sql.js';
import type { Logger } from '../log/logger.js';
import type { Collection } from '../model/schema.js';
import { nowDate } from '../collections/fields/index.js';

export const TTL_GC_INTERVAL_MS = 5 * 60 * 1000;

/** Called after expired rows of a collection were deleted (stored files are swept there). */
export type AfterExpiry = (c: Collection) => Promise<void>;

/** What the collector uses: every collection, the delete of expired rows and the writer. A Store is one. */
export interface TtlRepository {
  registry: Pick<CollectionRegistry, 'all'>;
  writer: Pick<SqlWriter, 'write'>;
  sql: { records: Pick<RecordSql, 'deleteExpired'> };
}

/** Deletes expired rows of every collection with a ttl_field; returns the number deleted. */
export async function collectExpired(store: TtlRepository, after?: AfterExpiry): Promise<number> {
  let total = 0;
  const now = nowDate();
  for (const c of store.registry.all()) {
    const ttl = c.options.ttl_field;
    if (!ttl) continue;
    const [res] = await store.writer.write([{ sql: store.sql.records.deleteExpired(c, ttl), params: [now] }]);
    if (res.changes > 0) {
      total += res.changes; // caches drop the rows (and cascades) through the change feed
      await after?.(c);
    }
  }
  return total;
}

/**
 * Runs the collector now and then every interval; returns a stop function. `once`: runs a round
 * on one instance of a cluster at a time (OpenedData.runOnce: on PostgreSQL the others skip it).
 */
export function startTtlCollector(store: TtlRepository, logger: Logger, intervalMs = TTL_GC_INTERVAL_MS, after?: AfterExpiry, once?: (fn: () => Promise<void>) => Promise<unknown>): () => void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      let n = 0;
      const collect = async () => {
        n = await collectExpired(store, after);
      };
      await (once ? once(collect) : collect());
      if (n > 0) logger.info(`deleted ${n} expired row(s)`, 'ttl');
    } catch (err) {
      logger.warn(`expired-row collection failed: ${(err as Error).message}`, 'ttl');
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
