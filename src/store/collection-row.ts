/**
 * A collection definition as both backends store it: a row of `_collections` (fields, indexes
 * and options as JSON text, `system` as 0/1), read back the same way by the schema stores
 * (src/store/sqlite/schema-sql.ts, src/store/pg/schema-sql.ts) and by `svc doctor`.
 */
import type { Collection } from '../model/schema.js';

/**
 * A `_collections` row (columns in SELECT_ALL order of src/store/sqlite/schema-sql.ts: id, name,
 * type, system, fields, indexes, options, the five rules, created, updated) as a Collection.
 * @throws SyntaxError on corrupt JSON
 */
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
