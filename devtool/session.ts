/**
 * A dev session in this process: `devtool dev` in the foreground, and the re-executed child of
 * `devtool dev --background` (docs/devtool.md).
 *
 * Order: take `dev.lock` (retrying up to a second while another process's liveness probe holds
 * it; `--force` stops a live session first; `--ignore-lock` takes nothing and publishes nothing),
 * sweep what a stale lock file names and drop it, reset `dev.ndjson`, read the site settings (the
 * URL prefix and which source folders exist are fixed for the session), start the control server,
 * check that `--port` is free (a taken one ends the session, exit 1), start the service binary on
 * the served root and, while it boots, build (generation 1); wait until it answers the ready
 * path, publish `dev.json` atomically, then watch the sources.
 *
 * Rebuilds: an observed edit moves the status to `building` at once (the debounce is part of the
 * build); edits that arrive while a build runs set `pending` and cause one more build right after.
 * Each finished build bumps the generation, on success and on failure; a success clears the
 * error, refreshes the staged served root (prefixed sites) and sends a reload event; a failure
 * keeps the tail of the captured output in `build.error` and sends no reload, only a
 * `build-error` event with the file, line and reason for the page overlay (snippet.ts). Each rebuild's output
 * is captured fresh into `last-build.log` (never the initial build's); `dev.ndjson` gets one event
 * per start and per finish.
 *
 * Stop: SIGINT, SIGTERM or SIGHUP close the watchers and the control server, stop the service
 * (SIGTERM, 5 s, SIGKILL), remove `dev.json` if it still names this process, release the lock.
 * The service binary exiting on its own ends the session with exit 1 (no restart on crash).
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync, type FSWatcher } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startControlServer, type BuildFailure, type ControlServer } from './control-server.js';
import { BuildError } from './errors.js';
import { HeldLock, readLockInfo, removeLockInfo, writeLockInfo, type LockInfo } from './lock.js';
import { answers, portProblem, startService, sweepOrphan, waitGone, type ServiceProcess } from './service.js';
import { SOURCE_DIRS, dataPaths, loadSiteConfig, type SiteConfig, type SourceDir } from './site.js';
import { liveReloadSnippet } from './snippet.js';
import type { BuildStatus, StatusObject } from './status.js';
import { stopSession } from './stop.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Quiet time after an observed edit before the build starts (editors write in bursts). */
export const DEBOUNCE_MS = 25;
/** `build.error` keeps at most this many characters of the captured output's end. */
export const ERROR_TAIL_CHARS = 4096;

/** How to run one session. */
export interface SessionOptions {
  siteDir: string;
  dataDir: string;
  host: string;
  /** the site's port (`--port`); 0 or absent: a free one chosen by the system */
  port?: number;
  liveReload: boolean;
  /** readiness probe path (default: the URL prefix, `/` for unprefixed sites) */
  readyPath?: string;
  /** overrides `site.json` `base` */
  urlPrefix?: string;
  /** untracked: no lock, no lock file, no session files */
  ignoreLock: boolean;
  /** stop a live session first */
  force: boolean;
  /** the lock file's `background` field (the re-executed child of `dev --background`) */
  background: boolean;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

/** One line of dev.ndjson (version 1). */
export interface BuildEvent {
  version: 1;
  kind: 'build';
  timestamp_ms: number;
  generation: number;
  status: 'building' | 'ok' | 'failed';
  duration_ms: number;
  error: string | null;
}

/**
 * A service binary of a crashed session may still be finishing its shutdown (it terminates itself
 * once the dead session's pipe closes) while holding its data directory's pid lock
 * (`svc.lock`); waits up to 5 s for that pid to exit so the new service can take the lock.
 */
async function waitForPreviousService(serviceData: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(join(serviceData, 'svc.lock'), 'utf8').trim());
  } catch {
    return;
  }
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) await waitGone(pid, 5000);
}

const tail = (text: string, n: number): string => (text.length <= n ? text : text.slice(text.length - n));

/**
 * Runs a session until it is stopped; resolves to the exit code (0 stopped by a signal, 1 could not
 * start or the service binary died).
 */
export async function runSession(o: SessionOptions): Promise<number> {
  const paths = dataPaths(o.dataDir);
  const say = (line: string): void => { o.stdout.write(`[devtool] ${line}\n`); };
  const warn = (line: string): void => { o.stderr.write(`devtool: ${line}\n`); };
  mkdirSync(paths.dataDir, { recursive: true });
  const tracked = !o.ignoreLock;

  let lock: HeldLock | null = null;
  if (tracked) {
    lock = await HeldLock.acquire(paths.lock);
    if (!lock && o.force) {
      const stopped = await stopSession(paths);
      if (stopped.result === 'stopped') say(`stopped the running session (pid ${stopped.pid})`);
      lock = await HeldLock.acquire(paths.lock, 2000);
    }
    if (!lock) {
      const info = readLockInfo(paths.lockFile);
      warn(info
        ? `a dev server is already running at ${info.url} (pid ${info.pid}); stop it with \`devtool dev stop\` or pass --force`
        : 'a dev server is starting in this directory (lock held, not yet ready); try again shortly');
      return 1;
    }
    const stale = readLockInfo(paths.lockFile);
    if (stale) {
      if (stale.svc_pid && (await sweepOrphan(stale.svc_pid, String(stale.url)))) say(`stopped the service left by a crashed session (pid ${stale.svc_pid})`);
      removeLockInfo(paths.lockFile);
    }
    writeFileSync(paths.events, '');
  } else {
    warn('untracked instance (--ignore-lock): it takes no lock and writes no dev.json, so `devtool dev status`, `stop`, `wait` and `logs` do not see it');
  }
  // An untracked instance builds and serves from a temporary folder of its own: writing the
  // tracked session's output in place would put its own live-reload snippet into those pages, and
  // the service's data directory has a lock of its own.
  const scratch = tracked ? null : mkdtempSync(join(tmpdir(), 'devtool-untracked-'));
  const work = scratch ? dataPaths(scratch) : paths;
  // Signals are handled from here on: one that arrives while the session starts aborts the start
  // cleanly (a signal before a listener exists would end the process with no cleanup at all).
  let signalled: NodeJS.Signals | null = null;
  let onStop: ((signal: NodeJS.Signals) => void) | null = null;
  let wakeOnSignal: () => void = () => {};
  const signalArrived = new Promise<null>((r) => { wakeOnSignal = () => r(null); });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (onStop) return onStop(signal);
    signalled ??= signal;
    wakeOnSignal();
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  const release = (): void => {
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    lock?.release();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  };

  let config: SiteConfig;
  try {
    config = loadSiteConfig(o.siteDir, o.urlPrefix);
  } catch (err) {
    warn(err instanceof Error ? err.message : String(err));
    release();
    return 1;
  }
  const watchDirs = SOURCE_DIRS.filter((d) => existsSync(join(config.dir, d)));
  const prefixed = config.base !== '/';
  const servedDir = prefixed ? work.servedRoot : work.out;
  const mountDir = prefixed ? join(work.servedRoot, ...config.base.split('/').filter(Boolean)) : null;
  const startedAt = new Date().toISOString();
  const state: BuildStatus = { generation: 0, status: 'building', duration_ms: 0, error: null, pending: false };
  let siteUrl = '';
  const statusObject = (): StatusObject => ({ ok: true, pid: process.pid, url: siteUrl, started_at: startedAt, build: { ...state } });

  let control: ControlServer;
  try {
    control = await startControlServer({ host: o.host, status: statusObject, session: randomBytes(8).toString('hex'), liveReload: o.liveReload });
  } catch (err) {
    warn(`cannot start the control server on ${o.host}: ${err instanceof Error ? err.message : String(err)}`);
    release();
    return 1;
  }

  // The service binary boots (about a second) while the site builds: start it first.
  mkdirSync(work.out, { recursive: true });
  if (mountDir) mkdirSync(mountDir, { recursive: true });
  await waitForPreviousService(work.serviceData);
  // a taken --port is said plainly before the build (the service's own error is vaguer); checked
  // once a crashed session's service has let go of the port
  const portTaken = await portProblem(o.host, o.port ?? 0);
  if (portTaken) {
    warn(portTaken);
    await control.close();
    release();
    return 1;
  }
  const serviceStarting = startService({ host: o.host, port: o.port, publicDir: servedDir, dataDir: work.serviceData, env: o.env, stdout: o.stdout });
  serviceStarting.catch(() => {}); // awaited below
  // the Markdown and YAML libraries load only now, also while the service boots
  const { SiteBuilder, mirrorTree } = await import('./build.js');

  const event = (e: Omit<BuildEvent, 'version' | 'kind' | 'timestamp_ms'>): void => {
    if (tracked) appendFileSync(paths.events, `${JSON.stringify({ version: 1, kind: 'build', timestamp_ms: Date.now(), ...e })}\n`);
  };
  let captured: string[] = [];
  const builder = new SiteBuilder({
    config,
    outDir: work.out,
    inject: o.liveReload ? liveReloadSnippet(control.url) : undefined,
    log: (line) => { captured.push(line); },
  });

  /** One build: events, capture, status; true on success. */
  const runBuild = async (initial: boolean): Promise<boolean> => {
    captured = [];
    state.status = 'building';
    event({ generation: state.generation, status: 'building', duration_ms: 0, error: null });
    const t0 = performance.now();
    let failure: BuildFailure | null = null;
    try {
      await builder.build();
      if (mountDir) mirrorTree(work.out, mountDir);
    } catch (err) {
      failure = err instanceof BuildError
        ? { file: err.file, line: err.line, message: err.reason }
        : { file: null, line: null, message: err instanceof Error ? err.message : String(err) };
      captured.push(err instanceof BuildError ? `build failed: ${err.message}` : `build failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    const ok = failure === null;
    const durationMs = Math.round(performance.now() - t0);
    const output = captured.join('\n');
    if (!initial && tracked) writeFileSync(paths.lastBuildLog, `${output}\n`);
    state.generation++;
    state.duration_ms = durationMs;
    state.status = ok ? 'ok' : 'failed';
    state.error = ok ? null : tail(output, ERROR_TAIL_CHARS);
    event({ generation: state.generation, status: state.status, duration_ms: durationMs, error: state.error });
    say(`build ${state.generation} ${ok ? 'ok' : 'failed'} in ${durationMs} ms${ok ? '' : `:\n${output}`}`);
    if (failure) control.buildFailed(failure, state.generation);
    else if (!initial) control.reload(state.generation);
    return ok;
  };

  await runBuild(true);

  let service: ServiceProcess;
  try {
    const started = await Promise.race([serviceStarting, signalArrived]);
    if (!started) {
      // the service, if it is still booting, ends itself once this process is gone (service.ts)
      say(`${signalled} received while starting; stopping`);
      await control.close();
      release();
      return 0;
    }
    service = started;
  } catch (err) {
    warn(err instanceof Error ? err.message : String(err));
    await control.close();
    release();
    return 1;
  }
  siteUrl = `${service.origin}${config.base}`;
  const readyUrl = `${service.origin}${o.readyPath ?? config.base}`;
  let serviceGone = false;
  void service.exited.then(() => { serviceGone = true; });
  while (!(await answers(readyUrl))) {
    if (signalled) {
      say(`${signalled} received while starting; stopping`);
      await control.close();
      await service.stop();
      release();
      return 0;
    }
    if (serviceGone) {
      warn('the service binary exited before it answered');
      await control.close();
      release();
      return 1;
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const info: LockInfo = {
    version: 1,
    pid: process.pid,
    svc_pid: service.pid,
    host: o.host,
    port: Number(new URL(service.origin).port),
    url: siteUrl,
    control_port: control.port,
    data_dir: paths.dataDir,
    background: o.background,
    started_at: startedAt,
  };
  if (tracked) writeLockInfo(paths.lockFile, info);
  say(`serving ${siteUrl} (pid ${process.pid}, service pid ${service.pid})`);
  say(`control ${control.url}/_devtool/status`);
  if (!o.background) say('press Ctrl-C to stop');

  // --- watching and rebuilding ---
  let stopping = false;
  let building = false;
  let dirty = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = async (): Promise<void> => {
    if (building || stopping) return;
    building = true;
    try {
      while (dirty && !stopping) {
        dirty = false;
        state.pending = false;
        await runBuild(false);
        if (dirty) {
          state.status = 'building';
          await new Promise((r) => setTimeout(r, DEBOUNCE_MS));
        }
      }
    } finally {
      building = false;
    }
  };
  const onEdit = (dir: SourceDir, filename: string | null): void => {
    if (stopping) return;
    if (dir === 'components' && filename) {
      // only components the layouts reference trigger a rebuild
      const name = basename(filename).replace(/\.html$/i, '');
      if (!builder.components.has(name)) return;
    }
    dirty = true;
    if (building) {
      state.pending = true;
      return;
    }
    state.status = 'building';
    clearTimeout(timer);
    timer = setTimeout(() => void loop(), DEBOUNCE_MS);
  };
  const watchers: FSWatcher[] = [];
  for (const d of watchDirs) {
    try {
      const w = watch(join(config.dir, d), { recursive: true }, (_event, filename) => onEdit(d, filename ? String(filename) : null));
      w.on('error', (err) => warn(`watching ${d}/ failed: ${err.message}`));
      watchers.push(w);
    } catch (err) {
      warn(`cannot watch ${d}/: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  return new Promise<number>((resolve) => {
    const shutdown = async (code: number, why: string): Promise<void> => {
      if (stopping) return;
      stopping = true;
      say(why);
      clearTimeout(timer);
      for (const w of watchers) w.close();
      await control.close();
      await service.stop();
      if (tracked) removeLockInfo(paths.lockFile, process.pid);
      release();
      say('stopped');
      resolve(code);
    };
    // a further signal during the shutdown is absorbed: the shutdown is already under way
    onStop = (signal) => { void shutdown(0, `${signal} received; stopping`); };
    if (signalled) onStop(signalled);
    void service.exited.then((code) => shutdown(1, `the service binary exited (${code}); the session ends (no restart)`));
  });
}
