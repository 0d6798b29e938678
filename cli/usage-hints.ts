/**
 * Friendlier usage errors and help for `svc` (docs/operations.md, "Command line"): named value
 * placeholders in usage lines, a help page per command group, and hints for common mistakes
 * (a missing required option, an unknown option close to a real one, `serve --port`).
 *
 * clipanion prints an option's value as `#0` and answers "Command not found" both for an unknown
 * command and for a known command given a bad or missing option; these helpers work from the
 * registered commands' definitions so cli/cli.ts can say which.
 */

/** One registered command as cli/cli.ts sees it. */
export interface CommandInfo {
  /** the command's words after `svc`, e.g. ['superuser', 'create'] */
  words: string[];
  /** its full usage line, placeholders applied (`svc import [--json] <--collection NAME> ...`) */
  usage: string;
  description: string;
  /** its option names (every alias), whether each is required and takes a value */
  options: { names: string[]; required: boolean; value: boolean }[];
  /** the names of its required positional arguments, e.g. ['FILE'] */
  positionals: string[];
  /** false for an alias path (`migrate up`), which group pages leave out */
  primary: boolean;
}

/**
 * A command's CommandInfo from clipanion's inline usage line (`svc import [--json]
 * <--collection #0> <FILE>`): `<…>` is required, `[…]` optional, `#0` a value.
 */
export function commandInfo(words: string[], rawUsage: string, description: string, primary = true): CommandInfo {
  const options: CommandInfo['options'] = [];
  const positionals: string[] = [];
  for (const m of rawUsage.matchAll(/([<[])([^>\]]+)[>\]]/g)) {
    const [names, value] = m[2].split(' ');
    if (names.startsWith('-')) options.push({ names: names.split(','), required: m[1] === '<', value: value !== undefined });
    else if (m[1] === '<') positionals.push(names);
  }
  return { words, usage: withPlaceholders(rawUsage.trim()), description, options, positionals, primary };
}

/** The value placeholder shown after each option in usage lines; others show the name in capitals. */
const PLACEHOLDERS: Record<string, string> = {
  '--data-dir': 'DIR', '--app': 'FILE', '--out': 'FILE', '--http': 'HOST:PORT', '--public': 'DIR',
  '--log-format': 'text|json', '--log-level': 'LEVEL', '--features': 'LIST', '--body-limit': 'BYTES',
  '--body-timeout': 'SECONDS', '--collection': 'NAME', '--format': 'csv|json|ndjson', '--on-error': 'stop|skip',
  '--email': 'EMAIL', '--password': 'PASSWORD', '--key': 'FIELD',
};

/**
 * Replaces clipanion's `#0` value markers in `text` (a usage line, an error or a help page) by
 * each option's placeholder, and re-aligns a help page's option list, which clipanion padded for
 * the shorter `#0`.
 */
export function withPlaceholders(text: string): string {
  const named = text.replace(/(--[a-z0-9-]+) #0/g, (_, name: string) => `${name} ${PLACEHOLDERS[name] ?? name.slice(2).toUpperCase().replace(/-/g, '_')}`);
  // an option line of a help page: two spaces, the definition (single spaces), 4+ spaces, the description
  const option = /^ {2}(-\S*(?: \S+)*) {4,}(\S.*)$/;
  const lines = named.split('\n');
  const width = Math.max(0, ...lines.map((l) => option.exec(l)?.[1].length ?? 0));
  return lines.map((l) => {
    const m = option.exec(l);
    return m ? `  ${m[1].padEnd(width)}    ${m[2]}` : l;
  }).join('\n');
}

/**
 * The help page of a command group (`svc superuser --help`): every command under `group` with
 * its usage line and description; null when `group` names no group of two or more commands.
 */
export function groupHelp(group: string, commands: CommandInfo[]): string | null {
  const members = commands.filter((c) => c.words[0] === group && c.primary);
  if (members.length < 2) return null;
  const lines = [`svc ${group}: ${members.length} commands`, ''];
  for (const c of members) lines.push(`  $ ${c.usage}`, `    ${c.description}`, '');
  lines.push(`Run \`svc ${group} <command> --help\` for one command's options and examples.`);
  return `${lines.join('\n')}\n`;
}

/** Levenshtein distance between two short strings. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** Options that users reach for by habit, per command, and what to write instead. */
function habitHint(command: CommandInfo, name: string, value: string | undefined): string | undefined {
  if (command.words[0] === 'serve' && (name === '--port' || name === '--host' || name === '--listen' || name === '--addr')) {
    const port = name === '--port' ? (value ?? 'PORT') : '8090';
    const host = name === '--port' ? '127.0.0.1' : (value ?? 'HOST');
    return `serve listens on --http=HOST:PORT, e.g. --http=${host}:${port}`;
  }
  return undefined;
}

/**
 * Why `argv` does not parse, when it names a known command: an unknown option (with the real
 * one it is close to), a missing required option or a missing argument. Null when `argv` names
 * no known command or the mistake is none of these (clipanion's own message then stands).
 */
export function explainUsageError(argv: readonly string[], commands: CommandInfo[]): { message: string; usage: string } | null {
  const end = argv.indexOf('--');
  const args = end < 0 ? [...argv] : argv.slice(0, end);
  const words: string[] = [];
  for (const a of args) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  const command = commands
    .filter((c) => c.words.every((w, i) => words[i] === w))
    .sort((a, b) => b.words.length - a.words.length)[0];
  if (!command) return null;
  const known = new Set(['--help', '-h', ...command.options.flatMap((o) => o.names)]);
  const given = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('-')) continue;
    const [name, inline] = a.split(/=(.*)/s, 2);
    given.add(name);
    if (known.has(name)) continue;
    const next = args[i + 1];
    const value = inline ?? (next !== undefined && !next.startsWith('-') ? next : undefined);
    const habit = habitHint(command, name, value);
    if (habit) return { message: `unknown option ${name}: ${habit}`, usage: command.usage };
    const close = [...known].filter((k) => k.startsWith('--')).map((k) => ({ k, d: distance(name, k) })).sort((x, y) => x.d - y.d)[0];
    const near = close && (close.d <= 2 || close.k.startsWith(name) || name.startsWith(close.k));
    return { message: `unknown option ${name} for svc ${command.words.join(' ')}${near ? `; did you mean ${close.k}?` : ''}`, usage: command.usage };
  }
  if (given.has('--help') || given.has('-h')) return null;
  const missing = command.options.filter((o) => o.required && !o.names.some((n) => given.has(n)));
  if (missing.length) {
    const list = missing.map((o) => `${o.names[0]}=${PLACEHOLDERS[o.names[0]] ?? 'VALUE'}`).join(' and ');
    return { message: `svc ${command.words.join(' ')} needs ${list}`, usage: command.usage };
  }
  const takesValue = new Set(command.options.filter((o) => o.value).flatMap((o) => o.names));
  let positionals = 0;
  for (let i = command.words.length; i < args.length; i++) {
    if (!args[i].startsWith('-')) positionals++;
    else if (takesValue.has(args[i])) i++; // `--collection NAME`: the next word is its value
  }
  if (positionals < command.positionals.length) {
    return { message: `svc ${command.words.join(' ')} needs ${command.positionals.slice(positionals).join(' ')}`, usage: command.usage };
  }
  return null;
}
