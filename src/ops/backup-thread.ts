/**
 * The worker-thread entry of a backup made by the server (src/ops/backup-folder.ts): runs
 * {@link createBackup} of src/ops/backup.ts off the main thread, so its `VACUUM INTO` and file
 * copies (synchronous calls) never stall the requests being served. Posts one message:
 * `{ok: true, result}` (a BackupResult) or `{ok: false, code, message}` (a BackupErrorCode).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BackupError, createBackup } from './backup.js';

/** What the thread is given: the data directory, the archive to write, the product version. */
export interface BackupThreadInput {
  dataDir: string;
  target: string;
  version: string | null;
}

if (parentPort && (workerData as { svcBackup?: BackupThreadInput } | null)?.svcBackup) {
  const port = parentPort;
  const { dataDir, target, version } = (workerData as { svcBackup: BackupThreadInput }).svcBackup;
  createBackup(dataDir, target, { version: version ?? undefined }).then(
    (result) => port.postMessage({ ok: true, result }),
    (err: unknown) => port.postMessage({ ok: false, code: err instanceof BackupError ? err.code : 'io', message: err instanceof Error ? err.message : String(err) }),
  );
}
