/**
 * Turns a client's collection payload into a validated Collection (create or update), or throws
 * 400 `validation_failed` before any schema change (docs/api.md, "Collections").
 *
 * Error keys in `data`: `name`, `type`, `fields.<i>.<option>`, `indexes.<i>`, `options.<key>`,
 * `<ruleName>`, and `collections.<name>.<ruleName>` for a retained collection's rule.
 */
import { ApiError, type FieldError } from '../errors/api-error.js';
import type { AuthOptions, Collection, Field, IndexDef, RuleName } from '../model/schema.js';
import { RULE_NAMES, VECTOR_COLUMN_PREFIX } from '../model/schema.js';
import { normalizeFieldDefinition } from './fields/index.js';
import { AUTH_RESERVED_FIELD_NAMES } from './fields/definition.js';
import { authSystemFields, defaultAuthOptions } from '../model/auth-schema.js';
import { compileExpression } from '../rules/compiler.js';
import type { SchemaLookup } from '../store/rule-types.js';
import { newId } from '../records/ids.js';
import { rateLimitOptionError } from '../auth/rate-limit.js';
import { signInMethods } from '../auth/method-registry.js';

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const AUTH_SYSTEM_NAMES = new Set(['email', 'emailVisibility', 'verified']);

type Errors = Record<string, FieldError>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nowDate = () => new Date().toISOString().replace('T', ' ');

/**
 * Validates `body` against `existing` (undefined on create) and every other collection in
 * `others`. Returns the proposed collection; throws ApiError 400 on any problem.
 */
export function buildCollection(body: unknown, existing: Collection | undefined, others: Collection[]): Collection {
  if (!isObject(body)) throw ApiError.badRequest('The request body must be a JSON object.');
  const errors: Errors = {};
  const now = nowDate();

  if (existing?.system) return buildSystemUpdate(body, existing, now);

  const name = body.name === undefined && existing ? existing.name : body.name;
  if (typeof name !== 'string' || name === '') errors.name = { code: 'validation_required', message: 'Missing required value.' };
  else if (!NAME_RE.test(name)) errors.name = { code: 'validation_invalid_name', message: 'Must start with a letter or underscore and contain only letters, digits and underscores (at most 63).' };
  else if (name.startsWith('_') || /^sqlite_/i.test(name)) errors.name = { code: 'validation_reserved_name', message: 'Names starting with "_" or "sqlite_" are reserved for system collections.' };
  else if (/_fts(_data|_idx|_content|_docsize|_config)?$/i.test(name)) errors.name = { code: 'validation_reserved_suffix', message: 'The "_fts" suffix is reserved for full-text indexes (and "_fts_data", "_fts_idx", "_fts_content", "_fts_docsize", "_fts_config" for their tables).' };
  else if (others.some((c) => c.name.toLowerCase() === name.toLowerCase())) errors.name = { code: 'validation_duplicate_name', message: 'A collection with this name already exists.' };

  let type = existing?.type ?? 'base';
  if (body.type !== undefined) {
    if (body.type !== 'base' && body.type !== 'auth') errors.type = { code: 'validation_value', message: 'Must be "base" or "auth".' };
    else if (existing && body.type !== existing.type) errors.type = { code: 'validation_value', message: 'The type of an existing collection cannot change.' };
    else type = body.type;
  }

  const id = existing?.id ?? (typeof body.id === 'string' && /^[a-z0-9_]{1,30}$/.test(body.id) && !others.some((c) => c.id === body.id) ? body.id : newId());
  const fields = buildFields(body, existing, type, id, others, errors);
  const indexes = buildIndexes(body.indexes ?? (existing ? carryIndexes(existing, fields) : []), fields, errors);
  const options = buildOptions(body.options, existing, type, fields, errors);

  const rules = {} as Record<RuleName, string | null>;
  for (const r of RULE_NAMES) {
    const v = r in body ? body[r] : existing ? existing[r] : null;
    if (v !== null && typeof v !== 'string') errors[r] = { code: 'validation_type', message: 'Must be a string or null.' };
    else rules[r] = v;
  }
  if (Object.keys(errors).length) throw ApiError.validation(errors);

  const next: Collection = {
    id, name: name as string, type, system: false, fields, indexes, options,
    ...rules,
    created: existing?.created ?? now,
    updated: now,
  };
  checkRules(next, others);
  return next;
}

function buildFields(body: Record<string, unknown>, existing: Collection | undefined, type: 'base' | 'auth', selfId: string, others: Collection[], errors: Errors): Field[] {
  const input = body.fields ?? body.schema;
  if (input === undefined) return existing ? existing.fields : type === 'auth' ? authSystemFields() : [];
  if (!Array.isArray(input)) {
    errors.fields = { code: 'validation_type', message: 'Must be an array of fields.' };
    return [];
  }
  const out: Field[] = type === 'auth' ? authSystemFields() : [];
  const prevById = new Map((existing?.fields ?? []).map((f) => [f.id, f]));
  const ids = new Set<string>(out.map((f) => f.id));
  const names = new Set<string>(out.map((f) => f.name.toLowerCase()));
  input.forEach((raw, i) => {
    if (type === 'auth' && isObject(raw) && typeof raw.name === 'string' && AUTH_SYSTEM_NAMES.has(raw.name)) return;
    const res = normalizeFieldDefinition(raw, ids);
    if ('errors' in res) {
      for (const [k, e] of Object.entries(res.errors)) errors[`fields.${i}.${k}`] = e;
      return;
    }
    const f = res.field;
    if (type === 'auth' && AUTH_RESERVED_FIELD_NAMES.some((n) => n.toLowerCase() === f.name.toLowerCase())) {
      errors[`fields.${i}.name`] = { code: 'validation_reserved_name', message: `"${f.name}" is reserved in auth collections.` };
      return;
    }
    // SQLite's row id (which the full-text index is keyed by) and FTS5's hidden `rank` column.
    if (['rowid', 'oid', '_rowid_'].includes(f.name.toLowerCase()) || (f.options.searchable && f.name.toLowerCase() === 'rank')) {
      errors[`fields.${i}.name`] = { code: 'validation_reserved_name', message: `"${f.name}" is reserved${f.name.toLowerCase() === 'rank' ? ' for searchable fields' : ''}.` };
      return;
    }
    // the float32 shadow columns of vector fields (vector-sql.ts)
    if (f.name.toLowerCase().startsWith(VECTOR_COLUMN_PREFIX)) {
      errors[`fields.${i}.name`] = { code: 'validation_reserved_name', message: `Names starting with "${VECTOR_COLUMN_PREFIX}" are reserved for vector columns.` };
      return;
    }
    const prev = prevById.get(f.id);
    if (prev && prev.type !== f.type) errors[`fields.${i}.type`] = { code: 'validation_type', message: `The type of the existing field "${prev.name}" cannot change.` };
    if (names.has(f.name.toLowerCase())) errors[`fields.${i}.name`] = { code: 'validation_duplicate_name', message: 'Duplicate field name.' };
    if (f.type === 'relation') {
      const target = String(f.options.collectionId ?? '');
      const ok = target === selfId || others.some((c) => c.id === target);
      if (!ok) errors[`fields.${i}.collectionId`] = { code: 'validation_relation', message: 'The related collection does not exist.' };
    }
    ids.add(f.id);
    names.add(f.name.toLowerCase());
    out.push(f);
  });
  return out;
}

/**
 * The existing indexes when a PATCH leaves `indexes` out: columns follow renamed fields (by field
 * id), and an index on a dropped field is dropped with it (SQLite cannot keep it).
 */
function carryIndexes(existing: Collection, fields: Field[]): IndexDef[] {
  const idByOldName = new Map(existing.fields.map((f) => [f.name, f.id]));
  const nameById = new Map(fields.map((f) => [f.id, f.name]));
  const out: IndexDef[] = [];
  for (const ix of existing.indexes) {
    const cols = ix.fields.map((n) => (n === 'id' || n === 'created' || n === 'updated' ? n : nameById.get(idByOldName.get(n) ?? '')));
    if (cols.every((c): c is string => c !== undefined)) out.push({ ...ix, fields: cols });
  }
  return out;
}

const INDEX_SQL_RE = /^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?[`"[]?(\w+)[`"\]]?\s+ON\s+[`"[]?\w+[`"\]]?\s*\(([^)]*)\)\s*;?\s*$/i;

function buildIndexes(input: unknown, fields: Field[], errors: Errors): IndexDef[] {
  if (!Array.isArray(input)) {
    errors.indexes = { code: 'validation_type', message: 'Must be an array of indexes.' };
    return [];
  }
  const columns = new Map<string, Field | null>([['id', null], ['created', null], ['updated', null]]);
  for (const f of fields) columns.set(f.name, f);
  const out: IndexDef[] = [];
  const names = new Set<string>();
  input.forEach((raw, i) => {
    let def: IndexDef | null = null;
    if (typeof raw === 'string') {
      const m = INDEX_SQL_RE.exec(raw);
      if (m) def = { name: m[2], unique: !!m[1], fields: m[3].split(',').map((s) => s.trim().replace(/^[`"[]|[`"\]]$/g, '').replace(/\s+(ASC|DESC)$/i, '')) };
    } else if (isObject(raw) && typeof raw.name === 'string' && Array.isArray(raw.fields) && raw.fields.every((x) => typeof x === 'string')) {
      def = { name: raw.name, fields: raw.fields as string[], unique: raw.unique === true };
    }
    const key = `indexes.${i}`;
    if (!def) return void (errors[key] = { code: 'validation_value', message: 'Must be {name, fields, unique} or "CREATE [UNIQUE] INDEX name ON table (columns)".' });
    if (!NAME_RE.test(def.name)) return void (errors[key] = { code: 'validation_invalid_name', message: 'Invalid index name.' });
    if (names.has(def.name.toLowerCase())) return void (errors[key] = { code: 'validation_duplicate_name', message: 'Duplicate index name.' });
    if (def.fields.length === 0) return void (errors[key] = { code: 'validation_required', message: 'An index needs at least one field.' });
    for (const col of def.fields) {
      if (!columns.has(col)) return void (errors[key] = { code: 'validation_not_found', message: `Unknown field "${col}".` });
      if (columns.get(col)?.options.encrypted) return void (errors[key] = { code: 'validation_encrypted_index', message: `The encrypted field "${col}" cannot be indexed.` });
    }
    names.add(def.name.toLowerCase());
    out.push(def);
  });
  return out;
}

function buildOptions(input: unknown, existing: Collection | undefined, type: 'base' | 'auth', fields: Field[], errors: Errors): Collection['options'] {
  const src = isObject(input) ? input : {};
  if (input !== undefined && !isObject(input)) errors.options = { code: 'validation_type', message: 'Must be an object.' };
  const prev = existing?.options ?? {};
  const ttl = 'ttl_field' in src ? src.ttl_field : (prev.ttl_field ?? null);
  if (ttl !== null && ttl !== undefined) {
    const f = typeof ttl === 'string' ? fields.find((x) => x.name === ttl) : undefined;
    if (!f || (f.type !== 'date' && f.type !== 'autodate')) errors['options.ttl_field'] = { code: 'validation_invalid_ttl_field', message: 'Must name a date or autodate field of this collection.' };
  }
  const out: Collection['options'] = { ttl_field: (ttl as string | null | undefined) ?? null };
  if (type === 'auth') out.auth = buildAuthOptions(isObject(src.auth) ? src.auth : {}, prev.auth, fields, errors);
  return out;
}

function buildAuthOptions(src: Record<string, unknown>, prev: AuthOptions | undefined, fields: Field[], errors: Errors): AuthOptions {
  const base: AuthOptions = prev ?? defaultAuthOptions();
  const out: AuthOptions = { ...base };
  if ('identityFields' in src) {
    const v = src.identityFields;
    const ok = Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'string' && (n === 'email' || fields.some((f) => f.name === n && f.type === 'text' && f.options.unique)));
    if (!ok) errors['options.auth.identityFields'] = { code: 'validation_invalid_identity_field', message: 'Identity fields must be "email" or unique text fields.' };
    else out.identityFields = v as string[];
  }
  if ('minPasswordLength' in src) {
    const v = src.minPasswordLength;
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 256) errors['options.auth.minPasswordLength'] = { code: 'validation_value', message: 'Must be an integer from 1 to 256.' };
    else out.minPasswordLength = v as number;
  }
  if ('two_factor' in src) {
    if (!['disabled', 'optional', 'required'].includes(src.two_factor as string)) errors['options.auth.two_factor'] = { code: 'validation_value', message: 'Must be disabled, optional or required.' };
    else out.two_factor = src.two_factor as AuthOptions['two_factor'];
  }
  if ('oauth2' in src) errors['options.auth.oauth2'] = { code: 'validation_value', message: 'OAuth2 is configured under options.auth.methods.oauth2 ({enabled, providers}).' };
  if ('require_verified' in src) {
    if (typeof src.require_verified !== 'boolean') errors['options.auth.require_verified'] = { code: 'validation_type', message: 'Must be a boolean.' };
    else out.require_verified = src.require_verified;
  }
  if ('session' in src) {
    const s = src.session;
    if (!isObject(s) || (s.store !== 'epoch' && s.store !== 'table')) errors['options.auth.session'] = { code: 'validation_value', message: 'session.store must be "epoch" or "table".' };
    else out.session = { store: s.store };
  }
  if ('methods' in src) {
    if (!isObject(src.methods)) errors['options.auth.methods'] = { code: 'validation_type', message: 'Must be an object.' };
    else {
      for (const [slug, m] of Object.entries(src.methods)) {
        if (!isObject(m)) errors[`options.auth.methods.${slug}`] = { code: 'validation_type', message: 'Must be an object.' };
        else if ('enabled' in m && typeof m.enabled !== 'boolean') errors[`options.auth.methods.${slug}.enabled`] = { code: 'validation_type', message: 'Must be a boolean.' };
        else if (!signInMethods.has(slug) && m.enabled === true) {
          errors[`options.auth.methods.${slug}`] = { code: 'validation_value', message: `The sign-in method "${slug}" is not available on this server yet.` };
        } else {
          if ('rate_limit' in m) {
            const bad = rateLimitOptionError(m.rate_limit);
            if (bad) errors[`options.auth.methods.${slug}.rate_limit`] = { code: 'validation_value', message: bad };
          }
          // the method's own options, as the method registered under the slug checks them
          Object.assign(errors, signInMethods.optionErrors(slug, m, `options.auth.methods.${slug}`));
        }
      }
      out.methods = src.methods;
    }
  }
  return out;
}

/**
 * `_superusers` accepts only its auth options (docs/auth.md, "Two-factor sign-in": PATCH with
 * name, type and options.auth.two_factor).
 */
function buildSystemUpdate(body: Record<string, unknown>, existing: Collection, now: string): Collection {
  if (body.name !== undefined && body.name !== existing.name) throw ApiError.validation({ name: { code: 'validation_reserved_name', message: 'System collections cannot be renamed.' } });
  const errors: Errors = {};
  const auth = isObject(body.options) && isObject(body.options.auth) ? body.options.auth : {};
  const next = { ...existing, updated: now, options: { ...existing.options, auth: buildAuthOptions(auth, existing.options.auth, existing.fields, errors) } };
  if (Object.keys(errors).length) throw ApiError.validation(errors);
  return next;
}

/** A lookup over `others` with `next` added or replacing its old version. */
export function lookupWith(others: Collection[], next: Collection | null): SchemaLookup {
  const list = next ? [...others.filter((c) => c.id !== next.id), next] : others;
  const byId = new Map(list.map((c) => [c.id, c]));
  const byName = new Map(list.map((c) => [c.name.toLowerCase(), c]));
  return { byId: (id) => byId.get(id), byName: (n) => byName.get(n.toLowerCase()) };
}

/** Throws 400 when any rule of `next` or of a retained non-system collection does not compile. */
export function checkRules(next: Collection | null, others: Collection[]): void {
  const lookup = lookupWith(others, next);
  const errors: Errors = {};
  const check = (c: Collection, key: (r: RuleName) => string, label: string) => {
    for (const r of RULE_NAMES) {
      const rule = c[r];
      if (rule === null || rule === '' || rule === '@public') continue;
      try {
        compileExpression(rule, c, lookup, { mode: 'rule', alias: 'r' });
      } catch (err) {
        errors[key(r)] = { code: 'validation_value', message: `${label}${r}: ${(err as Error).message}` };
      }
    }
  };
  if (next) check(next, (r) => r, '');
  for (const c of others) {
    if (c.system || (next && c.id === next.id)) continue;
    check(c, (r) => `collections.${c.name}.${r}`, `retained collection "${c.name}" `);
  }
  if (Object.keys(errors).length) throw ApiError.validation(errors, 'A rule is malformed or names a field or relation that cannot be resolved.');
}
