/**
 * The collection editor's draft: fields, rules, indexes and options as form values, made from
 * the API's collection and turned back into the body of a create or update.
 */
import type { Collection, Field, FieldType, IndexDef, RuleName } from '../types';
import { RULE_NAMES } from '../types';
import { authBody, authDraft, type AuthDraft } from './auth-draft';

/** How one type-specific option is edited. */
export interface OptionSpec {
  key: string;
  label: string;
  kind: 'num' | 'str' | 'bool' | 'list' | 'collection' | 'fixed';
  hint?: string;
  /** shown only when /api/meta reports this capability */
  capability?: string;
}

const num = (key: string, label: string, hint?: string): OptionSpec => ({ key, label, kind: 'num', hint });
const str = (key: string, label: string, hint?: string): OptionSpec => ({ key, label, kind: 'str', hint });
const flag = (key: string, label: string, hint?: string, capability?: string): OptionSpec => ({ key, label, kind: 'bool', hint, capability });
const list = (key: string, label: string, hint?: string): OptionSpec => ({ key, label, kind: 'list', hint });

const SEARCHABLE = flag('searchable', 'Searchable', 'Full-text search over this field (?search=).', 'fts');
const ENCRYPTED = flag('encrypted', 'Encrypted at rest', 'Cannot be filtered, sorted, indexed or unique.');

/** Type-specific options (the common required/unique/hidden come first for every type). */
export const OPTION_SPECS: Record<FieldType, OptionSpec[]> = {
  text: [num('min', 'Min length'), num('max', 'Max length'), str('pattern', 'Pattern', 'A regular expression values must match.'), SEARCHABLE, ENCRYPTED],
  editor: [num('min', 'Min length'), num('max', 'Max length'), SEARCHABLE, ENCRYPTED],
  number: [num('min', 'Min'), num('max', 'Max'), { key: 'mode', label: 'Fixed-point (exact decimals)', kind: 'fixed' }, num('scale', 'Scale', 'Decimals kept in fixed-point mode, 1 to 8.')],
  bool: [],
  email: [],
  url: [],
  date: [str('min', 'Earliest', 'YYYY-MM-DD HH:MM:SS.sssZ'), str('max', 'Latest', 'YYYY-MM-DD HH:MM:SS.sssZ')],
  autodate: [flag('onCreate', 'Set on create'), flag('onUpdate', 'Set on update')],
  select: [list('values', 'Values', 'Comma-separated.'), num('maxSelect', 'Max selected', 'More than 1 stores a list.')],
  relation: [
    { key: 'collectionId', label: 'Related collection', kind: 'collection' },
    num('minSelect', 'Min selected'),
    num('maxSelect', 'Max selected', 'More than 1 stores a list.'),
    flag('cascadeDelete', 'Delete with the related record'),
  ],
  json: [ENCRYPTED, { ...num('dimensions', 'Vector dimensions', 'For embeddings: arrays of this many numbers.'), capability: 'vector' }, flag('vectorIndex', 'Vector index', 'Approximate nearest-neighbour index.', 'vector')],
  file: [
    num('maxSelect', 'Max files'),
    num('maxSize', 'Max size (bytes)'),
    list('mimeTypes', 'Allowed types', 'Comma-separated MIME types, e.g. image/png, image/jpeg; empty for any.'),
    flag('protected', 'Protected', 'Downloads need a signed-in caller or a file token.'),
    list('thumbs', 'Thumb sizes', 'Comma-separated, e.g. 100x100, 100x100t, 300x0: images served with ?thumb=<size>.'),
  ],
};

export type OptionValue = string | boolean;

export interface FieldDraft {
  key: string;
  id?: string;
  name: string;
  type: FieldType;
  required: boolean;
  unique: boolean;
  hidden: boolean;
  opts: Record<string, OptionValue>;
}

export interface RuleDraft {
  mode: 'locked' | 'public' | 'expr';
  expr: string;
}

export interface IndexDraft {
  key: string;
  name: string;
  fields: string;
  unique: boolean;
}

export interface CollectionDraft {
  /** the collection's id; chosen here for a new one, so a relation can point at itself */
  id: string;
  name: string;
  type: 'base' | 'auth';
  system: boolean;
  fields: FieldDraft[];
  /** auth collections' built-in fields, shown read-only */
  systemFields: Field[];
  rules: Record<RuleName, RuleDraft>;
  indexes: IndexDraft[];
  ttlField: string;
  auth: AuthDraft;
}

/** 15 characters of [a-z0-9], as the server's ids. */
function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(15));
  return [...bytes].map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
}

let seq = 0;
export const newKey = (): string => `k${++seq}`;

function optionsToDraft(f: Field): Record<string, OptionValue> {
  const out: Record<string, OptionValue> = {};
  for (const spec of OPTION_SPECS[f.type] ?? []) {
    const v = f.options[spec.key];
    if (spec.kind === 'bool') out[spec.key] = v === true;
    else if (spec.kind === 'fixed') out[spec.key] = v === 'fixed';
    else if (spec.kind === 'list') out[spec.key] = Array.isArray(v) ? v.join(', ') : '';
    else out[spec.key] = v === null || v === undefined ? '' : String(v);
  }
  return out;
}

/** A new field of `type` with the options a new one starts with. */
export function newField(type: FieldType, name = ''): FieldDraft {
  const opts = optionsToDraft({ id: '', name, type, options: {} });
  if ('maxSelect' in opts) opts.maxSelect = '1';
  if (type === 'autodate') opts.onCreate = true;
  return { key: newKey(), name, type, required: false, unique: false, hidden: false, opts };
}

const ruleDraft = (v: string | null): RuleDraft => (v === null || v === '' ? { mode: 'locked', expr: '' } : v === '@public' ? { mode: 'public', expr: '' } : { mode: 'expr', expr: v });

const INDEX_SQL_RE = /^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?[`"[]?(\w+)[`"\]]?\s+ON\s+[`"[]?\w+[`"\]]?\s*\(([^)]*)\)/i;

function indexDraft(ix: IndexDef | string): IndexDraft {
  if (typeof ix === 'string') {
    const m = INDEX_SQL_RE.exec(ix);
    return { key: newKey(), name: m?.[2] ?? '', fields: m?.[3] ?? ix, unique: !!m?.[1] };
  }
  return { key: newKey(), name: ix.name, fields: ix.fields.join(', '), unique: ix.unique };
}

/** The draft of an existing collection, or of a new one (null). */
export function toDraft(c: Collection | null): CollectionDraft {
  const rules = {} as Record<RuleName, RuleDraft>;
  for (const r of RULE_NAMES) rules[r] = ruleDraft(c ? c[r] : null);
  return {
    id: c?.id ?? randomId(),
    name: c?.name ?? '',
    type: c?.type ?? 'base',
    system: c?.system ?? false,
    fields: (c?.schema ?? [])
      .filter((f) => !f.system)
      .map((f) => ({ key: newKey(), id: f.id, name: f.name, type: f.type, required: !!f.options.required, unique: !!f.options.unique, hidden: !!f.options.hidden, opts: optionsToDraft(f) })),
    systemFields: (c?.schema ?? []).filter((f) => f.system),
    rules,
    indexes: (c?.indexes ?? []).map(indexDraft),
    ttlField: c?.options.ttl_field ?? '',
    auth: authDraft(c?.options.auth),
  };
}

const splitList = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);

/** A number option's value: null when empty; text that is not a number goes as is (the API says why). */
function numberOr(s: OptionValue): number | string | null {
  if (typeof s !== 'string' || s.trim() === '') return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : s;
}

/** A field draft as the API's field definition. */
export function fieldToApi(f: FieldDraft): Record<string, unknown> {
  const options: Record<string, unknown> = { required: f.required, unique: f.unique, hidden: f.hidden };
  for (const spec of OPTION_SPECS[f.type] ?? []) {
    const v = f.opts[spec.key];
    if (v === undefined) continue;
    if (spec.kind === 'bool') options[spec.key] = v === true;
    else if (spec.kind === 'fixed') options[spec.key] = v === true ? 'fixed' : null;
    else if (spec.kind === 'list') options[spec.key] = splitList(String(v));
    else if (spec.kind === 'num') {
      const n = numberOr(v);
      if (n !== null) options[spec.key] = n;
    } else if (spec.kind === 'str' || spec.kind === 'collection') {
      if (String(v) !== '') options[spec.key] = String(v);
    }
  }
  const out: Record<string, unknown> = { name: f.name.trim(), type: f.type, options };
  if (f.id) out.id = f.id;
  return out;
}

const ruleValue = (r: RuleDraft): string | null => (r.mode === 'locked' ? null : r.mode === 'public' ? '@public' : r.expr);

/** The body of a create or update, and messages (by error path) for local input that cannot be sent. */
export function toBody(d: CollectionDraft): { body: Record<string, unknown>; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const auth = d.type === 'auth' ? authBody(d.auth) : undefined;
  if (d.system) return { body: { name: d.name, type: d.type, options: { auth } }, errors };
  const body: Record<string, unknown> = {
    id: d.id,
    name: d.name.trim(),
    type: d.type,
    fields: d.fields.map(fieldToApi),
    indexes: d.indexes.map((ix) => ({ name: ix.name.trim(), fields: splitList(ix.fields), unique: ix.unique })),
    options: { ttl_field: d.ttlField || null, ...(auth ? { auth } : {}) },
  };
  for (const r of RULE_NAMES) {
    // an empty expression would be saved as null (superusers only): a placeholder is never a value
    if (d.rules[r].mode === 'expr' && d.rules[r].expr.trim() === '') errors[r] = 'Write a filter expression, or choose “Superusers only” or “Anyone”.';
    body[r] = ruleValue(d.rules[r]);
  }
  return { body, errors };
}
