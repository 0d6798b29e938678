/**
 * The PostgreSQL schema store (implements SchemaStore, src/store/schema-store.ts): the counterpart
 * of src/store/sqlite/schema-sql.ts. Collection definitions are rows of `_collections`
 * (bootstrap.ts: fields, indexes and options as JSON text, `system` as smallint 0/1), read into
 * Collections by rowToCollection (src/store/collection-row.ts) so both backends hand the domain
 * the same objects; changes are the DDL jobs of src/store/pg/collection-sql.ts, given the server's options
 * (whether pgvector is installed) at construction. Each job ends with the step that makes change
 * capture cover exactly the record tables of the new schema (PgWriter.changeTriggersStep), so a new
 * table's writes reach the change feed from its first commit.
 *
 * Order of loadAll: SQLite answers in rowid order, and its registry upsert (INSERT OR REPLACE)
 * gives a changed collection a new rowid, so a collection moves to the end when it is updated.
 * PostgreSQL has no such order (a heap scan's order is not stable); here collections come in
 * creation order (`"created"`, then `"id"`, bytewise), the order the running registry keeps
 * them in. The registry is keyed by id and name; no caller relies on the order.
 */
import type { Collection } from '../../model/schema.js';
import type { SchemaStore } from '../schema-store.js';
import type { WriteStep } from '../write-job.js';
import type { PgReader } from './reader.js';
import { rowToCollection } from '../collection-row.js';
import { refuseSearchableWhenOff } from '../sqlite/collection-sql.js';
import { createSteps, deleteSteps, updateSteps, type PgDdlOptions } from './collection-sql.js';
import { PgWriter, type ChangeTable } from './writer.js';

/**
 * The collection id under which changes of `_collections` reach the change feed: another
 * instance's schema change, so each instance reloads its registry (src/store/pg/open.ts).
 */
export const SCHEMA_FEED_ID = '_collections';

/** The tables change capture covers: every collection's record table (by collection id), and `_collections`. */
export function changeTables(collections: readonly Collection[]): ChangeTable[] {
  return [...collections.map((c) => ({ collection: c.id, table: c.name })), { collection: SCHEMA_FEED_ID, table: '_collections' }];
}

const SELECT_ALL = 'SELECT "id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated" FROM "_collections" ORDER BY "created" COLLATE "C", "id" COLLATE "C"';

export class PgSchemaSql implements SchemaStore {
  constructor(private reader: PgReader, private options: PgDdlOptions = { vector: false }) {}

  /** Reads on a connection of the reader's pool: one statement in its own implicit transaction, so the definitions are read fresh. */
  async loadAll(): Promise<Collection[]> {
    return (await this.reader.all(SELECT_ALL, [])).map(rowToCollection);
  }

  createSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[] {
    // the insert of the definition is announced as a create (change capture notes updates and
    // deletes only; creates are what steps declare)
    refuseSearchableWhenOff(c);
    return [...createSteps(c, before, after, this.options), { ...PgWriter.changeTriggersStep(changeTables(after)), creates: { collection: SCHEMA_FEED_ID, id: c.id } }];
  }

  updateSteps(prev: Collection, next: Collection, before: Collection[], after: Collection[]): WriteStep[] {
    refuseSearchableWhenOff(next);
    return [...updateSteps(prev, next, before, after, this.options), PgWriter.changeTriggersStep(changeTables(after))];
  }

  deleteSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[] {
    return [...deleteSteps(c, before, after), PgWriter.changeTriggersStep(changeTables(after))];
  }
}
