/**
 * A bounded in-memory background queue: request handlers push work (token creation and mail
 * delivery) and answer at once, so a response never waits on, or reveals, that work
 * (docs/api.md: request-verification and request-password-reset answer with identical status and
 * timing; the token email is delivered from a background queue).
 *
 * One task runs at a time, in arrival order. Past `capacity` waiting tasks new ones are dropped
 * (and logged), so a flood cannot grow memory without bound. `close()` stops intake and waits for
 * the queue to drain (bounded by a deadline) so acknowledged requests still get their mail before
 * the database closes.
 */
import type { Logger } from '../log/logger.js';

export type Task = () => Promise<void>;

export class BackgroundQueue {
  private tasks: Task[] = [];
  private running = false;
  private closed = false;
  private idle: Array<() => void> = [];

  constructor(private logger: Logger, private name = 'mail', private capacity = 10_000) {}

  /** Enqueues a task; false when the queue is full or closed (the task is dropped). */
  push(task: Task): boolean {
    if (this.closed || this.tasks.length >= this.capacity) {
      this.logger.warn(`${this.name} queue ${this.closed ? 'closed' : 'full'}: a task was dropped`, this.name);
      return false;
    }
    this.tasks.push(task);
    if (!this.running) {
      this.running = true;
      // Start after the current turn: the handler's response goes out first.
      setImmediate(() => void this.drain());
    }
    return true;
  }

  /** Tasks waiting or running. */
  get pending(): number {
    return this.tasks.length + (this.running ? 1 : 0);
  }

  /** Resolves once nothing is queued or running. */
  whenIdle(): Promise<void> {
    if (!this.running && this.tasks.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops intake and waits up to `deadlineMs` for queued tasks to finish. */
  async close(deadlineMs = 10_000): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs)));
    await Promise.race([this.whenIdle(), late]);
    clearTimeout(timer);
    if (this.tasks.length) this.logger.warn(`${this.name} queue closed with ${this.tasks.length} task(s) undone`, this.name);
    this.tasks = [];
  }

  private async drain(): Promise<void> {
    for (let task = this.tasks.shift(); task; task = this.tasks.shift()) {
      try {
        await task();
      } catch (err) {
        this.logger.error(`${this.name} task failed: ${(err as Error)?.message ?? String(err)}`, this.name);
      }
    }
    this.running = false;
    const waiters = this.idle;
    this.idle = [];
    for (const w of waiters) w();
  }
}
