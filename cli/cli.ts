/**
 * The `svc` command-line program: command registry and the run loop (docs/operations.md,
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
import { SchemaApplyCommand, SchemaDumpCommand, TypegenCommand } from './commands/schema.js';
import { ImportCommand } from './commands/import.js';
import { DoctorCommand } from './commands/doctor.js';
import { productVersion } from '../src/meta/version-info.js';
import { commandInfo, explainUsageError, groupHelp, withPlaceholders, type CommandInfo } from './usage-hints.js';

/** Every `svc` command, in the order help lists them. */
const COMMANDS = [VersionCommand, ExplainCodeCommand, ServeCommand, SuperuserCreateCommand, SuperuserUpsertCommand, MigrateCommand, MigrateStatusCommand, MigratePreviewCommand, SchemaDumpCommand, SchemaApplyCommand, TypegenCommand, ImportCommand, BackupCommand, RestoreCommand, DoctorCommand];

/** clipanion's Cli with named value placeholders (`--data-dir DIR`, not `--data-dir #0`) in all it prints. */
class SvcCli extends Cli<SvcContext> {
  override usage(...args: Parameters<Cli<SvcContext>['usage']>): string {
    return withPlaceholders(super.usage(...args));
  }

  override error(...args: Parameters<Cli<SvcContext>['error']>): string {
    return withPlaceholders(super.error(...args));
  }
}

/** A fresh Cli with every command registered. */
export function buildCli(): Cli<SvcContext> {
  const cli = new SvcCli({
    binaryLabel: 'svc',
    binaryName: 'svc',
    binaryVersion: productVersion().svc,
    enableColors: false,
  });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const command of COMMANDS) cli.register(command);
  return cli;
}

/** What the usage hints need of every registered command (one entry per path, aliases included). */
function commandInfos(cli: Cli<SvcContext>): CommandInfo[] {
  return COMMANDS.flatMap((command) => {
    const raw = cli.usage(command, { prefix: '' }).trim();
    const usage = raw.replace(/^svc( [a-z-]+)*/, '');
    return command.paths.map((words, i) => commandInfo(words, `svc ${words.join(' ')}${usage}`, command.usage?.description ?? '', i === 0));
  });
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
  const usageError = (message: string, prose: string): number => {
    ctx.stderr.write(prose);
    if (wantsJson(argv)) ctx.stdout.write(`${JSON.stringify({ error: { code: 'usage', message } })}\n`);
    return 1;
  };
  // a command group (`svc superuser`, `svc migrate --help`): its own page listing its commands
  const rest = argv.slice(1).filter((a) => a !== '--json');
  const help = rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h');
  if (rest.length === 0 || help) {
    const page = groupHelp(argv[0], commandInfos(cli));
    const isCommand = COMMANDS.some((c) => c.paths.some((p) => p.length === 1 && p[0] === argv[0]));
    if (page && help) {
      ctx.stdout.write(page);
      return 0;
    }
    if (page && !isCommand) return usageError(`svc ${argv[0]} needs a command`, page);
  }
  let command: Command<SvcContext>;
  try {
    command = cli.process(argv, ctx);
  } catch (err) {
    const hint = explainUsageError(argv, commandInfos(cli));
    if (hint) return usageError(hint.message, `svc: ${hint.message}\n\n$ ${hint.usage}\n`);
    const message = withPlaceholders(err instanceof Error ? err.message : String(err));
    return usageError(message, cli.error(err instanceof Error ? err : new Error(message), { colored: false }));
  }
  return cli.run(command, ctx);
}
