/**
 * `app.start()`: the server of `svc serve` for an app definition, in the embedding program's
 * process: the same configuration (SERVICE_* variables, then the defaults; `options` win), the
 * data-directory lock, and a stop that releases it.
 */
import { loadServeConfig } from '../config/config.js';
import { acquireDataDirLock } from '../config/data-dir-lock.js';
import { createLogger } from '../log/logger.js';
import { startServer } from '../server.js';
import type { App, RunningApp, StartOptions } from './app.js';

export async function startApp(app: App, options: StartOptions): Promise<RunningApp> {
  const config = loadServeConfig({ http: options.http, 'data-dir': options.dataDir, 'insecure-cookies': options.insecureCookies || undefined }, process.env);
  const logger = createLogger({ format: config.logFormat, level: config.logLevel, requests: config.requestLog });
  const lock = acquireDataDirLock(config.dataDir, { ignore: config.ignoreLock });
  try {
    const server = await startServer(config, logger, app);
    return {
      url: `http://${server.address}`,
      stop: async () => {
        try {
          await server.stop();
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}
