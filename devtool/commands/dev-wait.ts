/**
 * `devtool dev wait [--timeout-ms=N]` (docs/devtool.md): waits until the watcher's
 * debounce, queued changes and the current rebuild have settled (`build.status` is not `building`
 * and `build.pending` is false), then prints the final status object as JSON. Exit 0 when the
 * build is ok; 1 for a failed build, a stopped session or the timeout (default 30000 ms). It sees
 * only edits the session's watcher already received.
 */
import { Command, Option, UsageError } from 'clipanion';
import { DevtoolCommand } from '../base-command.js';
import { urlHost } from '../control-server.js';
import { sessionState } from '../lock.js';
import { fetchStatus, type StatusObject } from '../status.js';

const POLL_MS = 50;

export class DevWaitCommand extends DevtoolCommand {
  static paths = [['dev', 'wait']];
  static usage = Command.Usage({ description: 'Wait for the current rebuild to settle; print the status JSON' });

  timeoutMs = Option.String('--timeout-ms', '30000', { description: 'Give up after this many milliseconds (default 30000)' });

  protected async run(): Promise<number> {
    const timeout = Number(this.timeoutMs);
    if (!Number.isInteger(timeout) || timeout < 0) throw new UsageError('--timeout-ms must be a non-negative integer');
    const paths = this.dataPaths();
    const deadline = Date.now() + timeout;
    let last: StatusObject | null = null;
    for (;;) {
      const state = sessionState(paths);
      if (state.kind === 'none') {
        this.note('devtool: no dev server is running (stopped)');
        this.context.stdout.write(`${JSON.stringify(last ?? { running: false })}\n`);
        return 1;
      }
      if (state.kind === 'running') {
        const s = await fetchStatus(`http://${urlHost(state.info.host)}:${state.info.control_port}`);
        if (s) {
          last = s;
          if (s.build.status !== 'building' && !s.build.pending) {
            this.context.stdout.write(`${JSON.stringify(s)}\n`);
            return s.build.status === 'ok' ? 0 : 1;
          }
        }
      }
      if (Date.now() >= deadline) {
        this.note(`devtool: timed out after ${timeout} ms waiting for the build to settle`);
        this.context.stdout.write(`${JSON.stringify(last ?? { running: state.kind === 'running', starting: state.kind === 'starting' })}\n`);
        return 1;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}
