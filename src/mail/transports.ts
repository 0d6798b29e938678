/**
 * Outbound mail transports for the auth emails (docs/api.md, "Auth"):
 * - a local mail command when SERVICE_SENDMAIL_COMMAND is set (it wins over SMTP): run through
 *   `/bin/sh -c`, the RFC 5322 message on its stdin; recipients are only in the `To` header, never
 *   on the command line (use a command that reads them from the headers, e.g. `sendmail -t -i`);
 * - SMTP through nodemailer when SERVICE_SMTP_HOST is set, with transport `none` (plain, STARTTLS
 *   ignored), `starttls` (STARTTLS required), `implicit` (TLS from the first byte) or `auto`
 *   (implicit TLS on port 465, else STARTTLS whenever the server offers it);
 * - otherwise the message is written to the server log (one info line, scope `mail`).
 */
import { spawn } from 'node:child_process';
import type { ConnectionOptions } from 'node:tls';
import type { Transporter } from 'nodemailer';

/** nodemailer is loaded on first use: a server that never sends SMTP mail does not pay its memory. */
let nodemailer: Promise<typeof import('nodemailer')> | null = null;
const loadNodemailer = () => (nodemailer ??= import('nodemailer'));
import type { SmtpConfig } from '../config/config.js';
import type { Logger } from '../log/logger.js';

/**
 * One message as transports take it: a plain-text body, an HTML body or both (then
 * multipart/alternative, text first); `from` overrides the transport's sender.
 */
export interface MailMessage {
  to: string;
  subject: string;
  text?: string;
  html?: string;
  replyTo?: string;
  from?: string;
  /** extra headers, checked (src/mail/mail-service.ts) */
  headers?: Record<string, string>;
  /** labels; over SMTP and the mail command they travel as an `X-Tags` header */
  tags?: string[];
}

export interface MailTransport {
  /** `log`, `command`, `smtp`, or `plugin` (the app definition's `mailer`) */
  readonly kind: 'log' | 'command' | 'smtp' | 'plugin';
  /** Delivers one message; rejects when delivery failed. */
  send(msg: MailMessage): Promise<void>;
  close(): void;
}

export const DEFAULT_FROM = 'no-reply@localhost';
const COMMAND_TIMEOUT_MS = 30_000;

/** Picks the transport the configuration asks for (command > SMTP > log). */
export function createMailTransport(
  config: { smtp?: SmtpConfig; sendmailCommand?: string },
  logger: Logger,
  tls?: ConnectionOptions,
): MailTransport {
  const from = config.smtp?.from || DEFAULT_FROM;
  if (config.sendmailCommand) return new CommandTransport(config.sendmailCommand, from);
  if (config.smtp) return new SmtpTransport(config.smtp, tls);
  return new LogTransport(logger);
}

/** Writes the whole message as one info line (scope `mail`): the development fallback. */
export class LogTransport implements MailTransport {
  readonly kind = 'log';
  constructor(private logger: Logger) {}
  async send(msg: MailMessage): Promise<void> {
    const from = msg.from ? `from=${msg.from} ` : '';
    const replyTo = msg.replyTo ? ` reply_to=${msg.replyTo}` : '';
    const text = msg.text !== undefined ? ` text=${JSON.stringify(msg.text)}` : '';
    const html = msg.html !== undefined ? ` html=${JSON.stringify(msg.html)}` : '';
    this.logger.info(`${from}to=${msg.to}${replyTo} subject=${JSON.stringify(msg.subject)}${text}${html}`, 'mail');
  }
  close(): void {}
}

/** The message as RFC 5322 bytes (nodemailer composes and encodes the headers). */
export async function composeMessage(from: string, msg: MailMessage): Promise<Buffer> {
  const composer = (await loadNodemailer()).createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const info = await composer.sendMail(nodemailerMessage(from, msg));
  return info.message as Buffer;
}

/** nodemailer's message object; with both bodies it writes multipart/alternative, text first. */
function nodemailerMessage(from: string, msg: MailMessage): Record<string, unknown> {
  const headers: Record<string, string> = { ...(msg.headers ?? {}) };
  if (msg.tags?.length) headers['X-Tags'] = msg.tags.join(', ');
  return { from: msg.from || from, to: msg.to, subject: msg.subject, text: msg.text, html: msg.html, replyTo: msg.replyTo, headers };
}

/** Pipes the message into a local command. */
export class CommandTransport implements MailTransport {
  readonly kind = 'command';
  constructor(private command: string, private from: string) {}

  async send(msg: MailMessage): Promise<void> {
    const bytes = await composeMessage(this.from, msg);
    await new Promise<void>((resolve, reject) => {
      const child = spawn('/bin/sh', ['-c', this.command], { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (d: string) => (stderr = (stderr + d).slice(-500)));
      child.stdin!.on('error', () => {}); // a command that exits early closes the pipe; the exit code tells
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`mail command exited with ${code ?? signal}${stderr ? `: ${stderr.trim()}` : ''}`));
      });
      child.stdin!.end(bytes);
    });
  }
  close(): void {}
}

/** SMTP through nodemailer; `tls` adds TLS options (e.g. a private CA). */
export class SmtpTransport implements MailTransport {
  readonly kind = 'smtp';
  private transporter: Promise<Transporter> | null = null;
  private options: Record<string, unknown>;
  private from: string;

  constructor(smtp: SmtpConfig, tls?: ConnectionOptions) {
    this.from = smtp.from || DEFAULT_FROM;
    const mode = {
      none: { secure: false, ignoreTLS: true },
      starttls: { secure: false, requireTLS: true },
      implicit: { secure: true },
      auto: { secure: smtp.port === 465 },
    }[smtp.transport];
    // Pooled: a burst of mails reuses a few connections instead of one handshake per message.
    this.options = {
      pool: true,
      maxConnections: 2,
      maxMessages: 100,
      host: smtp.host,
      port: smtp.port,
      ...mode,
      auth: smtp.username ? { user: smtp.username, pass: smtp.password ?? '' } : undefined,
      tls,
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      socketTimeout: 30_000,
    };
  }

  async send(msg: MailMessage): Promise<void> {
    this.transporter ??= loadNodemailer().then((m) => m.createTransport(this.options as never) as Transporter);
    await (await this.transporter).sendMail(nodemailerMessage(this.from, msg));
  }

  close(): void {
    void this.transporter?.then((t) => t.close());
  }
}
