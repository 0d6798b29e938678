/**
 * String-valued field types: `text`, `editor`, `email`, `url` (docs/api.md, "Collections").
 *
 * Stored as TEXT. Absent or null input stores NULL. A non-string input is `validation_type`.
 * - text / editor: an empty string is kept as `""` (and skips min/max/pattern unless required,
 *   PocketBase's behaviour); `min`/`max` count Unicode code points (`validation_min` /
 *   `validation_max`); text `pattern` is a JavaScript regular expression source tested
 *   unanchored (`validation_pattern`).
 * - email: WHATWG/HTML syntax (`validation_invalid_email`); `""` means empty (stored NULL).
 * - url: must parse with `new URL` and use http or https (`validation_value`); `""` means empty.
 */
import type { Field, FieldOptions } from '../../model/schema.js';
import type { SqlValue } from '../../store/bind.js';
import {
  type DefinitionErrors, type EncodeResult, type FieldCodec,
  codePointLength, decodeString, emptyValue, fail, fieldError, ok, plural, readCount,
  NULLABLE_STRING_SCHEMA,
} from './common.js';
import { boundedCache } from '../../cache/bounded.js';

/** compiled patterns; `false` stands for an invalid one (a cache holds no null) */
const patternCache = boundedCache<string, RegExp | false>(1000);

/** Compiles a definition's pattern; null when it is not a valid regular expression. */
export function compilePattern(source: string): RegExp | null {
  let re = patternCache.get(source);
  if (re === undefined) {
    try {
      re = new RegExp(source);
    } catch {
      re = false;
    }
    patternCache.set(source, re);
  }
  return re || null;
}

/** min/max (and for text, pattern) of text and editor definitions. */
function lengthOptions(withPattern: boolean) {
  return (raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void => {
    const min = readCount(raw, 'min', errors, 'min');
    const max = readCount(raw, 'max', errors, 'max');
    out.min = min;
    // PocketBase clients send max 0 for "no limit"
    out.max = max === 0 ? null : max;
    if (out.min !== null && out.max !== null && out.min > out.max) {
      errors.max ??= fieldError('max', `Must be at least the minimum length (${out.min}).`);
    }
    if (!withPattern) return;
    const p = raw.pattern;
    out.pattern = null;
    if (p === undefined || p === null || p === '') return;
    if (typeof p !== 'string') {
      errors.pattern ??= fieldError('pattern', 'Must be a regular expression string.');
    } else if (compilePattern(p) === null) {
      errors.pattern ??= fieldError('pattern', 'Is not a valid regular expression.');
    } else {
      out.pattern = p;
    }
  };
}

function encodeLengthChecked(field: Field, input: unknown): EncodeResult {
  if (input === undefined || input === null) return emptyValue(field);
  if (typeof input !== 'string') return fail('type', 'Must be a string.');
  if (input === '') return emptyValue(field, '');
  const { min, max, pattern } = field.options;
  // A string has between length/2 and length code points, so the count is needed only when a bound
  // falls inside that range (long texts are the common input; counting walks every character).
  const hasMin = typeof min === 'number' && min * 2 > input.length;
  const hasMax = typeof max === 'number' && max > 0 && max < input.length;
  if (hasMin || hasMax) {
    const len = codePointLength(input);
    if (hasMin && len < min) return fail('min', `Must be at least ${plural(min, 'character')}.`);
    if (hasMax && len > max) return fail('max', `Must be at most ${plural(max, 'character')}.`);
  }
  if (field.type === 'text' && typeof pattern === 'string' && pattern !== '') {
    const re = compilePattern(pattern);
    if (re !== null && !re.test(input)) return fail('pattern', `Does not match the required format (${pattern}).`);
  }
  return ok(input);
}

const stringCodec = {
  decode: (_f: Field, stored: SqlValue) => decodeString(stored),
  schema: () => NULLABLE_STRING_SCHEMA,
};

export const textCodec: FieldCodec = {
  ...stringCodec,
  encode: (field, input) => encodeLengthChecked(field, input),
  options: lengthOptions(true),
};

/** Rich text (HTML-ish string); not sanitised here. */
export const editorCodec: FieldCodec = {
  ...stringCodec,
  encode: (field, input) => encodeLengthChecked(field, input),
  options: lengthOptions(false),
};

// WHATWG "valid e-mail address" (also what PocketBase accepts)
const EMAIL_RE =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/** True when `s` is a syntactically valid e-mail address (at most 254 characters). */
export function isValidEmail(s: string): boolean {
  if (s.length > 254) return false;
  const at = s.lastIndexOf('@');
  return at > 0 && at <= 64 && EMAIL_RE.test(s);
}

export const emailCodec: FieldCodec = {
  ...stringCodec,
  encode(field, input) {
    if (input === undefined || input === null || input === '') return emptyValue(field);
    if (typeof input !== 'string') return fail('type', 'Must be a string.');
    if (!isValidEmail(input)) return fail('invalid_email', 'Must be a valid email address.');
    return ok(input);
  },
  options: () => {},
};

export const urlCodec: FieldCodec = {
  ...stringCodec,
  encode(field, input) {
    if (input === undefined || input === null || input === '') return emptyValue(field);
    if (typeof input !== 'string') return fail('type', 'Must be a string.');
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      return fail('value', 'Must be a valid URL.');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return fail('value', 'Must be an http or https URL.');
    }
    return ok(input);
  },
  options: () => {},
};
