/**
 * The request-log store's client (docs/operations.md, "Request logs"): `<dataDir>/logs.db` is
 * owned by a thread of its own (workers/logs.ts), never the main database's writer, so rendering
 * and inserting entries and scanning them for a filter never take the main thread's time (the
 * inserts on the main thread measured as a large share of a read's time: bench/README.md,
 * "Request logs"). Messages are handled in order, so a read sent after a batch sees it.
 */
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
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

/** The thread that owns `logs.db`, and its requests in flight. */
export class LogStore {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited = false;
  private closing = false;

  private constructor(private readonly worker: Worker, onError: (message: string) => void) {
    worker.on('message', (m: Reply) => {
      const w = this.waiting.get(m.id);
      if (!w) {
        if (!m.ok) onError(m.message); // a failed insert (no one waits for those)
        return;
      }
      this.waiting.delete(m.id);
      if (this.waiting.size === 0 && !this.closing) worker.unref();
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(m.message));
    });
    worker.on('error', (err) => onError(err.message));
    worker.once('exit', () => {
      this.exited = true;
      for (const w of this.waiting.values()) w.reject(new Error('the request-log thread stopped'));
      this.waiting.clear();
    });
    worker.unref();
  }

  /**
   * Starts the thread on `<dataDir>/logs.db` (created when absent); `onError` hears failed writes.
   * @throws Error when the file cannot be opened
   */
  static async open(dataDir: string, onError: (message: string) => void): Promise<LogStore> {
    const { file, execArgv } = workerScript('logs');
    const worker = new Worker(file, { workerData: { file: join(dataDir, LOGS_FILE) }, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    const ready = await new Promise<{ ready: boolean; message?: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw new Error(`cannot open the request logs (${LOGS_FILE}): ${ready.message}`);
    }
    return new LogStore(worker, onError);
  }

  private ask<T>(msg: Record<string, unknown>): Promise<T> {
    if (this.exited) return Promise.reject(new Error('the request-log thread stopped'));
    const id = this.nextId++;
    // the thread keeps the process alive only while someone waits for an answer
    if (this.waiting.size === 0) this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...msg, id });
    });
  }

  /** Sends `batch` (entries encoded as workers/logs-wire.ts says) to be written in one transaction; failures reach `onError`. */
  insert(batch: string): void {
    if (!this.exited && batch !== '') this.worker.postMessage({ op: 'insert', batch });
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
    if (this.exited) return;
    const exited = new Promise<void>((r) => this.worker.once('exit', () => r()));
    this.closing = true; // stays referenced until it exited
    await this.ask({ op: 'close' }).catch(() => undefined);
    await exited;
  }
}
