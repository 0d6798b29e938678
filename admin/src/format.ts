/** Turning API values into text for the table, and form values to and from the API's. */
import type { Collection, Field, RecordModel } from './types';

/** The fields a record shows: the schema without hidden ones (never serialized). */
export function visibleFields(c: Collection): Field[] {
  return c.schema.filter((f) => !f.options.hidden);
}

/** Fields a record form edits (autodate is set by the server). */
export function editableFields(c: Collection): Field[] {
  return c.schema.filter((f) => f.type !== 'autodate');
}

export const isMultiple = (f: Field): boolean => (f.type === 'select' || f.type === 'relation' || f.type === 'file') && Number(f.options.maxSelect ?? 1) > 1;

/** A list value from a single-or-multiple field value. */
export function asList(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  if (v === null || v === undefined || v === '') return [];
  return [String(v)];
}

const TAG_RE = /<[^>]*>/g;

/** Short text of a cell. */
export function cellText(f: Field | null, v: unknown): string {
  if (v === null || v === undefined || v === '') return '';
  if (f?.type === 'bool') return v ? 'true' : 'false';
  if (f?.type === 'editor' && typeof v === 'string') return v.replace(TAG_RE, ' ').replace(/\s+/g, ' ').trim();
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** The API's `YYYY-MM-DD HH:MM:SS.sssZ` → a datetime-local value (UTC wall time, seconds). */
export function dateToInput(v: unknown): string {
  if (typeof v !== 'string' || v.length < 16) return '';
  return v.slice(0, 19).replace(' ', 'T');
}

/** A datetime-local value read as UTC → the API's date format ('' stays ''). */
export function inputToDate(v: string): string {
  if (!v) return '';
  const full = v.length === 16 ? `${v}:00` : v.slice(0, 19);
  return `${full.replace('T', ' ')}.000Z`;
}

/** A label for a record in pickers: its first name-like field, else its id. */
export function labelField(c: Collection | undefined): string | null {
  if (!c) return null;
  const usable = c.schema.filter((f) => !f.options.hidden && !f.options.encrypted && ['text', 'email', 'url', 'number', 'select'].includes(f.type));
  const named = usable.find((f) => ['name', 'title', 'label', 'username', 'email'].includes(f.name));
  return (named ?? usable.find((f) => f.type === 'text') ?? usable[0])?.name ?? null;
}

export function recordLabel(c: Collection | undefined, r: RecordModel): string {
  const lf = labelField(c);
  const v = lf ? r[lf] : null;
  return v === null || v === undefined || v === '' ? r.id : String(v);
}

const IMAGE_RE = /\.(png|jpe?g|gif|webp|avif|bmp|ico|svg)$/i;
export const isImageName = (name: string): boolean => IMAGE_RE.test(name);

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
