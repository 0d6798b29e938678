/**
 * Backup and restore of a data directory (docs/operations.md, "Command
 * line" and "Backup and restore": `svc backup FILE` and `svc restore FILE`).
 *
 * A backup is a directory, or a tar archive of the same entries when FILE ends in `.tar`:
 *
 *   manifest.json   {format: 1, created_at, svc_version, database_bytes, keys, files, file_bytes, bytes}
 *   data.db         a consistent snapshot made by `VACUUM INTO` (safe while a server writes)
 *   token_secret    the token secret, when the data directory has one
 *   encryption_key  the field-encryption key, when the data directory has one
 *   storage/        a copy of the stored files
 *
 * The snapshot is taken before the stored files are copied: a file is written before the commit
 * that names it and deleted after the commit that drops it, so every file a snapshotted record
 * names is copied unless it is deleted while the backup runs (such a vanished file is skipped).
 *
 * The backups the server makes over HTTP live in `<dataDir>/backups/` (src/ops/backup-folder.ts):
 * a backup copies only the entries above, so it never holds that folder, and a restore keeps it
 * (with the pending-restore marker inside) rather than replacing it.
 *
 * Restore validates the backup before touching the target, builds the new contents in a staging
 * folder inside the data directory, moves the old entries aside, moves the new ones in, and only
 * then deletes the old ones: a failed restore leaves the old data in place. Everything restored
 * gets the data directory's modes (folders 0700, files 0600).
 */
import {
  chmodSync, closeSync, constants, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync,
  openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, createWriteStream,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, isAbsolute } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import Database from 'libsql';
import { DIR_MODE, FILE_MODE, databasePath, ensureDataDir } from '../files/data-paths.js';
import { PARTIAL_DIR } from '../files/blob-store.js';
import { acquireDataDirLock, LOCK_FILE_NAME } from '../config/data-dir-lock.js';

/** The manifest format this module writes and reads. */
export const BACKUP_FORMAT = 1;
const MANIFEST = 'manifest.json';
const DB = 'data.db';
const STORAGE = 'storage';
const KEY_FILES = ['token_secret', 'encryption_key'] as const;
/** The folder of a data directory that holds the server's own backups (src/ops/backup-folder.ts). */
export const BACKUPS_DIR = 'backups';

/** Error codes: the CLI reports them as `{error: {code, message}}` (exit 1). */
export type BackupErrorCode = 'usage' | 'exists' | 'not_found' | 'no_database' | 'invalid_backup' | 'not_empty' | 'busy' | 'io';

/** A refused or failed backup or restore; `code` says which (see {@link BackupErrorCode}). */
export class BackupError extends Error {
  readonly code: BackupErrorCode;

  constructor(code: BackupErrorCode, message: string) {
    super(message);
    this.name = 'BackupError';
    this.code = code;
  }
}

/** `manifest.json` of a backup; sizes in bytes. */
export interface BackupManifest {
  format: number;
  /** ISO 8601 UTC time the snapshot was taken */
  created_at: string;
  /** product version of the svc that wrote it, or null */
  svc_version: string | null;
  database_bytes: number;
  /** key files included, of `token_secret`, `encryption_key` */
  keys: string[];
  /** stored files under storage/ */
  files: number;
  file_bytes: number;
  /** database + keys + stored files */
  bytes: number;
}

/** What {@link createBackup} wrote; sizes in bytes. */
export interface BackupResult {
  /** absolute path of the backup (directory or .tar file) */
  path: string;
  database_bytes: number;
  /** stored files copied */
  files: number;
  /** database + keys + stored files */
  bytes: number;
}

/** What {@link restoreBackup} did. */
export interface RestoreResult {
  /** absolute path of the backup restored */
  path: string;
  data_dir: string;
  /** whether existing contents were replaced (`force`) */
  replaced: boolean;
}

const rand = (): string => randomBytes(4).toString('hex');
const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException)?.code;

/** Runs `fn`, turning any failure other than a BackupError into `BackupError('io')`. */
async function asIo<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof BackupError) throw err;
    throw new BackupError('io', `${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Copies one file with mode 0600; false when the source vanished and `tolerateVanished`. */
function copyFile(src: string, dst: string, tolerateVanished: boolean): boolean {
  try {
    copyFileSync(src, dst, constants.COPYFILE_EXCL);
  } catch (err) {
    if (tolerateVanished && errno(err) === 'ENOENT') return false;
    throw err;
  }
  chmodSync(dst, FILE_MODE);
  return true;
}

/**
 * Copies the regular files and folders under `src` into `dst` (created 0700; files 0600); other
 * entry kinds are skipped. With `tolerateVanished`, entries deleted meanwhile are skipped.
 * @returns the number of files copied and their total size in bytes
 */
function copyTree(src: string, dst: string, tolerateVanished: boolean): { files: number; bytes: number } {
  const total = { files: 0, bytes: 0 };
  let entries;
  try {
    entries = readdirSync(src, { withFileTypes: true });
  } catch (err) {
    if (tolerateVanished && errno(err) === 'ENOENT') return total;
    throw err;
  }
  mkdirSync(dst, { mode: DIR_MODE });
  chmodSync(dst, DIR_MODE);
  for (const e of entries) {
    if (e.name === PARTIAL_DIR) continue; // files being written (src/files/blob-store.ts)
    const from = join(src, e.name);
    const to = join(dst, e.name);
    if (e.isDirectory()) {
      const sub = copyTree(from, to, tolerateVanished);
      total.files += sub.files;
      total.bytes += sub.bytes;
    } else if (e.isFile() && copyFile(from, to, tolerateVanished)) {
      total.files++;
      total.bytes += statSync(to).size;
    }
  }
  return total;
}

/** The rows of a PRAGMA or query as arrays (libsql row objects carry `_metadata`). */
function rows(db: Database.Database, sql: string): unknown[][] {
  return db.prepare(sql).raw(true).all() as unknown[][];
}

/**
 * Writes a consistent snapshot of `dbFile` to `out` (a new file, mode 0600) with `VACUUM INTO`,
 * through a read-only connection: safe while a server writes (the live file is never copied).
 */
function snapshotDatabase(dbFile: string, out: string): void {
  closeSync(openSync(out, 'wx', FILE_MODE));
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    db.prepare('VACUUM INTO ?').run(out);
  } finally {
    db.close();
  }
}

/**
 * Fills the empty folder `dir` with a backup of `dataDir` and its manifest.
 * @returns the manifest written
 */
function writeContents(dataDir: string, dir: string, version: string | null): BackupManifest {
  const createdAt = new Date().toISOString();
  snapshotDatabase(databasePath(dataDir), join(dir, DB));
  const databaseBytes = statSync(join(dir, DB)).size;
  const keys: string[] = [];
  let keyBytes = 0;
  for (const key of KEY_FILES) {
    if (copyFile(join(dataDir, key), join(dir, key), true)) {
      keys.push(key);
      keyBytes += statSync(join(dir, key)).size;
    }
  }
  const stored = copyTree(join(dataDir, STORAGE), join(dir, STORAGE), true);
  if (!existsSync(join(dir, STORAGE))) mkdirSync(join(dir, STORAGE), { mode: DIR_MODE });
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT, created_at: createdAt, svc_version: version, database_bytes: databaseBytes, keys,
    files: stored.files, file_bytes: stored.bytes, bytes: databaseBytes + keyBytes + stored.bytes,
  };
  writeFileSync(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: FILE_MODE, flag: 'wx' });
  return manifest;
}

/** Whether `p` is `dir` or lies under it (both absolute). */
function isInside(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Whether `p` is inside `dataDir` other than in its backups folder (where backups may live). */
function isInsideData(dataDir: string, p: string): boolean {
  return isInside(dataDir, p) && !(isInside(join(dataDir, BACKUPS_DIR), p) && p !== join(dataDir, BACKUPS_DIR));
}

/** Whether anything (file, folder, dangling link) exists at `p`. */
function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Backs up `dataDir` to `target`: a directory, or a tar archive when `target` ends in `.tar`
 * (see the module comment for the contents). Takes no lock, so it works while a server runs.
 * Nothing is left at `target` when it fails.
 * @param dataDir absolute data directory
 * @param target path of the backup to create (resolved against the working directory); it may
 *   lie in the data directory's backups folder ({@link BACKUPS_DIR}), nowhere else inside it
 * @param opts.version product version recorded in the manifest
 * @throws BackupError `exists` (target exists), `usage` (target inside the data directory),
 *   `no_database` (no data.db in dataDir), `io` (any I/O or database error)
 */
export async function createBackup(dataDir: string, target: string, opts: { version?: string } = {}): Promise<BackupResult> {
  const out = resolve(target);
  if (exists(out)) throw new BackupError('exists', `${out} already exists; choose a new backup path`);
  if (isInsideData(dataDir, out)) {
    throw new BackupError('usage', `the backup ${out} cannot be inside the data directory ${dataDir} (but in its ${BACKUPS_DIR}/ folder)`);
  }
  if (!existsSync(databasePath(dataDir))) throw new BackupError('no_database', `no database in ${dataDir} (expected ${databasePath(dataDir)})`);
  const asTar = out.endsWith('.tar');
  const staging = join(dirname(out), `.${basename(out)}.partial-${rand()}`);
  const archive = `${staging}.tar`;
  return asIo(`backup to ${out} failed`, async () => {
    try {
      mkdirSync(dirname(out), { recursive: true, mode: DIR_MODE });
      mkdirSync(staging, { mode: DIR_MODE });
      const manifest = writeContents(dataDir, staging, opts.version ?? null);
      if (asTar) {
        const entries = readdirSync(staging).sort((a, b) => (a === MANIFEST ? -1 : b === MANIFEST ? 1 : a.localeCompare(b)));
        const { create: tarCreate } = await loadTar();
        await pipeline(tarCreate({ cwd: staging, portable: true }, entries), createWriteStream(archive, { flags: 'wx', mode: FILE_MODE }));
        linkSync(archive, out); // fails with EEXIST rather than replace a file created meanwhile
      } else {
        if (exists(out)) throw new BackupError('exists', `${out} appeared while the backup ran`);
        renameSync(staging, out);
      }
      return { path: out, database_bytes: manifest.database_bytes, files: manifest.files, bytes: manifest.bytes };
    } finally {
      rmSync(staging, { recursive: true, force: true });
      rmSync(archive, { force: true });
    }
  });
}

/** Reads and checks the manifest of an unpacked backup. @throws BackupError `invalid_backup` */
function readManifest(dir: string): BackupManifest {
  const invalid = (why: string) => new BackupError('invalid_backup', `${why}; not a usable svc backup`);
  let m: BackupManifest;
  try {
    m = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as BackupManifest;
  } catch (err) {
    throw invalid(errno(err) === 'ENOENT' ? `${MANIFEST} is missing` : `${MANIFEST} is unreadable (${(err as Error).message})`);
  }
  if (m === null || typeof m !== 'object' || m.format !== BACKUP_FORMAT) throw invalid(`${MANIFEST} has format ${JSON.stringify(m?.format)}, expected ${BACKUP_FORMAT}`);
  for (const k of ['database_bytes', 'files', 'file_bytes'] as const) {
    if (!Number.isSafeInteger(m[k]) || m[k] < 0) throw invalid(`${MANIFEST} has no valid ${k}`);
  }
  if (!Array.isArray(m.keys) || m.keys.some((k) => !(KEY_FILES as readonly string[]).includes(k))) throw invalid(`${MANIFEST} has no valid keys list`);
  return m;
}

/** Number and total size of the regular files under `dir` (0 when it does not exist). */
function treeSize(dir: string): { files: number; bytes: number } {
  const total = { files: 0, bytes: 0 };
  if (!existsSync(dir)) return total;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = treeSize(p);
      total.files += sub.files;
      total.bytes += sub.bytes;
    } else if (e.isFile()) {
      total.files++;
      total.bytes += statSync(p).size;
    }
  }
  return total;
}

/**
 * Checks an unpacked backup against its manifest: the database is there, has the recorded size
 * and passes `PRAGMA integrity_check`; the listed keys are there; storage/ holds the recorded
 * number and size of files. @throws BackupError `invalid_backup`
 */
function validateBackup(dir: string): BackupManifest {
  const m = readManifest(dir);
  const invalid = (why: string) => new BackupError('invalid_backup', `${why}; the backup is incomplete or damaged`);
  const db = join(dir, DB);
  if (!existsSync(db)) throw invalid(`${DB} is missing`);
  if (statSync(db).size !== m.database_bytes) throw invalid(`${DB} has ${statSync(db).size} bytes, the manifest says ${m.database_bytes}`);
  let check: unknown[][];
  try {
    const conn = new Database(db, { readonly: true, fileMustExist: true });
    try {
      check = rows(conn, 'PRAGMA integrity_check');
    } finally {
      conn.close();
    }
  } catch (err) {
    throw invalid(`${DB} cannot be read (${(err as Error).message})`);
  }
  if (check.length !== 1 || check[0][0] !== 'ok') throw invalid(`${DB} fails the integrity check (${check.slice(0, 3).map((r) => r[0]).join('; ')})`);
  for (const key of m.keys) if (!existsSync(join(dir, key))) throw invalid(`${key} is missing`);
  const stored = treeSize(join(dir, STORAGE));
  if (stored.files !== m.files || stored.bytes !== m.file_bytes) {
    throw invalid(`${STORAGE}/ holds ${stored.files} files (${stored.bytes} bytes), the manifest says ${m.files} (${m.file_bytes} bytes)`);
  }
  return m;
}

/**
 * The `tar` package, loaded on the first tar backup, restore or uploaded backup rather than at a
 * server's start, which never needs it otherwise (bench/README.md, "Memory").
 */
export function loadTar(): Promise<typeof import('tar')> {
  return import('tar');
}

/** Unpacks a tar backup into a new temporary folder (regular files and folders only). */
async function unpackTar(file: string): Promise<string> {
  const { extract: tarExtract } = await loadTar();
  const dir = mkdtempSync(join(tmpdir(), 'svc-restore-'));
  try {
    await tarExtract({ file, cwd: dir, strict: true, filter: (_p, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory') });
  } catch (err) {
    removeUnpacked(dir);
    throw new BackupError('invalid_backup', `${file} is not a readable tar archive (${(err as Error).message})`);
  }
  return dir;
}

/** The entries of the data directory a restore replaces: all but the lock, the backups folder and our staging folders. */
function dataEntries(dataDir: string): string[] {
  return readdirSync(dataDir).filter((n) => n !== LOCK_FILE_NAME && n !== BACKUPS_DIR && !n.startsWith(`${LOCK_FILE_NAME}.`) && !n.startsWith('.restore-'));
}

/**
 * Restores the backup at `source` (a backup directory or tar file) into `dataDir`, holding the
 * data-directory lock throughout. The backup is validated before the target is touched. The
 * data directory's backups folder ({@link BACKUPS_DIR}) is kept, and `source` may lie in it.
 * @param dataDir absolute data directory (created 0700 when missing)
 * @param opts.force replace existing contents (moved aside, deleted only after success)
 * @param opts.lockHeld the caller holds the data directory's lock already (`svc serve` applying a
 *   pending restore at start, src/ops/backup-folder.ts): it is not taken again
 * @throws BackupError `not_found` (no backup at source), `invalid_backup` (manifest, database,
 *   keys or files missing or damaged), `usage` (backup inside dataDir), `not_empty` (dataDir has contents and not `force`),
 *   `io` (I/O error; the old contents are back in place)
 * @throws LockError when a live process holds the data directory's lock
 */
export async function restoreBackup(source: string, dataDir: string, opts: { force?: boolean; lockHeld?: boolean } = {}): Promise<RestoreResult> {
  const src = resolve(source);
  let st;
  try {
    st = statSync(src);
  } catch {
    throw new BackupError('not_found', `no backup at ${src}`);
  }
  if (isInsideData(dataDir, src)) throw new BackupError('usage', `the backup ${src} cannot be inside the data directory ${dataDir} it replaces (but in its ${BACKUPS_DIR}/ folder)`);
  const unpacked = st.isDirectory() ? null : await unpackTar(src);
  const from = unpacked ?? src;
  try {
    try {
      validateBackup(from);
    } catch (err) {
      if (err instanceof BackupError) throw err;
      throw new BackupError('invalid_backup', `${src} cannot be read as a backup (${(err as Error).message})`);
    }
    ensureDataDir(dataDir);
    const lock = acquireDataDirLock(dataDir, { ignore: opts.lockHeld === true });
    try {
      const old = dataEntries(dataDir);
      if (old.length && !opts.force) {
        const what = old.includes(DB) ? 'already has a database' : `is not empty (${old.slice(0, 5).join(', ')})`;
        throw new BackupError('not_empty', `${dataDir} ${what}; pass --force to replace its contents`);
      }
      await asIo(`restore into ${dataDir} failed`, async () => swapIn(from, dataDir, old));
      return { path: src, data_dir: dataDir, replaced: old.length > 0 };
    } finally {
      lock.release();
    }
  } finally {
    if (unpacked) removeUnpacked(unpacked);
  }
}

/**
 * Removes a folder a tar archive was unpacked into. tar can settle (rejecting at a bad entry, or
 * resolving on a truncated archive) while writes of earlier entries are still landing, so a
 * removal can meet files created meanwhile (ENOTEMPTY, seen under load): it retries, and a
 * folder that still cannot go is left for the system's temp cleaning rather than turning the
 * restore's answer into an internal error.
 */
function removeUnpacked(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  } catch { /* left in the temp folder */ }
}

/**
 * Copies the backup in `from` into a staging folder of `dataDir`, moves the `old` entries aside,
 * moves the new ones in, then deletes the old ones. On failure the new entries are removed and
 * the old ones moved back before the error is rethrown.
 */
function swapIn(from: string, dataDir: string, old: string[]): void {
  const id = rand();
  const staging = join(dataDir, `.restore-new-${id}`);
  const aside = join(dataDir, `.restore-old-${id}`);
  const movedOld: string[] = [];
  const movedNew: string[] = [];
  try {
    mkdirSync(staging, { mode: DIR_MODE });
    copyFile(join(from, DB), join(staging, DB), false);
    for (const key of KEY_FILES) if (existsSync(join(from, key))) copyFile(join(from, key), join(staging, key), false);
    copyTree(join(from, STORAGE), join(staging, STORAGE), false);
    if (old.length) mkdirSync(aside, { mode: DIR_MODE });
    for (const name of old) {
      renameSync(join(dataDir, name), join(aside, name));
      movedOld.push(name);
    }
    for (const name of readdirSync(staging)) {
      renameSync(join(staging, name), join(dataDir, name));
      movedNew.push(name);
    }
  } catch (err) {
    for (const name of movedNew) rmSync(join(dataDir, name), { recursive: true, force: true });
    for (const name of movedOld) renameSync(join(aside, name), join(dataDir, name));
    rmSync(aside, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  rmSync(aside, { recursive: true, force: true });
}
