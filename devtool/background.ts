/**
 * `devtool dev --background` (docs/devtool.md).
 *
 * The parent re-executes the same program as a detached child (its own process group, stdin
 * ignored, stdout and stderr to a freshly truncated `dev.log`, `DEVTOOL_DEV_BACKGROUND_CHILD=1`
 * so it runs the session in the foreground and records `background: true`), then polls for
 * `dev.json` naming the child's pid and checks that the site answers. Then it prints four lines
 * (URL and pid, control URL, log file, how to manage it) and exits 0.
 *
 * 1. The child dies before readiness: the log tail is printed, exit 1.
 * 2. No readiness within 30 s: the child's whole process group is terminated (then killed), a
 *    partial lock file removed, the log tail printed, exit 1.
 * 3. A live session already exists: its URL and pid are printed, exit 0 (idempotent); one still
 *    starting is waited for.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { CHILD_VAR } from './agent.js';
import { isAlive, readLockInfo, removeLockInfo, sessionState, type LockInfo } from './lock.js';
import { answers, waitGone } from './service.js';
import { dataPaths, type DataPaths } from './site.js';
import { stopSession } from './stop.js';
import { urlHost } from './control-server.js';

/** Background readiness timeout (docs/devtool.md). */
export const READY_TIMEOUT_MS = 30_000;
const POLL_MS = 50;

/** What the parent needs to start a background session. */
export interface BackgroundOptions {
  siteDir: string;
  dataDir: string;
  /** the child's options after `dev` (everything but --background, --force, --json) */
  childArgs: string[];
  force: boolean;
  json: boolean;
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** readiness timeout; `DEVTOOL_READY_TIMEOUT_MS` overrides the 30 s (for tests) */
  timeoutMs?: number;
}

/** The last `lines` lines of the log (at most 16 KiB read), for a failed start. */
export function logTail(file: string, lines = 40): string {
  try {
    const size = statSync(file).size;
    const fd = openSync(file, 'r');
    try {
      const n = Math.min(size, 16 * 1024);
      const buf = Buffer.alloc(n);
      readSync(fd, buf, 0, n, size - n);
      return buf.toString('utf8').split('\n').slice(-lines - 1).join('\n').trimEnd();
    } finally {
      closeSync(fd);
    }
  } catch {
    return '(no log output)';
  }
}

/** The four lines (or the JSON object) describing a running session. */
function report(o: BackgroundOptions, paths: DataPaths, info: LockInfo, already: boolean): void {
  const control = `http://${urlHost(info.host)}:${info.control_port}`;
  if (o.json) {
    o.stdout.write(`${JSON.stringify({ running: true, already_running: already, ...info, control_url: control, log_file: paths.log })}\n`);
    return;
  }
  o.stdout.write(
    `Dev server ${already ? 'already running' : 'running'} at ${info.url} (pid ${info.pid})\n` +
    `Control: ${control}/_devtool/status\n` +
    `Log: ${paths.log}\n` +
    'Manage: devtool dev status | devtool dev wait | devtool dev logs --follow | devtool dev stop\n',
  );
}

/** Starts (or finds) a background session; resolves to the exit code. */
export async function startBackground(o: BackgroundOptions): Promise<number> {
  const paths = dataPaths(o.dataDir);
  mkdirSync(paths.dataDir, { recursive: true });
  const timeoutMs = o.timeoutMs ?? (Number(o.env.DEVTOOL_READY_TIMEOUT_MS) || READY_TIMEOUT_MS);
  const deadline = Date.now() + timeoutMs;

  if (o.force) {
    const stopped = await stopSession(paths);
    if (stopped.result === 'stopped') o.stderr.write(`devtool: stopped the running session (pid ${stopped.pid})\n`);
  } else {
    for (;;) {
      const state = sessionState(paths);
      if (state.kind === 'running') {
        report(o, paths, state.info, true);
        return 0;
      }
      if (state.kind === 'none') break;
      if (Date.now() >= deadline) {
        o.stderr.write('devtool: a dev server is starting in this directory and did not become ready in time\n');
        return 1;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  const logFd = openSync(paths.log, 'w');
  const script = process.argv[1];
  const child = spawn(process.execPath, [...process.execArgv, script, 'dev', ...o.childArgs], {
    cwd: o.siteDir,
    env: { ...o.env, [CHILD_VAR]: '1' },
    detached: true,
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  let exitCode: number | string | null | undefined;
  child.once('exit', (code, signal) => { exitCode = code ?? signal; });
  child.once('error', (err) => { exitCode = `spawn error: ${err.message}`; });
  child.unref();
  const pid = child.pid;

  for (;;) {
    if (exitCode !== undefined || pid === undefined || !isAlive(pid)) {
      o.stderr.write(`devtool: the dev server exited before it was ready (${exitCode ?? 'gone'}); the end of ${paths.log}:\n${logTail(paths.log)}\n`);
      return 1;
    }
    const info = readLockInfo(paths.lockFile);
    if (info && info.pid === pid && (await answers(info.url))) {
      report(o, paths, info, false);
      return 0;
    }
    if (Date.now() >= deadline) {
      // the whole group: the dev child and anything it started in it
      try { process.kill(-pid, 'SIGTERM'); } catch { /* gone */ }
      if (!(await waitGone(pid, 3000))) {
        try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
        await waitGone(pid, 2000);
      }
      removeLockInfo(paths.lockFile, pid);
      o.stderr.write(`devtool: the dev server did not become ready within ${Math.round(timeoutMs / 1000)} s; stopped it. The end of ${paths.log}:\n${logTail(paths.log)}\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
