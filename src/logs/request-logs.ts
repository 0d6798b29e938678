/**
 * Request logs an operator reads back (docs/operations.md, "Request logs"): every ended request,
 * and the server's own warnings and errors, kept in `<dataDir>/logs.db` (log-store.ts) for
 * `SERVICE_LOGS_MAX_DAYS` days and at most `SERVICE_LOGS_MAX_ROWS` entries.
 *
 * Off the hot path: the HTTP pipeline's request observer (`observe`) only pushes a few fields of
 * the request onto an in-memory buffer; a timer (every `flushMs`) or a full batch (`batch`
 * entries, on the next turn of the event loop) sends the buffer to the store's own thread
 * (log-store.ts, workers/logs.ts), which renders and writes it in one transaction. At most
 * `MAX_PENDING` entries wait; more are dropped and counted (a stalled disk must not grow the
 * process). Readers flush first, so a request is readable as soon as it ended.
 */
import type { Logger } from '../log/logger.js';
import type { Req } from '../http/types.js';
import type { RequestEnd } from '../http/pipeline.js';
import { LogStore, type LogListQuery, type LogPage } from './log-store.js';
import { END, MESSAGE, REQUEST, SEP } from '../../workers/logs-wire.js';

/** The levels as PocketBase numbers them (its logs' `level`). */
export const LOG_LEVEL = { debug: -4, info: 0, warn: 4, error: 8 } as const;

/** Control characters: the batch's separators are among them (see `clean`). */
const CONTROL = /[\u0000-\u001f]/;

/** `text` with control characters as spaces, so no value can end a field or an entry of the batch. */
function clean(text: string): string {
  return CONTROL.test(text) ? text.replace(/[\u0000-\u001f]/g, ' ') : text;
}

/** Entries waiting to be written beyond which new ones are dropped. */
export const MAX_PENDING = 50_000;

/** The request-log settings (docs/configuration.md, "Request logs"). */
export interface LogsOptions {
  /** days an entry is kept (fractions allowed); 0: no store at all */
  maxDays: number;
  /** entries kept at most (the oldest go first); 0: no cap */
  maxRows: number;
  /** the lowest level kept (LOG_LEVEL): 0 keeps every request, 4 only 4xx/5xx and warnings, 8 only 5xx and errors */
  minLevel: number;
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
 * `SERVICE_LOGS_MIN_LEVEL`: a level number or name (`info`, `warn`, `error`); default 4 (warn):
 * keeping every request doubles the CPU time of a cached read (bench/README.md, "Request logs").
 */
function minLevelEnv(env: NodeJS.ProcessEnv): number {
  const raw = (env.SERVICE_LOGS_MIN_LEVEL ?? '').trim().toLowerCase();
  if (raw === '') return LOG_LEVEL.warn;
  if (raw in LOG_LEVEL) return LOG_LEVEL[raw as keyof typeof LOG_LEVEL];
  if (/^-?\d+$/.test(raw)) return Number(raw);
  throw new Error(`SERVICE_LOGS_MIN_LEVEL must be a level number (0 info, 4 warn, 8 error) or name, got ${JSON.stringify(env.SERVICE_LOGS_MIN_LEVEL)}`);
}

/**
 * The settings from the environment: `SERVICE_LOGS_MAX_DAYS` (default 7; 0 disables the store),
 * `SERVICE_LOGS_MAX_ROWS` (default 100000; 0: no cap), `SERVICE_LOGS_MIN_LEVEL` (default 4,
 * warn: failed requests, warnings and errors), `SERVICE_LOGS_FLUSH_MS` (default 500),
 * `SERVICE_LOGS_PRUNE_INTERVAL_MS` (default 60000).
 * @throws Error naming the variable for a value that is not a non-negative number
 */
export function logsOptions(env: NodeJS.ProcessEnv): LogsOptions {
  return {
    maxDays: numberEnv(env, 'SERVICE_LOGS_MAX_DAYS', 7, false),
    maxRows: numberEnv(env, 'SERVICE_LOGS_MAX_ROWS', 100_000, true),
    minLevel: minLevelEnv(env),
    flushMs: Math.max(10, numberEnv(env, 'SERVICE_LOGS_FLUSH_MS', 500, true)),
    batch: 1000,
    pruneMs: Math.max(100, numberEnv(env, 'SERVICE_LOGS_PRUNE_INTERVAL_MS', 60_000, true)),
  };
}

/**
 * The buffer, its timers and the store. `authOf` names a request's caller without verifying
 * anything (the route layer's own resolution, or "guest"/"token": docs/operations.md).
 */
export class RequestLogs {
  /** the buffered entries, encoded as workers/logs-wire.ts says */
  private pending = '';
  private count = 0;
  private scheduled = false;
  private dropped = 0;
  private failing = false;
  private readonly flushTimer: NodeJS.Timeout;
  private readonly pruneTimer: NodeJS.Timeout;
  private closed = false;
  /** the lowest request status kept: 0 (all), 400 (warn: 4xx and 5xx) or 500 (error) */
  private readonly minStatus: number;

  /**
   * @param logger where a failing write is reported (the process logger, not the tee: a failure
   *   must not feed itself)
   */
  private constructor(private readonly store: LogStore, private readonly opts: LogsOptions, private readonly logger: Logger, private readonly authOf: (req: Req) => string) {
    this.minStatus = opts.minLevel > LOG_LEVEL.warn ? 500 : opts.minLevel > LOG_LEVEL.info ? 400 : 0;
    this.flushTimer = setInterval(() => this.flush(), opts.flushMs);
    this.flushTimer.unref();
    this.pruneTimer = setInterval(() => this.prune(), opts.pruneMs);
    this.pruneTimer.unref();
  }

  /**
   * The request logs over `<dataDir>/logs.db`; null when `maxDays` is 0 (no store). On a file
   * without entries yet the store's thread starts with the first entry to write or the first
   * read (log-store.ts); a file that holds entries is opened now. Either way the thread's first
   * message is a retention delete, so no read ever sees what the settings no longer keep.
   * @throws Error when the file cannot be created, or one holding entries cannot be opened
   */
  static async open(dataDir: string, opts: LogsOptions, logger: Logger, authOf: (req: Req) => string): Promise<RequestLogs | null> {
    if (opts.maxDays === 0) return null;
    let self: RequestLogs | null = null;
    const store = LogStore.open(dataDir, (message) => self?.failed(message), () => self?.prune());
    self = new RequestLogs(store, opts, logger, authOf);
    if (store.holdsEntries) {
      try {
        await store.start();
      } catch (err) {
        await self.close();
        throw err;
      }
    }
    return self;
  }

  /**
   * The request observer (`HttpServerOptions.requestObservers`): one string append, no I/O (a
   * string grows without copying until it is sent; bench/README.md, "Request logs").
   */
  readonly observe = (end: RequestEnd): void => {
    if (end.status < this.minStatus || this.full()) return;
    const req = end.req;
    const ip = req.knownRemoteAddress ? req.knownRemoteAddress() : req.remoteAddress;
    this.pending += `${REQUEST}${SEP}${Date.now()}${SEP}${req.method}${SEP}${clean(req.path)}${SEP}${clean(req.query)}${SEP}${end.status}${SEP}${end.durationMs}${SEP}${this.authOf(req)}${SEP}${ip}${SEP}${req.headers.userAgent && clean(req.headers.userAgent)}${END}`;
    this.pushed();
  };

  /** A server message (`level`: LOG_LEVEL's warn or error) with its logger scope. */
  note(level: number, message: string, scope: string | undefined): void {
    if (level < this.opts.minLevel || this.full()) return;
    this.message(level, message, scope || 'default');
    this.pushed();
  }

  private message(level: number, message: string, scope: string): void {
    this.pending += `${MESSAGE}${SEP}${Date.now()}${SEP}${level}${SEP}${clean(message)}${SEP}${clean(scope)}${END}`;
  }

  /** True (and the entry counted as dropped) when no more may wait, or after close. */
  private full(): boolean {
    if (this.closed) return true;
    if (this.count < MAX_PENDING) return false;
    this.dropped++;
    return true;
  }

  private pushed(): void {
    if (++this.count >= this.opts.batch && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * A write failed on the store's thread: reported through the process logger only, once until a
   * retention pass succeeds again (a full disk would otherwise log every half second).
   */
  private failed(message: string): void {
    if (!this.failing) this.logger.error(`request logs: writing entries failed: ${message}`, 'logs');
    this.failing = true;
  }

  /** Sends the buffer to the store's thread (the timer, a full batch, a reader, the close). */
  flush(): void {
    this.scheduled = false;
    if (this.dropped) {
      this.message(LOG_LEVEL.warn, `request logs: ${this.dropped} entries dropped (more than ${MAX_PENDING} waiting)`, 'logs');
      this.dropped = 0;
    }
    if (this.pending === '') return;
    const batch = this.pending;
    this.pending = '';
    this.count = 0;
    this.store.insert(batch);
  }

  /**
   * Deletes what the retention settings no longer keep; failures are logged. Nothing to do before
   * the store's thread started (the file held no entries): its start sends this first.
   */
  prune(): void {
    if (!this.store.started) return;
    this.store.prune(Date.now() - this.opts.maxDays * 86_400_000, this.opts.maxRows).then(() => {
      this.failing = false;
    }, (err: Error) => {
      // a file the thread could not open is reported once, where it was found
      if (!this.store.failedToOpen) this.logger.error(`request logs: retention delete failed: ${err.message}`, 'logs');
    });
  }

  /** A page of entries, the buffer written first. @throws ApiError 400 for a bad filter or sort */
  list(q: LogListQuery): Promise<LogPage> {
    this.flush();
    return this.store.list(q);
  }

  /** One entry's JSON text or null, the buffer written first. */
  get(id: string): Promise<string | null> {
    this.flush();
    return this.store.get(id);
  }

  /** Entries per hour, the buffer written first. @throws ApiError 400 for a bad filter */
  stats(filter: string | null): Promise<Array<{ total: number; date: string }>> {
    this.flush();
    return this.store.stats(filter);
  }

  /** Writes what is buffered, stops the timers, closes the file and ends its thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.flushTimer);
    clearInterval(this.pruneTimer);
    this.flush();
    this.closed = true;
    await this.store.close();
  }
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
