/**
 * Stopping a session: `devtool dev stop` and `devtool dev --force` (docs/devtool.md).
 *
 * SIGTERM to the dev pid (never a process group), up to 5 s for the lock to be released, then
 * SIGKILL to the same pid; then the orphan sweep: a service binary named by the lock file that is
 * still alive and confirmed by its health route is terminated, then killed. A stale lock file
 * (the lock is free) gets the same sweep before it is dropped.
 */
import { HeldLock, isAlive, lockHeld, removeLockInfo, sessionState, type LockInfo } from './lock.js';
import { STOP_GRACE_MS, sweepOrphan } from './service.js';
import type { DataPaths } from './site.js';

/** What `stopSession` found and did. */
export type StopOutcome =
  | { result: 'none'; /** a service binary left by a crashed session, swept */ orphan: number | null }
  | { result: 'starting' }
  | { result: 'stopped'; pid: number; /** SIGKILL was needed */ killed: boolean; orphan: number | null };

/** Waits until the lock at `path` is free, for up to `ms`; true when free. */
async function lockFreed(path: string, ms: number, pid: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    // a dead pid has released its lock; a live one is asked through the lock itself
    if (!isAlive(pid) || !lockHeld(path)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stops the session of `paths` (see the module comment). */
export async function stopSession(paths: DataPaths): Promise<StopOutcome> {
  const state = sessionState(paths);
  if (state.kind === 'starting') return { result: 'starting' };
  if (state.kind === 'none') {
    const orphan = state.stale ? await sweep(state.stale) : null;
    return { result: 'none', orphan };
  }
  const { info } = state;
  let killed = false;
  try {
    process.kill(info.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  if (!(await lockFreed(paths.lock, STOP_GRACE_MS, info.pid))) {
    killed = true;
    try { process.kill(info.pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
    await lockFreed(paths.lock, 2000, info.pid);
  }
  const orphan = await sweep(info);
  // a killed session could not remove its lock file; only ours to drop while nobody holds the lock
  const probe = HeldLock.tryAcquire(paths.lock);
  if (probe) {
    try { removeLockInfo(paths.lockFile, info.pid); } finally { probe.release(); }
  }
  return { result: 'stopped', pid: info.pid, killed, orphan };
}

/** Sweeps the service binary `info` names, if it outlived its session; its pid when swept. */
async function sweep(info: LockInfo): Promise<number | null> {
  if (!info.svc_pid) return null;
  return (await sweepOrphan(info.svc_pid, String(info.url))) ? info.svc_pid : null;
}
