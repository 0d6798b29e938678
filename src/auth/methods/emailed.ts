/**
 * What the two sign-in methods that mail a secret share (docs/auth.md, "Magic links and
 * one-time codes"): magic link (`magic_link`, ./magic-link.ts:
 * a single-use link token) and one-time code (`otp`, ./otp.ts: six digits). Both are off unless
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
import { ApiError, type FieldError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { EmailedMethodRepository } from '../../context/auth-repositories.js';
import { bindValue } from '../../store/bind.js';
import type { WriteStep } from '../../store/write-job.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import { isObject, methodEnabled, type AuthMethod, type MethodResult } from './method.js';
import type { BackgroundQueue } from '../../mail/queue.js';
import type { MailMessage, MailTransport } from '../../mail/transports.js';
import { isValidEmail } from '../../collections/fields/index.js';

/** 400 with `field` missing. */
export const required = (field: string) => ApiError.validation({ [field]: { code: 'validation_required', message: 'Missing required value.' } });

/** The `identity` of a body: a non-empty string of at most 320 characters, else 400. */
export function identityOf(body: unknown): string {
  const v = isObject(body) ? body.identity : undefined;
  if (typeof v !== 'string' || v.trim() === '') throw required('identity');
  if (v.length > 320) throw ApiError.validation({ identity: { code: 'validation_max', message: 'Must be at most 320 characters.' } });
  return v.trim();
}

/** What both methods share: the identity lookup and the mail; `R` what a method needs of storage. */
export abstract class EmailedMethod<R extends EmailedMethodRepository = EmailedMethodRepository> implements AuthMethod {
  abstract readonly slug: string;
  abstract readonly stores: readonly string[];
  readonly events = ['auth-success'] as const;
  abstract readonly checkOptions: (options: Record<string, unknown>, path: string) => Record<string, FieldError>;

  constructor(
    protected repo: R,
    protected limits: AuthRateLimits,
    protected queue: BackgroundQueue,
    protected transport: MailTransport,
    protected loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>,
  ) {}

  enabled(c: Collection): boolean {
    return methodEnabled(c, this.slug);
  }

  async initiate(c: Collection, body: unknown, client: ClientInfo): Promise<undefined> {
    const submitted = isObject(body) ? body.identity : undefined;
    await this.limits.enforce(`auth-${this.slug}-initiate`, c, this.limits.clientKeys(client, submitted), this.slug);
    const identity = identityOf(body);
    const collectionId = c.id;
    this.queue.push(async () => {
      const now = this.repo.registry.byId(collectionId);
      if (!now || now.type !== 'auth' || !this.enabled(now)) return;
      const found = await this.findRecord(now, identity);
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
  protected async findRecord(c: Collection, identity: string): Promise<Record<string, unknown> | null> {
    const id = await this.repo.auth.idByIdentity(c, c.options.auth?.identityFields ?? ['email'], identity);
    return id === undefined ? null : this.loadRecord(c, id);
  }

  protected async run(steps: WriteStep[]): Promise<void> {
    for (const s of steps) s.params = s.params.map(bindValue);
    await this.repo.write(steps);
  }
}
