/**
 * `file` fields (docs/api.md, "Collections": file has `maxSelect`, `maxSize`, `mimeTypes`).
 *
 * Options: `maxSelect` (default 1; 0/absent = 1), `maxSize` (bytes per file, default 5 MiB),
 * `mimeTypes` (allowed content types, sniffed from the bytes; empty = any; an entry may be
 * `image/*`), `protected` (default false: when true a file is served only to an authenticated
 * caller or with a file token, even when the view rule is public).
 *
 * The stored value is the list of stored file names: TEXT holding the name (NULL when empty) for
 * `maxSelect` 1, a JSON array (`[]` when empty) otherwise. This codec encodes the FINAL list the
 * record service computed (uploads, kept and removed names, see src/files/files.ts): a string
 * or an array of stored names; more than `maxSelect` → `validation_max`, a name that is not a
 * stored file name → `validation_value`, an empty list on a required field → `validation_required`.
 */
import { isMultiFile, type Field, type FieldOptions } from '../../model/schema.js';
import type { SqlValue } from '../../store/bind.js';
import { type DefinitionErrors, type FieldCodec, decodeString, emptyValue, fail, fieldError, ok, plural, readBool, readCount, NULLABLE_STRING_SCHEMA } from './common.js';

/** Default per-file size limit: 5 MiB. */
export const DEFAULT_FILE_MAX_SIZE = 5 * 1024 * 1024;
/** A stored file name: `<base>_<10 random chars>.<ext>` (see files.ts); no path separators. */
export const STORED_FILE_NAME_RE = /^[A-Za-z0-9_-]{1,100}(?:\.[a-z0-9]{1,10})?$/;
const MIME_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]*)$/;

/** Stored value → list of file names (tolerates the other maxSelect's shape). */
export function fileNames(stored: unknown): string[] {
  if (Array.isArray(stored)) return stored.filter((v): v is string => typeof v === 'string' && v !== '');
  const s = typeof stored === 'string' ? stored : decodeString(stored as SqlValue);
  if (s === null || s === '') return [];
  if (s.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(s);
      if (Array.isArray(parsed)) return parsed.filter((v): v is string => typeof v === 'string' && v !== '');
    } catch { /* a plain name */ }
  }
  return [s];
}

function fileOptions(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void {
  const max = readCount(raw, 'maxSelect', errors, 'max');
  out.maxSelect = max === null || max === 0 ? 1 : max;
  const size = readCount(raw, 'maxSize', errors, 'max');
  out.maxSize = size === null || size === 0 ? DEFAULT_FILE_MAX_SIZE : size;
  const types = raw.mimeTypes;
  out.mimeTypes = [];
  if (types !== undefined && types !== null) {
    if (Array.isArray(types) && types.every((t) => typeof t === 'string' && MIME_RE.test(t.trim().toLowerCase()))) {
      out.mimeTypes = [...new Set((types as string[]).map((t) => t.trim().toLowerCase()))];
    } else {
      errors.mimeTypes ??= fieldError('value', 'Must be a list of MIME types such as "image/png" or "image/*".');
    }
  }
  out.protected = readBool(raw, 'protected', errors, false);
}

export const fileCodec: FieldCodec = {
  encode(field, input) {
    let list: string[];
    if (input === undefined || input === null || input === '') list = [];
    else if (typeof input === 'string') list = [input];
    else if (Array.isArray(input) && input.every((v) => typeof v === 'string')) list = [...new Set(input as string[])].filter((v) => v !== '');
    else return fail('type', 'Must be a file name or a list of file names (upload files with multipart/form-data).');
    const bad = list.find((n) => !STORED_FILE_NAME_RE.test(n));
    if (bad !== undefined) return fail('value', `"${bad}" is not a stored file name.`);
    const max = field.options.maxSelect ?? 1;
    if (list.length > max) return fail('max', max === 1 ? 'Only one file is allowed.' : `At most ${plural(max, 'file')} are allowed.`);
    if (list.length === 0) return emptyValue(field, isMultiFile(field) ? '[]' : null);
    return ok(isMultiFile(field) ? JSON.stringify(list) : list[0]!);
  },
  decode(field, stored) {
    const list = fileNames(stored);
    if (isMultiFile(field)) return list;
    return list.length ? list[list.length - 1] : null;
  },
  schema: (field) => (isMultiFile(field) ? { type: 'array', items: { type: 'string' } } : NULLABLE_STRING_SCHEMA),
  options: fileOptions,
};
