/**
 * The built-in fields of auth collections (docs/api.md, "Records": auth system fields).
 * `email`, `emailVisibility` and `verified` are ordinary visible fields marked `system`;
 * `passwordHash`, `tokenKey` and `token_epoch` are hidden columns that never appear in a schema,
 * a response, or a client filter or sort.
 */
import type { Field } from '../model/schema.js';

export function authSystemFields(): Field[] {
  return [
    { id: 'sys_email', name: 'email', type: 'email', system: true, options: { required: true, unique: true } },
    { id: 'sys_emailvis', name: 'emailVisibility', type: 'bool', system: true, options: {} },
    { id: 'sys_verified', name: 'verified', type: 'bool', system: true, options: {} },
  ];
}

/** Names a client may never write directly on an auth record. */
export const AUTH_WRITE_STRIPPED = new Set(['passwordHash', 'tokenKey', 'token_epoch', 'externalAuths']);
