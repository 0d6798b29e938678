/**
 * Authentication (spec 1-core-api.md, "Authentication", "Auth endpoints", "Rate limiting",
 * "Password change"): resolving the caller from a bearer token or the `svc_auth` cookie (+ CSRF
 * header on unsafe methods), issuing sessions (every session-issuing path goes through
 * {@link AuthService.issueSession}, which enforces `require_verified` and creates the table-store
 * row), password login, refresh, the session stores, the auth rate limits and the verification
 * and reset mail.
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
import type { Logger } from '../log/logger.js';
import type { SmtpConfig } from '../config/config.js';
import type { ConnectionOptions } from 'node:tls';
import { SessionStore, sessionMode } from './sessions.js';
import { AuthRateLimits, type Budget } from './rate-limit.js';
import { AccountEmails } from './account-emails.js';
import { BackgroundQueue } from '../mail/queue.js';
import { createMailTransport, type MailTransport } from '../mail/transports.js';

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

/** What AuthService needs from the serve configuration (ServeConfig satisfies it). */
export interface AuthServiceOptions {
  insecureCookies: boolean;
  /** honour X-Forwarded-For / X-Real-IP for rate-limit keys and session IPs */
  trustProxy?: boolean;
  /** global auth budget (SERVICE_RATE_LIMIT_MAX per SERVICE_RATE_LIMIT_WINDOW seconds); max 0 disables it */
  rateLimit?: { max: number; windowS: number };
  smtp?: SmtpConfig;
  sendmailCommand?: string;
  /** extra TLS options for SMTP (e.g. a private CA); not settable from the environment */
  smtpTls?: ConnectionOptions;
}

/** A resolved caller; `sid` is the session row of a table-store token. */
export interface AuthPrincipal extends Principal {
  sid?: string;
}

/** A freshly issued session: the token, its CSRF value and the Set-Cookie headers. */
export interface IssuedSession {
  token: string;
  csrf: string;
  sid?: string;
  cookies: Array<[string, string]>;
}

export class AuthService {
  readonly tokens: TokenService;
  readonly sessions: SessionStore;
  readonly limits: AuthRateLimits;
  readonly emails: AccountEmails;
  readonly mailQueue: BackgroundQueue;
  readonly mailTransport: MailTransport;
  private authSelect = new Map<string, string>();

  constructor(private store: Store, secret: Buffer, private opts: AuthServiceOptions, logger: Logger) {
    this.tokens = new TokenService(secret);
    this.sessions = new SessionStore(store, (err) => logger.warn(`session last_seen update failed: ${(err as Error)?.message}`, 'auth'));
    const budget: Budget = { max: opts.rateLimit?.max ?? 10, windowS: opts.rateLimit?.windowS ?? 60 };
    this.limits = new AuthRateLimits(budget, !!opts.trustProxy);
    this.mailQueue = new BackgroundQueue(logger, 'mail');
    this.mailTransport = createMailTransport(opts, logger, opts.smtpTls);
    this.emails = new AccountEmails(store, this.mailQueue, this.mailTransport);
  }

  /** Finishes queued mail (bounded wait) and closes the transport; call before closing the database. */
  async close(): Promise<void> {
    await this.mailQueue.close();
    this.mailTransport.close();
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
  /**
   * The caller's record for `resolve`: served from the store's auth-record cache (invalidated on
   * every change this process makes to the row; `_superusers` is never cached because the CLI
   * writes it from another process). Callers must not mutate it.
   */
  private callerRecord(c: Collection, id: string): Record<string, unknown> | null {
    if (c.system) return this.loadAuthRecord(c, id);
    const version = this.store.registry.version(c.id);
    const hit = this.store.authRecords.get(c.id, id, version);
    if (hit) return hit;
    const rec = this.loadAuthRecord(c, id);
    if (rec) this.store.authRecords.set(c.id, id, version, rec);
    return rec;
  }

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
   * expired or revoked (token key rotated, epoch bumped, session row gone) answers 401. Cookie
   * credentials without a matching X-CSRF-Token on an unsafe method make the request anonymous.
   */
  resolve(req: Req): AuthPrincipal | null | Promise<AuthPrincipal | null> {
    let token = req.headers.authorization;
    let viaCookie = false;
    if (token) {
      if (token.startsWith('Bearer ') || token.startsWith('bearer ')) token = token.slice(7).trim();
    } else if (req.headers.cookie) {
      token = parseCookies(req.headers.cookie).get('svc_auth') ?? '';
      viaCookie = token !== '';
    }
    if (!token) return null;
    const claims = this.tokens.known(token) ?? this.tokens.peek(token);
    if (!claims) return invalid(viaCookie);
    const c = this.store.registry.byId(claims.collectionId);
    if (!c || c.type !== 'auth') return invalid(viaCookie);
    const rec = this.callerRecord(c, claims.id);
    if (!rec) return invalid(viaCookie);
    const tokenKey = String(rec.tokenKey);
    const check = (cl: TokenClaims | null | undefined): AuthPrincipal | null => {
      if (!cl || cl.ep !== rec.token_epoch) return invalid(viaCookie);
      if (viaCookie && UNSAFE.has(req.method) && !(req.headers.csrf && safeEqual(req.headers.csrf, cl.csrf))) return null;
      // Table store: the session row must still exist. A token without one is refused there.
      if (cl.sid ? !this.sessions.check(c, String(rec.id), cl.sid) : sessionMode(c) === 'table') return invalid(viaCookie);
      const p: AuthPrincipal = { superuser: c.name === '_superusers', collection: c, record: rec };
      if (cl.sid) p.sid = cl.sid;
      return p;
    };
    const hit = this.tokens.cached(token, tokenKey);
    if (hit) return check(hit);
    return this.tokens.verify(token, tokenKey).then(check);
  }

  /**
   * Issues a session for an authenticated record: 403 `email_not_verified` when the collection
   * requires a verified email and the record is not; a new `_sessions` row in table mode (or the
   * given `sid` kept, on refresh and password change); a token and its cookies.
   */
  async issueSession(c: Collection, rec: Record<string, unknown>, req: Req, keepSid?: string): Promise<IssuedSession> {
    if (c.options.auth?.require_verified && rec.verified !== true) {
      throw new ApiError(403, 'email_not_verified', 'The account email must be verified before signing in.');
    }
    const id = String(rec.id);
    let sid = keepSid;
    if (sid) this.sessions.touch(sid);
    else if (sessionMode(c) === 'table') sid = await this.sessions.create(c, id, { userAgent: req.headers.userAgent, ip: this.limits.clientIp(req) });
    const { token, csrf } = await this.tokens.issue(c.id, id, String(rec.tokenKey), Number(rec.token_epoch), sid);
    return { token, csrf, sid, cookies: this.sessionCookies(token, csrf) };
  }

  /**
   * POST /auth-with-password: `{identity, password}` → the record and a fresh session. Rate
   * limited per identity (method `password`); a wrong password and an unknown identity give the
   * same 400 at the same cost.
   */
  async authWithPassword(c: Collection, body: unknown, req: Req): Promise<{ record: Record<string, unknown>; session: IssuedSession }> {
    // A method that is off answers 404 (spec, status table: "disabled method").
    if (c.type !== 'auth' || passwordMethodOff(c)) throw ApiError.notFound();
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    this.limits.enforce('auth-with-password', c, this.limits.clientKey(req, b.identity), 'password');
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
    return { record: rec, session: await this.issueSession(c, rec, req) };
  }

  /** A fresh token for the caller's own record (same session row in table mode); 401 for another collection. */
  async refresh(c: Collection, principal: AuthPrincipal | null, req: Req): Promise<{ record: Record<string, unknown>; session: IssuedSession }> {
    const p = requireOwnCollection(c, principal);
    return { record: p.record, session: await this.issueSession(c, p.record, req, p.sid) };
  }

  /**
   * Counts a password change (PATCH with `password` on an auth record) against scope `pwchange`;
   * superusers are exempt. Keyed by the target record (or the forwarded address behind a trusted proxy).
   */
  limitPasswordChange(c: Collection, recordId: string, principal: Principal | null, body: unknown, req: Req): void {
    if (c.type !== 'auth' || principal?.superuser) return;
    if (typeof body !== 'object' || body === null || !('password' in body)) return;
    this.limits.enforce('pwchange', c, this.limits.clientKey(req, `${c.id}/${recordId}`));
  }

  /**
   * After a committed password change: the record's own owner gets a fresh session (its table-store
   * row kept) and every other session row ends; the token key was rotated by the update, so every
   * older token is already void. Returns the owner's Set-Cookie headers, if any.
   */
  async afterPasswordChange(c: Collection, recordId: string, principal: AuthPrincipal | null, req: Req): Promise<Array<[string, string]> | undefined> {
    const owner = !!principal && principal.collection.id === c.id && principal.record.id === recordId;
    let keep: string | null = null;
    let cookies: Array<[string, string]> | undefined;
    const fresh = owner ? this.loadAuthRecord(c, recordId) : null;
    if (fresh) {
      try {
        const s = await this.issueSession(c, fresh, req, principal!.sid);
        keep = s.sid ?? null;
        cookies = s.cookies;
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'email_not_verified')) throw err;
      }
    }
    await this.sessions.endOthers(c, recordId, keep);
    return cookies;
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

/** The caller, who must be authenticated in collection `c` (session routes, refresh); else 401. */
export function requireOwnCollection(c: Collection, principal: AuthPrincipal | null): AuthPrincipal {
  if (!principal || principal.collection.id !== c.id) throw ApiError.unauthorized('The token does not belong to this collection.');
  return principal;
}

function invalid(viaCookie: boolean): null {
  // A stale cookie is simply no credential; an explicit bad token is an error wherever it is sent.
  if (viaCookie) return null;
  throw ApiError.unauthorized('The authorization token is invalid or expired.');
}

/** `options.auth.methods.password.enabled: false` turns password sign-in off for the collection. */
export function passwordMethodOff(c: Collection): boolean {
  const m = c.options.auth?.methods?.password;
  return typeof m === 'object' && m !== null && (m as { enabled?: unknown }).enabled === false;
}
