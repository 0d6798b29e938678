/**
 * The durable mail queue (docs/framework.md, "Mail": enqueue hands the message to a
 * queue for delivery by a worker of job kind `mail`, never losing an accepted
 * message). Every accepted message is a `_mailQueue` row committed through the writer before
 * `enqueue` resolves; the worker delivers due rows through the mail backend, a few at once, and
 * deletes each once the backend took it. A failed attempt is retried after 1 s, 5 s, 30 s, 2 min
 * and 10 min; after the last it stays as `failed` with its error. A process that stops or is
 * killed leaves its undelivered rows, which the next start delivers: delivery is at least once (a
 * kill between the backend's answer and the row's deletion sends that message again).
 *
 * Auth mail (verification, reset, magic links, one-time codes) goes through this queue too, via
 * `transport(queue)`.
 */
import type { Logger } from '../log/logger.js';
import type { MailRowStore } from '../store/mail-store.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import type { MailMessage, MailTransport } from './transports.js';
import { bindValue } from '../store/bind.js';
import { newId } from '../records/ids.js';

/** Waits after the 1st, 2nd, … failed attempt; past the last, the message is failed for good. */
export const RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000];
/** Deliveries at once (the SMTP transport pools its connections). */
const CONCURRENCY = 8;

/**
 * What the mail queue and the sender identities (senders.ts) need of storage: the mail statements
 * (`_mailQueue`, suppressions, sender identities; src/store/mail-store.ts) and the writer that
 * commits their steps. Built over the Store by the composition root (src/boot/repositories.ts); a
 * test may give a small fake.
 */
export interface MailRepository {
  /** the mail statements of the open database's backend */
  rows: MailRowStore;
  /** Commits `steps` as one write job (SqlWriter.write). @throws the writer's error when the job fails */
  write(steps: WriteStep[]): Promise<StepResult[]>;
}

/** The durable queue of this module's header: `_mailQueue` rows through `repo`, delivered to `backend`. */
export class DurableMailQueue {
  private inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private closed = false;
  private pumping = false;
  private again = false;
  /**
   * `repo`: the mail statements and the writer (MailRepository). `isSuppressed`: whether a
   * queued message's recipient is suppressed meanwhile (the app's `check_suppression`; then it is
   * not sent); null: none is. `delays`: RETRY_DELAYS_MS unless a test shortens them.
   */
  constructor(private repo: MailRepository, private backend: MailTransport, private logger: Logger, private isSuppressed: ((msg: MailMessage, account: string) => Promise<boolean>) | null = null, private delays: readonly number[] = RETRY_DELAYS_MS) {}

  /**
   * Stores `msg` for delivery from `queue`; resolves once the row is committed (from then on it
   * survives a crash). `account`: the account the message is sent for ('' for none).
   * @throws Error when the queue is closed or the write fails
   */
  async enqueue(msg: MailMessage, queue: string, account = ''): Promise<string> {
    if (this.closed) throw new Error('the mail queue is closed');
    const id = newId();
    const step = this.repo.rows.enqueueStep(id, queue, JSON.stringify(msg), account, Date.now());
    step.params = step.params.map(bindValue);
    await this.repo.write([step]);
    this.wake();
    return id;
  }

  /** A transport that enqueues on `queue` (for the auth mails). */
  transport(queue: string): MailTransport {
    return { kind: this.backend.kind, send: async (msg) => void (await this.enqueue(msg, queue)), close: () => {} };
  }

  /** Starts delivering: rows left by an earlier process first. */
  start(): void {
    this.running = true;
    this.wake();
  }

  /** Messages waiting (pending) and given up (failed). */
  counts(): Promise<{ pending: number; failed: number }> {
    return this.repo.rows.counts();
  }

  /** Resolves once no message is due and none is being delivered (tests, benchmarks). */
  async whenIdle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.inFlight.values()]);
      const next = await this.repo.rows.nextDue();
      if (this.inFlight.size === 0 && (next === undefined || next > Date.now())) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Stops picking messages and waits (up to `deadlineMs`) for the deliveries under way; queued ones stay for the next start. */
  async close(deadlineMs = 10_000): Promise<void> {
    this.closed = true;
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), new Promise((r) => (t = setTimeout(r, deadlineMs)))]);
    clearTimeout(t);
  }

  private wake(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    setImmediate(() => void this.pump());
  }

  /** Starts deliveries of due rows up to the concurrency; then sleeps until the next one is due. */
  private async pump(): Promise<void> {
    if (!this.running || this.pumping) return;
    this.pumping = true;
    try {
      do {
        this.again = false;
        const free = CONCURRENCY - this.inFlight.size;
        if (free <= 0) break;
        const due = await this.repo.rows.due(Date.now(), free + this.inFlight.size);
        if (!this.running) return; // closed during the read: nothing new starts
        const rows = due.filter((r) => !this.inFlight.has(r.id)).slice(0, free);
        for (const row of rows) {
          const run = this.deliver(row.id, row.message, row.attempts, row.account).finally(() => {
            this.inFlight.delete(row.id);
            this.wake();
          });
          this.inFlight.set(row.id, run);
        }
      } while (this.again);
      if (this.inFlight.size === 0) await this.sleepUntilDue();
    } catch (err) {
      this.logger.error(`mail queue: ${(err as Error)?.message ?? String(err)}`, 'mail');
      await this.sleepUntilDue(1_000);
    } finally {
      this.pumping = false;
      // a wake during the last read (a message queued meanwhile) pumps again
      if (this.again) this.wake();
    }
  }

  private async sleepUntilDue(atLeastMs = 0): Promise<void> {
    // after a failure (`atLeastMs`) a failing read only leaves the minimum wait
    const next = await this.repo.rows.nextDue().catch((err: unknown) => {
      if (!atLeastMs) throw err;
      return undefined;
    });
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    if (next === undefined && !atLeastMs) return;
    const wait = Math.max(atLeastMs, next === undefined ? 0 : next - Date.now(), 0);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.pump();
    }, Math.min(wait, 60_000));
    this.timer.unref();
  }

  private async deliver(id: string, text: string, attempts: number, account: string): Promise<void> {
    let msg: MailMessage;
    try {
      msg = JSON.parse(text) as MailMessage;
    } catch {
      await this.write(this.repo.rows.failedStep(id, attempts + 1, 'the stored message is not JSON', null, Date.now()));
      return;
    }
    if (this.isSuppressed && (await this.isSuppressed(msg, account))) {
      this.logger.info(`mail to ${msg.to} not sent: the recipient is suppressed (bounce or complaint)`, 'mail');
      await this.write(this.repo.rows.failedStep(id, attempts, 'the recipient is suppressed', null, Date.now()));
      return;
    }
    try {
      await this.backend.send(msg);
    } catch (err) {
      const n = attempts + 1;
      const error = (err as Error)?.message ?? String(err);
      const next = n <= this.delays.length ? Date.now() + this.delays[n - 1] : null;
      if (next === null) this.logger.error(`mail to ${msg.to} failed for good after ${n} attempts: ${error}`, 'mail');
      else this.logger.warn(`mail to ${msg.to} failed (attempt ${n}), retrying in ${Math.round((next - Date.now()) / 1000)} s: ${error}`, 'mail');
      await this.write(this.repo.rows.failedStep(id, n, error, next, Date.now()));
      return;
    }
    await this.write(this.repo.rows.deliveredStep(id));
  }

  private async write(step: WriteStep): Promise<void> {
    step.params = step.params.map(bindValue);
    try {
      await this.repo.write([step]);
    } catch (err) {
      this.logger.error(`mail queue: could not record a delivery: ${(err as Error)?.message ?? String(err)}`, 'mail');
    }
  }
}
