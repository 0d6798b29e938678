/**
 * The shapes of a collection's record values as the API answers them and as a create or an
 * update accepts them (docs/api.md, "Collections" and "Records"), described once for every
 * consumer that writes them down in another language: `svc typegen`'s TypeScript declarations
 * (src/ops/typegen.ts) and the OpenAPI document's JSON Schemas (src/api/openapi-doc.ts). The
 * values follow the field codecs' decode and encode (src/collections/fields/).
 */
import type { Collection, Field } from './schema.js';
import { isFixed, isMultiFile, isMultiple } from './schema.js';

/**
 * The element type of a value:
 * - `string`, `number`, `boolean`: the JSON types;
 * - `date`: a date string as svc stores and answers it (`2024-01-02 03:04:05.678Z`);
 * - `recordId`: a record id (15 characters of `[a-z0-9]`);
 * - `fileName`: a stored file's name;
 * - `decimal`: a fixed-mode number answered as an exact decimal string;
 * - `decimalInput`: a fixed-mode number as a write takes it, a decimal string or a JSON number;
 * - `file`: an uploaded file (a part of a multipart form);
 * - `any`: any JSON value.
 */
export type ShapeScalar = 'string' | 'number' | 'boolean' | 'date' | 'recordId' | 'fileName' | 'decimal' | 'decimalInput' | 'file' | 'any';

/** A field's value: a scalar, or an array of them, maybe null. */
export interface ValueShape {
  scalar: ShapeScalar;
  /** a select field's allowed values (an enumeration of the string scalar); absent otherwise */
  values?: readonly string[];
  /** an array of the scalar (multiple select, relation or file; a json field's vector) */
  array: boolean;
  /** null is a value too */
  nullable: boolean;
}

/** One property of a record answer or of a write body. */
export interface ShapedField {
  name: string;
  shape: ValueShape;
  /** the field it comes from; absent for a write's `id`, `password`, `passwordConfirm` */
  field?: Field;
  /** answers: may be missing from an answer; create bodies: may be left out */
  optional: boolean;
}

/** The type name stem of a collection: `user_profiles` → `UserProfiles` (a leading digit gets a `C`). */
export function typeStem(name: string): string {
  const stem = name.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  return /^[0-9]/.test(stem) ? `C${stem}` : stem || 'Collection';
}

/**
 * Each collection's stem by id, unique within `list` (in its order): a stem taken already gets
 * `2`, `3`, … (`user_profiles` and `userProfiles` → `UserProfiles`, `UserProfiles2`).
 */
export function collectionStems(list: readonly Collection[]): Map<string, string> {
  const stems = new Map<string, string>();
  const used = new Set<string>();
  for (const c of list) {
    let stem = typeStem(c.name);
    for (let i = 2; used.has(stem); i++) stem = `${typeStem(c.name)}${i}`;
    used.add(stem);
    stems.set(c.id, stem);
  }
  return stems;
}

/** The base fields every record answer carries (the collection's own fields named so are these). */
export const BASE_RECORD_FIELDS: ReadonlySet<string> = new Set(['id', 'created', 'updated']);

/** The shape of a field's value in an answer (the codecs' decode). */
export function answerShape(f: Field): ValueShape {
  const one = (scalar: ShapeScalar, nullable = true): ValueShape => ({ scalar, array: false, nullable });
  switch (f.type) {
    case 'text': case 'editor': case 'email': case 'url':
      return one('string');
    case 'date': case 'autodate':
      return one('date');
    case 'number':
      return one(isFixed(f) ? 'decimal' : 'number');
    case 'bool':
      return one('boolean', false);
    case 'json':
      return typeof f.options.dimensions === 'number' ? { scalar: 'number', array: true, nullable: true } : one('any', false);
    case 'select': {
      const values = f.options.values?.length ? f.options.values : undefined;
      return isMultiple(f) ? { scalar: 'string', values, array: true, nullable: false } : { scalar: 'string', values, array: false, nullable: true };
    }
    case 'relation':
      return isMultiple(f) ? { scalar: 'recordId', array: true, nullable: false } : one('recordId');
    case 'file':
      return isMultiFile(f) ? { scalar: 'fileName', array: true, nullable: false } : one('fileName');
    default:
      return one('any', false);
  }
}

/** The shape a create or an update accepts for a field (files as uploads of a multipart form). */
export function inputShape(f: Field): ValueShape {
  if (isFixed(f)) return { scalar: 'decimalInput', array: false, nullable: true };
  if (f.type === 'file') return { scalar: 'file', array: isMultiFile(f), nullable: !isMultiFile(f) };
  return answerShape(f);
}

/**
 * The fields of a record answer after the base ones, in schema order: hidden fields left out;
 * an auth record's `email` optional (others see it only with `emailVisibility`).
 */
export function answerFields(c: Collection): ShapedField[] {
  return c.fields
    .filter((f) => !BASE_RECORD_FIELDS.has(f.name) && !f.options.hidden)
    .map((f) => {
      // an auth record's email is required, so never null, but left out for others unless visible
      const email = c.type === 'auth' && f.name === 'email';
      return { name: f.name, field: f, shape: email ? { ...answerShape(f), nullable: false } : answerShape(f), optional: email };
    });
}

/**
 * What a create accepts, in order: an optional client `id`, every field but the base and
 * autodate ones (required ones required and not null, a bool never required), then for an auth
 * collection `password` and `passwordConfirm`. An update takes any of them but `id`.
 */
export function createFields(c: Collection): ShapedField[] {
  const out: ShapedField[] = [{ name: 'id', shape: { scalar: 'recordId', array: false, nullable: false }, optional: true }];
  for (const f of c.fields) {
    if (BASE_RECORD_FIELDS.has(f.name) || f.type === 'autodate') continue;
    const required = !!f.options.required && f.type !== 'bool';
    const shape = inputShape(f);
    out.push({ name: f.name, field: f, shape: required ? { ...shape, nullable: false } : shape, optional: !required });
  }
  if (c.type === 'auth') {
    const text: ValueShape = { scalar: 'string', array: false, nullable: false };
    out.push({ name: 'password', shape: text, optional: false }, { name: 'passwordConfirm', shape: text, optional: false });
  }
  return out;
}
