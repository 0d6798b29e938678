/**
 * `select` and `relation` fields (docs/api.md, "Collections": a
 * relation's value is a string id when `maxSelect` is 1, an array otherwise).
 *
 * Single (`maxSelect` 1, the default): TEXT holding the value, NULL when empty; the response value
 * is a string or null. Multiple (`maxSelect` > 1): TEXT holding a JSON array, `[]` when empty.
 * Input: a string (wrapped) or an array of strings, deduplicated in order; null/absent/"" = empty.
 * - select: every value must be one of `values`; too many → `validation_select`; wrong JSON type
 *   → `validation_type`.
 * - relation: wrong JSON type → `validation_type`; every id must be a record id
 *   (`[a-z0-9]{15}`), anything else, too many or fewer than `minSelect` (checked when not empty)
 *   → `validation_relation`. Whether the targets exist is
 *   checked by the record service, not here.
 */
import { isMultiple, type Field, type FieldOptions } from '../../model/schema.js';
import type { SqlValue } from '../../store/bind.js';
import {
  type DefinitionErrors, type EncodeResult, type FieldCodec,
  decodeString, emptyValue, fail, fieldError, ok, plural, readBool, readCount, NULLABLE_STRING_SCHEMA,
} from './common.js';

export const RECORD_ID_RE = /^[a-z0-9]{15}$/;

/** maxSelect (0/absent = 1, PocketBase clients send 0 for single) and minSelect (0 = none). */
function selectCounts(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors, withMin: boolean): void {
  const max = readCount(raw, 'maxSelect', errors, 'max');
  out.maxSelect = max === null || max === 0 ? 1 : max;
  if (!withMin) return;
  const min = readCount(raw, 'minSelect', errors, 'min');
  out.minSelect = min === 0 ? null : min;
  if (out.minSelect !== null && out.minSelect > out.maxSelect) {
    errors.maxSelect ??= fieldError('max', `Must be at least minSelect (${out.minSelect}).`);
  }
}

/** Input → deduplicated list of strings, or null when the JSON type is wrong. */
function toList(input: unknown): string[] | null {
  if (input === undefined || input === null || input === '') return [];
  const items = typeof input === 'string' ? [input] : Array.isArray(input) ? input : null;
  if (items === null || !items.every((v) => typeof v === 'string')) return null;
  return [...new Set(items as string[])];
}

function store(field: Field, list: string[]): EncodeResult {
  if (list.length === 0) return emptyValue(field, isMultiple(field) ? '[]' : null);
  return ok(isMultiple(field) ? JSON.stringify(list) : list[0]!);
}

function decodeChoice(field: Field, stored: SqlValue): unknown {
  const s = decodeString(stored);
  let list: string[] | null = null;
  if (s !== null && s.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(s);
      if (Array.isArray(parsed)) list = parsed.filter((v): v is string => typeof v === 'string');
    } catch { /* a plain value that starts with "[" */ }
  }
  // tolerate values written under the other maxSelect (before a data migration)
  if (isMultiple(field)) return list ?? (s === null || s === '' ? [] : [s]);
  if (list !== null) return list.length > 0 ? list[list.length - 1] : null;
  return s === '' ? null : s;
}

function choiceSchema(field: Field): Record<string, unknown> {
  return isMultiple(field) ? { type: 'array', items: { type: 'string' } } : NULLABLE_STRING_SCHEMA;
}

export const selectCodec: FieldCodec = {
  encode(field, input) {
    const list = toList(input);
    if (list === null) return fail('type', 'Must be a string or an array of strings.');
    const allowed = field.options.values ?? [];
    const bad = list.find((v) => !allowed.includes(v));
    if (bad !== undefined) return fail('select', `"${bad}" is not one of the allowed values.`);
    const max = field.options.maxSelect ?? 1;
    if (list.length > max) return fail('select', max === 1 ? 'Only one value is allowed.' : `Select at most ${max} values.`);
    return store(field, list);
  },
  decode: decodeChoice,
  schema: choiceSchema,
  options(raw, out, errors) {
    const values = raw.values;
    out.values = [];
    if (
      Array.isArray(values) && values.length > 0 &&
      values.every((v) => typeof v === 'string' && v !== '') && new Set(values).size === values.length
    ) {
      out.values = [...(values as string[])];
    } else {
      errors.values ??= fieldError('select', 'Must be a non-empty list of distinct, non-empty strings.');
    }
    selectCounts(raw, out, errors, false);
  },
};

export const relationCodec: FieldCodec = {
  encode(field, input) {
    const list = toList(input);
    if (list === null) return fail('type', 'Must be a record id or an array of record ids.');
    const bad = list.find((v) => !RECORD_ID_RE.test(v));
    if (bad !== undefined) return fail('relation', `"${bad}" is not a valid record id.`);
    const max = field.options.maxSelect ?? 1;
    const min = field.options.minSelect ?? 0;
    if (list.length > max) {
      return fail('relation', max === 1 ? 'Only one record is allowed.' : `Select at most ${plural(max, 'record')}.`);
    }
    if (list.length > 0 && list.length < min) return fail('relation', `Select at least ${plural(min, 'record')}.`);
    return store(field, list);
  },
  decode: decodeChoice,
  schema: choiceSchema,
  options(raw, out, errors) {
    const target = raw.collectionId;
    if (typeof target === 'string' && target !== '') out.collectionId = target;
    else errors.collectionId ??= fieldError('relation', 'Must name the target collection by id.');
    out.cascadeDelete = readBool(raw, 'cascadeDelete', errors, false);
    selectCounts(raw, out, errors, true);
  },
};
