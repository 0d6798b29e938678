/**
 * The `svc` command-line program: command registry and the run loop (spec 1-core-api.md,
 * "Command line").
 *
 * Parsing is done here rather than by `Cli.run` so every usage error (unknown command, bad or
 * missing option) follows the output contract: exit 1, prose on stderr, and under `--json`
 * exactly one `{error: {code: "usage", message}}` object on stdout.
 */
import { Builtins, Cli, type Command } from 'clipanion';
import type { SvcContext } from './base-command.js';
import { VersionCommand } from './commands/version.js';
import { ExplainCodeCommand } from './commands/explain-code.js';
import { ServeCommand } from './commands/serve.js';
import { SuperuserCreateCommand } from './commands/superuser/create.js';
import { SuperuserUpsertCommand } from './commands/superuser/upsert.js';
import { MigrateCommand, MigratePreviewCommand, MigrateStatusCommand } from './commands/migrate.js';
import { BackupCommand, RestoreCommand } from './commands/backup.js';
import { SchemaApplyCommand, SchemaDumpCommand } from './commands/schema.js';
import { ImportCommand } from './commands/import.js';
import { DoctorCommand } from './commands/doctor.js';
import { productVersion } from '../src/meta/version-info.js';

/** A fresh Cli with every command registered. */
export function buildCli(): Cli<SvcContext> {
  const cli = new Cli<SvcContext>({
    binaryLabel: 'svc',
    binaryName: 'svc',
    binaryVersion: productVersion().svc,
    enableColors: false,
  });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const command of [VersionCommand, ExplainCodeCommand, ServeCommand, SuperuserCreateCommand, SuperuserUpsertCommand, MigrateCommand, MigrateStatusCommand, MigratePreviewCommand, SchemaDumpCommand, SchemaApplyCommand, ImportCommand, BackupCommand, RestoreCommand, DoctorCommand]) {
    cli.register(command);
  }
  return cli;
}

/** Whether `--json` appears among the options (before a `--` terminator). */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/**
 * Runs one invocation and resolves to its exit code; never throws for user mistakes.
 * @param argv arguments after the program name
 * @param context streams and env (default: the process's) plus optional module loaders
 */
export async function runCli(argv: string[], context: Partial<SvcContext> = {}): Promise<number> {
  const cli = buildCli();
  const ctx: SvcContext = { ...Cli.defaultContext, ...context };
  if (argv.length === 0) {
    // Bare `svc` is a usage error (exit 1), unlike `svc --help`, which succeeds on stdout.
    ctx.stderr.write(cli.usage(null));
    return 1;
  }
  let command: Command<SvcContext>;
  try {
    command = cli.process(argv, ctx);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    ctx.stderr.write(cli.error(err instanceof Error ? err : new Error(message), { colored: false }));
    if (wantsJson(argv)) ctx.stdout.write(`${JSON.stringify({ error: { code: 'usage', message } })}\n`);
    return 1;
  }
  return cli.run(command, ctx);
}
