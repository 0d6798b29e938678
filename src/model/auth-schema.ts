/**
 * The schema every auth collection starts from (docs/api.md, "Collections" and "Records": auth
 * system fields and auth options): the built-in fields and the default options, read by
 * collection validation (src/collections/), the superuser commands (src/auth/) and storage, whose
 * bootstrap defines the `_superusers` collection with them (src/store/sqlite/bootstrap.ts).
 */
import type { AuthOptions, Field } from './schema.js';

/**
 * The built-in fields of auth collections (a fresh array each call). `email`, `emailVisibility`
 * and `verified` are ordinary visible fields marked `system`; `passwordHash`, `tokenKey` and
 * `token_epoch` are hidden columns that never appear in a schema, a response, or a client filter
 * or sort (schema.ts, HIDDEN_AUTH_COLUMNS).
 */
export function authSystemFields(): Field[] {
  return [
    { id: 'sys_email', name: 'email', type: 'email', system: true, options: { required: true, unique: true } },
    { id: 'sys_emailvis', name: 'emailVisibility', type: 'bool', system: true, options: {} },
    { id: 'sys_verified', name: 'verified', type: 'bool', system: true, options: {} },
  ];
}

/** The default `options.auth.minPasswordLength` (characters), also the CLI's superuser minimum. */
export const DEFAULT_MIN_PASSWORD_LENGTH = 8;

/** The auth options of a new auth collection before any client input (a fresh object each call; default session store `epoch`). */
export function defaultAuthOptions(): AuthOptions {
  return { identityFields: ['email'], minPasswordLength: DEFAULT_MIN_PASSWORD_LENGTH, two_factor: 'disabled', require_verified: false, session: { store: 'epoch' }, methods: {} };
}
