/**
 * Authentication (spec 1-core-api.md, "Authentication", "Auth endpoints"): resolving the caller
 * from a bearer token or the `svc_auth` cookie (+ CSRF header on unsafe methods), password login,
 * refresh and logout.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors/api-error.js';
import type { Collection } from './types.js';
import type { Principal } from './access.js';
import type { Store } from './store.js';
import { q } from './collection-sql.js';
import { safeEqual, TokenService, TOKEN_TTL_S, type TokenClaims } from './tokens.js';
import { verifyPassword } from './passwords.js';
import type { Req } from '../http/types.js';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Reads the persisted token secret, creating it (32 random bytes, mode 0600) on first run. */
export function loadTokenSecret(dataDir: string): Buffer {
  const file = join(dataDir, 'token_secret');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  const secret = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (secret.length < 32) throw new Error(`the token secret in ${file} is shorter than 32 bytes; delete it to generate a new one (all sessions end)`);
  return secret;
}

/** Parses a Cookie header into a map (first occurrence wins). */
export function parseCookies(header: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    if (!out.has(k)) out.set(k, part.slice(i + 1).trim());
  }
  return out;
}

export class AuthService {
  readonly tokens: TokenService;
  private authSelect = new Map<string, string>();

  constructor(private store: Store, secret: Buffer, private opts: { insecureCookies: boolean }) {
    this.tokens = new TokenService(secret);
  }

  /** SELECT of a whole auth record (hidden columns last) by id. */
  private authSql(c: Collection): string {
    const key = `${c.id}:${this.store.registry.version(c.id)}`;
    let sql = this.authSelect.get(key);
    if (!sql) {
      sql = `SELECT ${this.store.codec(c).columns}, r."passwordHash", r."tokenKey", r."token_epoch" FROM ${q(c.name)} r WHERE r."id" = ?`;
      this.authSelect.set(key, sql);
    }
    return sql;
  }

  /** The whole auth record (incl. hidden columns) or null. */
  loadAuthRecord(c: Collection, id: string): Record<string, unknown> | null {
    const row = this.store.reader.get(this.authSql(c), [id]);
    if (!row) return null;
    const codec = this.store.codec(c);
    const rec = codec.fromRow(row);
    rec.passwordHash = row[codec.width];
    rec.tokenKey = row[codec.width + 1];
    rec.token_epoch = Number(row[codec.width + 2]);
    return rec;
  }

  /**
   * The caller of a request: null when anonymous. A bearer (or raw) token that is invalid,
   * expired or revoked answers 401. Cookie credentials without a matching X-CSRF-Token on an
   * unsafe method make the request anonymous.
   */
  resolve(req: Req): Principal | null | Promise<Principal | null> {
    let token = req.headers.authorization;
    let viaCookie = false;
    if (token) {
      if (token.startsWith('Bearer ') || token.startsWith('bearer ')) token = token.slice(7).trim();
    } else if (req.headers.cookie) {
      token = parseCookies(req.headers.cookie).get('svc_auth') ?? '';
      viaCookie = token !== '';
    }
    if (!token) return null;
    const claims = this.tokens.peek(token);
    if (!claims) return invalid(viaCookie);
    const c = this.store.registry.byId(claims.collectionId);
    if (!c || c.type !== 'auth') return invalid(viaCookie);
    const rec = this.loadAuthRecord(c, claims.id);
    if (!rec) return invalid(viaCookie);
    const tokenKey = String(rec.tokenKey);
    const check = (cl: TokenClaims | null | undefined): Principal | null => {
      if (!cl || cl.ep !== rec.token_epoch) return invalid(viaCookie);
      if (viaCookie && UNSAFE.has(req.method) && !(req.headers.csrf && safeEqual(req.headers.csrf, cl.csrf))) return null;
      return { superuser: c.name === '_superusers', collection: c, record: rec };
    };
    const hit = this.tokens.cached(token, tokenKey);
    if (hit) return check(hit);
    return this.tokens.verify(token, tokenKey).then(check);
  }

  /** POST /auth-with-password: `{identity, password}` → the record and a fresh token. */
  async authWithPassword(c: Collection, body: unknown): Promise<{ record: Record<string, unknown>; token: string; csrf: string }> {
    if (c.type !== 'auth') throw ApiError.notFound();
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const errors: Record<string, { code: string; message: string }> = {};
    if (typeof b.identity !== 'string' || b.identity === '') errors.identity = { code: 'validation_required', message: 'Missing required value.' };
    if (typeof b.password !== 'string' || b.password === '') errors.password = { code: 'validation_required', message: 'Missing required value.' };
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const identity = b.identity as string;
    const fields = c.options.auth?.identityFields ?? ['email'];
    const where = fields.map((f) => (f === 'email' ? `"email" = ? COLLATE NOCASE` : `${q(f)} = ?`)).join(' OR ');
    const row = this.store.reader.get(`SELECT "id" FROM ${q(c.name)} WHERE ${where} LIMIT 1`, fields.map(() => identity));
    const rec = row ? this.loadAuthRecord(c, String(row[0])) : null;
    const ok = await verifyPassword(rec && typeof rec.passwordHash === 'string' ? rec.passwordHash : null, b.password as string);
    if (!ok || !rec) throw ApiError.invalidCredentials();
    const { token, csrf } = await this.tokens.issue(c.id, String(rec.id), String(rec.tokenKey), Number(rec.token_epoch));
    return { record: rec, token, csrf };
  }

  /** A fresh token for the caller's own record. */
  async refresh(c: Collection, principal: Principal | null): Promise<{ record: Record<string, unknown>; token: string; csrf: string }> {
    if (!principal || principal.collection.id !== c.id) throw ApiError.unauthorized('The token does not belong to this collection.');
    const rec = principal.record;
    const { token, csrf } = await this.tokens.issue(c.id, String(rec.id), String(rec.tokenKey), Number(rec.token_epoch));
    return { record: rec, token, csrf };
  }

  /** Set-Cookie headers for a new session. */
  sessionCookies(token: string, csrf: string): Array<[string, string]> {
    const secure = this.opts.insecureCookies ? '' : '; Secure';
    return [
      ['Set-Cookie', `svc_auth=${token}; Path=/; Max-Age=${TOKEN_TTL_S}; HttpOnly; SameSite=Strict${secure}`],
      ['Set-Cookie', `svc_csrf=${csrf}; Path=/; Max-Age=${TOKEN_TTL_S}; SameSite=Strict${secure}`],
    ];
  }

  /** Set-Cookie headers that clear both session cookies. */
  clearCookies(): Array<[string, string]> {
    const secure = this.opts.insecureCookies ? '' : '; Secure';
    return [
      ['Set-Cookie', `svc_auth=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure}`],
      ['Set-Cookie', `svc_csrf=; Path=/; Max-Age=0; SameSite=Strict${secure}`],
    ];
  }
}

function invalid(viaCookie: boolean): null {
  // A stale cookie is simply no credential; an explicit bad token is an error wherever it is sent.
  if (viaCookie) return null;
  throw ApiError.unauthorized('The authorization token is invalid or expired.');
}
