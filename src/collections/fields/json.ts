/**
 * `json` and `bool` fields (docs/api.md, "Collections").
 *
 * json: any JSON value, stored as TEXT with JSON.stringify (NULL for null/absent); more than
 * 1 MiB serialised → `validation_max`; a value JSON cannot represent → `validation_type`.
 * Required rejects null, `""`, `[]` and `{}`. Encryption (allowed on json) happens after encoding,
 * in the record service; decodeValue expects the decrypted text.
 *
 * Vector options (docs/lists.md, "Vectors"): `dimensions` (1-65536, default null)
 * declares the json field an embedding of that many numbers; the record table then keeps a
 * float32 copy of each well-formed value in an `F32_BLOB(dimensions)` shadow column (see
 * vector-sql.ts) so nearest-neighbour queries read blobs instead of parsing JSON. `vectorIndex`
 * (default false; needs `dimensions`) adds libsql's DiskANN index over that column, used by
 * cosine queries that no rule or filter narrows. Errors: `dimensions` not a whole number →
 * validation_type, below 1 → validation_min, above 65536 → validation_max; `vectorIndex` without
 * `dimensions` → validation_value.
 *
 * bool: JSON true/false only (else `validation_type`); stored INTEGER 0/1; absent or null → false.
 */
import type { SqlValue } from '../../store/bind.js';
import { type DefinitionErrors, type FieldCodec, REQUIRED_ERROR, decodeString, fail, fieldError, isRecord, ok, readBool } from './common.js';
import type { FieldOptions } from '../../model/schema.js';

/** libsql's largest vector dimension. */
export const MAX_VECTOR_DIMENSIONS = 65536;

function vectorOptions(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void {
  const d = raw.dimensions;
  out.dimensions = null;
  if (d !== undefined && d !== null) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d)) errors.dimensions = fieldError('type', 'Must be a whole number of dimensions.');
    else if (d < 1) errors.dimensions = fieldError('min', 'Must be at least 1.');
    else if (d > MAX_VECTOR_DIMENSIONS) errors.dimensions = fieldError('max', `Must be at most ${MAX_VECTOR_DIMENSIONS}.`);
    else out.dimensions = d;
  }
  out.vectorIndex = readBool(raw, 'vectorIndex', errors);
  if (out.vectorIndex && d == null) errors.vectorIndex ??= fieldError('value', 'A vector index needs the field\'s dimensions.');
}

/** Largest serialised json value, in UTF-8 bytes. */
export const JSON_MAX_BYTES = 1024 * 1024;

function isEmptyJson(v: unknown): boolean {
  return v === null || v === '' || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0);
}

export const jsonCodec: FieldCodec = {
  encode(field, input) {
    const value = input === undefined ? null : input;
    if (field.options.required && isEmptyJson(value)) return REQUIRED_ERROR;
    if (value === null) return ok(null);
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      return fail('type', 'Must be a JSON value.');
    }
    if (text === undefined) return fail('type', 'Must be a JSON value.');
    // cheap length test first: UTF-8 bytes >= UTF-16 units
    if (text.length > JSON_MAX_BYTES || Buffer.byteLength(text, 'utf8') > JSON_MAX_BYTES) {
      return fail('max', 'Must be at most 1 MiB when serialised as JSON.');
    }
    return ok(text);
  },
  decode(_field, stored: SqlValue) {
    if (typeof stored === 'number') return stored;
    if (typeof stored === 'bigint') return Number(stored);
    const text = decodeString(stored);
    if (text === null) return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text; // not JSON (hand-edited row): hand back the raw text
    }
  },
  schema: () => ({}), // any JSON value
  options: vectorOptions,
};

export const boolCodec: FieldCodec = {
  encode(field, input) {
    if (input !== undefined && input !== null && typeof input !== 'boolean') return fail('type', 'Must be true or false.');
    const value = input === true;
    // PocketBase rule: a required bool must be true (false counts as blank)
    if (field.options.required && !value) return fail('required', 'Must be true.');
    return ok(value ? 1 : 0);
  },
  decode(_field, stored) {
    if (typeof stored === 'number') return stored !== 0;
    if (typeof stored === 'bigint') return stored !== 0n;
    return stored === '1' || stored === 'true';
  },
  schema: () => ({ type: 'boolean' }),
  options: () => {},
};
