/**
 * The request-log store's client (docs/operations.md, "Request logs"): `<dataDir>/logs.db` is
 * owned by a thread of its own (workers/logs.ts), never the main database's writer, so rendering
 * and inserting entries and scanning them for a filter never take the main thread's time (the
 * inserts on the main thread measured as a large share of a read's time: bench/README.md,
 * "Request logs"). Messages are handled in order, so a read sent after a batch sees it.
 */
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import { workerScript } from '../store/worker-url.js';
import { logFilterSql, logSortSql } from './log-query.js';

/** The store's file name inside the data directory. */
export const LOGS_FILE = 'logs.db';

/** A page of entries as the list route answers it (PocketBase's list shape); `items` is JSON text. */
export interface LogPage {
  page: number;
  perPage: number;
  /** -1 when the total was skipped (`skipTotal`) */
  totalItems: number;
  totalPages: number;
  /** the entries' JSON objects as an array's text */
  items: string;
}

/** The list request: 1-based page, page size, the filter and sort as sent, and whether to count. */
export interface LogListQuery {
  page: number;
  perPage: number;
  filter: string | null;
  sort: string | null;
  skipTotal: boolean;
}

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

/**
 * The thread that owns `logs.db`, and its requests in flight. On a data directory without
 * entries yet the thread starts on the first message (a batch to write, a read), not at the
 * server's start: a thread costs about 9 MB of RSS, and by default only failed requests and
 * warnings are kept, so a healthy server may not need it for a long time (bench/README.md,
 * "Memory"). A `logs.db` that holds entries is opened at the start (`start`), as before.
 */
export class LogStore {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** null until the thread is started */
  private worker: Worker | null = null;
  /** settles once the thread opened the file (or failed to: the error's message) */
  private opened: Promise<string | null> | null = null;
  private exited = false;
  private closing = false;
  /** false when `start` waits for the open: its caller hears a failure, `onError` does not */
  private reportOpenFailure = true;
  private openFailed = false;

  /**
   * @param file `<dataDir>/logs.db`
   * @param holdsEntries whether the file held anything when the store was made
   * @param onError hears failed writes, and a file the thread could not open on a lazy start
   * @param onStart called once the thread exists, before any message is sent to it (the request
   *   logs send their retention delete first)
   */
  private constructor(private readonly file: string, readonly holdsEntries: boolean, private readonly onError: (message: string) => void, private readonly onStart: () => void) {}

  /**
   * The store of `<dataDir>/logs.db`, its thread not started yet. Creates the file when absent
   * (empty, mode 0600, as the thread would: SQLite gives -wal and -shm the file's mode, and
   * request URLs are no business of other local users). `onError` hears failed writes, and on a
   * lazy start a file the thread cannot open (the store then answers as a stopped thread).
   * `onStart`: see the constructor.
   * @throws Error when the file cannot be created
   */
  static open(dataDir: string, onError: (message: string) => void, onStart: () => void = () => undefined): LogStore {
    const file = join(dataDir, LOGS_FILE);
    let size = 0;
    try {
      if (existsSync(file)) size = statSync(file).size;
      else closeSync(openSync(file, 'a', 0o600));
    } catch (err) {
      throw new Error(`cannot open the request logs (${LOGS_FILE}): ${(err as Error).message}`);
    }
    return new LogStore(file, size > 0, onError, onStart);
  }

  /**
   * Starts the thread now and waits until it opened the file.
   * @throws Error when the file cannot be opened (the thread is ended)
   */
  async start(): Promise<void> {
    this.reportOpenFailure = false;
    this.thread();
    const failed = await this.opened;
    if (failed !== null) throw new Error(`cannot open the request logs (${LOGS_FILE}): ${failed}`);
  }

  /** Whether the thread was started. */
  get started(): boolean {
    return this.worker !== null;
  }

  /**
   * Whether the thread could not open the file (reported once, by `start` or `onError`; the
   * requests that were waiting fail with "the request-log thread stopped").
   */
  get failedToOpen(): boolean {
    return this.openFailed;
  }

  /** The thread, started on the first call; null once it stopped (or could not open the file). */
  private thread(): Worker | null {
    if (this.exited) return null;
    if (this.worker) return this.worker;
    const { file, execArgv } = workerScript('logs');
    const worker = new Worker(file, { workerData: { file: this.file }, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    this.worker = worker;
    // messages sent before the thread is ready wait in its port and are handled in order once
    // it opened the file; its first message says whether it did
    let ready: (failed: string | null) => void = () => undefined;
    this.opened = new Promise((resolve) => {
      ready = resolve;
    });
    let isOpen = false;
    worker.on('message', (m: Reply | { ready: boolean; message?: string }) => {
      if (this.exited) return;
      if (!isOpen) {
        if ('ready' in m && !m.ready) {
          const message = m.message ?? 'unknown error';
          this.openFailed = true;
          ready(message);
          this.stopped();
          // the thread closes its handle and ends by itself (terminating it could abort the
          // process: workers/logs.ts)
          if (this.reportOpenFailure && !this.closing) this.onError(`cannot open the request logs (${LOGS_FILE}): ${message}`);
          return;
        }
        isOpen = true;
        ready(null);
        return;
      }
      const r = m as Reply;
      const w = this.waiting.get(r.id);
      if (!w) {
        if (!r.ok) this.onError(r.message); // a failed insert (no one waits for those)
        return;
      }
      this.waiting.delete(r.id);
      if (this.waiting.size === 0 && !this.closing) worker.unref();
      if (r.ok) w.resolve(r.value);
      else w.reject(new Error(r.message));
    });
    worker.on('error', (err) => {
      if (!isOpen) this.openFailed = true;
      ready(err.message);
      if (isOpen || this.reportOpenFailure) this.onError(err.message);
    });
    worker.once('exit', () => {
      ready('the request-log thread stopped');
      this.stopped();
    });
    worker.unref();
    this.onStart();
    return worker;
  }

  /** The thread ended (or never opened the file): every waiting request fails. */
  private stopped(): void {
    this.exited = true;
    for (const w of this.waiting.values()) w.reject(new Error('the request-log thread stopped'));
    this.waiting.clear();
  }

  private ask<T>(msg: Record<string, unknown>): Promise<T> {
    const worker = this.thread();
    if (!worker) return Promise.reject(new Error('the request-log thread stopped'));
    const id = this.nextId++;
    // the thread keeps the process alive only while someone waits for an answer
    if (this.waiting.size === 0) worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...msg, id });
    });
  }

  /** Sends `batch` (entries encoded as workers/logs-wire.ts says) to be written in one transaction; failures reach `onError`. */
  insert(batch: string): void {
    if (batch !== '') this.thread()?.postMessage({ op: 'insert', batch });
  }

  /**
   * One page of entries.
   * @throws ApiError 400 for a filter or sort the log fields refuse (log-query.ts), before anything is sent
   */
  async list(q: LogListQuery): Promise<LogPage> {
    const where = logFilterSql(q.filter);
    const order = logSortSql(q.sort);
    const r = await this.ask<{ items: string; total: number }>({ op: 'list', where: where.sql, params: where.params, order, limit: q.perPage, offset: (q.page - 1) * q.perPage, count: !q.skipTotal });
    return { page: q.page, perPage: q.perPage, totalItems: r.total, totalPages: r.total < 0 ? -1 : Math.ceil(r.total / q.perPage), items: r.items };
  }

  /** One entry's JSON object text, or null when there is none with `id`. */
  get(id: string): Promise<string | null> {
    return this.ask<string | null>({ op: 'get', entry: id });
  }

  /**
   * Entries per hour, oldest first: `[{total, date}]`, `date` the hour's start
   * (`YYYY-MM-DD HH:00:00.000Z`).
   * @throws ApiError 400 for a filter the log fields refuse
   */
  stats(filter: string | null): Promise<Array<{ total: number; date: string }>> {
    const where = logFilterSql(filter);
    return this.ask({ op: 'stats', where: where.sql, params: where.params });
  }

  /** Deletes the entries older than `before` (epoch ms) and, past `maxRows` (0: no cap), the oldest; resolves with how many went. */
  prune(before: number, maxRows: number): Promise<number> {
    return this.ask<number>({ op: 'prune', before, maxRows });
  }

  /** Lets every message sent so far be handled, then closes the file and ends the thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (this.exited || !worker) {
      this.exited = true; // never started: nothing to close, and nothing starts it any more
      return;
    }
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    this.closing = true; // stays referenced until it exited
    await this.ask({ op: 'close' }).catch(() => undefined);
    await exited;
  }
}
