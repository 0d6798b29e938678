/**
 * Short-lived file tokens (docs/api.md, "Records": protected files accept a short-lived
 * file token; minted like PocketBase's `POST /api/files/token`).
 *
 * A file token is an HS256 JWT with claims `id` (auth record id), `collectionId`, `type: "file"`,
 * `ep` (the record's token epoch), `iat`, `exp` (issue + {@link FILE_TOKEN_TTL_S}). Its key is
 * HMAC-SHA256(token secret, "file:" + the record's token key), so it is a different key from the
 * auth token's, and a password change (new token key) or a logout everywhere (new epoch) ends
 * every file token issued before.
 */
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose/jwt/sign';
import { jwtVerify } from 'jose/jwt/verify';
import { decodeJwt } from 'jose/jwt/decode';
import type { Principal } from '../rules/access.js';
import type { Collection } from '../model/schema.js';

/** Lifetime of a file token: 2 minutes (PocketBase's). */
export const FILE_TOKEN_TTL_S = 120;

/** How a verifier finds the auth collection and the whole auth record (hidden columns included). */
export interface AuthRecordSource {
  collection(id: string): Collection | undefined;
  record(c: Collection, id: string): Promise<Record<string, unknown> | null>;
}

export class FileTokens {
  constructor(private secret: Buffer) {}

  private key(tokenKey: string): Uint8Array {
    return createHmac('sha256', this.secret).update(`file:${tokenKey}`).digest();
  }

  /** Mints a token for an authenticated caller. */
  async issue(principal: Principal): Promise<string> {
    const rec = principal.record;
    return new SignJWT({ id: String(rec.id), collectionId: principal.collection.id, type: 'file', ep: Number(rec.token_epoch ?? 0) })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + FILE_TOKEN_TTL_S)
      .sign(this.key(String(rec.tokenKey)));
  }

  /** The principal a file token stands for, or null when it is malformed, forged, expired or revoked. */
  async verify(token: string, source: AuthRecordSource): Promise<Principal | null> {
    let claims: Record<string, unknown>;
    try {
      claims = decodeJwt(token);
    } catch {
      return null;
    }
    if (claims.type !== 'file' || typeof claims.id !== 'string' || typeof claims.collectionId !== 'string') return null;
    const c = source.collection(claims.collectionId);
    if (!c || c.type !== 'auth') return null;
    const rec = await source.record(c, claims.id);
    if (!rec || typeof rec.tokenKey !== 'string') return null;
    try {
      await jwtVerify(token, this.key(rec.tokenKey), { algorithms: ['HS256'], requiredClaims: ['exp'] });
    } catch {
      return null;
    }
    if (Number(claims.ep ?? 0) !== Number(rec.token_epoch ?? 0)) return null;
    return { superuser: c.name === '_superusers', collection: c, record: rec };
  }
}
