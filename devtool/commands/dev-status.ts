/**
 * `devtool dev status [--json]` (docs/devtool.md): a
 * snapshot that never blocks. Running: the facts and the build line, exit 0; when the control
 * server cannot be read within its one-second response budget, the facts come from the lock file
 * alone and the build line reads unknown (`build: null, control_reachable: false` in JSON). Not
 * running: `No dev server is running.` / `{running: false}`, exit 1. Starting: a line saying so /
 * `{running: false, starting: true}`, exit 1.
 */
import { Command } from 'clipanion';
import { DevtoolCommand } from '../base-command.js';
import { urlHost } from '../control-server.js';
import { sessionState } from '../lock.js';
import { fetchStatus, type BuildStatus } from '../status.js';

/** The build line of the text output. */
export function buildLine(b: BuildStatus | null): string {
  if (!b) return 'Build: unknown (control server unreachable)';
  const pending = b.pending ? ', more edits pending' : '';
  if (b.status === 'building') return `Build: building (generation ${b.generation} finished so far${pending})`;
  const head = `Build: ${b.status}, generation ${b.generation}, ${b.duration_ms} ms${pending}`;
  return b.status === 'failed' && b.error ? `${head}\n${b.error.split('\n').map((l) => `  ${l}`).join('\n')}` : head;
}

export class DevStatusCommand extends DevtoolCommand {
  static paths = [['dev', 'status']];
  static usage = Command.Usage({ description: 'Show the dev session of this directory' });

  protected async run(): Promise<number> {
    const paths = this.dataPaths();
    const state = sessionState(paths);
    if (state.kind === 'none') {
      this.emit({ running: false }, 'No dev server is running.');
      return 1;
    }
    if (state.kind === 'starting') {
      this.emit({ running: false, starting: true }, 'A dev server is starting in this directory (lock held, not yet ready).');
      return 1;
    }
    const { info } = state;
    const controlUrl = `http://${urlHost(info.host)}:${info.control_port}`;
    const status = await fetchStatus(controlUrl);
    const build = status?.build ?? null;
    this.emit(
      { running: true, ...info, control_url: controlUrl, log_file: info.background ? paths.log : null, control_reachable: status !== null, build },
      [
        `Dev server running at ${info.url} (pid ${info.pid}, ${info.background ? 'background' : 'foreground'})`,
        `Control: ${controlUrl}/_devtool/status`,
        `Service: pid ${info.svc_pid}`,
        `Started: ${info.started_at}`,
        ...(info.background ? [`Log: ${paths.log}`] : []),
        buildLine(build),
      ].join('\n'),
    );
    return 0;
  }
}
