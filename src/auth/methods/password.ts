/**
 * Password sign-in (docs/api.md, "Auth": auth-with-password) as an AuthMethod:
 * `{identity, password}` against the collection's identity fields. A wrong password and an
 * unknown identity give the same 400 at the same cost (a dummy hash is verified); rate limited
 * per identity (method `password`).
 */
import { ApiError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { IdentityRepository } from '../../context/auth-repositories.js';
import { verifyPassword, MAX_PASSWORD_LENGTH } from '../passwords.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import { lifetimeOptionErrors, type AuthMethod, type MethodOptionsCheck, type MethodResult } from './method.js';

/** Password's options check: only `enabled` and `rate_limit` mean anything; `ttl_s` is checked as for every method (lifetimeOptionErrors). */
export const passwordOptions: MethodOptionsCheck = { slug: 'password', checkOptions: lifetimeOptionErrors };

export class PasswordMethod implements AuthMethod {
  readonly slug = passwordOptions.slug;
  readonly checkOptions = passwordOptions.checkOptions;
  readonly stores = ['passwordHash', 'tokenKey'] as const;
  readonly events = ['auth-success'] as const;

  /** @param loadRecord the whole auth record by id (hidden columns included), or null */
  constructor(
    private repo: IdentityRepository,
    private limits: AuthRateLimits,
    private loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>,
  ) {}

  /** On unless `options.auth.methods.password.enabled` is false. */
  enabled(c: Collection): boolean {
    const m = c.options.auth?.methods?.password;
    return !(typeof m === 'object' && m !== null && (m as { enabled?: unknown }).enabled === false);
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    await this.limits.enforce('auth-with-password', c, this.limits.clientKeys(client, b.identity), 'password');
    const errors: Record<string, { code: string; message: string }> = {};
    if (typeof b.identity !== 'string' || b.identity === '') errors.identity = { code: 'validation_required', message: 'Missing required value.' };
    if (typeof b.password !== 'string' || b.password === '') errors.password = { code: 'validation_required', message: 'Missing required value.' };
    // refused before any hashing: an argon2 run per megabyte-long guess is a denial of service
    else if (b.password.length > MAX_PASSWORD_LENGTH) errors.password = { code: 'validation_max', message: `Must be at most ${MAX_PASSWORD_LENGTH} characters.` };
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const identity = b.identity as string;
    const fields = c.options.auth?.identityFields ?? ['email'];
    const id = await this.repo.auth.idByIdentity(c, fields, identity);
    const rec = id !== undefined ? await this.loadRecord(c, id) : null;
    const ok = await verifyPassword(rec && typeof rec.passwordHash === 'string' ? rec.passwordHash : null, b.password as string);
    if (!ok || !rec) throw ApiError.invalidCredentials();
    return { record: rec };
  }
}
