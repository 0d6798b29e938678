/**
 * The main thread's handle on the writer thread (workers/writer.ts): queues write jobs and
 * resolves each one when the group commit that holds it is durable.
 */
import { Worker } from 'node:worker_threads';
import { GuardFailed, WriterClosed } from '../errors/store-errors.js';
import { OUT_GUARD, OUT_OK, encodeJob, type StepResult, type WriteStep, type WriterReady } from '../write-job.js';
import { workerScript } from '../worker-url.js';
import { ChangeFeed, decodeChanges, type Change } from '../change-feed.js';
import { Subscribers } from '../subscribers.js';

/** A job sent and not yet answered; `at`: when it was queued (performance.now(), ms), for its latency. */
type Pending = { resolve: (r: StepResult[]) => void; reject: (e: unknown) => void; steps: WriteStep[]; at: number };
/** A decoded job of a group: its results, or why it failed (WriterClient.decodeGroup). */
type Outcome = { job: Pending; result: StepResult[] | Error };

/** Answers each job of a group with its outcome. */
function answer(outcomes: readonly Outcome[]): void {
  for (const o of outcomes) {
    if (o.result instanceof Error) o.job.reject(o.result);
    else o.job.resolve(o.result);
  }
}

/** Error of a write that SQLite refused (constraint, schema, I/O). */
export class WriteError extends Error {
  constructor(readonly sqliteCode: string, message: string, readonly step: number) {
    super(message);
  }
}

/** How WriterClient.start opens the writer thread. */
export interface WriterClientOptions {
  /** how long a write waits for the file's lock held by another connection (ms; default 5,000) */
  busyTimeoutMs?: number;
  /**
   * Called once when the writer thread reports a failed rollback that left a write transaction
   * open (workers/writer.ts rollBackGroup), with what failed. The writer takes no more writes and
   * the outcome of the failed group is unknown, so the process must end: src/store/open.ts logs
   * the reason and exits 1. Absent: the reason goes to stderr and the process exits 1.
   */
  onFatal?: (reason: string) => void;
}

export class WriterClient {
  private worker: Worker;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private closed = false;
  /**
   * Jobs waiting to be sent, as one flat batch (wire format in write-protocol.ts). A postMessage
   * has a fixed cost to send and to receive (bench/README.md, "The writer and its messages") that a
   * create would otherwise pay alone, so the jobs of one event-loop turn travel together. (Holding
   * jobs back until the writer answered the previous batch, one message a group, measured no
   * faster: the writer then waits on the main thread between groups. bench/README.md, "Create".)
   */
  private outbox: unknown[] = [];
  private readonly flushOutbox = () => {
    const batch = this.outbox;
    this.outbox = [];
    if (batch.length) this.worker.postMessage(batch);
  };
  /** Called after each group commit, before any of its jobs' promises settle (read snapshots end here). */
  readonly committed = new Subscribers<[]>();
  /**
   * The committed changes, delivered after `committed` and before the jobs of the commit settle; a
   * batch delivered late (ChangeFeed's onLate) counts as one more commit.
   */
  readonly changes = new ChangeFeed(() => void this.commits++);
  /** Commits reported so far (SqlWriter.commits: caches of rendered reads are valid for one count). */
  commits = 0;
  /** This writer's own group commits (SqlWriter.groupCommits). */
  groupCommits = 0;
  /** Called after each group commit with its latency (SqlWriter.commitLatency). */
  readonly commitLatency = new Subscribers<[latencyMs: number]>();

  /** `onFatal`: WriterClientOptions.onFatal. */
  private constructor(worker: Worker, private readonly onFatal?: (reason: string) => void) {
    this.worker = worker;
    worker.on('message', (msg: unknown[] | WriterReady | { closed: true } | { fatal: string }) => {
      if (!Array.isArray(msg)) {
        if ('fatal' in msg) this.fatal(msg.fatal);
        return;
      }
      this.commits++;
      this.groupCommits++;
      this.committed.call();
      const n = msg.length;
      // jobs are answered in the order they were sent: the group's first is its oldest
      const oldest = n > 2 && this.commitLatency.any ? this.pending.get(msg[0] as number)?.at : undefined;
      const created: Change[] = [];
      const outcomes = this.decodeGroup(msg, n - 2, created);
      if (oldest !== undefined) this.commitLatency.call(performance.now() - oldest);
      // The jobs are answered once the feed has delivered their commit: at once, or, when a
      // listener reads first (a settings reload, change-feed.ts), after that read.
      const delivered = created.length || msg[n - 2] !== null || msg[n - 1] !== null
        ? this.changes.emit(decodeChanges(this.commits, created, msg[n - 2] as unknown[] | null, msg[n - 1] as string[] | null))
        : undefined;
      if (delivered) void delivered.then(() => answer(outcomes));
      else answer(outcomes);
    });
    worker.on('error', (err) => this.failAll(err));
    worker.on('exit', () => {
      this.closed = true; // later writes answer 503 instead of waiting on a thread that is gone
      this.failAll(new Error('writer thread exited'));
    });
  }

  /** The writer cannot go on (WriterClientOptions.onFatal): later writes answer 503 until exit. */
  private fatal(reason: string): void {
    this.closed = true;
    if (this.onFatal) return this.onFatal(reason);
    process.stderr.write(`fatal: ${reason}\n`);
    process.exit(1);
  }

  /** Starts the writer thread on the database file; rejects when it cannot open it. */
  static async start(path: string, { busyTimeoutMs = 5000, onFatal }: WriterClientOptions = {}): Promise<WriterClient> {
    const { file, execArgv } = workerScript('writer');
    const worker = new Worker(file, { workerData: { path, busyTimeoutMs }, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    const ready = await new Promise<WriterReady>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw new Error(`cannot open the database for writing: ${ready.message}`);
    }
    return new WriterClient(worker, onFatal);
  }

  /** Jobs queued and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Queues one job. Resolves with one result per step after the commit; rejects with GuardFailed
   * for a failed guard (carrying the step's `fail`), WriteError for an SQLite error, WriterClosed
   * after close() (src/store/errors/store-errors.ts).
   */
  write(steps: WriteStep[]): Promise<StepResult[]> {
    if (this.closed) return Promise.reject(new WriterClosed());
    const id = this.nextId++;
    return new Promise<StepResult[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, steps, at: performance.now() });
      if (this.outbox.length === 0) setImmediate(this.flushOutbox);
      encodeJob(this.outbox, id, steps);
    });
  }

  /** Waits for every queued job to commit, then closes the write connection. */
  /**
   * Which collections' deletes carry the deleted row (`Change.old`): realtime asks for the
   * collections it has subscribers of, and only those pay for capturing rows (measured as a clear
   * cost to deletes when every collection did: bench/README.md, "The writer and its messages").
   * Takes effect in the writer before its next group.
   */
  captureDeletedRows(collectionIds: string[]): void {
    this.worker.postMessage({ wantOld: collectionIds });
  }

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

  /**
   * Decodes one message of outcomes (wire format in write-job.ts) into each job with its result
   * or error, taking the jobs off `pending`; pushes onto `created` the records the committed jobs
   * created (their steps' `creates`), as changes. The jobs are answered by `answer`.
   */
  private decodeGroup(out: unknown[], end: number, created: Change[]): Outcome[] {
    const outcomes: Outcome[] = [];
    let k = 0;
    while (k < end) {
      const id = out[k] as number;
      const kind = out[k + 1] as number;
      k += 2;
      const p = this.pending.get(id);
      if (p === undefined) return outcomes; // every pending job was failed already (the thread died)
      this.pending.delete(id);
      if (kind === OUT_OK) {
        // The step count and which steps return rows are known here, from the job as sent.
        const steps = p.steps;
        const results: StepResult[] = [];
        for (const step of steps) {
          if (step.creates) created.push({ collection: step.creates.collection, id: step.creates.id, op: 'create' });
          if (step.returnRows) {
            results.push({ changes: out[k] as number, rows: out[k + 1] as unknown[][] | undefined, columns: out[k + 2] as string[] | undefined });
            k += 3;
          } else {
            results.push({ changes: out[k] as number });
            k += 1;
          }
        }
        outcomes.push({ job: p, result: results });
      } else if (kind === OUT_GUARD) {
        const step = out[k] as number;
        k += 1;
        outcomes.push({ job: p, result: new GuardFailed(step, p.steps[step]?.fail) });
      } else {
        const [step, code, message] = [out[k] as number, out[k + 1] as string, out[k + 2] as string];
        k += 3;
        outcomes.push({ job: p, result: new WriteError(code, message, step) });
      }
    }
    return outcomes;
  }

  private failAll(err: unknown): void {
    this.outbox = [];
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
