/**
 * The server's own backups (docs/operations.md, "Backups over HTTP"): tar archives made by
 * {@link createBackup} of src/ops/backup.ts, kept in `<dataDir>/backups/` (which a backup never
 * copies and a restore keeps), listed, downloaded, deleted and restored through `/api/backups`
 * (src/api/backups.ts), made on a schedule with `SERVICE_BACKUP_CRON` and pruned to
 * `SERVICE_BACKUP_KEEP`.
 *
 * - One backup at a time per server: a second one while one runs is refused (`busy`).
 * - A backup runs on a worker thread (src/ops/backup-thread.ts), so the snapshot's `VACUUM INTO`
 *   and the file copies do not stall the requests being served.
 * - A restore cannot replace the database under a running server: it is requested by writing
 *   the marker `backups/.restore-pending.json` (`{key, requested_at}`), and `svc serve` applies it
 *   at its next start, before the database is opened ({@link applyPendingRestore}).
 *
 * Only the embedded database (SQLite) is backed up this way; on PostgreSQL the routes refuse.
 */
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Cron } from 'croner';
import type { Logger } from '../log/logger.js';
import { DIR_MODE, FILE_MODE } from '../files/data-paths.js';
import { BACKUPS_DIR, BackupError, loadTar, restoreBackup, type BackupErrorCode, type BackupResult } from './backup.js';
import type { BackupThreadInput } from './backup-thread.js';

/**
 * A backup's key (its file name in the backups folder): letters, digits, `_`, `-` and `.`, not
 * starting with a dot, ending in `.tar`, at most 150 characters.
 */
export const BACKUP_KEY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,145}\.tar$/;
/** The name of a scheduled backup starts with this; only those are pruned. */
export const AUTO_PREFIX = 'auto_';
/** The pending-restore marker inside the backups folder. */
export const PENDING_RESTORE = '.restore-pending.json';

/** One backup as `GET /api/backups` answers it (PocketBase's shape). */
export interface BackupFileInfo {
  /** the file name, e.g. `svc_backup_20261128013700.tar` */
  key: string;
  /** bytes */
  size: number;
  /** last modification, in the API's datetime format (`2026-11-28 01:37:00.000Z`) */
  modified: string;
}

/** `YYYYMMDDHHMMSS` of `d` in UTC, the time part of a generated backup name. */
export function backupStamp(d: Date): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException)?.code;

/** Where the worker-thread entry is: beside this module, or in dist/ when run from sources (tsx). */
function threadScript(): string {
  const fromSource = import.meta.url.endsWith('.ts');
  return fileURLToPath(new URL(fromSource ? '../../dist/src/ops/backup-thread.js' : './backup-thread.js', import.meta.url));
}

/** Runs createBackup on a worker thread. @throws BackupError as createBackup does */
function backupOnThread(input: BackupThreadInput): Promise<BackupResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(threadScript(), { workerData: { svcBackup: input } });
    let settled = false;
    worker.once('message', (m: { ok: true; result: BackupResult } | { ok: false; code: BackupErrorCode; message: string }) => {
      settled = true;
      if (m.ok) resolve(m.result);
      else reject(new BackupError(m.code, m.message));
    });
    worker.once('error', (err) => {
      settled = true;
      reject(new BackupError('io', `the backup thread failed: ${err.message}`));
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new BackupError('io', `the backup thread exited with ${code} before it answered`));
    });
  });
}

/**
 * Checks a backup schedule's cron pattern (croner's syntax; six fields start with seconds).
 * @throws Error naming SERVICE_BACKUP_CRON when the pattern is invalid
 */
export function checkCronPattern(pattern: string): void {
  try {
    new Cron(pattern, { paused: true, timezone: 'UTC' }).stop();
  } catch (err) {
    throw new Error(`SERVICE_BACKUP_CRON: ${(err as Error).message}`);
  }
}

/** The backups folder of one data directory, as the running server uses it. */
export class BackupFolder {
  /** absolute path of `<dataDir>/backups` */
  readonly dir: string;
  private running: Promise<unknown> | null = null;

  /**
   * @param dataDir absolute data directory
   * @param version product version recorded in each backup's manifest
   */
  constructor(readonly dataDir: string, private version: string | null, private logger: Logger) {
    this.dir = join(dataDir, BACKUPS_DIR);
  }

  /** Whether a backup is being made now. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** Every backup in the folder, newest first (then by key); other entries are left out. */
  list(): BackupFileInfo[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    }
    const out: (BackupFileInfo & { ms: number })[] = [];
    for (const key of names) {
      if (!BACKUP_KEY.test(key)) continue;
      try {
        const st = statSync(join(this.dir, key));
        if (st.isFile()) out.push({ key, size: st.size, modified: st.mtime.toISOString().replace('T', ' '), ms: st.mtimeMs });
      } catch { /* deleted meanwhile */ }
    }
    out.sort((a, b) => b.ms - a.ms || a.key.localeCompare(b.key));
    return out.map(({ key, size, modified }) => ({ key, size, modified }));
  }

  /**
   * Makes a backup named `name` (default `svc_backup_<YYYYMMDDHHMMSS>.tar`), resolving when it is
   * complete. Safe while serving (the snapshot is consistent, see src/ops/backup.ts).
   * @throws BackupError `usage` (a name that is not a valid key), `exists` (a backup of that
   *   name), `busy` (another backup is being made), `io`
   */
  async create(name?: string): Promise<BackupFileInfo> {
    const key = name ?? `svc_backup_${backupStamp(new Date())}.tar`;
    this.checkName(key);
    if (this.running) throw new BackupError('busy', 'A backup is already under way; try again when it has finished.');
    if (existsSync(join(this.dir, key))) throw new BackupError('exists', `A backup named ${key} already exists.`);
    const run = (async () => {
      mkdirSync(this.dir, { recursive: true, mode: DIR_MODE });
      const started = Date.now();
      const r = await backupOnThread({ dataDir: this.dataDir, target: join(this.dir, key), version: this.version });
      this.logger.info(`backup ${key} written: database ${r.database_bytes} bytes, ${r.files} stored file(s), in ${Date.now() - started} ms`, 'backups');
    })();
    this.running = run;
    try {
      await run;
    } finally {
      this.running = null;
    }
    return this.info(key);
  }

  /** The absolute path of backup `key`. @throws BackupError `not_found` (no such backup, or not a valid key) */
  path(key: string): string {
    const p = join(this.dir, key);
    if (!BACKUP_KEY.test(key) || !existsSync(p)) throw new BackupError('not_found', `There is no backup ${key}.`);
    return p;
  }

  /** The listing entry of backup `key`. @throws BackupError `not_found` */
  info(key: string): BackupFileInfo {
    const st = statSync(this.path(key));
    return { key, size: st.size, modified: st.mtime.toISOString().replace('T', ' ') };
  }

  /** Deletes backup `key`. @throws BackupError `not_found` */
  delete(key: string): void {
    rmSync(this.path(key));
  }

  /**
   * Asks for backup `key` to be restored at the next start (the marker replaces an earlier one).
   * @throws BackupError `not_found`
   */
  requestRestore(key: string): void {
    this.path(key);
    const tmp = join(this.dir, `.restore-pending-${randomBytes(4).toString('hex')}.tmp`);
    writeFileSync(tmp, `${JSON.stringify({ key, requested_at: new Date().toISOString() })}\n`, { mode: FILE_MODE, flag: 'wx' });
    renameSync(tmp, join(this.dir, PENDING_RESTORE));
    this.logger.info(`restore of backup ${key} requested; it is applied at the next start`, 'backups');
  }

  /**
   * Stores an uploaded backup archive as `name`. It must be a tar archive holding a
   * `manifest.json` (the full check runs when it is restored).
   * @throws BackupError `usage` (bad name), `exists`, `invalid_backup` (not a backup archive)
   */
  async saveUpload(name: string, data: Buffer): Promise<BackupFileInfo> {
    this.checkName(name);
    const target = join(this.dir, name);
    if (existsSync(target)) throw new BackupError('exists', `A backup named ${name} already exists.`);
    mkdirSync(this.dir, { recursive: true, mode: DIR_MODE });
    const tmp = join(this.dir, `.upload-${randomBytes(4).toString('hex')}.tmp`);
    const { list: tarList } = await loadTar();
    writeFileSync(tmp, data, { mode: FILE_MODE, flag: 'wx' });
    try {
      let manifest = false;
      try {
        await tarList({ file: tmp, strict: true, onReadEntry: (e) => { if (e.path === 'manifest.json') manifest = true; } });
      } catch (err) {
        throw new BackupError('invalid_backup', `The upload is not a readable tar archive (${(err as Error).message}).`);
      }
      if (!manifest) throw new BackupError('invalid_backup', 'The upload holds no manifest.json; it is not an svc backup.');
      try {
        linkSync(tmp, target);
      } catch (err) {
        if (errno(err) === 'EEXIST') throw new BackupError('exists', `A backup named ${name} already exists.`);
        throw err;
      }
    } finally {
      rmSync(tmp, { force: true });
    }
    return this.info(name);
  }

  /**
   * Makes a backup `auto_svc_backup_<YYYYMMDDHHMMSS>.tar` at every tick of the cron `pattern`
   * (croner's syntax, in UTC; six fields start with seconds), then deletes the oldest scheduled backups
   * beyond `keep` (backups made by hand are never pruned). A tick while a backup runs is skipped.
   * @returns stops the schedule and waits for a running backup
   * @throws Error when `pattern` is not a valid cron pattern
   */
  schedule(pattern: string, keep: number): () => Promise<void> {
    checkCronPattern(pattern);
    const cron = new Cron(pattern, { timezone: 'UTC' }, () => void this.scheduledRun(keep));
    return async () => {
      cron.stop();
      await this.running?.catch(() => undefined);
    };
  }

  private async scheduledRun(keep: number): Promise<void> {
    if (this.running) {
      this.logger.warn('scheduled backup skipped: a backup is already under way', 'backups');
      return;
    }
    try {
      await this.create(`${AUTO_PREFIX}svc_backup_${backupStamp(new Date())}.tar`);
      this.prune(keep);
    } catch (err) {
      this.logger.error(`scheduled backup failed: ${(err as Error).message}`, 'backups');
    }
  }

  /** Deletes the scheduled backups beyond the `keep` newest. */
  prune(keep: number): void {
    for (const b of this.list().filter((x) => x.key.startsWith(AUTO_PREFIX)).slice(keep)) {
      rmSync(join(this.dir, b.key), { force: true });
      this.logger.info(`deleted scheduled backup ${b.key} (SERVICE_BACKUP_KEEP=${keep})`, 'backups');
    }
  }

  /** @throws BackupError `usage` unless `name` is a valid key ({@link BACKUP_KEY}) */
  private checkName(name: string): void {
    if (!BACKUP_KEY.test(name)) {
      throw new BackupError('usage', 'The backup name must be a file name of letters, digits, "_", "-" and "." ending in ".tar" (at most 150 characters, not starting with ".").');
    }
  }
}

/**
 * Applies the restore requested through `POST /api/backups/{key}/restore`, if any: restores
 * `<dataDir>/backups/<key>` into `dataDir` (src/ops/backup.ts `restoreBackup`, forced, the
 * backups folder kept) and removes the marker. Called by `svc serve` before it opens the
 * database, with the data directory's lock held. A restore that fails is logged and its marker
 * removed; the server then starts on the data it had (a failed restore leaves it in place).
 * @returns the key restored, or null when none was pending or the restore failed
 */
export async function applyPendingRestore(dataDir: string, logger: Logger): Promise<string | null> {
  const marker = join(dataDir, BACKUPS_DIR, PENDING_RESTORE);
  let text: string;
  try {
    text = readFileSync(marker, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return null;
    throw err;
  }
  let key = '';
  try {
    const m = JSON.parse(text) as { key?: unknown };
    if (typeof m.key === 'string' && BACKUP_KEY.test(m.key)) key = m.key;
  } catch { /* reported below */ }
  try {
    if (!key) throw new BackupError('invalid_backup', `${marker} names no valid backup`);
    logger.info(`restoring backup ${key} (requested over HTTP) before opening the database`, 'backups');
    await restoreBackup(join(dataDir, BACKUPS_DIR, key), dataDir, { force: true, lockHeld: true });
    logger.info(`restored backup ${key} into ${dataDir}`, 'backups');
    return key;
  } catch (err) {
    logger.error(`the pending restore of backup ${key || '?'} failed, starting on the current data: ${(err as Error).message}`, 'backups');
    return null;
  } finally {
    rmSync(marker, { force: true });
  }
}
