/**
 * The server's backups folder (src/ops/backup-folder.ts; docs/operations.md, "Backups over
 * HTTP"): which entries are listed and in what order, key checks (no way out of the folder),
 * retention of scheduled backups only, the cron and name checks, one backup at a time, and a
 * pending restore that cannot be applied (logged, marker removed, data kept). Backups made on the
 * worker thread need `npm run build` (dist/src/ops/backup-thread.js), as the writer thread does.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { createLogger } from '../../../src/log/logger.js';
import { BackupFolder, PENDING_RESTORE, applyPendingRestore, checkCronPattern } from '../../../src/ops/backup-folder.js';
import { BackupError } from '../../../src/ops/backup.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function setup(): { dataDir: string; folder: BackupFolder; lines: string[] } {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-backup-folder-'));
  dirs.push(dataDir);
  const lines: string[] = [];
  const logger = createLogger({ format: 'text', level: 'info', requests: false, write: (l) => lines.push(l) });
  return { dataDir, folder: new BackupFolder(dataDir, 'test', logger), lines };
}

/** Writes `<dataDir>/backups/<name>` with a modification time `ageS` seconds ago. */
function put(dataDir: string, name: string, ageS: number): void {
  mkdirSync(join(dataDir, 'backups'), { recursive: true });
  writeFileSync(join(dataDir, 'backups', name), name);
  const t = new Date(Date.now() - ageS * 1000);
  utimesSync(join(dataDir, 'backups', name), t, t);
}

const code = (c: string) => (e: unknown) => e instanceof BackupError && e.code === c;

test('the list holds only .tar files with valid keys, newest first, in the API\'s datetime format', () => {
  const { dataDir, folder } = setup();
  assert.deepEqual(folder.list(), [], 'no folder yet: an empty list');
  put(dataDir, 'old.tar', 300);
  put(dataDir, 'new.tar', 10);
  put(dataDir, 'notes.txt', 5);
  put(dataDir, '.partial.tar', 5);
  put(dataDir, PENDING_RESTORE, 5);
  mkdirSync(join(dataDir, 'backups', 'dir.tar'));
  const list = folder.list();
  assert.deepEqual(list.map((b) => b.key), ['new.tar', 'old.tar']);
  assert.equal(list[0].size, 'new.tar'.length);
  assert.match(list[0].modified, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}Z$/);
});

test('keys cannot leave the folder: a path-like or hidden key is not found', () => {
  const { dataDir, folder } = setup();
  writeFileSync(join(dataDir, 'data.db'), 'db');
  put(dataDir, 'ok.tar', 1);
  for (const key of ['../data.db', '..', '.', 'sub/ok.tar', '.hidden.tar', '', 'ok.tar/']) {
    assert.throws(() => folder.path(key), code('not_found'), key);
    assert.throws(() => folder.delete(key), code('not_found'), key);
  }
  assert.ok(existsSync(join(dataDir, 'data.db')));
  folder.delete('ok.tar');
  assert.deepEqual(folder.list(), []);
});

test('pruning deletes the oldest scheduled backups beyond the count, never one made by hand', () => {
  const { dataDir, folder, lines } = setup();
  for (let i = 0; i < 5; i++) put(dataDir, `auto_svc_backup_2026010100000${i}.tar`, 100 - i * 10);
  put(dataDir, 'manual_oldest.tar', 1000);
  folder.prune(2);
  assert.deepEqual(folder.list().map((b) => b.key), ['auto_svc_backup_20260101000004.tar', 'auto_svc_backup_20260101000003.tar', 'manual_oldest.tar']);
  assert.equal(lines.filter((l) => /deleted scheduled backup/.test(l)).length, 3);
});

test('names and cron patterns are checked before anything is written', async () => {
  const { dataDir, folder } = setup();
  for (const name of ['x.zip', 'a/b.tar', '../x.tar', '.x.tar', 'x', `${'a'.repeat(147)}.tar`]) {
    await assert.rejects(folder.create(name), code('usage'), name);
  }
  put(dataDir, 'taken.tar', 1);
  await assert.rejects(folder.create('taken.tar'), code('exists'));
  assert.throws(() => checkCronPattern('every day'), /SERVICE_BACKUP_CRON/);
  checkCronPattern('*/5 * * * * *');
  checkCronPattern('0 3 * * *');
});

test('one backup at a time: a second create while one runs is refused as busy', async () => {
  const { dataDir, folder } = setup();
  const db = new Database(join(dataDir, 'data.db'));
  db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
  db.close();
  const first = folder.create('first.tar');
  assert.equal(folder.busy, true);
  await assert.rejects(folder.create('second.tar'), (e) => code('busy')(e) && /already under way/.test((e as Error).message));
  const made = await first;
  assert.equal(made.key, 'first.tar');
  assert.equal(folder.busy, false);
  assert.deepEqual(folder.list().map((b) => b.key), ['first.tar']);
});

test('a pending restore that cannot be applied is logged, its marker removed, the data kept', async () => {
  for (const marker of ['not json', JSON.stringify({ key: '../escape.tar' }), JSON.stringify({ key: 'missing.tar' })]) {
    const { dataDir, lines } = setup();
    writeFileSync(join(dataDir, 'data.db'), 'current');
    mkdirSync(join(dataDir, 'backups'));
    writeFileSync(join(dataDir, 'backups', PENDING_RESTORE), marker);
    const logger = createLogger({ format: 'text', level: 'info', requests: false, write: (l) => lines.push(l) });
    assert.equal(await applyPendingRestore(dataDir, logger), null);
    assert.ok(lines.some((l) => /pending restore of backup .* failed, starting on the current data/.test(l)), lines.join('\n'));
    assert.equal(existsSync(join(dataDir, 'backups', PENDING_RESTORE)), false);
    assert.ok(existsSync(join(dataDir, 'data.db')));
  }
  const { dataDir } = setup();
  assert.equal(await applyPendingRestore(dataDir, createLogger({ format: 'text', level: 'info', requests: false, write: () => {} })), null, 'nothing pending');
});
