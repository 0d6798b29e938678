/**
 * The start-time configuration the admin UI shows read-only, and the test message (docs/api.md,
 * "Mail and storage settings"; docs/admin.md, "Mail" and "Storage"). Superusers only (401
 * anonymous, 403 other callers):
 *
 * - `GET /api/_/mail`: how mail is delivered (the SMTP host, port, TLS mode, user and sender; the
 *   password only as `passwordSet`), and the environment variables it comes from;
 * - `POST /api/settings/test/email {email, template?}` (PocketBase's path): one message sent now
 *   through that transport, not the queue, so a failure is answered: 204 once the transport took
 *   it, 400 `validation_failed` for a bad address or template, 502 `bad_gateway` when delivery
 *   failed (the transport's reason in the message);
 * - `GET /api/_/storage`: where stored files live, the local folder or the S3-compatible bucket
 *   (endpoint, region, bucket, prefix; never the keys).
 *
 * Both are read from the serve configuration: changing them means changing the environment and
 * restarting (docs/mail.md, docs/files.md).
 */
import type { Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { DEFAULT_FROM, type MailMessage } from '../mail/transports.js';
import { isValidEmail } from '../collections/fields/index.js';
import { message as tokenMessage, emailChangeMessage } from '../auth/account-emails.js';
import { otpMail } from '../auth/methods/otp.js';
import { storageRoot } from '../files/files.js';
import type { Collection } from '../model/schema.js';

/** The templates a test message may take (PocketBase's names); absent: a plain test message. */
export const TEST_TEMPLATES = ['verification', 'password-reset', 'email-change', 'otp'] as const;

/** The mail settings as `GET /api/_/mail` answers them. */
export interface MailSettingsView {
  /** `smtp`, `command` (SERVICE_SENDMAIL_COMMAND), `log` (no transport: written to the log) or `plugin` (the app's `mailer`) */
  transport: 'smtp' | 'command' | 'log' | 'plugin';
  /** where the settings come from: `environment` (the SERVICE_* variables, read at start) or `app` (the app definition's `mailer`) */
  source: 'environment' | 'app';
  /** the default sender address (SERVICE_SMTP_FROM, else no-reply@localhost) */
  from: string;
  smtp: { host: string; port: number; tls: string; username: string; passwordSet: boolean } | null;
  /** the variables that set them */
  variables: string[];
}

/** The storage settings as `GET /api/_/storage` answers them. */
export type StorageSettingsView =
  | { kind: 'local'; path: string; variables: string[] }
  | { kind: 's3'; bucket: string; prefix: string; endpoint: string | null; region: string; forcePathStyle: boolean; credentials: 'keys' | 'sdk-chain'; variables: string[] };

const MAIL_VARIABLES = ['SERVICE_SENDMAIL_COMMAND', 'SERVICE_SMTP_HOST', 'SERVICE_SMTP_PORT', 'SERVICE_SMTP_TRANSPORT', 'SERVICE_SMTP_USERNAME', 'SERVICE_SMTP_PASSWORD', 'SERVICE_SMTP_FROM'];
const STORAGE_VARIABLES = ['SERVICE_STORAGE', 'SERVICE_S3_ENDPOINT', 'SERVICE_S3_REGION', 'SERVICE_S3_ACCESS_KEY_ID', 'SERVICE_S3_SECRET_ACCESS_KEY', 'SERVICE_S3_FORCE_PATH_STYLE'];

/** The mail settings of `ctx` (no secret: the SMTP password only as whether it is set). */
export function mailSettings(ctx: ApiContext): MailSettingsView {
  const { smtp, sendmailCommand } = ctx.config;
  const plugin = ctx.mail.transport.kind === 'plugin';
  return {
    transport: plugin ? 'plugin' : sendmailCommand ? 'command' : smtp ? 'smtp' : 'log',
    source: plugin ? 'app' : 'environment',
    from: smtp?.from || DEFAULT_FROM,
    smtp: smtp ? { host: smtp.host, port: smtp.port, tls: smtp.transport, username: smtp.username ?? '', passwordSet: !!smtp.password } : null,
    variables: MAIL_VARIABLES,
  };
}

/** Where stored files live (no key or secret). */
export function storageSettings(ctx: ApiContext): StorageSettingsView {
  const s = ctx.config.storage;
  if (!s) return { kind: 'local', path: storageRoot(ctx.config.dataDir), variables: STORAGE_VARIABLES };
  return { kind: 's3', bucket: s.bucket, prefix: s.prefix, endpoint: s.endpoint ?? null, region: s.region, forcePathStyle: s.forcePathStyle, credentials: s.accessKeyId ? 'keys' : 'sdk-chain', variables: STORAGE_VARIABLES };
}

/**
 * The test message to `to`: a plain one, or a template's message with a sample token (under the
 * `_superusers` collection's name, so its links are well formed).
 */
function testMessage(to: string, template: (typeof TEST_TEMPLATES)[number] | undefined): MailMessage {
  const c = { name: '_superusers' } as Collection;
  const sample = 'TEST-TOKEN-not-valid';
  if (template === 'verification') return tokenMessage('verify', c, to, sample);
  if (template === 'password-reset') return tokenMessage('reset', c, to, sample);
  if (template === 'email-change') return emailChangeMessage(c, to, sample);
  if (template === 'otp') return otpMail(to, '123456');
  return { to, subject: 'Test message from svc', text: ['Hello,', '', 'This is a test message sent from the svc admin UI to check the mail settings.', 'It arrived, so mail is delivered.'].join('\n') };
}

/** The request body of the test message, checked. @throws ApiError 400 `validation_failed` */
function testBody(b: unknown): { email: string; template: (typeof TEST_TEMPLATES)[number] | undefined } {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw ApiError.badRequest('The request body must be a JSON object: {"email": "<address>", "template": "<name>"}.');
  const { email, template } = b as Record<string, unknown>;
  const errors: Record<string, { code: string; message: string }> = {};
  if (typeof email !== 'string' || email === '') errors.email = { code: 'validation_required', message: 'Missing required value.' };
  else if (!isValidEmail(email) || /[\r\n]/.test(email)) errors.email = { code: 'validation_invalid_email', message: 'Must be a valid email address.' };
  if (template !== undefined && template !== '' && !(TEST_TEMPLATES as readonly unknown[]).includes(template)) {
    errors.template = { code: 'validation_value', message: `Must be one of ${TEST_TEMPLATES.join(', ')}.` };
  }
  if (Object.keys(errors).length) throw ApiError.validation(errors);
  return { email: email as string, template: template ? (template as (typeof TEST_TEMPLATES)[number]) : undefined };
}

export function serverSettingsRoutes(ctx: ApiContext): Route[] {
  return [
    {
      method: 'get', pattern: '/api/_/mail', handler: async (req) => {
        await ctx.auth.requireSuperuser(req);
        return json(200, JSON.stringify(mailSettings(ctx)));
      },
    },
    {
      method: 'get', pattern: '/api/_/storage', handler: async (req) => {
        await ctx.auth.requireSuperuser(req);
        return json(200, JSON.stringify(storageSettings(ctx)));
      },
    },
    {
      method: 'post', pattern: '/api/settings/test/email', handler: async (req) => {
        await ctx.auth.requireSuperuser(req);
        const { email, template } = testBody(jsonBody(req));
        try {
          await ctx.mail.transport.send(testMessage(email, template));
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          ctx.logger.warn(`test message to ${email} failed: ${reason}`, 'mail');
          throw new ApiError(502, 'bad_gateway', `The mail transport did not take the message: ${reason}`);
        }
        return noContent();
      },
    },
  ];
}
