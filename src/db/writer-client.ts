/**
 * The main thread's handle on the writer thread (workers/writer.ts): queues write jobs and
 * resolves each one when the group commit that holds it is durable.
 */
import { Worker } from 'node:worker_threads';
import { ApiError } from '../errors/api-error.js';
import type { StepResult, WriteOutcome, WriteStep, WriterReady } from './write-protocol.js';
import { workerScript } from './worker-url.js';

type Pending = { resolve: (r: StepResult[]) => void; reject: (e: unknown) => void };

/** Error of a write that SQLite refused (constraint, schema, I/O). */
export class WriteError extends Error {
  constructor(readonly sqliteCode: string, message: string, readonly step: number) {
    super(message);
  }
}

export class WriterClient {
  private worker: Worker;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private closed = false;
  /**
   * Jobs of one event-loop turn travel to the writer in one message: a postMessage has a fixed
   * cost (about 10 µs measured) that a create would otherwise pay alone.
   */
  private outbox: Array<{ id: number; steps: WriteStep[] }> = [];
  private readonly flushOutbox = () => {
    const jobs = this.outbox;
    this.outbox = [];
    if (jobs.length) this.worker.postMessage(jobs);
  };
  /** Called after each group commit, before any of its jobs' promises settle (read snapshots end here). */
  onCommit: (() => void) | null = null;
  /** Group commits reported so far (caches of rendered reads are valid for one count). */
  commits = 0;

  private constructor(worker: Worker) {
    this.worker = worker;
    worker.on('message', (msg: WriteOutcome[] | WriterReady | { closed: true }) => {
      if (!Array.isArray(msg)) return;
      this.commits++;
      this.onCommit?.();
      for (const out of msg) this.settle(out);
    });
    worker.on('error', (err) => this.failAll(err));
    worker.on('exit', () => this.failAll(new Error('writer thread exited')));
  }

  /** Starts the writer thread on the database file; rejects when it cannot open it. */
  static async start(path: string, busyTimeoutMs = 5000): Promise<WriterClient> {
    const { file, execArgv } = workerScript('writer');
    const worker = new Worker(file, { workerData: { path, busyTimeoutMs }, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    const ready = await new Promise<WriterReady>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw new Error(`cannot open the database for writing: ${ready.message}`);
    }
    return new WriterClient(worker);
  }

  /** Jobs queued and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Queues one job. Resolves with one result per step after the commit; rejects with ApiError
   * for a failed guard (the step's `fail`), WriteError for an SQLite error.
   */
  write(steps: WriteStep[]): Promise<StepResult[]> {
    if (this.closed) return Promise.reject(new ApiError(503, 'overloaded', 'The server is shutting down.'));
    const id = this.nextId++;
    return new Promise<StepResult[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.outbox.push({ id, steps });
      if (this.outbox.length === 1) setImmediate(this.flushOutbox);
    });
  }

  /** Waits for every queued job to commit, then closes the write connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => {
      const onMsg = (msg: unknown) => {
        if (msg && typeof msg === 'object' && 'closed' in msg) {
          this.worker.off('message', onMsg);
          resolve();
        }
      };
      this.worker.on('message', onMsg);
      this.flushOutbox();
      this.worker.postMessage({ close: true });
    });
    await this.worker.terminate();
  }

  private settle(out: WriteOutcome): void {
    const p = this.pending.get(out.id);
    if (!p) return;
    this.pending.delete(out.id);
    if (out.ok) p.resolve(out.results);
    else if (out.kind === 'guard') p.reject(new ApiError(out.status, out.code, out.message, out.data ?? {}));
    else p.reject(new WriteError(out.sqliteCode, out.message, out.step));
  }

  private failAll(err: unknown): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
