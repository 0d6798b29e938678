/**
 * `file` fields (docs/api.md, "Collections": file has `maxSelect`, `maxSize`, `mimeTypes`).
 *
 * Options: `maxSelect` (default 1; 0/absent = 1), `maxSize` (bytes per file, default 5 MiB),
 * `mimeTypes` (allowed content types, sniffed from the bytes; empty = any; an entry may be
 * `image/*`), `protected` (default false: when true a file is served only to an authenticated
 * caller or with a file token, even when the view rule is public), `thumbs` (absent by default:
 * the thumbnail sizes `?thumb=` may ask for, see {@link parseThumbSize}; docs/files.md).
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
/** Largest width or height of a thumbnail size, in pixels. */
export const THUMB_MAX_SIDE = 4096;
const THUMB_SIZE_RE = /^(\d{1,4})x(\d{1,4})([tbf]?)$/;

/** A parsed thumbnail size (docs/files.md, "Thumbnails"): pixels (0 = from the aspect ratio) and the mode. */
export interface ThumbSize {
  width: number;
  height: number;
  /** `c` center crop, `t` top crop, `b` bottom crop, `f` fit inside (no crop) */
  mode: 'c' | 't' | 'b' | 'f';
}

/**
 * Parses a thumbnail size (`WxH`, `WxHt`, `WxHb`, `WxHf`, `0xH`, `Wx0`); null when it is not
 * one: both sides 0, a side above {@link THUMB_MAX_SIDE}, or a mode letter with a 0 side.
 */
export function parseThumbSize(s: string): ThumbSize | null {
  const m = THUMB_SIZE_RE.exec(s);
  if (!m) return null;
  const width = Number(m[1]);
  const height = Number(m[2]);
  if ((width === 0 && height === 0) || width > THUMB_MAX_SIDE || height > THUMB_MAX_SIDE) return null;
  if ((width === 0 || height === 0) && m[3]) return null;
  return { width, height, mode: (m[3] || 'c') as ThumbSize['mode'] };
}

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
  // absent (or empty) stays absent, so definitions without thumbnails read back as before
  const thumbs = raw.thumbs;
  if (thumbs === undefined || thumbs === null) return;
  if (Array.isArray(thumbs) && thumbs.every((t) => typeof t === 'string' && parseThumbSize(t) !== null)) {
    if (thumbs.length) out.thumbs = [...new Set(thumbs as string[])];
  } else {
    errors.thumbs ??= fieldError('value', `Must be a list of thumbnail sizes such as "100x100", "100x100t", "100x100b", "100x100f", "0x100" or "100x0" (sides up to ${THUMB_MAX_SIDE}).`);
  }
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
