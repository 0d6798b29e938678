/**
 * Authentication (docs/api.md, "Authentication", "Auth" and "Rate limits";
 * password change): resolving the caller from a bearer token or the `svc_auth` cookie (+ CSRF
 * header on unsafe methods), issuing sessions (every session-issuing path goes through
 * {@link AuthService.issueSession}, which enforces `require_verified` and creates the table-store
 * row), password login, refresh, the session stores, the auth rate limits and the verification
 * and reset mail.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import { ApiError } from '../errors/api-error.js';
import { closeHashPool, sizeHashPool } from './passwords.js';
import type { Collection } from '../model/schema.js';
import type { Principal } from '../rules/access.js';
import type { AccountContext } from '../rules/compiler.js';
import type { AuthRecordRepository, AuthRecordSource, AuthRepositories } from '../context/auth-repositories.js';
import { safeEqual, TokenService, type TokenClaims } from './tokens.js';
import { noteResolvedCaller, type ClientInfo } from './client.js';
import type { AuthMethod, CallerAccess, MethodResult, SignInTag } from './methods/method.js';
import { PasswordMethod } from './methods/password.js';
import { MagicLinkMethod } from './methods/magic-link.js';
import { OtpMethod } from './methods/otp.js';
import { BUILT_IN_METHOD_SLUGS, MethodRegistry } from './method-registry.js';
import { OAuth2Method, type ExternalSignup, type OAuth2StateOptions } from './methods/oauth2.js';
import { WebAuthnMethod } from './methods/webauthn.js';
import { TwoFactor, twoFactorPolicy, type PendingLogin } from './two-factor.js';
import type { Logger } from '../log/logger.js';
import type { SmtpConfig } from '../config/config.js';
import type { ConnectionOptions } from 'node:tls';
import { SessionStore, sessionMode } from './sessions.js';
import { AuthRateLimits, type Budget } from './rate-limit.js';
import { AccountEmails } from './account-emails.js';
import { AuthTokens } from './auth-tokens.js';
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

/**
 * The token a request carries: the Authorization header (`Bearer <jwt>` or the bare token) or,
 * without one, the `svc_auth` cookie; null when neither.
 */
export function credential(req: ClientInfo): { token: string; viaCookie: boolean } | null {
  let token = req.headers.authorization;
  let viaCookie = false;
  if (token) {
    if (token.startsWith('Bearer ') || token.startsWith('bearer ')) token = token.slice(7).trim();
  } else if (req.headers.cookie) {
    token = parseCookies(req.headers.cookie).get('svc_auth') ?? '';
    viaCookie = token !== '';
  }
  return token ? { token, viaCookie } : null;
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
  /** server-side OAuth2 state (SERVICE_OAUTH_STATE_SERVER, SERVICE_OAUTH_STATE_TTL); default on, 600 s */
  oauthState?: OAuth2StateOptions;
  /** password-hashing threads (SERVICE_HASH_THREADS); absent: DEFAULT_HASH_THREADS */
  hashThreads?: number;
  /**
   * How recent (seconds) a primary sign-in must be for actions that need one, such as registering
   * a passkey (SERVICE_REAUTH_MAX_AGE; default {@link REAUTH_MAX_AGE_S}).
   */
  reauthMaxAgeS?: number;
}

/** Default of {@link AuthServiceOptions.reauthMaxAgeS}: five minutes (docs/api.md, "Passkeys (WebAuthn)"). */
export const REAUTH_MAX_AGE_S = 300;

/**
 * A resolved caller; `sid` is the session row of a table-store token; `mfa` when it passed a
 * second factor; `authTime` the epoch seconds of the primary sign-in its session comes from
 * (unknown on tokens older than the claim).
 */
export interface AuthPrincipal extends Principal {
  sid?: string;
  mfa?: boolean;
  authTime?: number;
  /** the session is a superuser's impersonation (AuthService.impersonate): never refreshed */
  impersonated?: boolean;
}

export type { SignInTag } from './methods/method.js';

/**
 * Application hooks around session issue (set by an embedding app, src/app/runtime.ts):
 * `beforeAuthSuccess` may throw to refuse (password sign-in and refresh), `authSuccess` runs after
 * every issued sign-in session and must not throw.
 */
export interface AuthServiceHooks {
  beforeAuthSuccess?: (tag: SignInTag, c: Collection, record: Record<string, unknown>, client?: ClientInfo) => Promise<void>;
  authSuccess?: (tag: SignInTag, c: Collection, record: Record<string, unknown>, client?: ClientInfo) => Promise<void>;
}

/** An app's tenancy resolver (src/app/runtime.ts): the caller's active account (named by X-Account-Id) with its role, and every account it belongs to; null when it does not belong. */
export type TenancyResolver = (p: AuthPrincipal, accountId: string) => Promise<AccountContext | null>;

/**
 * What the auth service is given besides its repositories and its configuration, at construction
 * (src/boot/services.ts builds it): how an OAuth2 first sign-in creates its record, and an
 * embedding app's parts (src/app/runtime.ts `AppRuntime.authExtensions`; none for the
 * standalone server, whose runtime is empty).
 */
export interface AuthCollaborators {
  /** an OAuth2 first sign-in's record creation (the record writer, so record events fire); null: 404 */
  signup: ExternalSignup | null;
  /** the app's hooks around session issue ({} without an app) */
  hooks: AuthServiceHooks;
  /** the app's tenancy resolver; null: callers carry no account */
  tenancy: TenancyResolver | null;
  /** the app's own sign-in methods, registered after the built-in ones; given the service's rate limits */
  customMethods(limits: AuthRateLimits): AuthMethod[];
}

const BUILT_IN_TAGS = new Set(BUILT_IN_METHOD_SLUGS);
/** A method slug as an auth-event tag: built-ins by name, anything else `custom`. */
export const tagOf = (slug: string): SignInTag => (BUILT_IN_TAGS.has(slug) ? (slug as SignInTag) : 'custom');

/** A sign-in's outcome: a session, or (second factor needed) the pending answer and no session. */
export type SignInOutcome =
  | { record: Record<string, unknown>; meta?: Record<string, unknown>; session: IssuedSession; pending?: undefined }
  | { record: Record<string, unknown>; meta?: Record<string, unknown>; session?: undefined; pending: PendingLogin };

/**
 * How a session is issued (AuthService.issueSession): `keepSid` the table-store row to keep
 * (refresh, password change) instead of a new one; `mfa` it passed a second factor; `authTime`
 * epoch seconds of the primary sign-in it comes from (a sign-in: now; a refresh: the old
 * session's, never now; unknown: left out, which no recent-sign-in check accepts).
 */
export interface SessionGrant {
  keepSid?: string;
  mfa?: boolean;
  authTime?: number;
}

/** A freshly issued session: the token and its CSRF value (the route layer sets them as cookies), and its table-store row. */
export interface IssuedSession {
  token: string;
  csrf: string;
  sid?: string;
}

/**
 * The whole auth record `id` of `c` (with `passwordHash`, `tokenKey` and `token_epoch`) or null;
 * one point read, no cache. Also what an app's code reads before the auth service exists.
 */
export async function loadAuthRecord(source: AuthRecordSource, c: Collection, id: string): Promise<Record<string, unknown> | null> {
  // the codec of the statement's columns, even if the schema changes during the read
  const codec = source.codec(c);
  const row = await source.auth.recordRow(c, source.registry.version(c.id), codec.columns, id);
  if (!row) return null;
  const rec = codec.fromRow(row);
  rec.passwordHash = row[codec.width];
  rec.tokenKey = row[codec.width + 1];
  rec.token_epoch = Number(row[codec.width + 2]);
  return rec;
}

export class AuthService {
  readonly tokens: TokenService;
  readonly sessions: SessionStore;
  readonly limits: AuthRateLimits;
  readonly emails: AccountEmails;
  readonly mailQueue: BackgroundQueue;
  readonly mailTransport: MailTransport;
  /** Sign-in methods by slug (AuthMethod); every one signs in through `signIn`. */
  readonly methods = new MethodRegistry<AuthMethod>();
  readonly magicLink: MagicLinkMethod;
  readonly otp: OtpMethod;
  readonly oauth2: OAuth2Method;
  readonly webauthn: WebAuthnMethod;
  readonly twoFactor: TwoFactor;
  /** an embedding app's hooks (none for the standalone server) */
  private readonly hooks: AuthServiceHooks;
  /** an app's tenancy resolver (TenancyResolver); null without one */
  readonly tenancy: TenancyResolver | null;

  /** `transport`: the mail backend (default: the one SERVICE_SMTP_* / SERVICE_SENDMAIL_COMMAND configure, else the log) */
  /** signs the active-account cookie (`svc_account`) */
  private accountKey: Buffer;

  /** What it reads of callers' records (AuthRepositories.records). */
  private repo: AuthRecordRepository;

  /** `repos`: its own and those of the classes it builds (src/context/auth-repositories.ts, authRepositories). */
  constructor(repos: AuthRepositories, secret: Buffer, private opts: AuthServiceOptions, logger: Logger, transport: MailTransport | undefined, parts: AuthCollaborators) {
    if (opts.hashThreads) sizeHashPool(opts.hashThreads);
    this.repo = repos.records;
    this.hooks = parts.hooks;
    this.tenancy = parts.tenancy;
    this.accountKey = createHmac('sha256', secret).update('svc account cookie v1').digest();
    this.tokens = new TokenService(secret);
    this.sessions = new SessionStore(repos.sessions, (err) => logger.warn(`session last_seen update failed: ${(err as Error)?.message}`, 'auth'));
    const budget: Budget = { max: opts.rateLimit?.max ?? 10, windowS: opts.rateLimit?.windowS ?? 60 };
    // several instances (PostgreSQL) count in one table; one process in its memory
    this.limits = new AuthRateLimits(budget, !!opts.trustProxy, repos.sharedLimiter);
    this.mailQueue = new BackgroundQueue(logger, 'mail');
    this.mailTransport = transport ?? createMailTransport(opts, logger, opts.smtpTls);
    this.emails = new AccountEmails(repos.emails, this.mailQueue, this.mailTransport, new AuthTokens(repos.tokens));
    const load = (c: Collection, id: string) => this.loadAuthRecord(c, id);
    const password = new PasswordMethod(repos.password, this.limits, load);
    this.magicLink = new MagicLinkMethod(repos.magicLink, this.limits, this.mailQueue, this.mailTransport, load, this.emails.tokens);
    const otp = this.otp = new OtpMethod(repos.otp, this.limits, this.mailQueue, this.mailTransport, load, secret);
    // what the methods (and their own routes) ask about the caller
    const access: CallerAccess = {
      resolve: (client) => this.resolve(client),
      ownCaller: async (c, client) => requireOwnCollection(c, await this.resolve(client)),
      requireRecent: (p) => this.requireRecentSignIn(p),
    };
    this.oauth2 = new OAuth2Method(repos.oauth2, this.limits, this.emails.tokens, opts.oauthState ?? { server: true, ttlS: 600 }, load, access, parts.signup);
    this.webauthn = new WebAuthnMethod(repos.webauthn, this.limits, this.emails.tokens, secret, load, access, (c, id, except) => this.twoFactor.factorsOf(c, id, except));
    for (const m of [password, this.magicLink, otp, this.oauth2, this.webauthn, ...parts.customMethods(this.limits)]) this.methods.add(m);
    this.twoFactor = new TwoFactor(repos.twoFactor, secret, this.webauthn, load);
  }

  /** Finishes queued mail (bounded wait) and closes the transport; call before closing the database. */
  async close(): Promise<void> {
    await this.mailQueue.close();
    this.mailTransport.close();
    await closeHashPool();
  }

  /**
   * The caller's record for `resolve`: served from the store's auth-record cache (invalidated on
   * every change this process makes to the row; `_superusers` is never cached because the CLI
   * writes it from another process). Callers must not mutate it.
   */
  private callerRecord(c: Collection, id: string): Record<string, unknown> | null | Promise<Record<string, unknown> | null> {
    if (c.system) return this.loadAuthRecord(c, id);
    const version = this.repo.registry.version(c.id);
    const hit = this.repo.authRecords.get(c.id, id, version);
    if (hit) return hit;
    const commits = this.repo.writer.commits;
    return this.loadAuthRecord(c, id).then((rec) => {
      // kept only when nothing committed during the read (a revoking write could have been missed)
      if (rec && this.repo.writer.commits === commits && this.repo.registry.version(c.id) === version) this.repo.authRecords.set(c.id, id, version, rec);
      return rec;
    });
  }

  /** The whole auth record (with `passwordHash`, `tokenKey` and `token_epoch`) or null; one point read (loadAuthRecord). */
  loadAuthRecord(c: Collection, id: string): Promise<Record<string, unknown> | null> {
    return loadAuthRecord(this.repo, c, id);
  }

  /**
   * The caller of a request when it is a superuser (the superuser-only routes).
   * @throws ApiError 401 when anonymous (or the credential is bad), 403 for any other caller
   */
  async requireSuperuser(req: ClientInfo): Promise<AuthPrincipal> {
    const p = await this.resolve(req);
    if (!p) throw ApiError.unauthorized();
    if (!p.superuser) throw ApiError.forbidden('Only superusers can perform this request.');
    return p;
  }

  /**
   * The caller of a request: null when anonymous. A bearer (or raw) token that is invalid,
   * expired or revoked (token key rotated, epoch bumped, session row gone) answers 401. Cookie
   * credentials without a matching X-CSRF-Token on an unsafe method make the request anonymous.
   */
  resolve(req: ClientInfo): AuthPrincipal | null | Promise<AuthPrincipal | null> {
    const cred = credential(req);
    if (!cred) return null;
    const { token, viaCookie } = cred;
    const claims = this.tokens.known(token) ?? this.tokens.peek(token);
    if (!claims) return invalid(viaCookie);
    const c = this.repo.registry.byId(claims.collectionId);
    if (!c || c.type !== 'auth') return invalid(viaCookie);
    const rec = this.callerRecord(c, claims.id);
    // a cached caller record answers at once; a read answers later
    return rec instanceof Promise ? rec.then((r) => this.resolveAs(req, token, viaCookie, c, r)) : this.resolveAs(req, token, viaCookie, c, rec);
  }

  /** resolve, once the token's record is read: null (anonymous) or invalid when it is gone. */
  private resolveAs(req: ClientInfo, token: string, viaCookie: boolean, c: Collection, rec: Record<string, unknown> | null): AuthPrincipal | null | Promise<AuthPrincipal | null> {
    if (!rec) return invalid(viaCookie);
    const tokenKey = String(rec.tokenKey);
    const principalOf = (cl: TokenClaims): AuthPrincipal | null => {
      // a collection that requires two factors refuses primary-only sessions (docs/auth.md: the
      // policy is re-checked on authenticated requests and refresh)
      if (!cl.mf && twoFactorPolicy(c) === 'required') return invalid(viaCookie);
      const p: AuthPrincipal = { superuser: c.name === '_superusers', collection: c, record: rec };
      if (cl.sid) p.sid = cl.sid;
      if (cl.mf) p.mfa = true;
      if (cl.authTime !== undefined) p.authTime = cl.authTime;
      if (cl.impersonated) p.impersonated = true;
      noteResolvedCaller(req, c.name);
      return p;
    };
    const check = (cl: TokenClaims | null | undefined): AuthPrincipal | null | Promise<AuthPrincipal | null> => {
      if (!cl || cl.ep !== rec.token_epoch) return invalid(viaCookie);
      if (viaCookie && UNSAFE.has(req.method) && !(req.headers.csrf && safeEqual(req.headers.csrf, cl.csrf))) return null;
      // Table store: the session row must still exist. A token without one is refused there.
      if (!cl.sid) return sessionMode(c) === 'table' ? invalid(viaCookie) : principalOf(cl);
      return this.sessions.check(c, String(rec.id), cl.sid).then((ok) => (ok ? principalOf(cl) : invalid(viaCookie)));
    };
    const hit = this.tokens.cached(token, tokenKey);
    const principal = hit ? check(hit) : this.tokens.verify(token, tokenKey).then(check);
    if (!this.tenancy) return principal;
    return Promise.resolve(principal).then((p) => this.withAccount(p, req.headers.account || this.cookieAccount(p, req.headers.cookie)));
  }

  /** The principal with its active account resolved by the app's tenancy resolver (superusers keep none). */
  private async withAccount(p: AuthPrincipal | null, accountId: string): Promise<AuthPrincipal | null> {
    if (!p || p.superuser || !this.tenancy) return p;
    const account = await this.tenancy(p, accountId);
    if (account) p.account = account;
    return p;
  }

  /**
   * The `svc_account` cookie's value naming `accountId` as the active account of `p`: the id and
   * an HMAC over the principal and the id, so it cannot be forged, altered or carried to another
   * record. Membership is still checked by the tenancy resolver on every request.
   */
  accountCookie(p: AuthPrincipal, accountId: string): string {
    return `${Buffer.from(accountId).toString('base64url')}.${this.accountSignature(p, accountId)}`;
  }

  private accountSignature(p: AuthPrincipal, accountId: string): string {
    return createHmac('sha256', this.accountKey).update(`${p.collection.id}\u0000${String(p.record.id)}\u0000${accountId}`).digest('base64url');
  }

  /** The account a valid `svc_account` cookie names for `p`, else ''. */
  private cookieAccount(p: AuthPrincipal | null, cookie: string): string {
    if (!p || !cookie.includes('svc_account=')) return '';
    const value = parseCookies(cookie).get('svc_account') ?? '';
    const dot = value.indexOf('.');
    if (dot <= 0) return '';
    const accountId = Buffer.from(value.slice(0, dot), 'base64url').toString();
    return safeEqual(value.slice(dot + 1), this.accountSignature(p, accountId)) ? accountId : '';
  }

  /**
   * Issues a session for an authenticated record: 403 `email_not_verified` when the collection
   * requires a verified email and the record is not; 401 when the two-factor policy needs a
   * second factor the caller did not pass (`mfa`; custom code must go through the two-factor
   * ceremony); a new `_sessions` row in table mode (or `grant.keepSid` kept, on refresh and
   * password change); a token (carrying `grant.authTime`) and its CSRF value.
   */
  async issueSession(c: Collection, rec: Record<string, unknown>, req: ClientInfo, grant: SessionGrant = {}): Promise<IssuedSession> {
    const { keepSid, mfa = false, authTime } = grant;
    checkVerified(c, rec);
    const id = String(rec.id);
    if (!mfa && (await this.twoFactor.needsFactor(c, id))) throw new ApiError(401, 'unauthorized', 'A second factor is required: complete the two-factor ceremony.');
    let sid = keepSid;
    if (sid) this.sessions.touch(sid);
    else if (sessionMode(c) === 'table') sid = await this.sessions.create(c, id, { userAgent: req.headers.userAgent, ip: this.limits.clientIp(req) });
    const { token, csrf } = await this.tokens.issue(c.id, id, String(rec.tokenKey), Number(rec.token_epoch), sid, mfa, authTime);
    return { token, csrf, sid };
  }

  /**
   * A superuser's impersonation of record `rec` of `c` (PocketBase's `POST
   * …/impersonate/:id`, docs/pocketbase.md): a token for the record, valid `ttlS` seconds, that
   * auth-refresh refuses. It passes no sign-in (no `auth_time`: never recent, so no new
   * passkey or OAuth2 link from it), counts as both factors (the superuser's authority stands
   * for them), fires no sign-in hook and sets no cookie; in table mode it gets a session row
   * like any session, so the record's owner sees it and can end it.
   */
  async impersonate(c: Collection, rec: Record<string, unknown>, req: ClientInfo, ttlS: number): Promise<string> {
    const id = String(rec.id);
    const sid = sessionMode(c) === 'table' ? await this.sessions.create(c, id, { userAgent: req.headers.userAgent, ip: this.limits.clientIp(req) }) : undefined;
    const { token } = await this.tokens.issue(c.id, id, String(rec.tokenKey), Number(rec.token_epoch), sid, true, undefined, { ttlS, impersonated: true });
    return token;
  }

  /**
   * Signs in with `method` (the one path every sign-in method takes): 404 when the method is off
   * for the collection (docs/api.md, "Errors": a disabled method), then the method's proof, then
   * `require_verified`, then the two-factor policy (a pending answer instead of a session when a
   * second factor is needed; a passkey sign-in with user verification counts as both factors,
   * one with presence only as one), then a fresh session.
   * `prove`: the method's proof when it comes through another of its entry points than
   * `complete` (PocketBase's auth-with-oauth2, docs/pocketbase.md); everything after it is the same.
   * @throws ApiError as the method and issueSession do
   */
  async signIn(slug: string, c: Collection, body: unknown, client: ClientInfo, prove?: () => Promise<MethodResult>): Promise<SignInOutcome> {
    const method = this.methods.get(slug);
    if (c.type !== 'auth' || !method || !method.enabled(c)) throw ApiError.notFound();
    const { record, meta, passkey } = await (prove ? prove() : method.complete(c, body, client));
    checkVerified(c, record);
    const tag = tagOf(slug);
    if (tag === 'password') await this.hooks.beforeAuthSuccess?.(tag, c, record, client);
    // A passkey with user verification is both factors; with presence only it is one, and the
    // passkey just used cannot be the second (docs/api.md, "Two-factor").
    const usedPasskey = slug === 'webauthn' ? passkey : undefined;
    let mfa = usedPasskey?.userVerified === true;
    if (!mfa) {
      const pending = await this.twoFactor.gate(c, String(record.id), tag, usedPasskey?.id);
      if (pending) return { record, meta, pending };
      // no other factor is asked of this account (policy optional): the passkey is its factor
      mfa = usedPasskey !== undefined;
    }
    const session = await this.issueSession(c, record, client, { mfa, authTime: nowSeconds() });
    await this.hooks.authSuccess?.(tag, c, record, client);
    return { record, meta, session };
  }

  /**
   * A two-factor ceremony action (POST …/auth/two-factor/<action>); a completed login comes back
   * with its two-factor session. @throws ApiError as TwoFactor.action does
   */
  async twoFactorAction(action: string, c: Collection, body: unknown, client: ClientInfo): Promise<{ outcome: Awaited<ReturnType<TwoFactor['action']>>; session?: IssuedSession }> {
    if (c.type !== 'auth' || twoFactorPolicy(c) === 'disabled') throw ApiError.notFound();
    let caller: AuthPrincipal | null = null;
    if (action === 'enroll') {
      // a first factor (a passkey among them, which also signs in) needs a recent sign-in, like a passkey registration
      caller = requireOwnCollection(c, await this.resolve(client));
      this.requireRecentSignIn(caller);
    }
    const outcome = await this.twoFactor.action(action, c, body, caller?.record ?? null, caller?.authTime);
    if (outcome.kind !== 'session') return { outcome };
    const fresh = (await this.loadAuthRecord(c, String(outcome.record.id))) ?? outcome.record;
    outcome.record = fresh;
    const session = await this.issueSession(c, fresh, client, { mfa: true, authTime: outcome.authTime });
    await this.hooks.authSuccess?.(outcome.method, c, fresh, client);
    return { outcome, session };
  }

  /**
   * The first step of a method (POST …/auth/:method/initiate): 404 when the collection or the
   * method is missing or off; 400 for a method without a first step (password). Returns what the
   * route answers (undefined: 204).
   */
  async initiate(slug: string, c: Collection, body: unknown, client: ClientInfo): Promise<unknown> {
    const method = this.methods.get(slug);
    if (c.type !== 'auth' || !method || !method.enabled(c)) throw ApiError.notFound();
    if (!method.initiate) throw ApiError.badRequest(`The ${slug} method has no initiate step: POST …/auth/${slug}/complete.`);
    return method.initiate(c, body, client);
  }

  /**
   * 403 `reauthentication_required` unless the caller's session comes from a primary sign-in
   * (password, magic link, one-time code, OAuth2, passkey, or a two-factor completion of one)
   * within the last `reauthMaxAgeS` seconds (SERVICE_REAUTH_MAX_AGE, default 300); refreshing a
   * session keeps its sign-in time. Guards actions that would outlive a stolen session, such as
   * registering a passkey (docs/api.md, "Passkeys (WebAuthn)").
   */
  requireRecentSignIn(p: Pick<AuthPrincipal, 'authTime'>): void {
    const maxAge = this.opts.reauthMaxAgeS ?? REAUTH_MAX_AGE_S;
    if (p.authTime !== undefined && nowSeconds() - p.authTime <= maxAge) return;
    throw new ApiError(403, 'reauthentication_required', `This action needs a recent sign-in (within ${maxAge} seconds); refreshing a session does not count. Sign in again, then retry.`);
  }

  /** A fresh token for the caller's own record (same session row in table mode); 401 for another collection. */
  async refresh(c: Collection, principal: AuthPrincipal | null, req: ClientInfo, around?: { before?: (rec: Record<string, unknown>) => Promise<void>; after?: (rec: Record<string, unknown>) => Promise<void> }): Promise<{ record: Record<string, unknown>; session: IssuedSession }> {
    const p = requireOwnCollection(c, principal);
    if (p.impersonated) throw ApiError.forbidden('An impersonation token cannot be refreshed.');
    await this.hooks.beforeAuthSuccess?.('refresh', c, p.record, req);
    await around?.before?.(p.record);
    // the sign-in time is the old session's: a refresh never makes a session recent
    const session = await this.issueSession(c, p.record, req, { keepSid: p.sid, mfa: !!p.mfa, authTime: p.authTime });
    await this.hooks.authSuccess?.('refresh', c, p.record, req);
    await around?.after?.(p.record);
    return { record: p.record, session };
  }

  /**
   * Counts a password change (PATCH with `password` on an auth record) against scope `pwchange`;
   * superusers are exempt. Keyed by the target record (or the forwarded address behind a trusted proxy).
   */
  async limitPasswordChange(c: Collection, recordId: string, principal: Principal | null, body: unknown, req: ClientInfo): Promise<void> {
    if (c.type !== 'auth' || principal?.superuser) return;
    if (typeof body !== 'object' || body === null || !('password' in body)) return;
    await this.limits.enforce('pwchange', c, this.limits.clientKeys(req, `${c.id}/${recordId}`));
  }

  /**
   * After a committed password change: the record's own owner gets a fresh session (its table-store
   * row kept) and every other session row ends; the token key was rotated by the update, so every
   * older token is already void. Returns the owner's new session (to set as cookies), if any.
   */
  async afterPasswordChange(c: Collection, recordId: string, principal: AuthPrincipal | null, req: ClientInfo): Promise<IssuedSession | undefined> {
    const owner = !!principal && principal.collection.id === c.id && principal.record.id === recordId;
    let keep: string | null = null;
    let session: IssuedSession | undefined;
    const fresh = owner ? await this.loadAuthRecord(c, recordId) : null;
    if (fresh) {
      try {
        session = await this.issueSession(c, fresh, req, { keepSid: principal!.sid, mfa: !!principal!.mfa, authTime: principal!.authTime });
        keep = session.sid ?? null;
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'email_not_verified')) throw err;
      }
    }
    await this.sessions.endOthers(c, recordId, keep);
    return session;
  }
}

/** The caller, who must be authenticated in collection `c` (session routes, refresh); else 401. */
export function requireOwnCollection(c: Collection, principal: AuthPrincipal | null): AuthPrincipal {
  if (!principal || principal.collection.id !== c.id) throw ApiError.unauthorized('The token does not belong to this collection.');
  return principal;
}

/** 403 `email_not_verified` when the collection requires a verified email and the record is not. */
function checkVerified(c: Collection, rec: Record<string, unknown>): void {
  if (c.options.auth?.require_verified && rec.verified !== true) {
    throw new ApiError(403, 'email_not_verified', 'The account email must be verified before signing in.');
  }
}

/** Now in epoch seconds (the `auth_time` claim's unit). */
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function invalid(viaCookie: boolean): null {
  // A stale cookie is simply no credential; an explicit bad token is an error wherever it is sent.
  if (viaCookie) return null;
  throw ApiError.unauthorized('The authorization token is invalid or expired.');
}
