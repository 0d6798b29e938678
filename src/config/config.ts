/**
 * Configuration of the standalone `svc` (docs/configuration.md, "Server", "Logging" and
 * "Sign-in and mail"; docs/operations.md, "Command line"; docs/api.md, "Rate limits").
 *
 * Flags win over environment variables; an empty environment variable counts as unset. Every
 * invalid value throws {@link ConfigError} naming the variable (or flag), the value and what was
 * expected. Flag keys are the long option names without dashes: `http`, `data-dir`,
 * `log-format`, `log-level`, `request-log` (false for `--no-request-log`), `insecure-cookies`,
 * `trust-proxy`, `ignore-lock`, `features`.
 */
import path from 'node:path';
import { statSync } from 'node:fs';
import type { LogFormat, LogLevel } from '../log/logger.js';
import { ConfigError, type Flags, pick, parseBool, parseChoice, parseHostPort, parseInteger } from './parse.js';
import { loadStorageConfig } from './storage-config.js';
import type { S3Options } from '../files/s3-blob-store.js';

export { ConfigError } from './parse.js';
export type { Flags } from './parse.js';

/** Feature names `--features` / `SERVICE_FEATURES` accept (docs/configuration.md, "Server"). */
export const KNOWN_FEATURES = ['vector', 'resumable-uploads', 'durable-resumable-uploads', 'fts5-off', 'dev-tools'] as const;
export type FeatureName = (typeof KNOWN_FEATURES)[number];

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8090;
export const DEFAULT_DATA_DIR = './svc_data';

/** Outbound SMTP, present when SERVICE_SMTP_HOST is set (docs/api.md, "Auth"). */
export interface SmtpConfig {
  host: string;
  /** SERVICE_SMTP_PORT; default 465 for `implicit`, 25 for `none`, else 587. */
  port: number;
  /** SERVICE_SMTP_TRANSPORT: `none` (plain), `starttls`, `implicit` (TLS from the first byte), `auto`. */
  transport: 'none' | 'starttls' | 'implicit' | 'auto';
  username?: string;
  password?: string;
  /** SERVICE_SMTP_FROM: default sender address. */
  from?: string;
}

export interface LogConfig {
  format: LogFormat;
  level: LogLevel;
  /** Whether one record per request is written. */
  requestLog: boolean;
}

export interface ServeConfig {
  /** Listen host without brackets (`::1` for `[::1]:8090`). */
  host: string;
  /** Listen port; 0 picks a free one. */
  port: number;
  /** Absolute path of the data directory. */
  dataDir: string;
  logFormat: LogFormat;
  logLevel: LogLevel;
  requestLog: boolean;
  /** Auth cookies without the Secure attribute (for plain-HTTP development). */
  insecureCookies: boolean;
  /** Honour forwarded-address headers for the client key. */
  trustProxy: boolean;
  /** Skip the data-directory process lock. */
  ignoreLock: boolean;
  /**
   * Collection definitions are frozen (`--freeze-collections`, SERVICE_COLLECTIONS_FROZEN): the
   * REST schema-changing endpoints answer 403 `collections_frozen`; `svc schema apply` changes them.
   */
  collectionsFrozen: boolean;
  features: Set<FeatureName>;
  /** Global auth rate limit: `max` attempts per `windowS` seconds; max 0 disables it. */
  rateLimit: { max: number; windowS: number };
  /** Server-side OAuth2 state (SERVICE_OAUTH_STATE_SERVER, SERVICE_OAUTH_STATE_TTL seconds). */
  oauthState: { server: boolean; ttlS: number };
  /** How recent a primary sign-in must be to register a passkey (SERVICE_REAUTH_MAX_AGE seconds, default 300). */
  reauthMaxAgeS: number;
  smtp?: SmtpConfig;
  /** SERVICE_SENDMAIL_COMMAND; takes precedence over SMTP. */
  sendmailCommand?: string;
  /** List paging (docs/configuration.md, "Lists"); see loadPagination. */
  pagination: PaginationConfig;
  /** SERVICE_ENCRYPTION_KEY (32 bytes) for encrypted fields; unset: `<dataDir>/encryption_key`. */
  encryptionKey?: Buffer;
  /** Request limits (docs/configuration.md, "Request limits"); see loadLimits. */
  limits: RequestLimits;
  /**
   * SERVICE_SLOW_QUERY_MS: a record list taking at least this many milliseconds is written to the
   * slow-query log (src/ops/slow-queries.ts) that `svc doctor` reads; 0 turns the log off.
   * Default 200 (also when absent).
   */
  slowQueryMs?: number;
  /**
   * SERVICE_HASH_THREADS: password-hashing threads (src/auth/passwords.ts, at least 1); absent:
   * one a core but one (DEFAULT_HASH_THREADS).
   */
  hashThreads?: number;
  /**
   * SERVICE_DATABASE_URL=postgres://…: the server-SQL backend (docs/deployment.md,
   * src/store/pg/open.ts); unset: the embedded libsql database in the data directory
   */
  databaseUrl?: string;
  /** SERVICE_STORAGE=s3://…: stored files in an S3-compatible bucket (storage-config.ts); unset: `<dataDir>/storage` */
  storage?: S3Options;
  /**
   * SERVICE_METRICS_TOKEN: a bearer token (at least 16 characters) that may read `GET
   * /api/metrics` besides superusers (docs/operations.md, "Metrics"); unset: superusers only.
   */
  metricsToken?: string;
  /**
   * `--public=DIR` / SERVICE_PUBLIC: absolute path of a directory whose files are served at `/`
   * beside the API (src/api/static.ts); unset serves no static files.
   */
  publicDir?: string;
}

/**
 * What one request, and all of them together, may cost the server before it answers: bodies of
 * JSON routes up to `jsonBodyBytes` (multipart uploads to record writes of a collection with a
 * file field have `limits.maxUploadSize`), a body must
 * arrive within `bodyTimeoutS`, at most `maxConnections` requests in flight (connections on the
 * node:http engine) and `maxInflightBodyBytes` of bodies buffered at once; past the last two the
 * answer is 503 `overloaded`.
 */
export interface RequestLimits {
  /** SERVICE_BODY_LIMIT / --body-limit, bytes (default 1 MiB) */
  jsonBodyBytes: number;
  /** SERVICE_BODY_TIMEOUT / --body-timeout, seconds (default 30) */
  bodyTimeoutS: number;
  /** SERVICE_MAX_CONNECTIONS (default 10,000) */
  maxConnections: number;
  /** SERVICE_MAX_INFLIGHT_BODY_BYTES (default 256 MiB) */
  maxInflightBodyBytes: number;
  /** SERVICE_REALTIME_MAX_CONNECTIONS: realtime WebSockets and event streams together (default 20,000) */
  realtimeMaxConnections: number;
  /** SERVICE_REALTIME_MAX_FILTERS: distinct subscription filters per realtime connection (default 50) */
  realtimeMaxFilters: number;
  /** SERVICE_REALTIME_MAX_FILTER_BYTES: summed length of a connection's distinct filters, characters (default 65,536) */
  realtimeMaxFilterBytes: number;
  /** SERVICE_REALTIME_MAX_ADDRESS_FILTER_BYTES: the same over every connection of one client address (default 262,144) */
  realtimeMaxAddressFilterBytes: number;
  /**
   * SERVICE_REALTIME_FILTER_BUDGET_MS: the longest a batch's costly filter verdicts may take on
   * the reader pool, ms (default 2,000; 0 = none); past it those subscribers get nothing of the
   * batch (src/realtime/visibility.ts)
   */
  realtimeFilterBudgetMs: number;
  /** SERVICE_BATCH_MAX_REQUESTS: requests one `POST /api/batch` may carry (default 50; docs/api.md, "Batch") */
  batchMaxRequests: number;
  /** SERVICE_BATCH_MAX_BODY: bytes of one `POST /api/batch` body, JSON or multipart with files (default 32 MiB) */
  batchMaxBodyBytes: number;
}

/** The defaults of RequestLimits. */
export const DEFAULT_LIMITS: RequestLimits = { jsonBodyBytes: 1024 * 1024, bodyTimeoutS: 30, maxConnections: 10_000, maxInflightBodyBytes: 256 * 1024 * 1024, realtimeMaxConnections: 20_000,
  realtimeMaxFilters: 50, realtimeMaxFilterBytes: 64 * 1024, realtimeMaxAddressFilterBytes: 256 * 1024, realtimeFilterBudgetMs: 2000,
  batchMaxRequests: 50, batchMaxBodyBytes: 32 * 1024 * 1024,
};

/**
 * Loads RequestLimits from flags and SERVICE_* variables.
 * @throws ConfigError naming an invalid value
 */
export function loadLimits(flags: Flags, env: NodeJS.ProcessEnv): RequestLimits {
  const int = (flag: string | null, variable: string, min: number, dflt: number): number => {
    const src = pick(flags, flag, env, variable);
    return src ? parseInteger(src, min) : dflt;
  };
  return {
    jsonBodyBytes: int('body-limit', 'SERVICE_BODY_LIMIT', 1, DEFAULT_LIMITS.jsonBodyBytes),
    bodyTimeoutS: int('body-timeout', 'SERVICE_BODY_TIMEOUT', 1, DEFAULT_LIMITS.bodyTimeoutS),
    maxConnections: int(null, 'SERVICE_MAX_CONNECTIONS', 1, DEFAULT_LIMITS.maxConnections),
    maxInflightBodyBytes: int(null, 'SERVICE_MAX_INFLIGHT_BODY_BYTES', 1, DEFAULT_LIMITS.maxInflightBodyBytes),
    realtimeMaxConnections: int(null, 'SERVICE_REALTIME_MAX_CONNECTIONS', 1, DEFAULT_LIMITS.realtimeMaxConnections),
    realtimeMaxFilters: int(null, 'SERVICE_REALTIME_MAX_FILTERS', 0, DEFAULT_LIMITS.realtimeMaxFilters),
    realtimeMaxFilterBytes: int(null, 'SERVICE_REALTIME_MAX_FILTER_BYTES', 0, DEFAULT_LIMITS.realtimeMaxFilterBytes),
    realtimeMaxAddressFilterBytes: int(null, 'SERVICE_REALTIME_MAX_ADDRESS_FILTER_BYTES', 0, DEFAULT_LIMITS.realtimeMaxAddressFilterBytes),
    realtimeFilterBudgetMs: int(null, 'SERVICE_REALTIME_FILTER_BUDGET_MS', 0, DEFAULT_LIMITS.realtimeFilterBudgetMs),
    batchMaxRequests: int(null, 'SERVICE_BATCH_MAX_REQUESTS', 1, DEFAULT_LIMITS.batchMaxRequests),
    batchMaxBodyBytes: int(null, 'SERVICE_BATCH_MAX_BODY', 1, DEFAULT_LIMITS.batchMaxBodyBytes),
  };
}

/**
 * SERVICE_ENCRYPTION_KEY: 32 bytes as 64 hex digits or as base64 (standard or URL-safe).
 * The error never echoes the value (it is a secret).
 * @throws ConfigError naming the variable
 */
export function parseEncryptionKey(env: NodeJS.ProcessEnv): Buffer | undefined {
  const raw = env.SERVICE_ENCRYPTION_KEY?.trim();
  if (!raw) return undefined;
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(raw)) key = Buffer.from(raw, 'hex');
  else if (/^[A-Za-z0-9+/_-]{42,43}={0,2}$/.test(raw)) key = Buffer.from(raw.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (!key || key.length !== 32) {
    throw new ConfigError('SERVICE_ENCRYPTION_KEY', `<${raw.length} characters, redacted>`, '32 bytes as 64 hex digits or base64 (e.g. openssl rand -base64 32)');
  }
  return key;
}

/** Which list paging modes are on and how cursor tokens are made. */
export interface PaginationConfig {
  /** SERVICE_PAGINATION_OFFSET (default true): `page`/`perPage` paging. */
  offset: boolean;
  /** SERVICE_PAGINATION_CURSOR (default true): `cursor`/`limit` keyset paging. */
  cursor: boolean;
  /** SERVICE_CURSOR_TOKEN (default stateless). */
  cursorToken: 'stateless' | 'signed' | 'stateful';
  /** SERVICE_CURSOR_TTL: seconds a stateful cursor lives (default 600). */
  cursorTtlS: number;
  /**
   * SERVICE_LIST_TIME_BUDGET_MS (default 5000, 0 = none): the longest a list's query may run on
   * the reader pool; past it the worker is stopped and the list answers 503 `overloaded`
   * (src/records/records-list.ts).
   */
  listTimeBudgetMs: number;
}

/**
 * SERVICE_PAGINATION_OFFSET, SERVICE_PAGINATION_CURSOR (booleans, default true),
 * SERVICE_CURSOR_TOKEN (stateless | signed | stateful), SERVICE_CURSOR_TTL (seconds, 1..86400),
 * SERVICE_LIST_TIME_BUDGET_MS (milliseconds, 0..3600000, 0 = no budget).
 * @throws ConfigError on a bad value, or when both paging modes are off (a build error)
 */
export function loadPagination(env: NodeJS.ProcessEnv): PaginationConfig {
  const off = pick({}, null, env, 'SERVICE_PAGINATION_OFFSET');
  const cur = pick({}, null, env, 'SERVICE_PAGINATION_CURSOR');
  const tok = pick({}, null, env, 'SERVICE_CURSOR_TOKEN');
  const ttl = pick({}, null, env, 'SERVICE_CURSOR_TTL');
  const budget = pick({}, null, env, 'SERVICE_LIST_TIME_BUDGET_MS');
  const offset = off ? parseBool(off) : true;
  const cursor = cur ? parseBool(cur) : true;
  if (!offset && !cursor) {
    throw new ConfigError('SERVICE_PAGINATION_OFFSET and SERVICE_PAGINATION_CURSOR', `${off?.value},${cur?.value}`, 'at least one of them true (both paging modes off leaves lists unusable)');
  }
  return {
    offset,
    cursor,
    cursorToken: tok ? parseChoice(tok, ['stateless', 'signed', 'stateful'] as const) : 'stateless',
    cursorTtlS: ttl ? parseInteger(ttl, 1, 86_400) : 600,
    listTimeBudgetMs: budget ? parseInteger(budget, 0, 3_600_000) : 5000,
  };
}

/**
 * Validates the log settings every config-loading subcommand shares: SERVICE_LOG_FORMAT /
 * `--log-format` (text, json), SERVICE_LOG_LEVEL / `--log-level` (debug, info, warn, error, err),
 * SERVICE_LOG_REQUESTS (boolean) / `--no-request-log`.
 * @throws ConfigError on an invalid value
 */
export function loadLogConfig(flags: Flags, env: NodeJS.ProcessEnv): LogConfig {
  const fmt = pick(flags, 'log-format', env, 'SERVICE_LOG_FORMAT');
  const format = fmt ? parseChoice(fmt, ['text', 'json'] as const) : 'text';
  const lvl = pick(flags, 'log-level', env, 'SERVICE_LOG_LEVEL');
  let level: LogLevel = 'info';
  if (lvl) {
    const word = parseChoice(lvl, ['debug', 'info', 'warn', 'error', 'err'] as const);
    level = word === 'error' ? 'err' : word;
  }
  let requestLog = true;
  if (flags['request-log'] === false || flags['no-request-log'] === true) requestLog = false;
  else {
    const req = pick(flags, null, env, 'SERVICE_LOG_REQUESTS');
    if (req) requestLog = parseBool(req);
  }
  return { format, level, requestLog };
}

/** The data directory as an absolute path: `--data-dir`, else SERVICE_DATA_DIR, else ./svc_data. */
export function resolveDataDir(flags: Flags, env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  const src = pick(flags, 'data-dir', env, 'SERVICE_DATA_DIR');
  if (src && src.value.trim() === '') throw new ConfigError(src.name, src.value, 'a directory path');
  return path.resolve(cwd, src ? src.value : DEFAULT_DATA_DIR);
}

/** `--features` / SERVICE_FEATURES as a set of known names. @throws ConfigError for an unknown name */
export function loadFeatures(flags: Flags, env: NodeJS.ProcessEnv): Set<FeatureName> {
  const src = pick(flags, 'features', env, 'SERVICE_FEATURES');
  const out = new Set<FeatureName>();
  if (!src) return out;
  for (const raw of src.value.split(',')) {
    const name = raw.trim().toLowerCase();
    if (name === '') continue;
    const known = KNOWN_FEATURES.find((f) => f === name);
    if (!known) {
      throw new ConfigError(src.name, src.value, `a comma-separated list of: ${KNOWN_FEATURES.join(', ')}`);
    }
    out.add(known);
  }
  if (out.has('durable-resumable-uploads') && !out.has('resumable-uploads')) {
    throw new ConfigError(src.name, src.value, 'durable-resumable-uploads together with resumable-uploads');
  }
  return out;
}

function flagOrEnvBool(flags: Flags, flag: string | null, env: NodeJS.ProcessEnv, variable: string | null, dflt: boolean): boolean {
  const f = flag === null ? undefined : flags[flag];
  if (typeof f === 'boolean') return f;
  if (variable === null) return dflt;
  const src = pick(flags, null, env, variable);
  return src ? parseBool(src) : dflt;
}

function loadSmtp(env: NodeJS.ProcessEnv): SmtpConfig | undefined {
  const host = pick({}, null, env, 'SERVICE_SMTP_HOST');
  if (!host) return undefined;
  const tr = pick({}, null, env, 'SERVICE_SMTP_TRANSPORT');
  const transport = tr ? parseChoice(tr, ['none', 'starttls', 'implicit', 'auto'] as const) : 'auto';
  const portSrc = pick({}, null, env, 'SERVICE_SMTP_PORT');
  const port = portSrc
    ? parseInteger(portSrc, 1, 65535)
    : transport === 'implicit' ? 465 : transport === 'none' ? 25 : 587;
  const smtp: SmtpConfig = { host: host.value.trim(), port, transport };
  const username = env.SERVICE_SMTP_USERNAME;
  const password = env.SERVICE_SMTP_PASSWORD;
  const from = env.SERVICE_SMTP_FROM;
  if (username) smtp.username = username;
  if (password) smtp.password = password;
  if (from) smtp.from = from.trim();
  return smtp;
}

/**
 * Loads and validates everything `svc serve` needs.
 * @throws ConfigError naming the first invalid variable or flag
 */
export function loadServeConfig(flags: Flags, env: NodeJS.ProcessEnv): ServeConfig {
  const log = loadLogConfig(flags, env);
  const http = pick(flags, 'http', env, 'SERVICE_HTTP');
  const { host, port } = http ? parseHostPort(http) : { host: DEFAULT_HOST, port: DEFAULT_PORT };
  const maxSrc = pick(flags, null, env, 'SERVICE_RATE_LIMIT_MAX');
  const winSrc = pick(flags, null, env, 'SERVICE_RATE_LIMIT_WINDOW');
  const ttlSrc = pick(flags, null, env, 'SERVICE_OAUTH_STATE_TTL');
  const reauthSrc = pick(flags, null, env, 'SERVICE_REAUTH_MAX_AGE');
  const slowSrc = pick(flags, null, env, 'SERVICE_SLOW_QUERY_MS');
  const hashSrc = pick(flags, null, env, 'SERVICE_HASH_THREADS');
  const sendmail = env.SERVICE_SENDMAIL_COMMAND?.trim();
  const config: ServeConfig = {
    host,
    port,
    dataDir: resolveDataDir(flags, env),
    logFormat: log.format,
    logLevel: log.level,
    requestLog: log.requestLog,
    insecureCookies: flagOrEnvBool(flags, 'insecure-cookies', env, null, false),
    trustProxy: flagOrEnvBool(flags, 'trust-proxy', env, 'SERVICE_TRUST_PROXY', false),
    ignoreLock: flagOrEnvBool(flags, 'ignore-lock', env, null, false),
    collectionsFrozen: flagOrEnvBool(flags, 'freeze-collections', env, 'SERVICE_COLLECTIONS_FROZEN', false),
    features: loadFeatures(flags, env),
    rateLimit: {
      max: maxSrc ? parseInteger(maxSrc, 0) : 10,
      windowS: winSrc ? parseInteger(winSrc, 1) : 60,
    },
    oauthState: {
      server: flagOrEnvBool(flags, null, env, 'SERVICE_OAUTH_STATE_SERVER', true),
      ttlS: ttlSrc ? parseInteger(ttlSrc, 1) : 600,
    },
    reauthMaxAgeS: reauthSrc ? parseInteger(reauthSrc, 1) : 300,
    pagination: loadPagination(env),
    limits: loadLimits(flags, env),
    slowQueryMs: slowSrc ? parseInteger(slowSrc, 0) : 200,
  };
  if (hashSrc) config.hashThreads = parseInteger(hashSrc, 1);
  const smtp = loadSmtp(env);
  if (smtp) config.smtp = smtp;
  if (sendmail) config.sendmailCommand = sendmail;
  const encryptionKey = parseEncryptionKey(env);
  if (encryptionKey) config.encryptionKey = encryptionKey;
  const storage = loadStorageConfig(env);
  if (storage) config.storage = storage;
  const dbUrl = pick(flags, null, env, 'SERVICE_DATABASE_URL');
  if (dbUrl && dbUrl.value.trim() !== '') {
    if (!/^postgres(ql)?:\/\/./.test(dbUrl.value.trim())) throw new ConfigError(dbUrl.name, '(hidden)', 'a postgres:// or postgresql:// URL');
    config.databaseUrl = dbUrl.value.trim();
  }
  const metricsToken = env.SERVICE_METRICS_TOKEN;
  if (metricsToken !== undefined && metricsToken !== '') {
    // the token is compared whole, so a short one is guessable; it is never echoed
    if (metricsToken.length < 16 || /\s/.test(metricsToken)) throw new ConfigError('SERVICE_METRICS_TOKEN', `<${metricsToken.length} characters, redacted>`, 'at least 16 characters without spaces (e.g. openssl rand -hex 32)');
    config.metricsToken = metricsToken;
  }
  const publicDir = pick(flags, 'public', env, 'SERVICE_PUBLIC');
  if (publicDir) {
    if (publicDir.value.trim() === '') throw new ConfigError(publicDir.name, publicDir.value, 'a directory path');
    config.publicDir = path.resolve(publicDir.value);
    // checked here, before any data directory is opened or locked
    if (!statSync(config.publicDir, { throwIfNoEntry: false })?.isDirectory()) throw new ConfigError(publicDir.name, publicDir.value, 'an existing directory');
  }
  return config;
}
