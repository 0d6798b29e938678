/**
 * Email verification and password reset (docs/api.md, "Verification and password reset";
 * docs/auth.md, "Sessions, verification, password reset, rate limits": confirm-password-reset takes
 * `{token, password, passwordConfirm}`).
 *
 * request-*: the handler does the same work whatever the address (validate, then push a task onto
 * the background queue) and answers 204; the task looks the address up, creates a single-use token
 * and mails it. confirm-*: a valid token is redeemed in the same write job that applies its effect;
 * a second use, an expired token or one of another kind or collection answers 400. A reset checks
 * the new password before touching the token, rotates the token key (ending every token issued
 * before) and wipes the record's session rows, sign-in passkeys and unconfirmed provider links;
 * a verification drops the unconfirmed links too.
 *
 * An address change (PocketBase's request-email-change / confirm-email-change, docs/api.md,
 * "PocketBase SDK routes"): the signed-in owner asks for it, a single-use token goes to the new
 * address; confirming takes the token and the account's password. The route layer writes the new
 * address (the record writer: validation, uniqueness, hooks), then {@link finishEmailChange}
 * redeems the token and ends every session.
 */
import { ApiError } from '../errors/api-error.js';
import type { AccountEmailRepository } from '../context/auth-repositories.js';
import type { Collection } from '../model/schema.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import type { AuthTokens, AuthTokenKind, FoundToken } from './auth-tokens.js';
import { hashPassword, checkNewPassword, verifyPassword } from './passwords.js';
import { minPasswordLength } from './auth-defaults.js';
import { randomToken } from '../records/ids.js';
import { isValidEmail, nowDate } from '../collections/fields/index.js';
import type { BackgroundQueue } from '../mail/queue.js';
import type { MailMessage, MailTransport } from '../mail/transports.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const BAD_TOKEN = { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: { token: { code: 'validation_value', message: 'Invalid or expired token.' } } };

/** Verification, password-reset and address-change mails and their confirmations (this module's header). */
export class AccountEmails {
  /** `tokens`: the single-use tokens the mails carry (also the sign-in methods', AuthService). */
  constructor(private repo: AccountEmailRepository, private queue: BackgroundQueue, private transport: MailTransport, readonly tokens: AuthTokens) {}

  /**
   * The `email` of a request-* body, validated identically for every address (400
   * `validation_failed` when missing or malformed).
   */
  static requestedEmail(body: unknown): string {
    const email = isObject(body) ? body.email : undefined;
    if (typeof email !== 'string' || email.trim() === '') throw ApiError.validation({ email: { code: 'validation_required', message: 'Missing required value.' } });
    if (!isValidEmail(email.trim())) throw ApiError.validation({ email: { code: 'validation_invalid_email', message: 'Must be a valid email address.' } });
    return email.trim();
  }

  /** Queues the verification or reset mail for `email`; returns at once, whether or not the address exists. */
  request(kind: AuthTokenKind, c: Collection, email: string): void {
    this.queue.push(() => this.deliver(kind, c.id, email));
  }

  /** The background half of request-*: look-up, token, mail. */
  private async deliver(kind: AuthTokenKind, collectionId: string, email: string): Promise<void> {
    const c = this.repo.registry.byId(collectionId);
    if (!c || c.type !== 'auth') return;
    const found = await this.repo.auth.byEmail(c, email);
    if (!found) return;
    const { id, email: to, verified } = found;
    if (kind === 'verify' && verified) return;
    if (/[\r\n]/.test(to)) return; // never let a stored value inject headers
    const token = await this.tokens.issue(kind, c, id, to);
    await this.transport.send(message(kind, c, to, token));
  }

  /**
   * POST confirm-verification `{token}`: marks the record verified and drops its unconfirmed
   * provider links (made while nobody had proven the address, docs/api.md "OAuth2"); 400 for a
   * used, expired or foreign token.
   */
  async confirmVerification(c: Collection, body: unknown): Promise<void> {
    const b = isObject(body) ? body : {};
    if (typeof b.token !== 'string' || b.token === '') throw ApiError.validation({ token: { code: 'validation_required', message: 'Missing required value.' } });
    const found = await this.tokens.find('verify', c, b.token);
    if (!found) throw badToken();
    await this.run([
      this.tokens.consumeStep(found, BAD_TOKEN),
      this.repo.auth.markVerifiedStep(c, found.recordId, found.email, nowDate(), BAD_TOKEN),
      this.repo.externalAuths.unconfirmedDropStep(c.id, found.recordId),
    ]);
  }

  /**
   * POST confirm-password-reset `{token, password, passwordConfirm?}`: the password is validated
   * first (a short one leaves the token unused); then, in one write job, the token is redeemed,
   * the password set, the token key rotated (every token issued before ends) and every session
   * row, sign-in passkey and unconfirmed provider link of the record deleted: whoever held the
   * account before the owner proved the address keeps no way in (docs/api.md, "Verification and
   * password reset"). Second factors stay.
   */
  async confirmPasswordReset(c: Collection, body: unknown): Promise<void> {
    const b = isObject(body) ? body : {};
    const errors: Record<string, { code: string; message: string }> = {};
    checkNewPassword(b, minPasswordLength(c), errors);
    if (typeof b.token !== 'string' || b.token === '') errors.token = { code: 'validation_required', message: 'Missing required value.' };
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const found = await this.tokens.find('reset', c, b.token);
    if (!found) throw badToken();
    const hash = await hashPassword(b.password as string);
    await this.run([
      this.tokens.consumeStep(found, BAD_TOKEN),
      this.repo.auth.setPasswordStep(c, found.recordId, found.email, hash, randomToken(24), nowDate(), BAD_TOKEN),
      ...this.tokens.dropAllSteps('reset', c, found.recordId),
      ...this.repo.sessions.wipeSteps(c.id, found.recordId, null),
      this.repo.passkeys.removeAllSignInStep(c.id, found.recordId),
      this.repo.externalAuths.unconfirmedDropStep(c.id, found.recordId),
    ]);
  }

  /**
   * request-email-change `{newEmail}` by the signed-in record `recordId` of `c`: validates the
   * address (400 `validation_failed` on `newEmail`), then queues the token mail to it and returns.
   * Whether the address is taken is not told here (it would say which addresses have accounts):
   * confirming a taken one answers 409.
   */
  requestEmailChange(c: Collection, recordId: string, body: unknown): void {
    const v = isObject(body) ? body.newEmail : undefined;
    if (typeof v !== 'string' || v.trim() === '') throw ApiError.validation({ newEmail: { code: 'validation_required', message: 'Missing required value.' } });
    const to = v.trim();
    if (!isValidEmail(to) || /[\r\n]/.test(to)) throw ApiError.validation({ newEmail: { code: 'validation_invalid_email', message: 'Must be a valid email address.' } });
    const collectionId = c.id;
    this.queue.push(async () => {
      const now = this.repo.registry.byId(collectionId);
      if (!now || now.type !== 'auth') return;
      const token = await this.tokens.issue('email_change', now, recordId, to);
      await this.transport.send(emailChangeMessage(now, to, token));
    });
  }

  /**
   * confirm-email-change `{token, password}`, first half: the token must be a live
   * `email_change` token of `c` (400 on `token`) and `password` the record's password (400
   * `Invalid credentials.` otherwise, as a wrong `oldPassword` answers; a record without a
   * password cannot confirm). Consumes nothing.
   * @returns the token found, its record and the new address
   */
  async checkEmailChange(c: Collection, body: unknown, load: (c: Collection, id: string) => Promise<Record<string, unknown> | null>): Promise<{ found: FoundToken; recordId: string; email: string }> {
    const b = isObject(body) ? body : {};
    const errors: Record<string, { code: string; message: string }> = {};
    const missing = { code: 'validation_required', message: 'Missing required value.' };
    if (typeof b.token !== 'string' || b.token === '') errors.token = missing;
    if (typeof b.password !== 'string' || b.password === '') errors.password = missing;
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const found = await this.tokens.find('email_change', c, b.token);
    if (!found) throw badToken();
    const rec = await load(c, found.recordId);
    if (!rec) throw badToken();
    if (!(await verifyPassword(typeof rec.passwordHash === 'string' ? rec.passwordHash : null, b.password as string))) {
      throw ApiError.invalidCredentials();
    }
    return { found, recordId: found.recordId, email: found.email };
  }

  /**
   * confirm-email-change, second half, once the new address is written: redeems the token (400
   * when it was used meanwhile) and, in the same write job, ends every session of the record (the
   * token epoch bumped, its session rows gone) and drops its unconfirmed provider links, as a
   * verification does.
   */
  async finishEmailChange(c: Collection, found: FoundToken): Promise<void> {
    await this.run([
      this.tokens.consumeStep(found, BAD_TOKEN),
      ...this.tokens.dropAllSteps('email_change', c, found.recordId),
      this.repo.auth.bumpEpochStep(c, found.recordId),
      ...this.repo.sessions.wipeSteps(c.id, found.recordId, null),
      this.repo.externalAuths.unconfirmedDropStep(c.id, found.recordId),
    ]);
  }

  private async run(steps: WriteStep[]) {
    for (const s of steps) s.params = s.params.map(bindValue);
    return this.repo.write(steps);
  }
}

function badToken(): ApiError {
  return ApiError.validation(BAD_TOKEN.data);
}

/** The plain-text mail carrying a token. */
export function message(kind: AuthTokenKind, c: Collection, to: string, token: string): MailMessage {
  const action = kind === 'verify' ? 'confirm-verification' : 'confirm-password-reset';
  const what = kind === 'verify' ? 'confirm your email address' : 'reset your password';
  return {
    to,
    subject: kind === 'verify' ? 'Verify your email' : 'Reset your password',
    text: [
      'Hello,',
      '',
      `Use this token to ${what}:`,
      '',
      token,
      '',
      `Link: /_/#/auth/${action}/${encodeURIComponent(c.name)}/${token}`,
      `API: POST /api/collections/${encodeURIComponent(c.name)}/${action} with {"token": "${token}"${kind === 'reset' ? ', "password": "<new password>"' : ''}}`,
      '',
      'If you did not ask for this, ignore this message.',
    ].join('\n'),
  };
}

/** The plain-text mail carrying an address-change token (sent to the new address). */
export function emailChangeMessage(c: Collection, to: string, token: string): MailMessage {
  return {
    to,
    subject: 'Confirm your new email address',
    text: [
      'Hello,',
      '',
      'Use this token to make this your account\'s email address:',
      '',
      token,
      '',
      `API: POST /api/collections/${encodeURIComponent(c.name)}/confirm-email-change with {"token": "${token}", "password": "<your password>"}`,
      '',
      'If you did not ask for this, ignore this message.',
    ].join('\n'),
  };
}
