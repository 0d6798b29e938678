/**
 * The `devtool` command-line program: the command registry and the run loop (docs/devtool.md).
 * Usage errors exit 1 with prose on stderr (and `{error: {code: "usage"}}` under `--json`).
 */
import { Builtins, Cli, type Command } from 'clipanion';
import type { DevtoolContext } from './base-command.js';
import { BuildCommand } from './commands/build.js';
import { DevCommand } from './commands/dev.js';
import { DevStopCommand } from './commands/dev-stop.js';
import { DevStatusCommand } from './commands/dev-status.js';
import { DevWaitCommand } from './commands/dev-wait.js';
import { DevLogsCommand } from './commands/dev-logs.js';

/** A fresh Cli with every command registered. */
export function buildCli(): Cli<DevtoolContext> {
  const cli = new Cli<DevtoolContext>({ binaryLabel: 'devtool', binaryName: 'devtool', binaryVersion: '0.1.0', enableColors: false });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const c of [BuildCommand, DevCommand, DevStopCommand, DevStatusCommand, DevWaitCommand, DevLogsCommand]) cli.register(c);
  return cli;
}

/**
 * Runs one invocation; resolves to its exit code.
 * @param argv arguments after the program name
 */
export async function runCli(argv: string[], context: Partial<DevtoolContext> = {}): Promise<number> {
  const cli = buildCli();
  const ctx: DevtoolContext = { ...Cli.defaultContext, env: process.env, ...context };
  if (argv.length === 0) {
    ctx.stderr.write(cli.usage(null));
    return 1;
  }
  let command: Command<DevtoolContext>;
  try {
    command = cli.process(argv, ctx);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    ctx.stderr.write(cli.error(err instanceof Error ? err : new Error(message), { colored: false }));
    if (argv.includes('--json')) ctx.stdout.write(`${JSON.stringify({ error: { code: 'usage', message } })}\n`);
    return 1;
  }
  return cli.run(command, ctx);
}
