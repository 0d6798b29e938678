/**
 * Request logs an operator reads back (docs/operations.md, "Request logs"): every ended request,
 * and the server's own warnings and errors, kept in `<dataDir>/logs.db` (log-store.ts) for
 * `SERVICE_LOGS_MAX_DAYS` days and at most `SERVICE_LOGS_MAX_ROWS` entries.
 *
 * Off the hot path: the HTTP pipeline's request observer (`observe`) only pushes a few fields of
 * the request onto an in-memory buffer; a timer (every `flushMs`) or a full batch (`batch`
 * entries, on the next turn of the event loop) writes the buffer in one transaction. At most
 * `MAX_PENDING` entries wait; more are dropped and counted (a stalled disk must not grow the
 * process). Readers flush first, so a request is readable as soon as it ended.
 */
import type { Logger } from '../log/logger.js';
import type { Req } from '../http/types.js';
import type { RequestEnd } from '../http/pipeline.js';
import { LogStore, type LogListQuery, type LogPage } from './log-store.js';

/** The levels as PocketBase numbers them (its logs' `level`). */
export const LOG_LEVEL = { debug: -4, info: 0, warn: 4, error: 8 } as const;

/** Entries waiting to be written beyond which new ones are dropped. */
export const MAX_PENDING = 50_000;

/** The request-log settings (docs/configuration.md, "Request logs"). */
export interface LogsOptions {
  /** days an entry is kept (fractions allowed); 0: no store at all */
  maxDays: number;
  /** entries kept at most (the oldest go first); 0: no cap */
  maxRows: number;
  /** milliseconds between two writes of the buffer */
  flushMs: number;
  /** entries that make a write happen before the timer */
  batch: number;
  /** milliseconds between two retention deletes */
  pruneMs: number;
}

function numberEnv(env: NodeJS.ProcessEnv, name: string, dflt: number, integer: boolean): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) throw new Error(`${name} must be a non-negative ${integer ? 'integer' : 'number'}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * The settings from the environment: `SERVICE_LOGS_MAX_DAYS` (default 7; 0 disables the store),
 * `SERVICE_LOGS_MAX_ROWS` (default 100000; 0: no cap), `SERVICE_LOGS_FLUSH_MS` (default 500),
 * `SERVICE_LOGS_PRUNE_INTERVAL_MS` (default 60000).
 * @throws Error naming the variable for a value that is not a non-negative number
 */
export function logsOptions(env: NodeJS.ProcessEnv): LogsOptions {
  return {
    maxDays: numberEnv(env, 'SERVICE_LOGS_MAX_DAYS', 7, false),
    maxRows: numberEnv(env, 'SERVICE_LOGS_MAX_ROWS', 100_000, true),
    flushMs: Math.max(10, numberEnv(env, 'SERVICE_LOGS_FLUSH_MS', 500, true)),
    batch: 1000,
    pruneMs: Math.max(100, numberEnv(env, 'SERVICE_LOGS_PRUNE_INTERVAL_MS', 60_000, true)),
  };
}

/** One buffered request, as cheap to make as possible (rendered at write time). */
interface PendingRequest {
  kind: 0;
  time: number;
  method: string;
  path: string;
  query: string;
  status: number;
  ms: number;
  auth: string;
  ip: string;
  userAgent: string;
}
/** One buffered server message (logger.warn/error). */
interface PendingMessage {
  kind: 1;
  time: number;
  level: number;
  message: string;
  scope: string;
}

/** A query string with the values of `token` parameters hidden (file tokens and the like). */
function redactQuery(q: string): string {
  return q.includes('token') ? q.replace(/(^|&)([^=&]*token[^=&]*)=[^&]*/gi, '$1$2=***') : q;
}

/** The level of a request's entry: info below 400, warn for 4xx (and 499, gone), error for 5xx. */
export function requestLevel(status: number): number {
  return status >= 500 ? LOG_LEVEL.error : status >= 400 ? LOG_LEVEL.warn : LOG_LEVEL.info;
}

/**
 * The buffer, its timers and the store. `authOf` names a request's caller without verifying
 * anything (the route layer's own resolution, or "guest"/"token": docs/operations.md).
 */
export class RequestLogs {
  private pending: Array<PendingRequest | PendingMessage> = [];
  private scheduled = false;
  private dropped = 0;
  private failing = false;
  private readonly flushTimer: NodeJS.Timeout;
  private readonly pruneTimer: NodeJS.Timeout;
  private closed = false;

  /**
   * @param logger where a failing write is reported (the process logger, not the tee: a failure
   *   must not feed itself)
   */
  constructor(private readonly store: LogStore, private readonly opts: LogsOptions, private readonly logger: Logger, private readonly authOf: (req: Req) => string) {
    this.flushTimer = setInterval(() => this.flush(), opts.flushMs);
    this.flushTimer.unref();
    this.pruneTimer = setInterval(() => this.prune(), opts.pruneMs);
    this.pruneTimer.unref();
    this.prune();
  }

  /**
   * Opens `<dataDir>/logs.db`; null when `maxDays` is 0 (no store).
   * @throws when the file cannot be opened
   */
  static open(dataDir: string, opts: LogsOptions, logger: Logger, authOf: (req: Req) => string): RequestLogs | null {
    if (opts.maxDays === 0) return null;
    return new RequestLogs(new LogStore(dataDir), opts, logger, authOf);
  }

  /** The request observer (`HttpServerOptions.requestObservers`): one push, no I/O. */
  readonly observe = (end: RequestEnd): void => {
    const req = end.req;
    this.push({
      kind: 0, time: Date.now(), method: req.method, path: req.path, query: req.query, status: end.status, ms: end.durationMs,
      auth: this.authOf(req), ip: req.knownRemoteAddress ? req.knownRemoteAddress() : req.remoteAddress, userAgent: req.headers.userAgent,
    });
  };

  /** A server message (`level`: LOG_LEVEL's warn or error) with its logger scope. */
  note(level: number, message: string, scope: string | undefined): void {
    this.push({ kind: 1, time: Date.now(), level, message, scope: scope || 'default' });
  }

  private push(e: PendingRequest | PendingMessage): void {
    if (this.closed) return;
    if (this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push(e);
    if (this.pending.length >= this.opts.batch && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes the buffer now (the timer, a full batch, a reader, the close). Never throws. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0 && this.dropped === 0) return;
    const batch = this.pending;
    this.pending = [];
    if (this.dropped) {
      batch.push({ kind: 1, time: Date.now(), level: LOG_LEVEL.warn, message: `request logs: ${this.dropped} entries dropped (more than ${MAX_PENDING} waiting)`, scope: 'logs' });
      this.dropped = 0;
    }
    try {
      this.store.insert(batch.map(render));
      this.failing = false;
    } catch (err) {
      // reported once per failing spell, through the process logger only
      if (!this.failing) this.logger.error(`request logs: writing ${batch.length} entries failed: ${(err as Error).message}`, 'logs');
      this.failing = true;
    }
  }

  /** Deletes what the retention settings no longer keep. Never throws. */
  prune(): void {
    try {
      this.store.prune(Date.now() - this.opts.maxDays * 86_400_000, this.opts.maxRows);
    } catch (err) {
      this.logger.error(`request logs: retention delete failed: ${(err as Error).message}`, 'logs');
    }
  }

  /** A page of entries, the buffer written first. @throws ApiError 400 for a bad filter or sort */
  list(q: LogListQuery): LogPage {
    this.flush();
    return this.store.list(q);
  }

  /** One entry's JSON text or null, the buffer written first. */
  get(id: string): string | null {
    this.flush();
    return this.store.get(id);
  }

  /** Entries per hour, the buffer written first. @throws ApiError 400 for a bad filter */
  stats(filter: string | null): Array<{ total: number; date: string }> {
    this.flush();
    return this.store.stats(filter);
  }

  /** Writes what is buffered, stops the timers and closes the file. */
  close(): void {
    if (this.closed) return;
    clearInterval(this.flushTimer);
    clearInterval(this.pruneTimer);
    this.flush();
    this.closed = true;
    this.store.close();
  }
}

/** A buffered entry as the store writes it. */
function render(e: PendingRequest | PendingMessage): { time: number; level: number; message: string; data: string } {
  if (e.kind === 1) return { time: e.time, level: e.level, message: e.message, data: JSON.stringify({ type: 'server', scope: e.scope }) };
  const url = e.query ? `${e.path}?${redactQuery(e.query)}` : e.path;
  const data: Record<string, unknown> = { type: 'request', method: e.method, url, status: e.status, execTime: Math.round(e.ms * 1000) / 1000, auth: e.auth, ip: e.ip };
  if (e.userAgent) data.userAgent = e.userAgent;
  return { time: e.time, level: requestLevel(e.status), message: `${e.method} ${url}`, data: JSON.stringify(data) };
}

/**
 * `logger` with its warnings and errors also noted in `logs` (the request-log store); every
 * call still reaches `logger` as before.
 */
export function teeLogger(logger: Logger, logs: RequestLogs): Logger {
  return {
    get level() {
      return logger.level;
    },
    get format() {
      return logger.format;
    },
    get requestsEnabled() {
      return logger.requestsEnabled;
    },
    debug: (msg, scope) => logger.debug(msg, scope),
    info: (msg, scope) => logger.info(msg, scope),
    warn: (msg, scope) => {
      logger.warn(msg, scope);
      logs.note(LOG_LEVEL.warn, String(msg), scope);
    },
    error: (msg, scope) => {
      logger.error(msg, scope);
      logs.note(LOG_LEVEL.error, String(msg), scope);
    },
    request: (method, path, status, durationMs) => logger.request(method, path, status, durationMs),
  };
}
