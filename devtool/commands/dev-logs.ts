/**
 * `devtool dev logs [--json] [--follow | -f]` (docs/devtool.md): prints `dev.log`
 * (a background session's output), or with --json the build events of `dev.ndjson` (foreground
 * and background sessions alike). A foreground session has no log file: it says where the output
 * is and exits 1. `--follow` polls for new bytes every 200 ms and ends once the session's lock is
 * no longer held. Reads are capped at 16 MiB: a larger file fails with a pointer to read it
 * directly.
 */
import { Command, Option } from 'clipanion';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { DevtoolCommand } from '../base-command.js';
import { lockHeld, sessionState } from '../lock.js';

/** Read cap (docs/devtool.md). */
export const LOG_READ_CAP = 16 * 1024 * 1024;
/** Follow poll interval. */
export const FOLLOW_POLL_MS = 200;

/** Bytes [from, to) of `file`. */
function readRange(file: string, from: number, to: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(to - from);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, from + at);
      if (n === 0) break;
      at += n;
    }
    return buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

export class DevLogsCommand extends DevtoolCommand {
  static paths = [['dev', 'logs']];
  static usage = Command.Usage({ description: 'Print the background session log (or, with --json, the build events)' });

  follow = Option.Boolean('-f,--follow', false, { description: 'Keep printing new output until the session ends' });

  protected async run(): Promise<number> {
    const paths = this.dataPaths();
    const state = sessionState(paths);
    const file = this.json ? paths.events : paths.log;
    if (!this.json && state.kind === 'running' && !state.info.background) {
      this.note(`devtool: the dev server (pid ${state.info.pid}) runs in the foreground: it has no log file, its output is in the terminal that started it`);
      return 1;
    }
    if (!existsSync(file)) {
      this.note(`devtool: no ${this.json ? 'build events' : 'log'} yet (${file} does not exist)`);
      return 1;
    }
    let size = statSync(file).size;
    if (size > LOG_READ_CAP) {
      this.note(`devtool: ${file} is ${size} bytes, past the 16 MiB read cap; read the file directly (e.g. tail -n 200 ${file})`);
      return 1;
    }
    const out = this.context.stdout;
    let at = 0;
    if (size > 0) out.write(readRange(file, 0, size));
    at = size;
    if (!this.follow) return 0;
    let polls = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
      // the lock is asked every 5th poll (a helper process each time); the bytes every poll
      const ended = ++polls % 5 === 0 && !lockHeld(paths.lock);
      if (existsSync(file)) {
        size = statSync(file).size;
        if (size < at) at = 0; // truncated: a new session began
        if (size - at > LOG_READ_CAP) {
          this.note(`devtool: more than 16 MiB arrived at once; read ${file} directly`);
          return 1;
        }
        if (size > at) {
          out.write(readRange(file, at, size));
          at = size;
        }
      }
      if (ended) return 0;
    }
  }
}
