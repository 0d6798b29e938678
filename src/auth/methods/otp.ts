/**
 * One-time code sign-in (docs/auth.md, "Magic links and
 * one-time codes": `options.auth.methods.otp = {enabled, ttl_s, rate_limit}`): the
 * method, its options check and its mail. initiate mails six digits (./emailed.ts says what the
 * two mailed methods share); complete takes `{identity, code}`. Its rows are `_authTokens` of
 * kind `otp`, written and read through the store's auth-token statements (src/store/shared).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { OtpRepository } from '../../context/auth-repositories.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import type { BackgroundQueue } from '../../mail/queue.js';
import type { MailMessage, MailTransport } from '../../mail/transports.js';
import { newId } from '../../records/ids.js';
import { nowDate } from '../../collections/fields/index.js';
import { isObject, lifetimeOptionErrors, methodOptions, type MethodOptionsCheck, type MethodResult } from './method.js';
import { EmailedMethod, identityOf, required } from './emailed.js';
import { boundedCache } from '../../cache/bounded.js';

/** The one-time code's options check: `ttl_s` (lifetimeOptionErrors); `enabled` and `rate_limit` are the caller's. */
export const otpOptions: MethodOptionsCheck = { slug: 'otp', checkOptions: lifetimeOptionErrors };

/** The mail carrying a code: the code in the subject too, so it shows in a notification. */
export function otpMail(to: string, code: string): MailMessage {
  return { to, subject: `Your sign-in code: ${code}`, text: ['Hello,', '', `Your sign-in code is ${code}.`, '', 'It works once. If you did not ask for it, ignore this message.'].join('\n') };
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
export class OtpMethod extends EmailedMethod<OtpRepository> {
  readonly slug = otpOptions.slug;
  readonly stores = ['_authTokens'] as const;
  readonly checkOptions = otpOptions.checkOptions;
  /** wrong tries per code row (bounded: rows expire; the least recently tried of 10,000 go first) */
  private tries = boundedCache<string, number>(10_000);

  constructor(repo: OtpRepository, limits: AuthRateLimits, queue: BackgroundQueue, transport: MailTransport, loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>, private secret: Buffer) {
    super(repo, limits, queue, transport, loadRecord);
  }

  /**
   * PocketBase's `otpId` (`POST …/request-otp`, docs/pocketbase.md): the identity a code was asked
   * for and when the id stops being good, sealed with AES-256-GCM under a key derived from the
   * server secret (base64url of iv, ciphertext and tag). It names no row: the code is still the
   * record's newest one, checked by complete. Issued for any address, known or not, so it tells
   * nothing about which accounts exist; it cannot be forged or read without the secret.
   */
  otpIdFor(c: Collection, identity: string): string {
    const ttl = methodOptions(c, this.slug).ttl_s;
    const expires = Date.now() + (typeof ttl === 'number' ? ttl : OTP_TTL_S) * 1000;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.idKey(), iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify([c.id, identity, expires])), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * The identity an `otpId` of `c` was issued for (`POST …/auth-with-otp`).
   * @throws ApiError 400 `validation_failed` (the code's "Invalid or expired code." on `otpId`)
   * for a malformed, forged, expired or other collection's id
   */
  identityOfOtpId(c: Collection, otpId: unknown): string {
    const bad = ApiError.validation({ otpId: BAD_CODE.data.code });
    if (typeof otpId !== 'string' || otpId.length > 1000) throw bad;
    const raw = Buffer.from(otpId, 'base64url');
    if (raw.length < 12 + 16 + 1) throw bad;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.idKey(), raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      const [collectionId, identity, expires] = JSON.parse(Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8')) as [string, string, number];
      if (collectionId !== c.id || typeof identity !== 'string' || !(expires > Date.now())) throw bad;
      return identity;
    } catch {
      throw bad;
    }
  }

  private idKey(): Buffer {
    return createHmac('sha256', this.secret).update('svc otp id v1').digest();
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
      ...this.repo.authTokens.dropAllSteps('otp', c.id, recordId), // only the newest code counts
      ...this.repo.authTokens.issueSteps({
        id, hash: this.hash(id, code).toString('hex'), kind: 'otp', collectionId: c.id, recordId, email: to, created: nowDate(), expires: now + (typeof ttl === 'number' ? ttl : OTP_TTL_S) * 1000,
      }, now),
    ]);
    return otpMail(to, code);
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const b = isObject(body) ? body : {};
    await this.limits.enforce(`auth-${this.slug}-complete`, c, this.limits.clientKeys(client, b.identity), this.slug);
    const identity = identityOf(body);
    if (typeof b.code !== 'string' && typeof b.code !== 'number') throw required('code');
    const code = String(b.code);
    if (!/^\d{6}$/.test(code)) throw ApiError.validation(BAD_CODE.data);
    const rec = await this.findRecord(c, identity);
    const row = rec ? await this.repo.authTokens.latest('otp', c.id, String(rec.id)) : undefined;
    // compare even without a row, so a miss costs what a hit costs
    const stored = Buffer.from(row ? row.hash : '0'.repeat(64), 'hex');
    const equal = timingSafeEqual(this.hash(row?.id ?? '-', code), stored.length === 32 ? stored : Buffer.alloc(32));
    if (!rec || !row || row.expires <= Date.now()) throw ApiError.validation(BAD_CODE.data);
    if (!equal) {
      const n = (this.tries.get(row.id) ?? 0) + 1;
      this.tries.set(row.id, n);
      if (n >= OTP_MAX_TRIES) {
        this.tries.delete(row.id);
        await this.run(this.repo.authTokens.dropAllSteps('otp', c.id, String(rec.id)));
      }
      throw ApiError.validation(BAD_CODE.data);
    }
    this.tries.delete(row.id);
    await this.run([this.repo.authTokens.consumeStep(row.id, BAD_CODE)]);
    return { record: rec };
  }
}
