/**
 * Resolution of field names against the schema for filters, sorts and rules (docs/rules.md,
 * "Filters"; docs/api.md, "Records"), independent of the SQL dialect: which names exist, which are
 * hidden or encrypted, which fields hold several values. Paths become SQL (both backends) in
 * rule-paths.ts.
 */
import { InvalidQuery } from '../errors/store-errors.js';
import { BASE_COLUMNS, HIDDEN_AUTH_COLUMNS, type Collection, type Field } from '../../model/schema.js';
import type { PathMode, SchemaLookup } from '../rule-types.js';

/** Most relations a single path may traverse. */
export const MAX_RELATION_DEPTH = 6;

/** Whether a select/relation/file field stores a JSON array (maxSelect > 1). */
export function isMultiValued(field: Field): boolean {
  const multiType = field.type === 'select' || field.type === 'relation' || field.type === 'file';
  return multiType && (field.options.maxSelect ?? 1) > 1;
}

/**
 * Finds the column `name` of `coll`, enforcing the mode's restrictions.
 * Returns the field definition, or null for the built-in/hidden auth columns.
 * @throws InvalidQuery `<label>: unknown field "…".`, or naming a hidden/encrypted field (the API
 *   answers 400; its part is `sort` for the label `Invalid sort`, else `filter`)
 */
export function resolveColumn(coll: Collection, name: string, mode: PathMode, shown: string, label: string): Field | null {
  const fail = (why: string): never => {
    throw new InvalidQuery(label === 'Invalid sort' ? 'sort' : 'filter', `${label}: ${why}.`);
  };
  const field = coll.fields.find((f) => f.name === name);
  if (field) {
    if (field.options.encrypted) fail(`field ${JSON.stringify(shown)} is encrypted and cannot be used here`);
    if (mode === 'filter' && field.options.hidden) fail(`field ${JSON.stringify(shown)} is hidden and cannot be used here`);
    return field;
  }
  if ((BASE_COLUMNS as readonly string[]).includes(name)) return null;
  if (coll.type === 'auth' && (HIDDEN_AUTH_COLUMNS as readonly string[]).includes(name)) {
    if (mode === 'filter') fail(`field ${JSON.stringify(shown)} is hidden and cannot be used here`);
    return null;
  }
  return fail(`unknown field ${JSON.stringify(shown)}`);
}


/**
 * The back-relation `<collection>_via_<field>` from `coll` (PocketBase's name; docs/rules.md,
 * "Back-relations"): the collection `<collection>` (looked up by name) and its relation field
 * `<field>` whose target is `coll`; undefined when `name` names none. Every `_via_` split is
 * tried, so a collection name may itself hold `_via_`.
 */
export function findBackRelation(schema: SchemaLookup, coll: Collection, name: string): { from: Collection; field: Field } | undefined {
  for (let at = name.indexOf('_via_'); at > 0; at = name.indexOf('_via_', at + 1)) {
    const from = schema.byName(name.slice(0, at));
    const fieldName = name.slice(at + 5);
    const field = from?.fields.find((f) => f.name === fieldName && f.type === 'relation' && f.options.collectionId === coll.id);
    if (from && field) return { from, field };
  }
  return undefined;
}
