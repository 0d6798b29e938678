/**
 * What clients may not write on auth records (docs/api.md, "Records": auth system fields). The
 * built-in fields themselves are src/model/auth-schema.ts's (authSystemFields).
 */

/** Names a client may never write directly on an auth record. */
export const AUTH_WRITE_STRIPPED = new Set(['passwordHash', 'tokenKey', 'token_epoch', 'externalAuths']);
