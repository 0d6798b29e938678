/**
 * `devtool dev [DIR]`: a dev session for the site in DIR (default the current directory;
 * docs/devtool.md). Foreground unless `--background`, the variables or agent
 * detection decide otherwise (agent.ts has the precedence); the background parent lives in
 * background.ts, the session itself in session.ts.
 */
import { Command, Option, UsageError } from 'clipanion';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { DevtoolCommand } from '../base-command.js';
import { CHILD_VAR, OPT_OUT_VAR, decideMode } from '../agent.js';
import { resolveDataDir } from '../site.js';

export class DevCommand extends DevtoolCommand {
  static paths = [['dev']];
  static usage = Command.Usage({
    description: 'Build, serve and rebuild the site on edits',
    details: `
      Builds the site, serves it through \`svc serve --public\`, injects a live-reload snippet and
      rebuilds when content, layouts, assets or referenced components change. With --background
      (or DEVTOOL_DEV_BACKGROUND=1, or when a coding agent is detected) it starts a detached
      session, prints its URL, control URL and log file, and exits. Manage it with
      \`devtool dev status | wait | logs | stop\` from the site directory.
    `,
    examples: [
      ['Serve the starter site in the foreground', '$0 dev examples/site'],
      ['Serve it on port 4000 of every interface', '$0 dev examples/site --host=0.0.0.0 --port=4000'],
      ['Start a background session', '$0 dev --background'],
    ],
  });

  dir = Option.String({ required: false, name: 'DIR' });
  background = Option.Boolean('--background', false, { description: 'Run detached; print the facts and exit' });
  force = Option.Boolean('--force', false, { description: 'Stop a live session first, then start fresh' });
  ignoreLock = Option.Boolean('--ignore-lock', false, { description: 'Start an untracked instance (no lock, no dev.json)' });
  host = Option.String('--host', '127.0.0.1', { description: 'Bind address of the site and control ports' });
  port = Option.String('--port', { description: 'Port of the site (default: a free one; the control port is always a free one)' });
  liveReload = Option.Boolean('--live-reload', true, { description: 'Inject the live-reload snippet and send reload events (--no-live-reload disables)' });
  readyPath = Option.String('--ready-path', { description: 'Path probed for readiness (default the URL prefix, /)' });
  urlPrefix = Option.String('--url-prefix', { description: 'URL prefix of the site (overrides site.json "base")' });

  protected async run(): Promise<number> {
    const env = this.context.env;
    if (this.ignoreLock && (this.background || this.force)) {
      throw new UsageError('--ignore-lock cannot be combined with --background or --force');
    }
    if (this.readyPath !== undefined && !this.readyPath.startsWith('/')) throw new UsageError('--ready-path must start with /');
    const port = this.port === undefined ? 0 : Number(this.port);
    if (!/^\d+$/.test(this.port ?? '0') || port > 65535) throw new UsageError('--port must be an integer from 0 to 65535 (0: a free one)');
    const siteDir = resolve(this.dir ?? '.');
    if (!existsSync(siteDir) || !statSync(siteDir).isDirectory()) return this.fail('site', `the site directory ${siteDir} does not exist`);
    const dataDir = resolveDataDir(siteDir, this.dataDir);
    const mode = decideMode({ background: this.background, ignoreLock: this.ignoreLock }, env);
    if (mode.background) {
      if (mode.agent) {
        this.note(`devtool: detected a coding agent (${mode.agent.provider}, from ${mode.agent.variable}); starting in the background. Set ${OPT_OUT_VAR}=0 to run in the foreground.`);
      }
      const childArgs = [`--data-dir=${dataDir}`, `--host=${this.host}`];
      if (port) childArgs.push(`--port=${port}`);
      if (!this.liveReload) childArgs.push('--no-live-reload');
      if (this.readyPath !== undefined) childArgs.push(`--ready-path=${this.readyPath}`);
      if (this.urlPrefix !== undefined) childArgs.push(`--url-prefix=${this.urlPrefix}`);
      const { startBackground } = await import('../background.js');
      return startBackground({ siteDir, dataDir, childArgs, force: this.force, json: this.json, env, stdout: this.context.stdout, stderr: this.context.stderr });
    }
    // loaded on demand: the background parent never needs the session (nor the Markdown library)
    const { runSession } = await import('../session.js');
    return runSession({
      siteDir,
      dataDir,
      host: this.host,
      port,
      liveReload: this.liveReload,
      readyPath: this.readyPath,
      urlPrefix: this.urlPrefix,
      ignoreLock: this.ignoreLock,
      force: this.force,
      background: env[CHILD_VAR] === '1',
      stdout: this.context.stdout,
      stderr: this.context.stderr,
      env: Object.fromEntries(Object.entries(env).filter(([k]) => k !== CHILD_VAR)),
    });
  }
}
