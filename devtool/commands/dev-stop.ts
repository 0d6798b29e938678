/**
 * `devtool dev stop` (docs/devtool.md): idempotent; nothing running is exit 0; a
 * session still starting is exit 1; otherwise SIGTERM, 5 s, SIGKILL to the dev pid, then the
 * orphan sweep (stop.ts). Under --json: `{stopped, pid?, killed?, orphan_svc_pid?}` or
 * `{stopped: false, starting: true}`.
 */
import { Command } from 'clipanion';
import { DevtoolCommand } from '../base-command.js';
import { stopSession } from '../stop.js';

export class DevStopCommand extends DevtoolCommand {
  static paths = [['dev', 'stop']];
  static usage = Command.Usage({ description: 'Stop the dev session of this directory' });

  protected async run(): Promise<number> {
    const r = await stopSession(this.dataPaths());
    if (r.result === 'starting') {
      this.emit({ stopped: false, starting: true }, 'A dev server is starting in this directory (lock held, not yet ready); nothing was stopped.');
      return 1;
    }
    if (r.result === 'none') {
      const orphan = r.orphan ? ` Stopped a service binary left by a crashed session (pid ${r.orphan}).` : '';
      this.emit({ stopped: false, running: false, orphan_svc_pid: r.orphan }, `No dev server is running.${orphan}`);
      return 0;
    }
    const orphan = r.orphan ? `; also stopped its service binary (pid ${r.orphan})` : '';
    this.emit({ stopped: true, pid: r.pid, killed: r.killed, orphan_svc_pid: r.orphan }, `Stopped the dev server (pid ${r.pid}${r.killed ? ', killed after 5 s' : ''})${orphan}.`);
    return 0;
  }
}
