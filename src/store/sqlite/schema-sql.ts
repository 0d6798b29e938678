/**
 * The SQLite schema store (implements SchemaStore, src/store/schema-store.ts): collection
 * definitions are rows of `_collections` (fields, indexes and options as JSON text, `system` as
 * 0/1); changes are the DDL jobs of collection-sql.ts.
 */
import type { Collection } from '../../model/schema.js';
import type { SchemaStore } from '../schema-store.js';
import type { Reader } from './reader.js';
import { createSteps, deleteSteps, updateSteps } from './collection-sql.js';
import { rowToCollection } from '../collection-row.js';

const SELECT_ALL = 'SELECT "id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated" FROM "_collections"';

export class SqliteSchemaSql implements SchemaStore {
  constructor(private reader: Reader) {}

  /** Reads on the reader's connection directly: no cached statement, no read snapshot left open. */
  async loadAll(): Promise<Collection[]> {
    const rows = this.reader.db.prepare(SELECT_ALL).raw(true).all([]) as unknown[][];
    return rows.map(rowToCollection);
  }

  createSteps = createSteps;
  updateSteps = updateSteps;
  deleteSteps = deleteSteps;
}
