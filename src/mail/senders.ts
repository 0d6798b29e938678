/**
 * Sender identities (docs/framework.md, "Mail", its states, and the sender routes):
 * per-account From addresses that must be proven before an account-scoped send may use them
 * under `require_verified_sender`.
 *
 * Adding an address creates a pending identity and mails a single-use token to it (through the
 * durable queue); `verify` with the right token makes it verified. The token is kept only as an
 * HMAC. Adding a pending address again re-sends a fresh token, at most once per 60 seconds per
 * account and address (429 `too_many_requests` before that); adding a verified one answers it.
 * Addresses compare case-insensitively.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SenderRow } from '../store/mail-store.js';
import type { WriteStep } from '../store/write-job.js';
import { ApiError } from '../errors/api-error.js';
import { bindValue } from '../store/bind.js';
import { nowDate } from '../collections/fields/index.js';
import { newId } from '../records/ids.js';
import { addressOf, checkMessage, MailError } from './mail-service.js';
import type { DurableMailQueue, MailRepository } from './mail-queue.js';

/** Milliseconds before a pending address may be sent a new token. */
export const RESEND_AFTER_MS = 60_000;

/** A sender identity as the routes answer it. */
export interface SenderView {
  id: string;
  email: string;
  status: 'pending' | 'verified';
  verified_at: string | null;
}

const view = (r: SenderRow): SenderView => ({ id: r.id, email: r.email, status: r.status, verified_at: r.verified_at });
const NOT_FOUND = { status: 404, code: 'not_found', message: "The requested resource wasn't found." };

/** The sender identities of every account (this module's header), rows through `repo`. */
export class SenderIdentities {
  private key: Buffer;

  /** `repo`: the mail statements and the writer; `queue` sends the tokens; `secret` keys their HMAC. */
  constructor(private repo: MailRepository, private queue: DurableMailQueue, secret: Buffer) {
    this.key = createHmac('sha256', secret).update('svc sender tokens v1').digest();
  }

  private hash(token: string): string {
    return createHmac('sha256', this.key).update(token).digest('hex');
  }

  private async write(steps: WriteStep[]): Promise<void> {
    for (const s of steps) s.params = s.params.map(bindValue);
    await this.repo.write(steps);
  }

  /**
   * Adds `email` to `account`'s identities (or re-sends its token): `created` true when a new
   * pending identity was made (201), false when the identity exists (200).
   * @throws ApiError 400 for an invalid address, 429 within 60 s of the last token
   */
  async add(account: string, email: unknown): Promise<{ sender: SenderView; created: boolean }> {
    if (typeof email !== 'string' || email.trim() === '') throw ApiError.validation({ email: { code: 'validation_required', message: 'Missing required value.' } });
    let address: string;
    try {
      address = addressOf(checkMessage({ to: email.trim(), subject: 'x', text: 'x' }).to);
    } catch (err) {
      if (err instanceof MailError) throw ApiError.validation({ email: { code: 'validation_invalid_email', message: 'Must be a valid email address.' } });
      throw err;
    }
    const existing = await this.repo.rows.sender(account, address);
    if (existing?.status === 'verified') return { sender: view(existing), created: false };
    const now = Date.now();
    if (existing && now - existing.sentAt < RESEND_AFTER_MS) throw ApiError.tooManyRequests();
    const token = randomBytes(24).toString('base64url');
    const row: SenderRow = { id: existing?.id ?? newId(), account, email: address, status: 'pending', verified_at: null, tokenHash: this.hash(token), sentAt: now };
    await this.write([this.repo.rows.putSenderStep(row, nowDate())]);
    await this.queue.enqueue({
      to: address,
      subject: 'Confirm this sender address',
      text: `Someone asked to send mail as ${address}. To confirm it, verify sender ${row.id} with this token:\n\n${token}\n\nIf this was not you, ignore this message.`,
    }, 'senders', account);
    return { sender: view(row), created: !existing };
  }

  /**
   * Marks a pending identity of `account` verified when `token` is its token.
   * @throws ApiError 404 for an unknown id, another account's, a wrong or absent token
   */
  async verify(account: string, id: string, token: unknown): Promise<void> {
    const row = await this.repo.rows.senderById(id);
    if (!row || row.account !== account || typeof token !== 'string' || token === '') throw ApiError.notFound();
    if (row.status === 'verified') return;
    await this.write([this.repo.rows.verifySenderStep(id, this.hash(token), nowDate(), NOT_FOUND)]);
  }

  /** The identities of `account`, oldest first. */
  async list(account: string): Promise<SenderView[]> {
    return (await this.repo.rows.senders(account)).map(view);
  }

  /** Whether `from` is a verified identity of `account`. */
  async verified(account: string, from: string): Promise<boolean> {
    return (await this.repo.rows.sender(account, addressOf(from)))?.status === 'verified';
  }
}
