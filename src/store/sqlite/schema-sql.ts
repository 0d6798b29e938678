/**
 * The SQLite schema store (implements SchemaStore, src/store/schema-store.ts): collection
 * definitions are rows of `_collections` (fields, indexes and options as JSON text, `system` as
 * 0/1); changes are the DDL jobs of collection-sql.ts.
 */
import type { Collection } from '../../model/schema.js';
import type { SchemaStore } from '../schema-store.js';
import type { Reader } from './reader.js';
import { createSteps, deleteSteps, updateSteps } from './collection-sql.js';

const SELECT_ALL = 'SELECT "id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated" FROM "_collections"';

/** A `_collections` row (columns in SELECT_ALL order) as a Collection. @throws SyntaxError on corrupt JSON */
export function rowToCollection(r: unknown[]): Collection {
  return {
    id: String(r[0]),
    name: String(r[1]),
    type: r[2] === 'auth' ? 'auth' : 'base',
    system: Number(r[3]) === 1,
    fields: JSON.parse(String(r[4])),
    indexes: JSON.parse(String(r[5])),
    options: JSON.parse(String(r[6])),
    listRule: r[7] as string | null,
    viewRule: r[8] as string | null,
    createRule: r[9] as string | null,
    updateRule: r[10] as string | null,
    deleteRule: r[11] as string | null,
    created: String(r[12]),
    updated: String(r[13]),
  };
}

export class SqliteSchemaSql implements SchemaStore {
  constructor(private reader: Reader) {}

  /** Reads on the reader's connection directly: no cached statement, no read snapshot left open. */
  loadAll(): Collection[] {
    const rows = this.reader.db.prepare(SELECT_ALL).raw(true).all([]) as unknown[][];
    return rows.map(rowToCollection);
  }

  createSteps = createSteps;
  updateSteps = updateSteps;
  deleteSteps = deleteSteps;
}
