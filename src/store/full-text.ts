/**
 * Full-text search as storage keeps it (docs/lists.md, "Full-text search"): which fields are
 * searchable, and the start-up upkeep of the indexes each backend keeps its own way (SQLite: an
 * FTS5 table with triggers per collection, src/store/sqlite/collection-sql.ts; PostgreSQL: a
 * generated tsvector column, src/store/pg/collection-sql.ts). `store.sql.fullText` is the Store's
 * backend's (src/store/store.ts, StoreSql).
 */
import type { Collection, Field } from '../model/schema.js';
import type { WriteStep } from './write-job.js';

/** The start-up upkeep of the full-text indexes. */
export interface FullTextSql {
  /**
   * Turns full-text search on or off (feature `fts5-off`): while off, the schema stores of both
   * backends refuse searchable fields (src/store/sqlite/collection-sql.ts, refuseSearchableWhenOff).
   */
  enable(on: boolean): void;
  /**
   * The collections among `searchable` whose index is missing or differs from what this version
   * makes, with the write-job steps that drop and rebuild them (existing rows indexed); none
   * where the database keeps the index itself.
   */
  staleIndexes(searchable: Collection[]): { stale: Collection[]; steps: WriteStep[] };
}

/** The fields of `c` declared searchable (text and editor fields with `searchable`), in field order. */
export function searchableFields(c: Collection): Field[] {
  return c.fields.filter((f) => f.options.searchable && (f.type === 'text' || f.type === 'editor'));
}
