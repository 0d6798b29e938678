/**
 * The owner file of the persistence mode (docs/files.md, "Resumable uploads"):
 * `<canonical-database-path>.svc-uploads.lock`. One process owns it from right after the
 * database opens until the upload store closes; a second durable owner fails at startup, even
 * with `--ignore-lock` (which only concerns the data-directory lock). The file is permanent: it is
 * never removed, only rewritten.
 *
 * Node has no advisory file locks, so ownership is the pid the file names: a live process other
 * than this one owns it; a dead pid, or a released file, is free. Claims are serialized with an
 * atomic `mkdir` of `<file>.claim` (removed right after; one left by a process killed inside the
 * few microseconds of a claim is taken over after 10 seconds).
 */
import { mkdirSync, readFileSync, realpathSync, rmdirSync, statSync, writeFileSync } from 'node:fs';

/** Another live process owns the upload store of this database. */
export class UploadOwnerError extends Error {
  constructor(readonly file: string, readonly pid: number) {
    super(`the durable upload store of this database is owned by another process (pid ${pid}, owner file ${file}); stop it first (--ignore-lock does not apply to the upload store)`);
    this.name = 'UploadOwnerError';
  }
}

export interface UploadOwnerLock {
  file: string;
  /** Marks the file released (the file itself stays). Idempotent. */
  release(): void;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The owner file's path for a database file (symbolic links resolved). */
export function ownerFilePath(dbPath: string): string {
  return `${realpathSync(dbPath)}.svc-uploads.lock`;
}

/**
 * Takes the owner file of `dbPath`'s upload store.
 * @throws UploadOwnerError when a live process other than this one owns it
 */
export function acquireUploadOwner(dbPath: string): UploadOwnerLock {
  const file = ownerFilePath(dbPath);
  const claim = `${file}.claim`;
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(claim);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let stale = false;
      try {
        stale = Date.now() - statSync(claim).mtimeMs > 10_000;
      } catch {
        continue; // removed meanwhile
      }
      if (stale) {
        try {
          rmdirSync(claim);
        } catch {
          /* another process took it over */
        }
        continue;
      }
      if (attempt > 200) throw new Error(`cannot claim the upload owner file ${file}: ${claim} stays in place`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
  try {
    let owner = 0;
    try {
      const m = /"pid":\s*(\d+)/.exec(readFileSync(file, 'utf8'));
      owner = m ? Number(m[1]) : 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (owner > 0 && owner !== process.pid && alive(owner)) throw new UploadOwnerError(file, owner);
    writeFileSync(file, `${JSON.stringify({ pid: process.pid, since: new Date().toISOString() })}\n`, { mode: 0o600 });
  } finally {
    rmdirSync(claim);
  }
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      try {
        const m = /"pid":\s*(\d+)/.exec(readFileSync(file, 'utf8'));
        if (m && Number(m[1]) === process.pid) writeFileSync(file, `${JSON.stringify({ pid: 0, released: new Date().toISOString() })}\n`, { mode: 0o600 });
      } catch {
        /* nothing to release */
      }
    },
  };
}
