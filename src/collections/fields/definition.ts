/**
 * Validation and normalisation of client-defined field definitions (collection create/update;
 * docs/api.md, "Collections"; codes from docs/api.md, "Errors").
 */
import { randomInt } from 'node:crypto';
import type { Field, FieldOptions, FieldType } from '../../model/schema.js';
import type { FieldError } from '../../errors/api-error.js';
import { type DefinitionErrors, fieldError, isRecord, readBool } from './common.js';
import { codecFor } from './codecs.js';

export const FIELD_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const FIELD_ID_RE = /^[a-z0-9_]{1,30}$/;

/** Names client fields may not take (compared case-insensitively: SQLite columns are). */
export const RESERVED_FIELD_NAMES: readonly string[] = [
  'id', 'created', 'updated', 'expand', 'collectionId', 'collectionName', 'passwordHash',
  'tokenKey', 'token_epoch', 'externalAuths',
];

/** Names reserved only in auth collections, where they are system fields or write-only inputs. */
export const AUTH_RESERVED_FIELD_NAMES: readonly string[] = [
  'email', 'emailVisibility', 'verified', 'password', 'passwordConfirm', 'oldPassword',
];
const RESERVED = new Set(RESERVED_FIELD_NAMES.map((n) => n.toLowerCase()));

/** Keys of a field object that are not options when options are sent flat (PocketBase SDK). */
const NOT_OPTIONS = new Set(['id', 'name', 'type', 'system', 'options']);

const ENCRYPTABLE = new Set<string>(['text', 'editor', 'json']);
const SEARCHABLE = new Set<string>(['text', 'editor']);

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `f` + 9 random lowercase alphanumerics, not in `taken`. */
export function generateFieldId(taken: ReadonlySet<string>): string {
  for (;;) {
    let id = 'f';
    for (let i = 0; i < 9; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
    if (!taken.has(id)) return id;
  }
}

function checkName(name: unknown, errors: DefinitionErrors): string {
  if (typeof name !== 'string' || !FIELD_NAME_RE.test(name)) {
    errors.name = fieldError('invalid_name',
      'Must start with a letter or underscore and contain only letters, digits and underscores (at most 63).');
    return '';
  }
  if (RESERVED.has(name.toLowerCase())) errors.name = fieldError('reserved_name', `"${name}" is a reserved field name.`);
  return name;
}

/**
 * Validates and normalises a field definition sent by a client.
 *
 * Input: `{id?, name, type, options?: {...}}`, or the same with options flat on the object (the
 * PocketBase SDK's shape); nested `options` win over flat keys. Unknown option keys and `system`
 * are dropped. Output options hold the common booleans (`required`, `unique`, `hidden`,
 * `encrypted`, `searchable`) and the type's known options with defaults filled (see the codec
 * files). A string `id` of 1-30 `[a-z0-9_]` is kept; otherwise a fresh `f` + 9 chars id avoiding
 * `existingIds` is generated (the caller adds it to its set).
 *
 * Errors are keyed by `name`, `type`, `options` or the option name, e.g.
 * `{name: {code: 'validation_reserved_name', …}}`, `{scale: {code: 'validation_invalid_scale', …}}`.
 * Codes: invalid_name, reserved_name, type (unknown type, non-boolean flag), invalid_scale,
 * encrypted_type, encrypted_unique, encrypted_index, searchable_type, searchable_encrypted, select, relation, min,
 * max, pattern, date, value.
 */
export function normalizeFieldDefinition(
  input: unknown,
  existingIds: Set<string>,
): { field: Field } | { errors: Record<string, FieldError> } {
  if (!isRecord(input)) return { errors: { field: fieldError('type', 'Each field must be an object.') } };
  const errors: DefinitionErrors = {};
  const name = checkName(input.name, errors);

  const type = input.type;
  const codec = typeof type === 'string' ? codecFor(type) : undefined;
  if (codec === undefined) {
    errors.type = fieldError('type', typeof type === 'string' ? `Unknown field type "${type}".` : 'Must be a field type name.');
  }

  if (input.options !== undefined && input.options !== null && !isRecord(input.options)) {
    errors.options = fieldError('type', 'Must be an object.');
  }
  // null prototype: a `__proto__` key from JSON stays a plain (ignored) key
  const raw: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(input)) if (!NOT_OPTIONS.has(k)) raw[k] = v;
  if (isRecord(input.options)) Object.assign(raw, input.options);

  const options: FieldOptions = {
    required: readBool(raw, 'required', errors),
    unique: readBool(raw, 'unique', errors),
    hidden: readBool(raw, 'hidden', errors),
    encrypted: readBool(raw, 'encrypted', errors),
    searchable: readBool(raw, 'searchable', errors),
  };
  if (codec !== undefined) {
    const t = type as string;
    codec.options(raw, options, errors);
    if (options.encrypted && !ENCRYPTABLE.has(t)) {
      errors.encrypted ??= fieldError('encrypted_type', 'Only text, editor and json fields can be encrypted.');
    } else if (options.encrypted && options.unique) {
      errors.encrypted ??= fieldError('encrypted_unique', 'An encrypted field cannot be unique.');
    } else if (options.encrypted && options.dimensions) {
      errors.encrypted ??= fieldError('encrypted_index', 'An encrypted field cannot hold a vector (dimensions).');
    }
    if (options.searchable && !SEARCHABLE.has(t)) {
      errors.searchable ??= fieldError('searchable_type', 'Only text and editor fields can be searchable.');
    } else if (options.searchable && options.encrypted) {
      errors.searchable ??= fieldError('searchable_encrypted', 'An encrypted field cannot be searchable.');
    }
  }
  if (Object.keys(errors).length > 0) return { errors };

  const id = typeof input.id === 'string' && FIELD_ID_RE.test(input.id) ? input.id : generateFieldId(existingIds);
  return { field: { id, name, type: type as FieldType, options } };
}
