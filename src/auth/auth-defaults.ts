/**
 * The auth collection defaults as the auth services read them (docs/api.md, "Collections": auth
 * options). The defaults themselves are src/model/auth-schema.ts's.
 */
import type { Collection } from '../model/schema.js';
import { DEFAULT_MIN_PASSWORD_LENGTH } from '../model/auth-schema.js';

/** The minimum length (characters) of a new password in auth collection `c`. */
export function minPasswordLength(c: Collection): number {
  return c.options.auth?.minPasswordLength ?? DEFAULT_MIN_PASSWORD_LENGTH;
}
