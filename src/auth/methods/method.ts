/**
 * The shape every sign-in method plugs into (spec 1-core-api.md, "Pluggable auth methods"):
 * password, magic link, one-time code, OAuth2 and passkeys.
 * A method proves who the caller is and returns the auth record; it never issues a session
 * itself: AuthService.signIn is the one path that does (cookies, tokens, session store,
 * `require_verified`, rate limits), so no method can bypass it.
 */
import type { Collection } from '../../collections/types.js';
import type { ClientInfo } from '../client.js';

/** What an auth event says of a sign-in (spec "Events": the login hook's `method`). */
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

export interface AuthMethod {
  /** the method's slug in `options.auth.methods.<slug>` and in its routes */
  readonly slug: string;
  /** tables and record columns the method keeps its state in (for operators and cleanup) */
  readonly stores: readonly string[];
  /** events the method fires, by name */
  readonly events: readonly string[];
  /**
   * Whether the method is on for a collection. Password is on unless `enabled: false`; the
   * pluggable methods are on only with `enabled: true` (0-conventions.md).
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
}
