/**
 * Session liveness and the published lock file (docs/devtool.md: session states).
 *
 * `dev.lock` is an empty file held under an exclusive advisory lock (flock(2)) for the session's
 * whole life; the kernel drops it on any death, kill -9 included. Node has no flock binding, so the
 * lock is taken by flock(1) (util-linux; perl as a fallback) on a descriptor this process opened
 * and passes down: a flock belongs to the open file description, which the helper shares, so when
 * the helper exits the lock stays held through this process's descriptor, and goes when it closes
 * (or the process dies). The descriptor is opened close-on-exec, so the service binary and other
 * children never inherit it.
 *
 * Liveness test: a non-blocking attempt to take the lock. Acquirable means no session (a `dev.json`
 * left behind is stale and removed); busy means a live session, `starting` until its `dev.json`
 * is published. No process-id check is made.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** The published lock file `dev.json`, version 1 (`svc_pid` per docs/devtool.md). */
export interface LockInfo {
  version: 1;
  /** the dev process */
  pid: number;
  /** the spawned service binary (`svc serve`) */
  svc_pid: number;
  /** bind address of both ports */
  host: string;
  /** served site port */
  port: number;
  /** served site URL (with the URL prefix, if any) */
  url: string;
  /** port of the control server (status endpoint, reload stream) */
  control_port: number;
  /** absolute data directory */
  data_dir: string;
  background: boolean;
  /** ISO 8601 UTC */
  started_at: string;
}

/**
 * Takes flock(LOCK_EX | LOCK_NB) on `fd` through a helper process; true when taken.
 * @throws Error when neither flock(1) nor perl can be run
 */
export function tryFlock(fd: number): boolean {
  const stdio: Array<'ignore' | number> = ['ignore', 'ignore', 'ignore', fd];
  const r = spawnSync('flock', ['-x', '-n', '3'], { stdio });
  if (!r.error) return r.status === 0;
  const p = spawnSync('perl', ['-e', 'use Fcntl qw(:flock); open(my $fh, "<&=", 3) or exit 2; exit(flock($fh, LOCK_EX | LOCK_NB) ? 0 : 1)'], { stdio });
  if (p.error) throw new Error('cannot take the dev.lock advisory lock: neither flock(1) nor perl is installed');
  return p.status === 0;
}

/** A held `dev.lock`: released by `release()` or by the death of this process. */
export class HeldLock {
  private fd: number | null;

  private constructor(fd: number) {
    this.fd = fd;
  }

  /** Takes the lock at `path` without blocking (creating the empty file); null when it is busy. */
  static tryAcquire(path: string): HeldLock | null {
    mkdirSync(dirname(path), { recursive: true });
    const fd = openSync(path, 'a', 0o644);
    let taken = false;
    try {
      taken = tryFlock(fd);
    } finally {
      if (!taken) closeSync(fd);
    }
    return taken ? new HeldLock(fd) : null;
  }

  /**
   * Takes the lock, retrying for up to `ms` (another process's liveness probe holds it for a few
   * milliseconds at a time); null when it stays busy.
   */
  static async acquire(path: string, ms = 1000): Promise<HeldLock | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const lock = HeldLock.tryAcquire(path);
      if (lock || Date.now() >= deadline) return lock;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Releases the lock (closes the descriptor); idempotent. The file is never deleted. */
  release(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
  }
}

/** Whether a live session holds `path` (a probe: takes and releases the lock when free). */
export function lockHeld(path: string): boolean {
  if (!existsSync(path)) return false;
  const lock = HeldLock.tryAcquire(path);
  if (!lock) return true;
  lock.release();
  return false;
}

/** Writes `dev.json` atomically: a temporary file in the same folder, then rename. */
export function writeLockInfo(path: string, info: LockInfo): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o644 });
  renameSync(tmp, path);
}

/** Reads `dev.json`; null when absent or not a version-1 object. */
export function readLockInfo(path: string): LockInfo | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(text) as LockInfo;
    return v && typeof v === 'object' && v.version === 1 && Number.isInteger(v.pid) ? v : null;
  } catch {
    return null;
  }
}

/** Removes `dev.json` if it still names `pid` (any content when pid is undefined). */
export function removeLockInfo(path: string, pid?: number): void {
  if (pid !== undefined) {
    const info = readLockInfo(path);
    if (info && info.pid !== pid) return;
  }
  rmSync(path, { force: true });
}

/** What a verb sees of the session (docs/devtool.md: session states). */
export type SessionState =
  | { kind: 'none'; /** the stale lock file just removed, if there was one */ stale: LockInfo | null }
  | { kind: 'starting' }
  | { kind: 'running'; info: LockInfo };

/**
 * The session state of a data directory, by the liveness test. A stale `dev.json` is removed while
 * the probe holds the lock (so no starting session can publish in between) and returned as `stale`.
 */
export function sessionState(paths: { lock: string; lockFile: string }): SessionState {
  if (!existsSync(paths.lock)) {
    const stale = readLockInfo(paths.lockFile);
    if (existsSync(paths.lockFile)) rmSync(paths.lockFile, { force: true });
    return { kind: 'none', stale };
  }
  const probe = HeldLock.tryAcquire(paths.lock);
  if (probe) {
    try {
      const stale = readLockInfo(paths.lockFile);
      if (existsSync(paths.lockFile)) rmSync(paths.lockFile, { force: true });
      return { kind: 'none', stale };
    } finally {
      probe.release();
    }
  }
  const info = readLockInfo(paths.lockFile);
  return info ? { kind: 'running', info } : { kind: 'starting' };
}

/** Whether a process with this pid exists (EPERM: it exists under another user). */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
