/**
 * The schema model shared by the collections service, the field codecs, the rule compiler, the
 * record queries and storage (docs/api.md, "Collections" and "Records"). Plain data types,
 * constants and the predicates of a field's storage shape: this folder imports nothing, so storage
 * reads the schema without importing a feature (ARCHITECTURE.md, "Folders").
 */

/** Field types of the catalog (docs/api.md, "Collections"). */
export type FieldType =
  | 'text'
  | 'number'
  | 'bool'
  | 'email'
  | 'url'
  | 'date'
  | 'autodate'
  | 'select'
  | 'relation'
  | 'json'
  | 'editor'
  | 'file';

/**
 * One field of a collection. Type-specific options live in `options`; the common ones are
 * `required`, `unique`, `encrypted`, `hidden`, `searchable`.
 *
 * Known options by type:
 * - text / editor: `min`, `max` (length in characters), `pattern` (regex source, text only)
 * - number: `min`, `max`, `mode` (`"fixed"` for exact decimals), `scale` (1..8 with fixed mode)
 * - select: `values` (string[]), `maxSelect` (default 1; >1 stores an array)
 * - relation: `collectionId`, `cascadeDelete`, `minSelect`, `maxSelect` (default 1; >1 stores an array)
 * - autodate: `onCreate` (default true), `onUpdate` (default false)
 * - date: `min`, `max` (date strings)
 */
export interface Field {
  /** stable id; survives renames */
  id: string;
  name: string;
  type: FieldType;
  /** true for the built-in fields of auth collections (email, verified, …) */
  system?: boolean;
  options: FieldOptions;
}

export interface FieldOptions {
  required?: boolean;
  unique?: boolean;
  encrypted?: boolean;
  hidden?: boolean;
  searchable?: boolean;
  min?: number | string | null;
  max?: number | string | null;
  pattern?: string | null;
  mode?: 'fixed' | null;
  scale?: number | null;
  values?: string[];
  maxSelect?: number | null;
  minSelect?: number | null;
  collectionId?: string;
  cascadeDelete?: boolean;
  onCreate?: boolean;
  onUpdate?: boolean;
  /** json: embedding length (F32_BLOB shadow column), or null */
  dimensions?: number | null;
  /** json: libsql vector index over the shadow column */
  vectorIndex?: boolean;
  [key: string]: unknown;
}

export type CollectionType = 'base' | 'auth';

export interface AuthOptions {
  identityFields: string[];
  minPasswordLength: number;
  two_factor?: 'disabled' | 'optional' | 'required';
  require_verified?: boolean;
  session?: { store: 'epoch' | 'table' };
  methods?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface CollectionOptions {
  ttl_field?: string | null;
  auth?: AuthOptions;
  [key: string]: unknown;
}

/** A named index: `{name, fields: [col, …], unique}`. */
export interface IndexDef {
  name: string;
  fields: string[];
  unique?: boolean;
}

export type RuleName = 'listRule' | 'viewRule' | 'createRule' | 'updateRule' | 'deleteRule';
export const RULE_NAMES: readonly RuleName[] = ['listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule'];

/** A collection as stored in `_collections` and returned by the API (with `schema` = fields). */
export interface Collection {
  id: string;
  name: string;
  type: CollectionType;
  system: boolean;
  fields: Field[];
  indexes: IndexDef[];
  options: CollectionOptions;
  listRule: string | null;
  viewRule: string | null;
  createRule: string | null;
  updateRule: string | null;
  deleteRule: string | null;
  created: string;
  updated: string;
}

/** Columns every record table has besides its fields. */
export const BASE_COLUMNS = ['id', 'created', 'updated'] as const;

/**
 * Columns of auth collections that are never serialized and never usable in client filters or
 * sorts (operator-authored rules may use them).
 */
export const HIDDEN_AUTH_COLUMNS = ['passwordHash', 'tokenKey', 'token_epoch'] as const;

/**
 * Field names starting with this (any case) are refused (collection-input.ts): both backends
 * name a vector field's shadow column `_vec_<fieldId>` (docs/lists.md, "Vectors").
 */
export const VECTOR_COLUMN_PREFIX = '_vec_';

// ---- storage shapes: how a field's value is stored, which both backends' columns and codecs read

/** True for `mode: 'fixed'` number fields (stored as scaled integers, docs/api.md "Collections"). */
export function isFixed(field: Field): boolean {
  return field.type === 'number' && field.options.mode === 'fixed';
}

/** True when a select or relation field stores an array of values (`maxSelect` > 1). */
export function isMultiple(field: Field): boolean {
  return (field.type === 'select' || field.type === 'relation') && (field.options.maxSelect ?? 1) > 1;
}

/** True when a file field stores an array of names (`maxSelect` > 1). */
export function isMultiFile(field: Field): boolean {
  return field.type === 'file' && (field.options.maxSelect ?? 1) > 1;
}

/** Whether column `name` of `c` holds addresses that are private unless `emailVisibility` is on. */
export function isPrivateEmail(c: Collection, name: string): boolean {
  return c.type === 'auth' && name === 'email';
}
