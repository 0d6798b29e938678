/**
 * Single-use verification and password-reset tokens (docs/api.md, "Verification
 * and password reset": a redeemed token gives 400 on a second use, regardless of lifetime).
 *
 * A token is `<selector>.<verifier>`: the selector (15 characters) is the `_authTokens` row id,
 * the verifier (32 random bytes, base64url) is stored only as its SHA-256. Lookup is by selector;
 * the verifier's hash is compared in constant time, so neither the SQL lookup nor the comparison
 * reveals how much of a guessed token was right. A token is bound to its collection, its kind,
 * its record and the address it was sent to; redeeming deletes the row in the same write job that
 * applies the effect, so a race between two redemptions lets exactly one win.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthTokenRepository } from '../context/auth-repositories.js';
import type { Collection } from '../model/schema.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import { newId, randomToken } from '../records/ids.js';
import { nowDate } from '../collections/fields/index.js';

/**
 * What a token is for: account mails (`verify`, `reset`), sign-in links (`magic_link`), OAuth2
 * state (`oauth_state`, its record column holding the provider name and its email column the
 * record id of the caller who started the flow, '' for an anonymous start) and WebAuthn ceremonies
 * (`webauthn_register`, `webauthn_login`, and as a second factor `mfa_webauthn_enroll`,
 * `mfa_webauthn_login`; the challenge is derived from the token), and an address change
 * (`email_change`, its email column holding the new address).
 */
export type AuthTokenKind = 'verify' | 'reset' | 'email_change' | 'magic_link' | 'oauth_state' | 'webauthn_register' | 'webauthn_login' | 'mfa_webauthn_enroll' | 'mfa_webauthn_login';

/**
 * Default lifetimes in seconds (PocketBase's: 3 days to verify, 30 minutes to reset or to change the address; a magic link
 * 15 minutes unless `auth.methods.magic_link.ttl_s` says otherwise; OAuth2 state 10 minutes unless
 * SERVICE_OAUTH_STATE_TTL says otherwise; a WebAuthn ceremony 5 minutes).
 */
export const AUTH_TOKEN_TTL_S: Record<AuthTokenKind, number> = { verify: 3 * 24 * 3600, reset: 30 * 60, email_change: 30 * 60, magic_link: 15 * 60, oauth_state: 600, webauthn_register: 300, webauthn_login: 300, mfa_webauthn_enroll: 300, mfa_webauthn_login: 300 };

/** A token row found valid by {@link AuthTokens.find}. */
export interface FoundToken {
  selector: string;
  recordId: string;
  email: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** Issues, finds and redeems single-use tokens (this module's header) over an AuthTokenRepository. */
export class AuthTokens {
  constructor(private repo: AuthTokenRepository) {}

  /**
   * Creates a token for a record and the address it goes to; drops every expired token.
   * @returns the plaintext token (only ever sent by mail)
   */
  async issue(kind: AuthTokenKind, c: Collection, recordId: string, email: string, ttlS = AUTH_TOKEN_TTL_S[kind]): Promise<string> {
    const selector = newId();
    const verifier = randomToken(32);
    const now = Date.now();
    // expired rows go in the same job: the table stays small
    const steps = this.repo.authTokens.issueSteps({
      id: selector, hash: sha256(verifier).toString('hex'), kind, collectionId: c.id, recordId, email, created: nowDate(), expires: now + ttlS * 1000,
    }, now);
    for (const s of steps) s.params = s.params.map(bindValue);
    await this.repo.write(steps);
    return `${selector}.${verifier}`;
  }

  /**
   * The unexpired token of `kind` for collection `c`, or null (malformed, unknown, used, expired,
   * another kind or another collection). Does not consume it: see {@link consumeStep}.
   */
  async find(kind: AuthTokenKind, c: Collection, token: unknown): Promise<FoundToken | null> {
    if (typeof token !== 'string' || token.length > 200) return null;
    const dot = token.indexOf('.');
    const selector = dot > 0 ? token.slice(0, dot) : '';
    const verifier = dot > 0 ? token.slice(dot + 1) : token;
    const row = await this.repo.authTokens.find(selector, kind, c.id);
    // Hash and compare even without a row, so a miss costs what a hit costs.
    const stored = Buffer.from(row ? row.hash : '0'.repeat(64), 'hex');
    const equal = timingSafeEqual(sha256(verifier), stored.length === 32 ? stored : Buffer.alloc(32));
    if (!row || !equal || row.expires <= Date.now()) return null;
    return { selector, recordId: row.recordId, email: row.email };
  }

  /** The write step that redeems a found token; the job fails with `fail` when it was used meanwhile. */
  consumeStep(t: FoundToken, fail: NonNullable<WriteStep['fail']>): WriteStep {
    return this.repo.authTokens.consumeStep(t.selector, fail);
  }

  /** Steps deleting every outstanding token of `kind` for a record (after a reset, the others are void). */
  dropAllSteps(kind: AuthTokenKind, c: Collection, recordId: string): WriteStep[] {
    return this.repo.authTokens.dropAllSteps(kind, c.id, recordId);
  }
}
