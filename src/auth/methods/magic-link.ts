/**
 * Magic-link sign-in (docs/auth.md, "Magic links and one-time codes":
 * `options.auth.methods.magic_link = {enabled, ttl_s,
 * redirect_default, redirect_allow, rate_limit}`): initiate mails a single-use link (./emailed.ts
 * says what the two mailed methods share), complete or the consume link signs in with its token.
 */
import { ApiError, type FieldError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { EmailedMethodRepository } from '../../context/auth-repositories.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import type { AuthTokens } from '../auth-tokens.js';
import type { BackgroundQueue } from '../../mail/queue.js';
import type { MailMessage, MailTransport } from '../../mail/transports.js';
import { isSafeRelativePath, magicLinkRedirect } from '../redirects.js';
import { isObject, lifetimeOptionErrors, methodOptions, type MethodOptionsCheck, type MethodResult } from './method.js';
import { EmailedMethod, required } from './emailed.js';

/**
 * Magic link's options check: `ttl_s` (lifetimeOptionErrors), then `redirect_default` a safe
 * relative path and `redirect_allow` an array of them (redirects.ts, isSafeRelativePath).
 */
export const magicLinkOptions: MethodOptionsCheck = {
  slug: 'magic_link',
  checkOptions(m, at) {
    const errors: Record<string, FieldError> = lifetimeOptionErrors(m, at);
    if ('redirect_default' in m && !isSafeRelativePath(m.redirect_default)) {
      errors[`${at}.redirect_default`] = { code: 'validation_value', message: 'Must be a safe relative path: starting with one "/", no "." or ".." segment, no backslash, encoded dot or slash, or control character.' };
    }
    if ('redirect_allow' in m && (!Array.isArray(m.redirect_allow) || m.redirect_allow.some((e) => !isSafeRelativePath(e)))) {
      errors[`${at}.redirect_allow`] = { code: 'validation_value', message: 'Must be an array of safe relative paths (an entry ending in "/" is a prefix).' };
    }
    return errors;
  },
};

const BAD_TOKEN = { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { token: { code: 'validation_value', message: 'Invalid or expired token.' } } };

/**
 * Magic link: initiate mails a link to `GET …/auth/magic-link/consume?token=…`; complete takes
 * `{token}`. Tokens are the single-use hashed tokens of AuthTokens (kind `magic_link`), living
 * `ttl_s` seconds (default 900).
 */
export class MagicLinkMethod extends EmailedMethod {
  readonly slug = magicLinkOptions.slug;
  readonly stores = ['_authTokens'] as const;
  readonly checkOptions = magicLinkOptions.checkOptions;

  constructor(repo: EmailedMethodRepository, limits: AuthRateLimits, queue: BackgroundQueue, transport: MailTransport, loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>, private tokens: AuthTokens) {
    super(repo, limits, queue, transport, loadRecord);
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

  /**
   * Where the consume link sends the browser once signed in (GET …/auth/magic-link/consume):
   * `requested` (the `redirect` query parameter) when it is a safe relative path the collection's
   * `redirect_allow` admits, else `redirect_default`, else `/` (redirects.ts, magicLinkRedirect).
   */
  redirectTarget(c: Collection, requested: string | undefined): string {
    const opts = methodOptions(c, this.slug);
    const allow = Array.isArray(opts.redirect_allow) ? (opts.redirect_allow as string[]) : [];
    return magicLinkRedirect(requested, allow, opts.redirect_default);
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const token = isObject(body) ? body.token : undefined;
    await this.limits.enforce(`auth-${this.slug}-complete`, c, this.limits.clientKeys(client, typeof token === 'string' ? token.split('.')[0] : ''), this.slug);
    if (typeof token !== 'string' || token === '') throw required('token');
    const found = await this.tokens.find('magic_link', c, token);
    if (!found) throw ApiError.validation(BAD_TOKEN.data);
    await this.run([this.tokens.consumeStep(found, BAD_TOKEN)]);
    const rec = await this.loadRecord(c, found.recordId);
    if (!rec) throw ApiError.validation(BAD_TOKEN.data);
    return { record: rec };
  }
}

