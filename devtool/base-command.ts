/**
 * The base of every `devtool` command (docs/devtool.md; the output contract follows
 * `svc`'s cli/base-command.ts).
 *
 * Under `--json`, stdout holds one JSON object (or, for `logs --json`, the event lines); prose goes
 * to stderr. Exit codes: 0 success, 1 failure. The tool has no error envelope beyond a
 * `{error: {code, message}}` object under `--json`. Every verb takes `--data-dir=DIR` (default
 * `.svc/` under the site directory, the current directory for the sub-verbs).
 */
import { Command, Option, UsageError, type BaseContext } from 'clipanion';
import { dataPaths, resolveDataDir, type DataPaths } from './site.js';

/** The context every command receives (streams and environment). */
export interface DevtoolContext extends BaseContext {
  env: NodeJS.ProcessEnv;
}

export abstract class DevtoolCommand extends Command<DevtoolContext> {
  json = Option.Boolean('--json', false, { description: 'Print JSON on stdout (prose stays on stderr)' });
  dataDir = Option.String('--data-dir', { description: 'Data directory (default .svc/ under the site directory)' });

  /** The command's work; resolves to the exit code. */
  protected abstract run(): Promise<number>;

  async execute(): Promise<number> {
    try {
      return await this.run();
    } catch (err) {
      if (err instanceof UsageError) return this.fail('usage', err.message);
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof Error && err.stack && this.context.env.DEVTOOL_DEBUG) this.context.stderr.write(`${err.stack}\n`);
      return this.fail('internal', message);
    }
  }

  /** The paths of the data directory of `siteDir` (default: the current directory). */
  protected dataPaths(siteDir: string = process.cwd()): DataPaths {
    return dataPaths(resolveDataDir(siteDir, this.dataDir));
  }

  /** Writes `json` under --json, else `text` (a newline is added). */
  protected emit(json: object, text: string): void {
    if (this.json) this.context.stdout.write(`${JSON.stringify(json)}\n`);
    else this.context.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Writes prose on stderr. */
  protected note(text: string): void {
    this.context.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** Reports a failure: the message on stderr and, under --json, `{error: {code, message}}`; returns 1. */
  protected fail(code: string, message: string, extra: Record<string, unknown> = {}): number {
    this.note(`devtool: ${message}`);
    if (this.json) this.context.stdout.write(`${JSON.stringify({ error: { code, message, ...extra } })}\n`);
    return 1;
  }
}
