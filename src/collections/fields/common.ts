/**
 * Shared pieces of the field codecs (docs/api.md, "Collections"; codes from docs/api.md,
 * "Errors"). Every field type implements `FieldCodec`; `index.ts` dispatches on `field.type`.
 */
import type { Field, FieldOptions } from '../../model/schema.js';
import type { FieldError } from '../../errors/api-error.js';
import type { SqlValue } from '../../store/bind.js';

export type EncodeMode = 'create' | 'update';
export type EncodeResult = { value: SqlValue } | { error: FieldError };
/** Per-option definition errors, keyed by option name (`min`, `values`, …). */
export type DefinitionErrors = Record<string, FieldError>;

/** What each field type provides. */
export interface FieldCodec {
  /** Client JSON value → stored value, or a `validation_*` error. Never throws. */
  encode(field: Field, input: unknown, mode: EncodeMode): EncodeResult;
  /** Stored value → response JSON value. Tolerates NULL and legacy shapes. */
  decode(field: Field, stored: SqlValue): unknown;
  /** fast-json-stringify schema fragment for the decoded value. */
  schema(field: Field): Record<string, unknown>;
  /**
   * Type-specific part of definition validation: reads the client's raw options, writes the
   * normalised known ones into `out`, records problems in `errors`.
   */
  options(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void;
}

/** `{code: 'validation_<name>', message}` */
export function fieldError(name: string, message: string): FieldError {
  return { code: `validation_${name}`, message };
}

export function fail(name: string, message: string): { error: FieldError } {
  return { error: fieldError(name, message) };
}

export function ok(value: SqlValue): { value: SqlValue } {
  return { value };
}

export const REQUIRED_ERROR: { error: FieldError } = fail('required', 'Cannot be blank.');

/** `null` for an empty optional value, the required error otherwise. */
export function emptyValue(field: Field, empty: SqlValue = null): EncodeResult {
  return field.options.required ? REQUIRED_ERROR : ok(empty);
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** Length in Unicode code points (what "characters" means in min/max messages). */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // a high surrogate followed by a low one counts once
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

export function plural(n: number | bigint, word: string): string {
  return `${n} ${word}${n === 1 || n === 1n ? '' : 's'}`;
}

/** Reads an optional boolean option (`null`/absent → `def`); anything else → validation_type. */
export function readBool(raw: Record<string, unknown>, key: string, errors: DefinitionErrors, def = false): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return def;
  if (typeof v === 'boolean') return v;
  errors[key] ??= fieldError('type', 'Must be true or false.');
  return def;
}

/**
 * Reads an optional non-negative integer option (`null`/absent → null). A negative or non-integer
 * value records `validation_<code>` under `key`.
 */
export function readCount(
  raw: Record<string, unknown>,
  key: string,
  errors: DefinitionErrors,
  code: 'min' | 'max',
): number | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  errors[key] ??= fieldError(code, 'Must be a whole number of 0 or more.');
  return null;
}

/** Decodes a TEXT column that may hold NULL or (through affinity) a number. */
export function decodeString(stored: SqlValue): string | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored === 'string') return stored;
  if (stored instanceof Uint8Array) return Buffer.from(stored).toString('utf8');
  return String(stored);
}

export const NULLABLE_STRING_SCHEMA: Record<string, unknown> = { type: ['string', 'null'] };
