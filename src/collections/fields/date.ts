/**
 * `date` and `autodate` fields (docs/api.md, "Collections"; collection `ttl_field` compares them).
 *
 * Stored format (TEXT, sorts lexically, like PocketBase): `YYYY-MM-DD HH:MM:SS.sssZ`, UTC.
 * Accepted input: ISO 8601 / RFC 3339 with `T`, `t` or a space between date and time, optional
 * seconds, optional fraction (1-9 digits, truncated to milliseconds), optional `Z` or offset
 * (`±HH`, `±HHMM`, `±HH:MM`; none means UTC), or a bare date `YYYY-MM-DD` (midnight UTC).
 * Invalid → `validation_date`; outside the definition's `min`/`max` → `validation_date`.
 *
 * autodate: server-set. Client input is ignored; `onCreate` (default true) stamps the create,
 * `onUpdate` (default false) stamps every update.
 */
import type { Field, FieldOptions } from '../../model/schema.js';
import type { SqlValue } from '../../store/bind.js';
import {
  type DefinitionErrors, type FieldCodec,
  decodeString, emptyValue, fail, fieldError, ok, readBool, NULLABLE_STRING_SCHEMA,
} from './common.js';

const DATE_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Milliseconds since the epoch → stored format; null outside years 0000-9999. */
export function formatDate(ms: number): string | null {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(ms) || year < 0 || year > 9999) return null;
  return d.toISOString().replace('T', ' ');
}

/** Current time in the stored date format. */
let lastMs = -1;
let lastText = '';

export function nowDate(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastText = new Date(ms).toISOString().replace('T', ' ');
  }
  return lastText;
}

/** Parses an accepted date string (see the module comment) to the stored format; null if invalid. */
export function normalizeDate(input: string): string | null {
  const m = DATE_RE.exec(input);
  if (m === null) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const hour = Number(m[4] ?? 0);
  const minute = Number(m[5] ?? 0);
  const second = Number(m[6] ?? 0);
  const millis = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2) || '0');
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // setUTCFullYear keeps years 0-99 literal (Date.UTC would map them to 19xx)
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, millis);
  return formatDate(d.getTime() - offsetMinutes * 60_000);
}

/** Accepts a date string or a JS Date (hooks may pass one); null when not a valid date. */
function coerceDate(input: unknown): string | null {
  if (input instanceof Date) return formatDate(input.getTime());
  return typeof input === 'string' ? normalizeDate(input) : null;
}

function dateBoundsOptions(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void {
  for (const key of ['min', 'max'] as const) {
    const v = raw[key];
    out[key] = null;
    if (v === undefined || v === null || v === '') continue;
    const d = coerceDate(v);
    if (d === null) errors[key] ??= fieldError('date', 'Must be a valid date, e.g. 2024-01-31 12:00:00.000Z.');
    else out[key] = d;
  }
  if (typeof out.min === 'string' && typeof out.max === 'string' && out.min > out.max) {
    errors.max ??= fieldError('date', 'Must not be before the minimum date.');
  }
}

const dateBase = {
  decode: (_f: Field, stored: SqlValue) => decodeString(stored),
  schema: () => NULLABLE_STRING_SCHEMA,
};

export const dateCodec: FieldCodec = {
  ...dateBase,
  encode(field, input) {
    if (input === undefined || input === null || input === '') return emptyValue(field);
    if (typeof input !== 'string' && !(input instanceof Date)) return fail('type', 'Must be a date string.');
    const d = coerceDate(input);
    if (d === null) return fail('date', 'Must be a valid date, e.g. 2024-01-31 12:00:00.000Z.');
    const { min, max } = field.options;
    if (typeof min === 'string' && min !== '' && d < min) return fail('date', `Must be ${min} or later.`);
    if (typeof max === 'string' && max !== '' && d > max) return fail('date', `Must be ${max} or earlier.`);
    return ok(d);
  },
  options: dateBoundsOptions,
};

/** Whether an autodate field is stamped on this operation. */
export function autodateStamps(field: Field, mode: 'create' | 'update'): boolean {
  return mode === 'create' ? field.options.onCreate !== false : field.options.onUpdate === true;
}

export const autodateCodec: FieldCodec = {
  ...dateBase,
  // client values are ignored; `required` does not apply to a server-set value
  encode: (field, _input, mode) => ok(autodateStamps(field, mode) ? nowDate() : null),
  options(raw, out, errors) {
    out.onCreate = readBool(raw, 'onCreate', errors, true);
    out.onUpdate = readBool(raw, 'onUpdate', errors, false);
  },
};
