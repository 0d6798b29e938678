/**
 * Background or foreground for `devtool dev` (docs/devtool.md: agent
 * auto-detection, the two variables and their precedence). Detection reads environment variables
 * only (no process ancestry, no terminal checks); an empty value never counts.
 */

/** The recursion guard set on the re-executed child: it runs in the foreground. */
export const CHILD_VAR = 'DEVTOOL_DEV_BACKGROUND_CHILD';
/** `1` forces background; any other value disables auto-detection. */
export const OPT_OUT_VAR = 'DEVTOOL_DEV_BACKGROUND';

/** The fourteen provider-specific variables and the provider each names. */
export const PROVIDER_VARIABLES: ReadonlyArray<readonly [variable: string, provider: string]> = [
  ['CLAUDECODE', 'Claude Code'],
  ['CLAUDE_CODE_ENTRYPOINT', 'Claude Code'],
  ['CURSOR_AGENT', 'Cursor'],
  ['GEMINI_CLI', 'Gemini CLI'],
  ['CODEX_SANDBOX', 'Codex'],
  ['CODEX_THREAD_ID', 'Codex'],
  ['AUGMENT_AGENT', 'Augment'],
  ['CLINE_ACTIVE', 'Cline'],
  ['OPENCODE_CLIENT', 'OpenCode'],
  ['AMP_CURRENT_THREAD_ID', 'Amp'],
  ['GOOSE_TERMINAL', 'Goose'],
  ['REPL_ID', 'Replit'],
  ['COPILOT_AGENT', 'GitHub Copilot'],
  ['QWEN_CODE', 'Qwen Code'],
];

/**
 * The paired entry: a trace-id variable alone means an interactive editor terminal; with the pager
 * variable rewritten for agent mode it means the editor's agent.
 */
export const TRACE_PAIR = { traceVar: 'CURSOR_TRACE_ID', pagerVar: 'PAGER', agentPager: 'head -n 10000 | cat', provider: 'Cursor' } as const;

/** The two generic variables: any non-empty value counts. */
export const GENERIC_VARIABLES = ['AGENT', 'AI_AGENT'] as const;

/** A detected agent: its provider and the variable that revealed it. */
export interface DetectedAgent {
  provider: string;
  variable: string;
}

/** The agent named by `env`, or null. */
export function detectAgent(env: NodeJS.ProcessEnv): DetectedAgent | null {
  for (const [variable, provider] of PROVIDER_VARIABLES) if (env[variable]) return { provider, variable };
  if (env[TRACE_PAIR.traceVar] && env[TRACE_PAIR.pagerVar] === TRACE_PAIR.agentPager) return { provider: TRACE_PAIR.provider, variable: TRACE_PAIR.traceVar };
  for (const variable of GENERIC_VARIABLES) if (env[variable]) return { provider: env[variable]!, variable };
  return null;
}

/** How `devtool dev` runs, and why. */
export interface ModeDecision {
  background: boolean;
  /** set only when agent detection decided (the only case with a provider in the output) */
  agent?: DetectedAgent;
  /** which rule decided: 1 guard, 2 flag, 3 ignore-lock, 4 variable, 5 detection, 0 default */
  rule: 0 | 1 | 2 | 3 | 4 | 5;
}

/**
 * Decides background or foreground; the first matching rule wins: (1) the recursion guard forces
 * foreground; (2) `--background`; (3) `--ignore-lock` suppresses detection (foreground); (4) the
 * opt-out variable (`1` background, anything else foreground); (5) agent detection; else foreground.
 */
export function decideMode(flags: { background: boolean; ignoreLock: boolean }, env: NodeJS.ProcessEnv): ModeDecision {
  if (env[CHILD_VAR]) return { background: false, rule: 1 };
  if (flags.background) return { background: true, rule: 2 };
  if (flags.ignoreLock) return { background: false, rule: 3 };
  const optOut = env[OPT_OUT_VAR];
  if (optOut !== undefined && optOut !== '') return { background: optOut === '1', rule: 4 };
  const agent = detectAgent(env);
  if (agent) return { background: true, agent, rule: 5 };
  return { background: false, rule: 0 };
}
