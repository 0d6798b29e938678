/**
 * The shape every sign-in method plugs into (docs/auth.md):
 * password, magic link, one-time code, OAuth2 and passkeys.
 * A method proves who the caller is and returns the auth record; it never issues a session
 * itself: AuthService.signIn is the one path that does (cookies, tokens, session store,
 * `require_verified`, rate limits), so no method can bypass it.
 */
import type { Collection } from '../../model/schema.js';
import type { FieldError } from '../../errors/api-error.js';
import type { ClientInfo } from '../client.js';

/** What an auth event says of a sign-in (docs/framework.md, "Hooks": the login hook's `method`). */
export type SignInTag = 'password' | 'oauth2' | 'magic_link' | 'otp' | 'webauthn' | 'custom' | 'refresh';

/** What a completed ceremony proves: the whole auth record to sign in, and what the method tells about it (OAuth2's `meta`). */
export interface MethodResult {
  record: Record<string, unknown>;
  meta?: Record<string, unknown>;
  /**
   * The passkey method only: the credential that signed in and whether the authenticator
   * verified the user (UV). AuthService.signIn counts a passkey sign-in as both factors only when
   * `userVerified`; it ignores this field from any other method.
   */
  passkey?: { id: string; userVerified: boolean };
}

/**
 * What the collection input asks of a sign-in method (src/auth/method-registry.ts): its slug and
 * the check of its own options. Needs no running service, so a schema is validated offline too.
 */
export interface MethodOptionsCheck {
  /** the method's slug in `options.auth.methods.<slug>` and in its routes */
  readonly slug: string;
  /**
   * The errors of `options.auth.methods.<slug>` (`options`, an object whose `enabled`, if
   * present, is a boolean; `enabled` and `rate_limit` are checked by the caller), keyed by full
   * path under `path` (e.g. `options.auth.methods.oauth2.providers.0.clientId`); empty when valid.
   * The answer of POST/PATCH /api/collections (docs/api.md, "Collections").
   */
  checkOptions(options: Record<string, unknown>, path: string): Record<string, FieldError>;
}

export interface AuthMethod extends MethodOptionsCheck {
  /** tables and record columns the method keeps its state in (for operators and cleanup) */
  readonly stores: readonly string[];
  /** events the method fires, by name */
  readonly events: readonly string[];
  /**
   * Whether the method is on for a collection. Password is on unless `enabled: false`; the
   * pluggable methods are on only with `enabled: true` (docs/auth.md).
   */
  enabled(c: Collection): boolean;
  /**
   * Starts a ceremony (sends a link or a code, returns a challenge); answers what the route
   * returns. Password has no first step and leaves it out.
   */
  initiate?(c: Collection, body: unknown, client: ClientInfo): Promise<unknown>;
  /**
   * Completes a ceremony: checks the proof in `body` and returns the whole auth record (hidden
   * columns included) to sign in.
   * @throws ApiError 400 on a malformed body or a failed proof, 429 past the rate limit
   */
  complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult>;
  /**
   * The method's own routes beyond `/auth/:method/initiate|complete` (OAuth2's provider list,
   * passkey registration and a record's passkeys), served by src/api/auth.ts. A route that needs
   * the route layer itself (cookies: the magic-link consume link) stays in src/api.
   */
  routes?(): readonly MethodRoute[];
}

/**
 * A route of a method's own, under `/api/collections/:col/` of an auth collection (404 for a
 * missing or non-auth collection, before the handler runs). JSON in, JSON out: the handler's
 * answer is the body of a 200, undefined a 204.
 */
export interface MethodRoute {
  verb: 'get' | 'post' | 'del';
  /** the path after `/api/collections/:col/`, with `:name` parameters, e.g. `records/:id/passkeys` */
  path: string;
  /**
   * `params`: the path's parameters after `:col`, decoded; `body()` reads the JSON body (400 when
   * malformed), called only once the route's access checks have passed.
   * @throws ApiError as the route answers
   */
  handle(c: Collection, params: string[], body: () => unknown, client: ClientInfo): Promise<unknown>;
}

/** The caller of a request as a method sees it (AuthService.resolve's AuthPrincipal). */
export interface MethodCaller {
  superuser: boolean;
  collection: Collection;
  record: Record<string, unknown>;
  /** epoch seconds of the session's primary sign-in (unknown on older tokens) */
  authTime?: number;
}

/** What a method asks of the auth service about the caller (AuthService builds it). */
export interface CallerAccess {
  /** the caller: null when anonymous; 401 when the token is invalid, expired or revoked (AuthService.resolve) */
  resolve(client: ClientInfo): MethodCaller | null | Promise<MethodCaller | null>;
  /** the caller signed in to `c`, else 401 (requireOwnCollection over resolve) */
  ownCaller(c: Collection, client: ClientInfo): Promise<MethodCaller>;
  /** 403 `reauthentication_required` unless the caller's primary sign-in is recent (AuthService.requireRecentSignIn) */
  requireRecent(caller: { authTime?: number }): void;
}

/** A plain object (not null, not an array). */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `options.auth.methods.<slug>` of a collection ({} when absent). */
export function methodOptions(c: Collection, slug: string): Record<string, unknown> {
  const m = (c.options.auth?.methods as Record<string, unknown> | undefined)?.[slug];
  return isObject(m) ? m : {};
}

/** Whether the pluggable method `slug` is on for `c`: only with `options.auth.methods.<slug>.enabled: true`. */
export function methodEnabled(c: Collection, slug: string): boolean {
  return methodOptions(c, slug).enabled === true;
}

/**
 * The `ttl_s` check (an integer from 30 to 604800 seconds) of the methods that mail a secret.
 * Password, an app's custom methods and slugs no method answers to are checked the same way: the
 * collection input has always applied it to every method but OAuth2 and passkeys, and saved
 * options keep being answered as before.
 */
export function lifetimeOptionErrors(m: Record<string, unknown>, path: string): Record<string, FieldError> {
  if ('ttl_s' in m && (!Number.isInteger(m.ttl_s) || (m.ttl_s as number) < 30 || (m.ttl_s as number) > 7 * 24 * 3600)) {
    return { [`${path}.ttl_s`]: { code: 'validation_value', message: 'Must be an integer number of seconds from 30 to 604800.' } };
  }
  return {};
}
