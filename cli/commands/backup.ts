/**
 * `svc backup FILE` and `svc restore FILE` (docs/operations.md,
 * "Command line" and "Backup and restore"). The work is in src/ops/backup.ts.
 *
 * - `backup FILE [--data-dir=DIR] [--json]`: a directory, or a tar archive when FILE ends in
 *   `.tar`; works while a server runs. JSON: `{backup, database_bytes, files, bytes}`.
 * - `restore FILE [--data-dir=DIR] [--force] [--json]`: refused (code `lock`) while a server uses
 *   the data directory, and (code `not_empty`) onto existing contents without `--force`.
 *   JSON: `{restored, data_dir, replaced}`.
 *
 * Every failure exits 1; under --json stdout then holds `{error: {code, message, ...}}`.
 */
import { Command, Option } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { LockError } from '../../src/config/data-dir-lock.js';
import { productVersion } from '../../src/meta/version-info.js';

abstract class BackupBase extends SvcCommand {
  dataDir = Option.String('--data-dir', { description: 'Data directory (default ./svc_data)' });

  /** Runs `fn`, reporting a BackupError or LockError as the command's failure (exit 1). */
  protected async guarded(fn: () => Promise<number>): Promise<number> {
    const { BackupError } = await import('../../src/ops/backup.js');
    // the server-SQL backend keeps no database in the data directory (docs/deployment.md)
    if (process.env.SERVICE_DATABASE_URL?.trim()) {
      return this.fail('usage', 'svc backup and restore copy the embedded database; with SERVICE_DATABASE_URL (PostgreSQL) back the database up with pg_dump and the files with the bucket\'s own versioning');
    }
    try {
      return await fn();
    } catch (err) {
      if (err instanceof BackupError) return this.fail(err.code, err.message);
      if (err instanceof LockError) {
        return this.fail('lock', `data directory ${err.dataDir} is in use by svc process ${err.pid}; stop it before restoring`, { data_dir: err.dataDir, pid: err.pid });
      }
      throw err;
    }
  }
}

export class BackupCommand extends BackupBase {
  static paths = [['backup']];
  static usage = Command.Usage({
    category: 'Operations',
    description: 'Back up the database, stored files and keys to a directory or a .tar file',
    details: 'Safe while a server runs: the database is copied with VACUUM INTO (a consistent snapshot). FILE must not exist; a name ending in .tar makes a tar archive, anything else a directory.',
    examples: [['Back up to a tar archive', '$0 backup /backups/svc-2024-05-01.tar'], ['Back up to a directory', '$0 backup --data-dir=./svc_data ./backup-dir']],
  });

  file = Option.String({ name: 'FILE' });

  protected async run(): Promise<number> {
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;
    return this.guarded(async () => {
      const { createBackup } = await import('../../src/ops/backup.js');
      const r = await createBackup(dataDir, this.file, { version: productVersion().svc });
      // files kept in an object store are not in the data directory: the bucket is backed up on its own
      const bucket = this.context.env.SERVICE_STORAGE?.trim();
      if (bucket && bucket !== 'local') this.context.stderr.write(`warning: stored files live in ${bucket} (SERVICE_STORAGE), not in this backup; back the bucket up with its own tools (versioning or replication)\n`);
      this.emit(
        { backup: r.path, database_bytes: r.database_bytes, files: r.files, bytes: r.bytes },
        `backup written to ${r.path}: database ${r.database_bytes} bytes, ${r.files} stored file(s), ${r.bytes} bytes in all`,
      );
      return 0;
    });
  }
}

export class RestoreCommand extends BackupBase {
  static paths = [['restore']];
  static usage = Command.Usage({
    category: 'Operations',
    description: 'Restore a backup made by `svc backup` into the data directory',
    details: 'Refused while a server uses the data directory, and onto existing contents unless --force (the old contents are deleted only after the restore succeeded). The backup is checked (manifest, database integrity, files) first.',
    examples: [['Restore into an empty data directory', '$0 restore /backups/svc-2024-05-01.tar --data-dir=./svc_data'], ['Replace existing data', '$0 restore ./backup-dir --force']],
  });

  file = Option.String({ name: 'FILE' });
  force = Option.Boolean('--force', false, { description: 'Replace the data directory\'s existing contents' });

  protected async run(): Promise<number> {
    const dataDir = this.dataDirOrExit(this.dataDir);
    if (typeof dataDir === 'number') return dataDir;
    return this.guarded(async () => {
      const { restoreBackup } = await import('../../src/ops/backup.js');
      const r = await restoreBackup(this.file, dataDir, { force: this.force });
      this.emit(
        { restored: r.path, data_dir: r.data_dir, replaced: r.replaced },
        `restored ${r.path} into ${r.data_dir}${r.replaced ? ' (previous contents replaced)' : ''}`,
      );
      return 0;
    });
  }
}
