/**
 * Auth tokens: HS256 JWTs (jose) whose signing key is derived from the server's token secret and
 * the record's token key, so rotating a record's token key (password change, reset) ends every
 * token issued before it, and bumping its token epoch ends every session (logout everywhere).
 *
 * Claims: `id` (record id), `collectionId`, `type: "auth"`, `ep` (token epoch at issue),
 * `csrf` (the CSRF value the `svc_csrf` cookie carries), `sid` (the `_sessions` row of a
 * table-store session; absent in epoch mode), `mf` (two factors passed), `auth_time` (epoch
 * seconds of the primary sign-in that made the session, carried unchanged by every refresh, so
 * a refreshed old session never looks recent; absent on tokens issued before the claim existed,
 * which count as old), `imp` (a superuser's impersonation token: never refreshed), `iat`, `exp`.
 *
 * Verification (jose) is cached per token string (bounded), so a repeat request costs one point
 * read of the auth record and string comparisons instead of an HMAC through WebCrypto. Signing
 * is a synchronous node:crypto HMAC over the standard JWS compact form (RFC 7515/7519), which
 * jose then verifies: jose 6 signs through WebCrypto, measured far slower than this HMAC and the
 * largest cost of auth-refresh (bench/README.md, "Signing auth tokens").
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { jwtVerify } from 'jose/jwt/verify';
import { decodeJwt } from 'jose/jwt/decode';
import { randomToken } from '../records/ids.js';
import { boundedCache } from '../cache/bounded.js';

export const TOKEN_TTL_S = 7 * 24 * 3600;
/** base64url of the JOSE header `{"alg":"HS256","typ":"JWT"}`. */
const JWT_HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
const CACHE_MAX = 10_000;

export interface TokenClaims {
  id: string;
  collectionId: string;
  type: 'auth';
  ep: number;
  csrf: string;
  /** session row id (table session store) */
  sid?: string;
  /** the session passed a second factor (or a passkey sign-in with user verification) */
  mf?: boolean;
  /** epoch seconds of the primary sign-in that made the session (claim `auth_time`); kept by refreshes */
  authTime?: number;
  /** issued by a superuser's impersonation (claim `imp`): auth-refresh refuses it */
  impersonated?: boolean;
  exp: number;
}

export class TokenService {
  private verified = boundedCache<string, { claims: TokenClaims; tokenKey: string }>(CACHE_MAX);

  constructor(private secret: Buffer) {}

  /** Signing keys by token key (bounded like the verified-token cache). */
  private keys = boundedCache<string, Buffer>(CACHE_MAX);

  /** The HS256 key of a record: HMAC-SHA256(server token secret, record token key), 32 bytes. */
  private key(tokenKey: string): Buffer {
    let k = this.keys.get(tokenKey);
    if (k === undefined) {
      k = createHmac('sha256', this.secret).update(tokenKey).digest();
      this.keys.set(tokenKey, k);
    }
    return k;
  }

  /**
   * Issues a token for a record with the given token key and epoch (and session row id, table
   * store; `mf` when the session passed a second factor; `authTime`, epoch seconds, the primary
   * sign-in the session comes from, left out when unknown): `{token, csrf}`, valid for
   * TOKEN_TTL_S seconds, or `opts.ttlS` seconds; `opts.impersonated` marks a superuser's
   * impersonation token (docs/pocketbase.md, "The JS SDK's auth calls").
   */
  async issue(collectionId: string, recordId: string, tokenKey: string, epoch: number, sid?: string, mf = false, authTime?: number, opts: { ttlS?: number; impersonated?: boolean } = {}): Promise<{ token: string; csrf: string }> {
    const csrf = randomToken(18);
    const claims: Record<string, unknown> = { id: recordId, collectionId, type: 'auth', ep: epoch, csrf };
    if (sid) claims.sid = sid;
    if (mf) claims.mf = 1;
    if (authTime !== undefined) claims.auth_time = authTime;
    if (opts.impersonated) claims.imp = 1;
    const now = Math.floor(Date.now() / 1000);
    claims.iat = now;
    claims.exp = now + (opts.ttlS ?? TOKEN_TTL_S);
    const signingInput = `${JWT_HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    const signature = createHmac('sha256', this.key(tokenKey)).update(signingInput).digest('base64url');
    return { token: `${signingInput}.${signature}`, csrf };
  }

  /** Unverified claims (to find the record whose token key verifies the token); null if malformed. */
  peek(token: string): TokenClaims | null {
    try {
      const c = decodeJwt(token) as Partial<TokenClaims>;
      if (typeof c.id !== 'string' || typeof c.collectionId !== 'string' || c.type !== 'auth' || typeof c.exp !== 'number') return null;
      const claims: TokenClaims = { id: c.id, collectionId: c.collectionId, type: 'auth', ep: Number(c.ep ?? 0), csrf: String(c.csrf ?? ''), exp: c.exp };
      if (typeof c.sid === 'string' && c.sid) claims.sid = c.sid;
      if ((c as { mf?: unknown }).mf === 1) claims.mf = true;
      const at = (c as { auth_time?: unknown }).auth_time;
      if (typeof at === 'number' && Number.isSafeInteger(at)) claims.authTime = at;
      if ((c as { imp?: unknown }).imp === 1) claims.impersonated = true;
      return claims;
    } catch {
      return null;
    }
  }

  /** Cached verification result, or undefined when the token must be verified in full. */
  cached(token: string, tokenKey: string): TokenClaims | undefined {
    const hit = this.verified.get(token);
    if (!hit || hit.tokenKey !== tokenKey || hit.claims.exp * 1000 <= Date.now()) return undefined;
    return hit.claims;
  }

  /**
   * Claims of a token verified before (not yet checked against the record's current token key:
   * `cached()` does that), so a repeat request skips decoding the token.
   */
  known(token: string): TokenClaims | undefined {
    return this.verified.get(token)?.claims;
  }

  /** Full verification against the record's token key; null when invalid or expired. */
  async verify(token: string, tokenKey: string): Promise<TokenClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key(tokenKey), { algorithms: ['HS256'] });
      const claims = this.peek(token);
      if (!claims || payload.exp === undefined) return null;
      this.verified.set(token, { claims, tokenKey });
      return claims;
    } catch {
      return null;
    }
  }
}

/** Constant-time string equality. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
