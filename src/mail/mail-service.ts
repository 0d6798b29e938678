/**
 * Mail from application code (docs/framework.md, "Mail"):
 * `app.mail.send`, `app.mail.enqueue` and
 * `app.mail.render`.
 *
 * Every message is checked before any backend or queue is touched: addresses through an RFC 5322
 * parser (`email-addresses`) and the same address check the email fields use, no CR, LF or other
 * control characters in a header value (`HeaderInjection`), at least one body (`EmptyBody`), and
 * bounded sizes. `send` delivers through the backend now; `enqueue` stores the checked message in
 * the durable queue (src/mail/mail-queue.ts) and resolves once it is committed; without the app's
 * `mail` group or a `mailer` there is no `mail` job kind and enqueue fails `UnknownJobKind`.
 * With the group's `check_suppression`, a recipient with a recorded hard bounce or complaint is
 * refused (`RecipientSuppressed`).
 */
import emailAddresses from 'email-addresses';
import { isValidEmail } from '../collections/fields/index.js';
import type { Logger } from '../log/logger.js';
import type { MailMessage as TransportMessage, MailTransport } from './transports.js';
import type { DurableMailQueue } from './mail-queue.js';

/** The mail error conditions (docs/framework.md, "Mail"). */
export type MailErrorCode = 'InvalidAddress' | 'HeaderInjection' | 'EmptyBody' | 'UnknownJobKind' | 'SenderNotVerified' | 'RecipientSuppressed' | 'MessageTooLarge';

/** A refused message; `code` is the condition name, `field` the offending message field. */
export class MailError extends Error {
  constructor(readonly code: MailErrorCode, message: string, readonly field?: string) {
    super(message);
    this.name = 'MailError';
  }
}

/** A message as application code writes it (docs/framework.md, "Mail"). */
export interface MailMessage {
  /** one address, `a@example.com` or `Name <a@example.com>` */
  to: string;
  /** no CR, LF or control characters */
  subject: string;
  text?: string;
  html?: string;
  reply_to?: string;
  /** overrides the backend's sender for this message; default null */
  from?: string | null;
  /** extra headers (at most 20; not the standard ones such as From, To, Subject) */
  headers?: Record<string, string>;
  /** labels for the provider's reporting (at most 10, letters, digits, `_` and `-`) */
  tags?: string[];
}

/**
 * A mail backend (the app definition's `mailer`): gets each checked message, `from` null when the
 * message names none (the backend's own sender applies). Rejecting means not delivered.
 */
export interface Mailer {
  send(message: Required<Pick<MailMessage, 'to' | 'subject'>> & { from: string | null; text?: string; html?: string; reply_to?: string; headers?: Record<string, string>; tags?: string[] }): unknown;
  close?(): unknown;
}

/** Largest body (text or HTML), in UTF-16 code units. */
export const MAX_BODY_LENGTH = 5 * 1024 * 1024;
/** Longest subject, in characters. */
export const MAX_SUBJECT_LENGTH = 998;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/;

function checkAddress(field: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined || value === null || value === '') {
    if (required) throw new MailError('InvalidAddress', `${field}: an address is required`, field);
    return undefined;
  }
  if (typeof value !== 'string') throw new MailError('InvalidAddress', `${field}: must be a string`, field);
  if (CONTROL.test(value)) throw new MailError('HeaderInjection', `${field}: line breaks and control characters are not allowed`, field);
  const parsed = value.length <= 998 ? emailAddresses.parseOneAddress(value) : null;
  if (!parsed || parsed.type !== 'mailbox' || !isValidEmail(parsed.address)) {
    throw new MailError('InvalidAddress', `${field}: ${JSON.stringify(value.slice(0, 100))} is not one valid email address`, field);
  }
  return value.trim();
}

/**
 * Checks a message and answers it ready for a transport.
 * @throws MailError InvalidAddress, HeaderInjection, EmptyBody or MessageTooLarge; TypeError for a
 *   value of the wrong type or an unknown field
 */
export function checkMessage(message: unknown): TransportMessage {
  if (typeof message !== 'object' || message === null) throw new TypeError('the message must be an object {to, subject, text?, html?, reply_to?, from?}');
  const m = message as Record<string, unknown>;
  for (const k of Object.keys(m)) {
    if (!['to', 'subject', 'text', 'html', 'reply_to', 'from', 'headers', 'tags'].includes(k)) throw new TypeError(`unknown message field "${k}" (to, subject, text, html, reply_to, from, headers, tags)`);
  }
  const to = checkAddress('to', m.to, true)!;
  const replyTo = checkAddress('reply_to', m.reply_to, false);
  const from = checkAddress('from', m.from, false);
  if (typeof m.subject !== 'string') throw new TypeError('subject: must be a string');
  if (CONTROL.test(m.subject)) throw new MailError('HeaderInjection', 'subject: line breaks and control characters are not allowed', 'subject');
  if (m.subject.length > MAX_SUBJECT_LENGTH) throw new MailError('MessageTooLarge', `subject: at most ${MAX_SUBJECT_LENGTH} characters`, 'subject');
  for (const k of ['text', 'html'] as const) {
    if (m[k] !== undefined && m[k] !== null && typeof m[k] !== 'string') throw new TypeError(`${k}: must be a string`);
    if (typeof m[k] === 'string' && (m[k] as string).length > MAX_BODY_LENGTH) throw new MailError('MessageTooLarge', `${k}: at most ${MAX_BODY_LENGTH} characters`, k);
  }
  const text = typeof m.text === 'string' && m.text !== '' ? m.text : undefined;
  const html = typeof m.html === 'string' && m.html !== '' ? m.html : undefined;
  if (text === undefined && html === undefined) throw new MailError('EmptyBody', 'a message needs a text or an html body', 'text');
  const out: TransportMessage = { to, subject: m.subject };
  if (text !== undefined) out.text = text;
  if (html !== undefined) out.html = html;
  if (replyTo) out.replyTo = replyTo;
  if (from) out.from = from;
  if (m.headers !== undefined && m.headers !== null) out.headers = checkHeaders(m.headers);
  if (m.tags !== undefined && m.tags !== null) out.tags = checkTags(m.tags);
  return out;
}

/** Headers a message may not set itself (they come from the message's fields or the transport). */
const RESERVED_HEADERS = new Set(['from', 'to', 'cc', 'bcc', 'subject', 'reply-to', 'sender', 'date', 'message-id', 'mime-version', 'content-type', 'content-transfer-encoding', 'return-path', 'received', 'dkim-signature']);

function checkHeaders(v: unknown): Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TypeError('headers: must be an object of header name → string');
  const out: Record<string, string> = {};
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > 20) throw new MailError('MessageTooLarge', 'headers: at most 20', 'headers');
  for (const [name, value] of entries) {
    if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/.test(name)) throw new MailError('HeaderInjection', `headers: ${JSON.stringify(name.slice(0, 80))} is not a header name`, 'headers');
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw new MailError('HeaderInjection', `headers: ${name} comes from the message's fields, not from headers`, 'headers');
    if (typeof value !== 'string') throw new TypeError(`headers.${name}: must be a string`);
    if (CONTROL.test(value)) throw new MailError('HeaderInjection', `headers.${name}: line breaks and control characters are not allowed`, 'headers');
    if (value.length > 998) throw new MailError('MessageTooLarge', `headers.${name}: at most 998 characters`, 'headers');
    out[name] = value;
  }
  return out;
}

function checkTags(v: unknown): string[] {
  if (!Array.isArray(v) || v.length > 10 || !v.every((t) => typeof t === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(t))) {
    throw new MailError('HeaderInjection', 'tags: at most 10, each 1 to 64 letters, digits, "_" or "-"', 'tags');
  }
  return [...v];
}

/** The app definition's `mailer` as a transport. */
export class PluginTransport implements MailTransport {
  readonly kind = 'plugin';
  constructor(private mailer: Mailer) {}
  async send(msg: TransportMessage): Promise<void> {
    const out: Parameters<Mailer['send']>[0] = { to: msg.to, subject: msg.subject, from: msg.from ?? null };
    if (msg.text !== undefined) out.text = msg.text;
    if (msg.html !== undefined) out.html = msg.html;
    if (msg.replyTo !== undefined) out.reply_to = msg.replyTo;
    if (msg.headers) out.headers = { ...msg.headers };
    if (msg.tags) out.tags = [...msg.tags];
    await this.mailer.send(out);
  }
  close(): void {
    void this.mailer.close?.();
  }
}

/** The address part of `Name <a@example.com>` (or the address itself), lowercased. */
export function addressOf(value: string): string {
  const parsed = emailAddresses.parseOneAddress(value);
  return (parsed && parsed.type === 'mailbox' ? parsed.address : value).toLowerCase();
}

/** `app.mail`: checked sending now, or through the durable queue. */
export class MailService {
  /**
   * @param transport the backend every message goes through
   * @param queue the durable queue
   * @param queued whether the `mail` job kind exists (the app has a `mail` group or a `mailer`)
   * @param policy the mail group's checks: `suppressed(email, account)` with `check_suppression`,
   *   `verifiedSender(account, from)` with `require_verified_sender` (absent: not checked)
   */
  constructor(
    readonly transport: MailTransport,
    private queue: DurableMailQueue,
    private queued: boolean,
    private policy: { suppressed?: (email: string, account: string) => Promise<boolean>; verifiedSender?: (account: string, from: string) => Promise<boolean> } = {},
  ) {}

  private async check(message: unknown, account: string): Promise<TransportMessage> {
    const msg = checkMessage(message);
    if (this.policy.suppressed && (await this.policy.suppressed(addressOf(msg.to), account))) throw new MailError('RecipientSuppressed', `to: ${addressOf(msg.to)} is suppressed (a hard bounce or a complaint was recorded)`, 'to');
    // an account-scoped send under require_verified_sender; a send for no account (system, superuser) is not checked
    if (account && this.policy.verifiedSender && !(msg.from && (await this.policy.verifiedSender(account, msg.from)))) {
      throw new MailError('SenderNotVerified', `from: ${msg.from ? addressOf(msg.from) : '(none)'} is not a verified sender of account ${account}`, 'from');
    }
    return msg;
  }

  /**
   * Checks and delivers one message now; resolves once the backend took it. `options.account`:
   * the account it is sent for (the policies of the mail group apply to it).
   * @throws MailError before anything is sent; the backend's error when delivery fails
   */
  async send(message: MailMessage, options: { account?: string } = {}): Promise<void> {
    await this.transport.send(await this.check(message, options.account ?? ''));
  }

  /**
   * Checks a message and stores it for delivery from `options.queue` (default `default`);
   * resolves once it is committed. Failed deliveries are retried (see mail-queue.ts).
   * @throws MailError UnknownJobKind without mail configured; the checks of `send`
   */
  async enqueue(message: MailMessage, options: { queue?: string; account?: string } = {}): Promise<void> {
    if (!this.queued) throw new MailError('UnknownJobKind', 'enqueue needs mail configured: give the app definition a `mail` group (or a `mailer`)');
    const account = options.account ?? '';
    const msg = await this.check(message, account);
    const name = options.queue ?? 'default';
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new TypeError('queue: 1 to 64 letters, digits, ".", "_" or "-"');
    await this.queue.enqueue(msg, name, account);
  }
}

/** A captured message of the test outbox. */
export interface OutboxEntry {
  from: string | null;
  to: string;
  subject: string;
  /** the text body, or the HTML body when there is no text */
  body: string;
}

/**
 * The test capture outbox of a development build (docs/framework.md, "Mail"; here
 * the `dev-tools` feature): wraps the backend and, once enabled, records every message sent
 * through it; `enable(true)` records and skips real delivery, `enable(false)` records and still
 * delivers.
 */
export class TestOutbox implements MailTransport {
  readonly kind: MailTransport['kind'];
  private on = false;
  private suppress = false;
  private entries: OutboxEntry[] = [];

  constructor(private inner: MailTransport) {
    this.kind = inner.kind;
  }

  enable(suppress: boolean): void {
    this.on = true;
    this.suppress = suppress;
  }

  reset(): void {
    this.entries = [];
  }

  count(): number {
    return this.entries.length;
  }

  get(index: number): OutboxEntry | undefined {
    return this.entries[index];
  }

  /** the first message whose subject or body contains `text` */
  find(text: string): OutboxEntry | undefined {
    return this.entries.find((e) => e.subject.includes(text) || e.body.includes(text));
  }

  async send(msg: TransportMessage): Promise<void> {
    if (this.on) this.entries.push({ from: msg.from ?? null, to: msg.to, subject: msg.subject, body: msg.text ?? msg.html ?? '' });
    if (!this.on || !this.suppress) await this.inner.send(msg);
  }

  close(): void {
    this.inner.close();
  }
}

/**
 * A mailer that keeps messages in memory instead of delivering them (`captureMailer()`,
 * usable in any build): for tests and development.
 */
export function captureMailer(): Mailer & {
  readonly messages: Parameters<Mailer['send']>[0][];
  count(): number;
  get(index: number): Parameters<Mailer['send']>[0] | undefined;
  /** the first message whose subject or body contains `text` */
  find(text: string): Parameters<Mailer['send']>[0] | undefined;
  reset(): void;
} {
  const messages: Parameters<Mailer['send']>[0][] = [];
  return {
    messages,
    send: (m) => void messages.push({ ...m }),
    count: () => messages.length,
    get: (i) => messages[i],
    find: (t) => messages.find((m) => m.subject.includes(t) || (m.text ?? '').includes(t) || (m.html ?? '').includes(t)),
    reset: () => void messages.splice(0),
  };
}
