/**
 * The package root's `defineApp` (docs/framework.md): checks a
 * definition (AppDefinitionError before any port opens) and answers the app, which `start()`s a
 * server with the same defaults and SERVICE_* environment as `svc serve`, or which
 * `svc serve --app=FILE` serves.
 */
import { defineApp as check, type AppDefinition } from './definition.js';
import type { AppHandle } from './runtime.js';

/** Where and how `app.start()` serves; anything left out comes from SERVICE_* variables, then the defaults. */
export interface StartOptions {
  /** HOST:PORT (port 0 picks a free one); default SERVICE_HTTP or 127.0.0.1:8090 */
  http?: string;
  /** default SERVICE_DATA_DIR or ./svc_data */
  dataDir?: string;
  /** auth cookies without Secure, for plain-HTTP development */
  insecureCookies?: boolean;
}

/** A running app: its base URL, and `stop()` (finishes in-flight requests and jobs, commits every write). */
export interface RunningApp {
  url: string;
  stop(): Promise<void>;
}

/** A checked app definition that can start itself. */
export type App = Readonly<AppDefinition<AppHandle>> & {
  /** marks a value made by defineApp */
  readonly __svcApp: true;
  start(options?: StartOptions): Promise<RunningApp>;
};

/**
 * Checks `definition` synchronously and completely and answers the app.
 * @throws AppDefinitionError listing every problem of the definition
 */
export function defineApp(definition: AppDefinition<AppHandle>): App {
  const checked = check<AppHandle>(definition);
  const app: App = Object.freeze({
    ...checked,
    __svcApp: true as const,
    start: async (options: StartOptions = {}) => (await import('./start.js')).startApp(app, options),
  });
  return app;
}

/** True for a value made by defineApp. */
export function isApp(v: unknown): v is App {
  return typeof v === 'object' && v !== null && (v as { __svcApp?: unknown }).__svcApp === true;
}
