/**
 * The email-visibility rule every record read shares. (The AND-joined WHERE builder that rule,
 * filter, expiry, search and keyset clauses all go through is src/store/sql/where.ts.)
 */
import type { Collection } from '../model/schema.js';
import type { Principal } from '../rules/access.js';

/** Auth records show `email` only to superusers, the owner, or when emailVisibility is on. */
export function hidePrivate(c: Collection, rec: Record<string, unknown>, principal: Principal | null): void {
  if (c.type !== 'auth' || rec.emailVisibility === true || principal?.superuser) return;
  if (principal && principal.collection.id === c.id && principal.record.id === rec.id) return;
  delete rec.email;
}

export { Where } from '../store/sql/where.js';
