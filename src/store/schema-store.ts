/**
 * The storage boundary of the schema (ARCHITECTURE.md, "Folders"): how collection definitions are
 * read from and written to the database. A collection change is one write job that migrates the
 * record table (columns, indexes, full-text and vector indexes, relation triggers) and stores the
 * definition, so it applies whole or not at all. The SQLite implementation is `sqliteSchema`
 * (src/store/sqlite/schema-sql.ts); a Store hands it out as `store.sql.schema`.
 */
import type { Collection } from '../model/schema.js';
import type { WriteStep } from './write-job.js';

export interface SchemaStore {
  /**
   * Every stored collection definition, in storage order (read at startup and, on PostgreSQL,
   * after any instance's schema change; outside any cache). A promise on both backends.
   */
  loadAll(): Promise<Collection[]>;
  /**
   * Steps creating collection `c`: its table, indexes, full-text and vector indexes, the
   * relation triggers of the whole schema `after` (replacing those of `before`), and its stored
   * definition.
   */
  createSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[];
  /**
   * Steps migrating `prev` to `next` (same id): field data is kept by field id (renames keep
   * data, dropped fields lose theirs); the table is rebuilt when its columns or name change.
   */
  updateSteps(prev: Collection, next: Collection, before: Collection[], after: Collection[]): WriteStep[];
  /**
   * Steps dropping collection `c`: its table, indexes and triggers, its stored definition, and
   * its rows in the auth side tables (AUTH_SIDE_TABLES, src/store/auth-store.ts).
   */
  deleteSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[];
}
