/** A record's form state: the API's values to form values and back, the body of a save. */
import type { Collection, Field, RecordModel } from '../types';
import { asList, dateToInput, editableFields, inputToDate, isMultiple } from '../format';

export type FormValue = string | boolean | string[];

export interface FileState {
  kept: string[];
  added: File[];
  /** whether `kept` lost a name (then the update sends the list to keep) */
  removed: boolean;
}

/** The form value of a field from a record's value. */
export function toForm(f: Field, v: unknown): FormValue {
  switch (f.type) {
    case 'bool':
      return v === true;
    case 'date':
      return dateToInput(v);
    case 'json':
      return v === null || v === undefined ? '' : JSON.stringify(v, null, 2);
    case 'select':
    case 'relation':
      return isMultiple(f) ? asList(v) : v === null || v === undefined ? '' : String(v);
    default:
      return v === null || v === undefined ? '' : String(v);
  }
}

/** The initial form of a record (null: a new one). */
export function initialForm(c: Collection, r: RecordModel | null): { values: Record<string, FormValue>; files: Record<string, FileState> } {
  const values: Record<string, FormValue> = {};
  const files: Record<string, FileState> = {};
  for (const f of editableFields(c)) {
    if (f.type === 'file') files[f.name] = { kept: r ? asList(r[f.name]) : [], added: [], removed: false };
    else values[f.name] = toForm(f, r ? r[f.name] : null);
  }
  if (c.type === 'auth') {
    values.password = '';
    values.passwordConfirm = '';
  }
  return { values, files };
}

const isEmpty = (v: FormValue) => v === '' || (Array.isArray(v) && v.length === 0);

/** The API value of a form value; throws a message for a json field that does not parse. */
export function toApi(f: Field, v: FormValue): unknown {
  switch (f.type) {
    case 'bool':
      return v === true;
    case 'number':
      if (v === '') return null;
      return f.options.mode === 'fixed' ? String(v) : Number(v);
    case 'date':
      return v === '' ? null : inputToDate(String(v));
    case 'json':
      if (String(v).trim() === '') return null;
      try {
        return JSON.parse(String(v));
      } catch {
        throw new Error('Not valid JSON.');
      }
    case 'select':
    case 'relation':
      if (isMultiple(f)) return Array.isArray(v) ? v : asList(v);
      return v === '' ? null : v;
    default:
      return v;
  }
}

/**
 * The body of a save: every non-empty value of a new record, or the fields changed (`dirty`) of
 * an existing one (a hidden field is never sent unless typed into). Files make it multipart
 * (`@jsonPayload` plus the files; an update appends under `<field>+` and sends the names it keeps
 * when one was removed). Errors of json fields are returned by field name.
 */
export function saveBody(
  c: Collection,
  isNew: boolean,
  values: Record<string, FormValue>,
  files: Record<string, FileState>,
  dirty: Set<string>,
): { body: Record<string, unknown> | FormData; errors: Record<string, string> } {
  const payload: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of editableFields(c)) {
    if (f.type === 'file') continue;
    const v = values[f.name];
    if (isNew ? isEmpty(v) && f.type !== 'bool' : !dirty.has(f.name)) continue;
    try {
      payload[f.name] = toApi(f, v);
    } catch (err) {
      errors[f.name] = (err as Error).message;
    }
  }
  if (c.type === 'auth') {
    if (values.password) payload.password = values.password;
    if (values.passwordConfirm) payload.passwordConfirm = values.passwordConfirm;
  }
  const changedFiles = Object.entries(files).filter(([, s]) => s.added.length > 0 || s.removed);
  if (changedFiles.length === 0) return { body: payload, errors };
  const form = new FormData();
  for (const [name, s] of changedFiles) {
    if (!isNew && s.removed) payload[name] = s.kept;
    for (const file of s.added) form.append(isNew ? name : `${name}+`, file, file.name);
  }
  form.append('@jsonPayload', JSON.stringify(payload));
  return { body: form, errors };
}
