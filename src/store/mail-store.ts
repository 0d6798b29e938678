/**
 * The storage boundary of outbound mail (docs/mail.md, "Delivery": the durable queue of job kind
 * `mail`; docs/framework.md, "Mail": senders and bounces); implemented for both backends by
 * src/store/shared/mail-sql.ts.
 */
import type { WriteStep } from './write-job.js';

/** A queued message as stored. `message` is the checked transport message as JSON text. */
export interface QueuedMail {
  id: string;
  queue: string;
  message: string;
  attempts: number;
  /** the account it is sent for ('' for none) */
  account: string;
}

/** A sender identity row (addresses compare case-insensitively). */
export interface SenderRow {
  id: string;
  account: string;
  email: string;
  status: 'pending' | 'verified';
  verified_at: string | null;
  /** HMAC of the verification token (pending only) */
  tokenHash: string | null;
  /** epoch ms of the last verification mail */
  sentAt: number;
}

export interface MailRowStore {
  /** Step queueing a message, due at `dueMs` (epoch ms). */
  enqueueStep(id: string, queue: string, message: string, account: string, nowMs: number): WriteStep;
  /** Up to `limit` pending messages due at `nowMs`, oldest first. */
  due(nowMs: number, limit: number): Promise<QueuedMail[]>;
  /** The earliest `next_at` (epoch ms) of a pending message, or undefined when none is pending. */
  nextDue(): Promise<number | undefined>;
  /** Step removing a delivered message. */
  deliveredStep(id: string): WriteStep;
  /** Step recording a failed attempt: due again at `nextMs`, or `failed` for good when `nextMs` is null. */
  failedStep(id: string, attempts: number, error: string, nextMs: number | null, nowMs: number): WriteStep;
  /** Messages by status (pending, failed) for operators and tests. */
  counts(): Promise<{ pending: number; failed: number }>;

  /** Whether `email` is suppressed (globally, or for `account` when given). */
  suppressed(email: string, account: string): Promise<boolean>;
  /** Step recording a suppression (hard bounce or complaint) of `email` for `account` ('' = global). */
  suppressStep(email: string, account: string, reason: string, now: string): WriteStep;

  /** The sender identity `email` of `account`, or undefined. */
  sender(account: string, email: string): Promise<SenderRow | undefined>;
  /** A sender identity by id. */
  senderById(id: string): Promise<SenderRow | undefined>;
  /** The sender identities of `account`, oldest first. */
  senders(account: string): Promise<SenderRow[]>;
  /** Step creating or refreshing a pending identity (new token hash and send time). */
  putSenderStep(row: SenderRow, now: string): WriteStep;
  /** Step marking an identity verified (guarded on the token hash). */
  verifySenderStep(id: string, tokenHash: string, now: string, fail: NonNullable<WriteStep['fail']>): WriteStep;
}
