/**
 * The data-directory process lock (docs/operations.md, "Command line": `serve --ignore-lock`;
 * the data directory holds the process lock).
 *
 * Two servers writing one libsql file and one files folder would corrupt each other's view, so
 * `serve` takes `<dataDir>/svc.lock`, a file holding the owner's pid. A lock whose pid is not
 * running (crash, kill -9), is this process's own (a restarted container's pid 1) or whose
 * content is not a pid is stale and is taken over.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export const LOCK_FILE_NAME = 'svc.lock';

/** The data directory is locked by another live process. */
export class LockError extends Error {
  readonly dataDir: string;
  readonly pid: number;

  constructor(dataDir: string, pid: number) {
    super(`data directory ${dataDir} is in use by another svc process (pid ${pid}); stop it or pass --ignore-lock`);
    this.name = 'LockError';
    this.dataDir = dataDir;
    this.pid = pid;
  }
}

export interface DataDirLock {
  /** Removes the lock file if it still holds our pid. Idempotent. */
  release(): void;
}

/** Lock files this process holds (a lock file naming our pid and not in here is a previous incarnation's). */
const heldHere = new Set<string>();

/** Whether a process with this pid exists (EPERM means it exists under another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid a lock file names, or undefined when the content is not a positive integer. */
function parsePid(content: string | undefined): number | undefined {
  if (content === undefined || !/^\s*\d+\s*$/.test(content)) return undefined;
  const pid = Number(content.trim());
  // pid 0 and below would address process groups in kill(); never treat them as owners.
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function readOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Creates `lockPath` holding `content` only if it does not exist. Written to a temp file and
 * hard-linked into place, so the lock never exists empty (a half-written lock would look stale to
 * a contender). Returns false when the lock already exists.
 */
function createExclusive(lockPath: string, content: string): boolean {
  const tmp = `${lockPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, content, { flag: 'wx', mode: 0o600 });
  try {
    fs.linkSync(tmp, lockPath);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw err;
    // File systems without hard links: fall back to an exclusive create.
    try {
      fs.writeFileSync(lockPath, content, { flag: 'wx', mode: 0o600 });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Moves a stale lock out of the way. rename() is atomic, so of several contenders only one moves
 * a given file; whoever moved it checks it moved the stale content it judged, and puts back a
 * lock that a faster contender had already created in its place.
 * @throws LockError when the moved-aside lock turns out to belong to a live process
 */
function evictStale(dataDir: string, lockPath: string, staleContent: string | undefined): void {
  const aside = `${lockPath}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(lockPath, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else evicted it
    throw err;
  }
  const moved = readOrUndefined(aside);
  if (moved !== staleContent) {
    const pid = parsePid(moved);
    if (pid !== undefined && pid !== process.pid && isAlive(pid)) {
      try { fs.linkSync(aside, lockPath); } catch { /* the slot was taken again; theirs now */ }
      fs.rmSync(aside, { force: true });
      throw new LockError(dataDir, pid);
    }
  }
  fs.rmSync(aside, { force: true });
}

/**
 * Takes the data-directory lock, creating the directory if needed.
 * @param dataDir absolute path of the data directory
 * @param opts.ignore true skips locking entirely (`--ignore-lock`); release() is then a no-op
 * @throws LockError when a live process holds the lock
 */
export function acquireDataDirLock(dataDir: string, opts: { ignore: boolean }): DataDirLock {
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (opts.ignore) return { release() {} };

  const lockPath = path.join(dataDir, LOCK_FILE_NAME);
  // this process holds it already (a second server in one program): refused like any live owner
  if (heldHere.has(lockPath)) throw new LockError(dataDir, process.pid);
  const mine = `${process.pid}\n`;
  let held = false;
  for (let attempt = 0; attempt < 5 && !held; attempt++) {
    if (createExclusive(lockPath, mine)) {
      held = true;
      break;
    }
    const content = readOrUndefined(lockPath);
    if (content === undefined) continue; // released between our two calls
    const pid = parsePid(content);
    // A lock naming this very process is a previous incarnation's: a container's first process
    // gets the same pid (1) every time it starts, so a killed one leaves a lock that looks alive.
    if (pid !== undefined && pid !== process.pid && isAlive(pid)) throw new LockError(dataDir, pid);
    evictStale(dataDir, lockPath, content);
  }
  if (!held) {
    const pid = parsePid(readOrUndefined(lockPath)) ?? 0;
    throw new LockError(dataDir, pid);
  }

  heldHere.add(lockPath);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    heldHere.delete(lockPath);
    process.removeListener('exit', release);
    try {
      if (readOrUndefined(lockPath) === mine) fs.rmSync(lockPath, { force: true });
    } catch {
      // Best effort at shutdown: a lock left behind names our (then dead) pid and is stale.
    }
  };
  process.on('exit', release);
  return { release };
}
