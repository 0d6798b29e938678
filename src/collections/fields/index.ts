/**
 * Field definitions and value codecs (docs/api.md, "Collections" and "Records"; error codes from
 * docs/api.md, "Errors"). One file per family: text.ts (text, editor, email, url), number.ts +
 * fixed.ts, date.ts (date, autodate), choice.ts (select, relation), json.ts (json, bool), file.ts;
 * definition.ts validates client field definitions.
 *
 * Storage summary: text/email/url/editor/date/autodate/single select/single relation → TEXT;
 * number → REAL (fixed mode → INTEGER scaled by 10^scale); bool → INTEGER 0/1; multiple
 * select/relation/file and json → TEXT holding JSON; single file → TEXT (the stored name).
 */
import type { Field } from '../../model/schema.js';
import type { FieldError } from '../../errors/api-error.js';
import type { SqlValue } from '../../store/bind.js';
import { codecFor } from './codecs.js';
import { fail } from './common.js';
import { autodateStamps } from './date.js';

export type { EncodeMode, EncodeResult } from './common.js';
export { normalizeFieldDefinition, generateFieldId, RESERVED_FIELD_NAMES, AUTH_RESERVED_FIELD_NAMES, FIELD_NAME_RE } from './definition.js';
export { nowDate, normalizeDate, formatDate } from './date.js';
export { parseFixed, formatFixed, storedToBigInt, INT64_MIN, INT64_MAX } from './fixed.js';
export { RECORD_ID_RE } from './choice.js';
export { isValidEmail } from './text.js';
export { JSON_MAX_BYTES } from './json.js';
export { fileNames, DEFAULT_FILE_MAX_SIZE, STORED_FILE_NAME_RE, parseThumbSize, THUMB_MAX_SIDE, type ThumbSize } from './file.js';

/**
 * Client JSON value → stored SQL value; never throws.
 *
 * `undefined` (absent) and null give the field's empty value: NULL, except bool (0) and multiple
 * select/relation (`'[]'`); `required` is enforced here (`validation_required`; a required bool
 * must be true). autodate ignores `input` and returns the current time when it stamps (see
 * `shouldEncode`), NULL otherwise. On update, call it only for fields `shouldEncode` accepts.
 * Errors: `{error: {code: 'validation_…', message}}` with the codes listed in each codec file.
 */
export function encodeValue(
  field: Field,
  input: unknown,
  mode: 'create' | 'update',
): { value: SqlValue } | { error: FieldError } {
  const codec = codecFor(field.type);
  if (codec === undefined) return fail('type', `Fields of type "${field.type}" are not supported yet.`);
  return codec.encode(field, input, mode);
}

/**
 * Whether a create/update writes this field's column: on create every field; on update the
 * fields present in the body (`input !== undefined`), and autodate fields only when `onUpdate`
 * (their client value is ignored either way).
 */
export function shouldEncode(field: Field, input: unknown, mode: 'create' | 'update'): boolean {
  if (field.type === 'autodate') return autodateStamps(field, mode) || mode === 'create';
  return mode === 'create' || input !== undefined;
}

/**
 * Stored SQL value → JSON value for responses: string|null for string types and single
 * select/relation, number|null (float) or exact decimal string|null (fixed), boolean, string[]
 * for multiple select/relation, any JSON value for json. Read fixed-mode columns with libsql's
 * `safeIntegers(true)` when values may exceed 2^53.
 */
export function decodeValue(field: Field, stored: SqlValue): unknown {
  const codec = codecFor(field.type);
  return codec === undefined ? stored : codec.decode(field, stored);
}

/** fast-json-stringify schema fragment for the decoded value, e.g. `{type: ['string', 'null']}`. */
export function jsonSchemaFor(field: Field): Record<string, unknown> {
  return codecFor(field.type)?.schema(field) ?? {};
}
