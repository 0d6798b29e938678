/**
 * The base of every `svc` command (docs/operations.md, "Command line").
 *
 * Output contract: under `--json`, stdout holds exactly one object (a result, or
 * `{error: {code, message, ...}}`); prose, warnings and logs go to stderr. Without `--json` a
 * command's result is printed on stdout and diagnostics on stderr. CLI JSON keys are snake_case.
 * Exit codes: 0 success, 1 failure (usage error, invalid config, refused operation).
 * Subclasses implement `run()`; a `UsageError` thrown from it becomes exit 1 with code `usage`.
 */
import { Command, Option, UsageError, type BaseContext } from 'clipanion';
import { importServer, importSuperuserAdmin, type ServerModule, type SuperuserAdmin } from './app-modules.js';
import { ConfigError, loadLogConfig, loadServeConfig, resolveDataDir, type ServeConfig } from '../src/config/config.js';

/** The context every command receives; the loaders exist so tests can substitute stubs. */
export interface SvcContext extends BaseContext {
  loadSuperuserAdmin?: () => Promise<SuperuserAdmin>;
  loadServer?: () => Promise<ServerModule>;
}

/** Error object written on stdout under --json: `{error: {code, message, ...extra}}`. */
export interface CliErrorBody {
  code: string;
  message: string;
  [key: string]: unknown;
}

export abstract class SvcCommand extends Command<SvcContext> {
  json = Option.Boolean('--json', false, {
    description: 'Print exactly one JSON object on stdout (prose stays on stderr)',
  });

  /** The command's work; resolves to the exit code. */
  protected abstract run(): Promise<number>;

  async execute(): Promise<number> {
    try {
      return await this.run();
    } catch (err) {
      if (err instanceof UsageError) return this.fail('usage', err.message);
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof Error && err.stack && this.context.env.SERVICE_LOG_LEVEL === 'debug') {
        this.context.stderr.write(`${err.stack}\n`);
      }
      return this.fail(err instanceof Error && err.name === 'MissingModuleError' ? 'unavailable' : 'internal', message);
    }
  }

  /** Reports an invalid configuration value (exit 1, error code `config`). */
  protected failConfig(err: ConfigError): number {
    return this.fail('config', err.message, { variable: err.variable, value: err.value, expected: err.expected });
  }

  /**
   * The data directory (`dataDir`, else SERVICE_DATA_DIR, else ./svc_data), after checking the log
   * settings every command shares; or the exit code of a reported config error.
   */
  protected dataDirOrExit(dataDir: string | undefined): string | number {
    try {
      loadLogConfig({}, this.context.env);
      return resolveDataDir({ 'data-dir': dataDir }, this.context.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.failConfig(err);
    }
  }

  /**
   * The server configuration for an offline command on `dataDir`, with the features of the app
   * module `app` (or SERVICE_APP) added; or the exit code of a reported config or app error.
   */
  protected async configOrExit(dataDir: string | undefined, app: string | undefined): Promise<ServeConfig | number> {
    let config: ServeConfig;
    try {
      config = loadServeConfig({ 'data-dir': dataDir }, this.context.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.failConfig(err);
    }
    const file = app ?? this.context.env.SERVICE_APP;
    if (file) {
      // loaded only when asked: `svc version` must not pay for the app framework
      const [{ loadApp }, { featureNames, appDatabaseUrl }] = await Promise.all([import('./load-app.js'), import('../src/app/definition.js')]);
      try {
        const loaded = await loadApp(file);
        for (const f of featureNames(loaded?.features)) config.features.add(f);
        config.databaseUrl ??= appDatabaseUrl(loaded);
      } catch (err) {
        return this.fail('app', err instanceof Error ? err.message : String(err));
      }
    }
    return config;
  }

  /** Writes the command's result: `json` under --json, else `text` (a trailing newline is added). */
  protected emit(json: object, text: string): void {
    if (this.json) this.context.stdout.write(`${JSON.stringify(json)}\n`);
    else this.context.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Writes prose to stderr, whatever the output mode. */
  protected note(text: string): void {
    this.context.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /**
   * Reports a failure and returns exit code 1: the message on stderr (unless `prose` is false
   * because a log record already said it) and, under --json, `{error: {code, message, ...extra}}`
   * on stdout.
   */
  protected fail(code: string, message: string, extra: Record<string, unknown> = {}, prose = true): number {
    if (prose) this.note(`svc: ${message}`);
    if (this.json) {
      const error: CliErrorBody = { code, message, ...extra };
      this.context.stdout.write(`${JSON.stringify({ error })}\n`);
    }
    return 1;
  }
}
