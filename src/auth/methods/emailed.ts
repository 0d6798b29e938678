/**
 * The two sign-in methods that mail a secret (spec 1-core-api.md, "Pluggable auth methods",
 * "Magic-link consume"; 0-conventions.md "Sign-in method options"): magic link (`magic_link`: a
 * single-use link token) and one-time code (`otp`: six digits). Both are off unless
 * `options.auth.methods.<slug>.enabled` is true.
 *
 * initiate `{identity}` always answers 204 at once and does the same work for every identity:
 * validate, count against the rate limit, queue. The background task looks the identity up and,
 * only when it names a record with an address, issues the secret and mails it (written to the log
 * when no mail transport is configured). Nothing in the answer or its timing tells whether the
 * identity exists.
 *
 * complete checks the proof, consumes the secret in a write job of its own (so of two concurrent
 * completions exactly one wins) and returns the record; AuthService.signIn issues the session.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../errors/api-error.js';
import type { Collection } from '../../collections/types.js';
import type { Store } from '../../store/store.js';
import { bindValue } from '../../store/bind.js';
import type { WriteStep } from '../../store/write-job.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import type { AuthMethod, MethodResult } from './method.js';
import type { AuthTokens } from '../auth-tokens.js';
import type { BackgroundQueue } from '../../mail/queue.js';
import type { MailMessage, MailTransport } from '../../mail/transports.js';
import { newId } from '../../records/ids.js';
import { isValidEmail, nowDate } from '../../collections/fields/index.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `options.auth.methods.<slug>` of a collection ({} when absent). */
export function methodOptions(c: Collection, slug: string): Record<string, unknown> {
  const m = (c.options.auth?.methods as Record<string, unknown> | undefined)?.[slug];
  return isObject(m) ? m : {};
}

/** Whether the pluggable method `slug` is on for `c`: only with `options.auth.methods.<slug>.enabled: true`. */
export function methodEnabled(c: Collection, slug: string): boolean {
  return methodOptions(c, slug).enabled === true;
}

const required = (field: string) => ApiError.validation({ [field]: { code: 'validation_required', message: 'Missing required value.' } });

/** The `identity` of a body: a non-empty string of at most 320 characters, else 400. */
function identityOf(body: unknown): string {
  const v = isObject(body) ? body.identity : undefined;
  if (typeof v !== 'string' || v.trim() === '') throw required('identity');
  if (v.length > 320) throw ApiError.validation({ identity: { code: 'validation_max', message: 'Must be at most 320 characters.' } });
  return v.trim();
}

/** What both methods share: the identity lookup and the mail. */
abstract class EmailedMethod implements AuthMethod {
  abstract readonly slug: string;
  abstract readonly stores: readonly string[];
  readonly events = ['auth-success'] as const;

  constructor(
    protected store: Store,
    protected limits: AuthRateLimits,
    protected queue: BackgroundQueue,
    protected transport: MailTransport,
    protected loadRecord: (c: Collection, id: string) => Record<string, unknown> | null,
  ) {}

  enabled(c: Collection): boolean {
    return methodEnabled(c, this.slug);
  }

  async initiate(c: Collection, body: unknown, client: ClientInfo): Promise<undefined> {
    const submitted = isObject(body) ? body.identity : undefined;
    this.limits.enforce(`auth-${this.slug}-initiate`, c, this.limits.clientKeys(client, submitted), this.slug);
    const identity = identityOf(body);
    const collectionId = c.id;
    this.queue.push(async () => {
      const now = this.store.registry.byId(collectionId);
      if (!now || now.type !== 'auth' || !this.enabled(now)) return;
      const found = this.findRecord(now, identity);
      if (!found) return;
      const to = String(found.email ?? '');
      if (!isValidEmail(to) || /[\r\n]/.test(to)) return; // no address to send to; never inject headers
      await this.transport.send(await this.issue(now, String(found.id), to));
    });
    return undefined;
  }

  abstract complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult>;

  /** Issues the secret for a record and returns the message carrying it. */
  protected abstract issue(c: Collection, recordId: string, to: string): Promise<MailMessage>;

  /** The whole auth record an identity names (any identity field), or null. */
  protected findRecord(c: Collection, identity: string): Record<string, unknown> | null {
    const id = this.store.sql.auth.idByIdentity(c, c.options.auth?.identityFields ?? ['email'], identity);
    return id === undefined ? null : this.loadRecord(c, id);
  }

  protected async run(steps: WriteStep[]): Promise<void> {
    for (const s of steps) s.params = s.params.map(bindValue);
    await this.store.writer.write(steps);
  }
}

const BAD_TOKEN = { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { token: { code: 'validation_value', message: 'Invalid or expired token.' } } };

/**
 * Magic link: initiate mails a link to `GET …/auth/magic-link/consume?token=…`; complete takes
 * `{token}`. Tokens are the single-use hashed tokens of AuthTokens (kind `magic_link`), living
 * `ttl_s` seconds (default 900).
 */
export class MagicLinkMethod extends EmailedMethod {
  readonly slug = 'magic_link';
  readonly stores = ['_authTokens'] as const;

  constructor(store: Store, limits: AuthRateLimits, queue: BackgroundQueue, transport: MailTransport, loadRecord: (c: Collection, id: string) => Record<string, unknown> | null, private tokens: AuthTokens) {
    super(store, limits, queue, transport, loadRecord);
  }

  protected async issue(c: Collection, recordId: string, to: string): Promise<MailMessage> {
    const ttl = methodOptions(c, this.slug).ttl_s;
    const token = await this.tokens.issue('magic_link', c, recordId, to, typeof ttl === 'number' ? ttl : undefined);
    const link = `/api/collections/${encodeURIComponent(c.name)}/auth/magic-link/consume?token=${encodeURIComponent(token)}`;
    return {
      to,
      subject: 'Your sign-in link',
      text: ['Hello,', '', 'Open this link to sign in:', '', link, '', `Or POST /api/collections/${encodeURIComponent(c.name)}/auth/magic_link/complete with {"token": "${token}"}`, '', 'The link works once. If you did not ask for it, ignore this message.'].join('\n'),
    };
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const token = isObject(body) ? body.token : undefined;
    this.limits.enforce(`auth-${this.slug}-complete`, c, this.limits.clientKeys(client, typeof token === 'string' ? token.split('.')[0] : ''), this.slug);
    if (typeof token !== 'string' || token === '') throw required('token');
    const found = this.tokens.find('magic_link', c, token);
    if (!found) throw ApiError.validation(BAD_TOKEN.data);
    await this.run([this.tokens.consumeStep(found, BAD_TOKEN)]);
    const rec = this.loadRecord(c, found.recordId);
    if (!rec) throw ApiError.validation(BAD_TOKEN.data);
    return { record: rec };
  }
}

/** Tries per code before it is void, and the code's default lifetime (seconds). */
export const OTP_MAX_TRIES = 5;
export const OTP_TTL_S = 10 * 60;
const BAD_CODE = { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { code: { code: 'validation_value', message: 'Invalid or expired code.' } } };

/**
 * One-time code: initiate mails six digits; complete takes `{identity, code}`. A code is stored
 * as HMAC-SHA256(server secret, row id + code), so a copy of the database does not give the codes
 * away by trying a million hashes; it lives `ttl_s` seconds (default 600), only the newest code of
 * a record counts, it is compared in constant time, and after five wrong tries it is void. The
 * complete endpoint is also rate limited per identity.
 */
export class OtpMethod extends EmailedMethod {
  readonly slug = 'otp';
  readonly stores = ['_authTokens'] as const;
  /** wrong tries per code row (bounded: rows expire; the map is cleared when it grows past 10,000) */
  private tries = new Map<string, number>();

  constructor(store: Store, limits: AuthRateLimits, queue: BackgroundQueue, transport: MailTransport, loadRecord: (c: Collection, id: string) => Record<string, unknown> | null, private secret: Buffer) {
    super(store, limits, queue, transport, loadRecord);
  }

  private hash(rowId: string, code: string): Buffer {
    return createHmac('sha256', this.secret).update(`${rowId}.${code}`).digest();
  }

  protected async issue(c: Collection, recordId: string, to: string): Promise<MailMessage> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const id = newId();
    const ttl = methodOptions(c, this.slug).ttl_s;
    const now = Date.now();
    await this.run([
      ...this.store.sql.authTokens.dropAllSteps('otp', c.id, recordId), // only the newest code counts
      ...this.store.sql.authTokens.issueSteps({
        id, hash: this.hash(id, code).toString('hex'), kind: 'otp', collectionId: c.id, recordId, email: to, created: nowDate(), expires: now + (typeof ttl === 'number' ? ttl : OTP_TTL_S) * 1000,
      }, now),
    ]);
    return { to, subject: `Your sign-in code: ${code}`, text: ['Hello,', '', `Your sign-in code is ${code}.`, '', 'It works once. If you did not ask for it, ignore this message.'].join('\n') };
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const b = isObject(body) ? body : {};
    this.limits.enforce(`auth-${this.slug}-complete`, c, this.limits.clientKeys(client, b.identity), this.slug);
    const identity = identityOf(body);
    if (typeof b.code !== 'string' && typeof b.code !== 'number') throw required('code');
    const code = String(b.code);
    if (!/^\d{6}$/.test(code)) throw ApiError.validation(BAD_CODE.data);
    const rec = this.findRecord(c, identity);
    const row = rec ? this.store.sql.authTokens.latest('otp', c.id, String(rec.id)) : undefined;
    // compare even without a row, so a miss costs what a hit costs
    const stored = Buffer.from(row ? row.hash : '0'.repeat(64), 'hex');
    const equal = timingSafeEqual(this.hash(row?.id ?? '-', code), stored.length === 32 ? stored : Buffer.alloc(32));
    if (!rec || !row || row.expires <= Date.now()) throw ApiError.validation(BAD_CODE.data);
    if (!equal) {
      const n = (this.tries.get(row.id) ?? 0) + 1;
      if (this.tries.size >= 10_000) this.tries.clear();
      this.tries.set(row.id, n);
      if (n >= OTP_MAX_TRIES) {
        this.tries.delete(row.id);
        await this.run(this.store.sql.authTokens.dropAllSteps('otp', c.id, String(rec.id)));
      }
      throw ApiError.validation(BAD_CODE.data);
    }
    this.tries.delete(row.id);
    await this.run([this.store.sql.authTokens.consumeStep(row.id, BAD_CODE)]);
    return { record: rec };
  }
}
