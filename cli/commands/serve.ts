/**
 * `svc serve` (docs/operations.md, "Command line"; docs/configuration.md, "Logging" and
 * "Server").
 *
 * Order matters: config is validated first (an invalid SERVICE_LOG_* or other value is reported
 * by the bootstrap logger and exits 1 before anything is touched), then the data-directory lock is
 * taken, and only then is the HTTP server module loaded and started. SIGINT/SIGTERM stop the
 * server once, release the lock and exit 0; a second signal exits at once with 1.
 * Under --json, stdout receives one object when the server is listening:
 * `{address, pid, data_dir}` (or one `{error: …}` object on failure).
 */
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { importServer, type RunningServer } from '../app-modules.js';
import { ConfigError, loadServeConfig, type Flags, type ServeConfig } from '../../src/config/config.js';
import { acquireDataDirLock, LockError, type DataDirLock } from '../../src/config/data-dir-lock.js';
import { bootstrapLogger, createLogger, type Logger } from '../../src/log/logger.js';
import { loadApp } from '../load-app.js';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export class ServeCommand extends SvcCommand {
  static paths = [['serve']];
  static usage = Command.Usage({
    description: 'Start the HTTP server',
    details: `
      Listens on 127.0.0.1:8090 and keeps its data in ./svc_data unless told otherwise. Every
      flag has an environment variable (SERVICE_HTTP, SERVICE_DATA_DIR, SERVICE_LOG_FORMAT,
      SERVICE_LOG_LEVEL, SERVICE_LOG_REQUESTS, SERVICE_TRUST_PROXY, SERVICE_FEATURES, SERVICE_PUBLIC);
      flags win. --public=DIR serves DIR's files at / (the API under /api/ and the admin UI under /_/
      win).
    `,
    examples: [
      ['Serve with the defaults', '$0 serve'],
      ['Pick a free port and log JSON', '$0 serve --http=127.0.0.1:0 --log-format=json'],
      ['Serve a static site beside the API', '$0 serve --public=./public'],
    ],
  });

  http = Option.String('--http', { description: 'HOST:PORT to listen on (port 0 picks a free port)' });
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });
  logFormat = Option.String('--log-format', { description: 'text or json' });
  logLevel = Option.String('--log-level', { description: 'debug, info, warn or error' });
  noRequestLog = Option.Boolean('--no-request-log', false, { description: 'Do not log one line per request' });
  insecureCookies = Option.Boolean('--insecure-cookies', false, { description: 'Auth cookies without Secure (plain-HTTP development)' });
  trustProxy = Option.Boolean('--trust-proxy', { description: 'Use forwarded-address headers for the client key' });
  ignoreLock = Option.Boolean('--ignore-lock', false, { description: 'Start even if another process holds the data directory' });
  freezeCollections = Option.Boolean('--freeze-collections', { description: 'Refuse collection changes over the REST API (403 collections_frozen); or SERVICE_COLLECTIONS_FROZEN' });
  features = Option.String('--features', { description: 'Comma-separated: vector, resumable-uploads, durable-resumable-uploads, fts5-off, dev-tools' });
  bodyLimit = Option.String('--body-limit', { description: 'Largest JSON request body in bytes (default 1048576); multipart uploads have their own limit' });
  bodyTimeout = Option.String('--body-timeout', { description: 'Seconds a request body may take to arrive (default 30)' });
  publicDir = Option.String('--public', { description: 'Serve the files of this directory at / beside the API (index.html for a directory); or SERVICE_PUBLIC' });
  app = Option.String('--app', { description: 'An app module (ES module whose default export is defineApp(...)) to serve; or SERVICE_APP' });

  /** The flags in the shape loadServeConfig takes (long names without dashes). */
  private flags(): Flags {
    return {
      http: this.http,
      'data-dir': this.dataDir,
      'log-format': this.logFormat,
      'log-level': this.logLevel,
      'no-request-log': this.noRequestLog,
      'insecure-cookies': this.insecureCookies || undefined,
      'trust-proxy': this.trustProxy,
      'ignore-lock': this.ignoreLock || undefined,
      'freeze-collections': this.freezeCollections,
      features: this.features,
      'body-limit': this.bodyLimit,
      'body-timeout': this.bodyTimeout,
      public: this.publicDir,
    };
  }

  protected async run(): Promise<number> {
    // Logs go to the context's stderr (the process's, unless a test substitutes a stream).
    const write = (line: string): void => { this.context.stderr.write(`${line}\n`); };
    let config: ServeConfig;
    try {
      config = loadServeConfig(this.flags(), this.context.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      bootstrapLogger(this.context.env, write).error(err.message, 'config');
      return this.fail('config', err.message, { variable: err.variable, value: err.value, expected: err.expected }, false);
    }
    const logger = createLogger({ format: config.logFormat, level: config.logLevel, requests: config.requestLog, write });

    let lock: DataDirLock;
    try {
      lock = acquireDataDirLock(config.dataDir, { ignore: config.ignoreLock });
    } catch (err) {
      if (!(err instanceof LockError)) throw err;
      logger.error(err.message, 'lock');
      return this.fail('lock', err.message, { data_dir: err.dataDir, pid: err.pid }, false);
    }
    if (config.ignoreLock) logger.warn(`not locking data directory ${config.dataDir} (--ignore-lock)`);

    try {
      return await this.serveUntilSignal(config, logger, lock);
    } finally {
      lock.release();
    }
  }

  private async serveUntilSignal(config: ServeConfig, logger: Logger, lock: DataDirLock): Promise<number> {
    let signalled: string | undefined;
    let wake: () => void = () => {};
    const woken = new Promise<void>((resolve) => { wake = resolve; });
    const onSignal = (signal: string): void => {
      if (signalled !== undefined) {
        // Second signal: the operator wants out now, whatever shutdown is still doing.
        logger.warn(`${signal} received again; exiting without finishing shutdown`);
        lock.release();
        process.exit(1);
      }
      signalled = signal;
      logger.info(`${signal} received; shutting down`);
      wake();
    };
    // Registered before start so a signal during startup still shuts down cleanly.
    for (const s of SIGNALS) process.on(s, onSignal);
    try {
      let server: RunningServer;
      let app: Awaited<ReturnType<typeof loadApp>>;
      try {
        app = await loadApp(this.app ?? this.context.env.SERVICE_APP);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        logger.error(message, 'app');
        return this.fail('app', message, {}, false);
      }
      try {
        const { startServer } = await (this.context.loadServer ?? importServer)();
        server = await startServer(config, logger, app as never);
      } catch (err) {
        const message = `cannot start the server: ${err instanceof Error ? err.message : String(err)}`;
        logger.error(message);
        return this.fail('start_failed', message, {}, false);
      }
      if (this.json) this.emit({ address: server.address, pid: process.pid, data_dir: config.dataDir }, '');
      if (signalled === undefined) await woken;
      try {
        await server.stop();
      } catch (err) {
        logger.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
        return 1;
      }
      return 0; // the server logs its own lifecycle (serving on …, stopped)
    } finally {
      for (const s of SIGNALS) process.removeListener(s, onSignal);
    }
  }
}
