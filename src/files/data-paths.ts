/**
 * Files inside a data directory and their modes (docs/operations.md): the directory is created 0700
 * and every file in it 0600 (the database and its -wal/-shm, which SQLite creates with the
 * database's mode, the key files, the lock, stored files and their folders), so no other local user
 * can read records, keys or uploads. Start-up reports looser modes it finds.
 */
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Mode of the data directory and every folder in it. */
export const DIR_MODE = 0o700;
/** Mode of every file in the data directory. */
export const FILE_MODE = 0o600;

/** The libsql database file. */
export function databasePath(dataDir: string): string {
  return join(dataDir, 'data.db');
}

/** Creates the data directory (and its parents) with mode 0700 if it does not exist. */
export function ensureDataDir(dataDir: string): void {
  if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: DIR_MODE });
}

/** The files start-up checks: the directory, the database, its WAL and shared memory, the keys. */
function sensitivePaths(dataDir: string): string[] {
  const db = databasePath(dataDir);
  return [dataDir, db, `${db}-wal`, `${db}-shm`, join(dataDir, 'token_secret'), join(dataDir, 'encryption_key'), join(dataDir, 'storage')];
}

/**
 * Creates the database file empty with mode 0600 when it does not exist yet (an empty file is an
 * empty SQLite database), so SQLite, which gives -wal and -shm the database's mode, creates them
 * 0600 too. An existing file keeps its mode (looseModes reports it).
 */
export function createDatabaseFile(dataDir: string): void {
  const db = databasePath(dataDir);
  if (!existsSync(db)) closeSync(openSync(db, 'a', FILE_MODE));
}

/**
 * The sensitive paths readable or writable by group or others, as `path (mode 0755)`; the
 * caller logs one warning listing them (the operator's to tighten: svc does not change modes of
 * files it finds).
 */
export function looseModes(dataDir: string): string[] {
  const out: string[] = [];
  for (const p of sensitivePaths(dataDir)) {
    let mode: number;
    try {
      mode = statSync(p).mode & 0o777;
    } catch {
      continue;
    }
    if ((mode & 0o077) !== 0) out.push(`${p} (mode ${mode.toString(8).padStart(4, '0')})`);
  }
  return out;
}
