/**
 * Process logging (docs/configuration.md, "Logging").
 *
 * Every record goes to stderr; stdout belongs to a command's result. Two encodings:
 * - text: `<ts> <level>: <msg>`, or `<ts> <level>(<scope>): <msg>` for a named scope;
 * - json: one object per line, keys in the fixed order ts, level, scope, msg (request records add
 *   method, path, status, duration_ms).
 * `ts` is `YYYY-MM-DDTHH:MM:SSZ` (UTC, no milliseconds) in both encodings.
 *
 * This module is a leaf: it imports nothing from the app. `request()` sits on the HTTP hot path, so
 * serializers are compiled once at module load and the timestamp string is cached per second.
 */
import fastJson from 'fast-json-stringify';
import { escapeJsonFragment, escapeTextMessage, clampText } from './escape.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'err';
export type LogFormat = 'text' | 'json';

export interface Logger {
  readonly level: LogLevel;
  readonly format: LogFormat;
  debug(msg: string, scope?: string): void;
  info(msg: string, scope?: string): void;
  warn(msg: string, scope?: string): void;
  error(msg: string, scope?: string): void;
  /**
   * One request record: scope `http`, msg `request`, plus method, path (no query string; the
   * caller strips it), status and duration_ms (rounded to an integer). Emitted at level info.
   */
  request(method: string, path: string, status: number, durationMs: number): void;
  /** False when request records would be dropped (level above info, or request logging off). */
  readonly requestsEnabled: boolean;
}

export interface LoggerOptions {
  format: LogFormat;
  level: LogLevel;
  /** Whether request records are written at all (`SERVICE_LOG_REQUESTS`, `--no-request-log`). */
  requests: boolean;
  /** Receives one complete line without its trailing newline; defaults to stderr. */
  write?: (line: string) => void;
}

/** Longest `msg` kept (UTF-16 code units); longer messages are clamped before encoding. */
export const MAX_MESSAGE_LENGTH = 8192;
/** Longest request `path` kept; uWS bounds the URL anyway, this keeps a line bounded regardless. */
export const MAX_PATH_LENGTH = 4096;

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, err: 3 };

/**
 * Parses a level as accepted on input: `debug`, `info`, `warn`, `error` or `err`
 * (case-insensitive, surrounding blanks ignored). Returns undefined for anything else.
 */
export function parseLogLevel(value: string): LogLevel | undefined {
  switch (value.trim().toLowerCase()) {
    case 'debug': return 'debug';
    case 'info': return 'info';
    case 'warn': return 'warn';
    case 'err':
    case 'error': return 'err';
    default: return undefined;
  }
}

/** Parses `text` or `json` (case-insensitive); undefined for anything else. */
export function parseLogFormat(value: string): LogFormat | undefined {
  const v = value.trim().toLowerCase();
  return v === 'text' || v === 'json' ? v : undefined;
}

// Compiled once: key order in `properties` is the output order, which is part of the contract.
const serializeRecord = fastJson({
  type: 'object',
  properties: {
    ts: { type: 'string' },
    level: { type: 'string' },
    scope: { type: 'string' },
    msg: { type: 'string' },
  },
  required: ['ts', 'level', 'scope', 'msg'],
});

const serializeRequest = fastJson({
  type: 'object',
  properties: {
    ts: { type: 'string' },
    level: { type: 'string' },
    scope: { type: 'string' },
    msg: { type: 'string' },
    method: { type: 'string' },
    path: { type: 'string' },
    status: { type: 'integer' },
    duration_ms: { type: 'integer' },
  },
  required: ['ts', 'level', 'scope', 'msg', 'method', 'path', 'status', 'duration_ms'],
});

let cachedSecond = -1;
let cachedStamp = '';

/** `YYYY-MM-DDTHH:MM:SSZ` for now; recomputed at most once per wall-clock second. */
export function timestamp(nowMs: number = Date.now()): string {
  const second = Math.floor(nowMs / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedStamp = new Date(second * 1000).toISOString().slice(0, 19) + 'Z';
  }
  return cachedStamp;
}

function defaultWrite(line: string): void {
  process.stderr.write(line + '\n');
}

function toInt(n: number): number {
  return Number.isFinite(n) ? Math.round(n) : 0;
}

/** Builds a logger; the options are fixed for its lifetime. */
export function createLogger(opts: LoggerOptions): Logger {
  const format = opts.format;
  const level = opts.level;
  const threshold = RANK[level];
  const write = opts.write ?? defaultWrite;
  const requestsEnabled = opts.requests && threshold <= RANK.info;

  const emit = (lvl: LogLevel, msg: string, scope: string | undefined): void => {
    if (RANK[lvl] < threshold) return;
    const text = clampText(String(msg), MAX_MESSAGE_LENGTH);
    if (format === 'json') {
      write(serializeRecord({ ts: timestamp(), level: lvl, scope: scope || 'default', msg: text }));
    } else {
      const head = scope && scope !== 'default' ? `${lvl}(${escapeTextMessage(scope)})` : lvl;
      write(`${timestamp()} ${head}: ${escapeTextMessage(text)}`);
    }
  };

  const request = (method: string, path: string, status: number, durationMs: number): void => {
    if (!requestsEnabled) return;
    const p = clampText(path, MAX_PATH_LENGTH);
    const ms = toInt(durationMs);
    const st = toInt(status);
    if (format === 'json') {
      write(serializeRequest({
        ts: timestamp(), level: 'info', scope: 'http', msg: 'request',
        method, path: p, status: st, duration_ms: ms,
      }));
    } else {
      write(`${timestamp()} info(http): ${escapeJsonFragment(method)} ${escapeJsonFragment(p)} ${st} ${ms}ms`);
    }
  };

  return {
    level,
    format,
    requestsEnabled,
    debug: (msg, scope) => emit('debug', msg, scope),
    info: (msg, scope) => emit('info', msg, scope),
    warn: (msg, scope) => emit('warn', msg, scope),
    error: (msg, scope) => emit('err', msg, scope),
    request,
  };
}

/**
 * The logger used before configuration is validated. Reads only SERVICE_LOG_FORMAT and
 * SERVICE_LOG_LEVEL and silently falls back to text / info on invalid values; the real
 * validation (which reports bad values) happens in src/config/config.ts.
 * @param write optional line sink, as for createLogger (default: stderr)
 */
export function bootstrapLogger(env: NodeJS.ProcessEnv, write?: (line: string) => void): Logger {
  const format = parseLogFormat(env.SERVICE_LOG_FORMAT ?? '') ?? 'text';
  const level = parseLogLevel(env.SERVICE_LOG_LEVEL ?? '') ?? 'info';
  return createLogger({ format, level, requests: true, write });
}
