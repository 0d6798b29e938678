/**
 * The app modules the CLI drives, loaded lazily.
 *
 * `svc version` and `svc explain-code` must work without opening a database or loading the HTTP
 * stack, so commands import the server and the superuser admin only when they run. The import
 * paths are plain strings, resolved relative to this file both from source (tsx maps .js to .ts)
 * and from dist/cli. Tests substitute stubs through the command context (see SvcContext).
 */
import type { ServeConfig } from '../src/config/config.js';
import type { Logger } from '../src/log/logger.js';

/** Result of `createSuperuser` / `upsertSuperuser`. */
export interface SuperuserResult {
  id: string;
  email: string;
  /** True when a new superuser was inserted, false when an existing one was updated. */
  created: boolean;
}

/** Shape of src/auth/superuser-admin.ts; both functions throw ApiError on invalid input. */
export interface SuperuserAdmin {
  createSuperuser(dataDir: string, email: string, password: string): Promise<SuperuserResult>;
  upsertSuperuser(dataDir: string, email: string, password: string): Promise<SuperuserResult>;
}

/** A listening server as returned by `startServer`. */
export interface RunningServer {
  /** The bound address (port 0 resolved to the chosen port). */
  address: string;
  /** Stops accepting, drains in-flight requests and closes the database. */
  stop(): Promise<void>;
}

/** Shape of src/server.ts. */
export interface ServerModule {
  /** `app`: an app made by defineApp (src/app/app.ts), served with the server */
  startServer(config: ServeConfig, logger: Logger, app?: never): Promise<RunningServer>;
}

const SUPERUSER_ADMIN_MODULE = '../src/auth/superuser-admin.js';
const SERVER_MODULE = '../src/server.js';

/** Raised when an app module is absent from this build or checkout. */
export class MissingModuleError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what} is not available in this build (${cause instanceof Error ? cause.message : String(cause)})`);
    this.name = 'MissingModuleError';
  }
}

async function load<T>(specifier: string, what: string): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND') throw new MissingModuleError(what, err);
    throw err;
  }
}

export function importSuperuserAdmin(): Promise<SuperuserAdmin> {
  return load<SuperuserAdmin>(SUPERUSER_ADMIN_MODULE, 'superuser administration');
}

export function importServer(): Promise<ServerModule> {
  return load<ServerModule>(SERVER_MODULE, 'the HTTP server');
}
