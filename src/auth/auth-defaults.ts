/**
 * The one source of the auth collection defaults (docs/api.md, "Collections":
 * auth options; default session store `epoch`).
 */
import type { AuthOptions, Collection } from '../model/schema.js';

/** The default `options.auth.minPasswordLength` (characters), also the CLI's superuser minimum. */
export const DEFAULT_MIN_PASSWORD_LENGTH = 8;

/** The auth options of a new auth collection before any client input (a fresh object each call). */
export function defaultAuthOptions(): AuthOptions {
  return { identityFields: ['email'], minPasswordLength: DEFAULT_MIN_PASSWORD_LENGTH, two_factor: 'disabled', require_verified: false, session: { store: 'epoch' }, methods: {} };
}

/** The minimum length (characters) of a new password in auth collection `c`. */
export function minPasswordLength(c: Collection): number {
  return c.options.auth?.minPasswordLength ?? DEFAULT_MIN_PASSWORD_LENGTH;
}
