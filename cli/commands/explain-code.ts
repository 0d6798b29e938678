/**
 * `svc explain-code [CODE] [--json]` (docs/operations.md, "Command line"; docs/api.md, "Errors").
 *
 * - known code: `{code, known: true, summary, explanation}`, exit 0;
 * - unknown (or retired) code: `{code, known: false}`, exit 1;
 * - no code: `{codes: [{code, summary}]}` (the active ledger, alphabetical), exit 0.
 * Never validates SERVICE_LOG_*: it must work whatever the environment holds.
 */
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { ACTIVE_CODES, lookupCode } from '../../src/errors/codes.js';

export class ExplainCodeCommand extends SvcCommand {
  static paths = [['explain-code']];
  static usage = Command.Usage({
    description: 'Explain an API error code, or list all codes',
    details: 'Error responses carry a frozen `code`; this prints what it means and what to do.',
    examples: [
      ['List every code', '$0 explain-code'],
      ['Explain one code', '$0 explain-code validation_min'],
    ],
  });

  code = Option.String({ required: false, name: 'code' });

  protected async run(): Promise<number> {
    if (this.code === undefined) return this.list();
    const code = this.code.trim();
    const entry = lookupCode(code);
    if (!entry) {
      this.note(`svc: unknown error code ${JSON.stringify(code)}; run \`svc explain-code\` to list the known codes`);
      if (this.json) this.emit({ code, known: false }, '');
      return 1;
    }
    this.emit(
      { code: entry.code, known: true, summary: entry.summary, explanation: entry.explanation },
      `${entry.code}: ${entry.summary}\n\n${wrap(entry.explanation, 78)}`,
    );
    return 0;
  }

  private list(): number {
    const width = Math.max(...ACTIVE_CODES.map((e) => e.code.length));
    const text = ACTIVE_CODES.map((e) => `${e.code.padEnd(width)}  ${e.summary}`).join('\n');
    this.emit({ codes: ACTIVE_CODES.map((e) => ({ code: e.code, summary: e.summary })) }, text);
    return 0;
  }
}

/** Greedy word wrap for terminal reading. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines.join('\n');
}
