import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireDataDirLock, LockError, LOCK_FILE_NAME } from '../../../src/config/data-dir-lock.js';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lock-'));
}

test('creates the directory and a lock file holding our pid; release removes it', () => {
  const dir = path.join(tempDir(), 'nested', 'data');
  const lock = acquireDataDirLock(dir, { ignore: false });
  const file = path.join(dir, LOCK_FILE_NAME);
  assert.equal(fs.readFileSync(file, 'utf8').trim(), String(process.pid));
  assert.deepEqual(fs.readdirSync(dir), [LOCK_FILE_NAME]); // no temp files left behind
  lock.release();
  assert.equal(fs.existsSync(file), false);
  lock.release(); // idempotent
});

test('a lock held by a live pid is refused with a clear message', () => {
  const dir = tempDir();
  const first = acquireDataDirLock(dir, { ignore: false });
  assert.throws(() => acquireDataDirLock(dir, { ignore: false }), (err: unknown) => {
    assert.ok(err instanceof LockError);
    assert.equal(err.pid, process.pid);
    assert.equal(err.message,
      `data directory ${dir} is in use by another svc process (pid ${process.pid}); stop it or pass --ignore-lock`);
    return true;
  });
  first.release();
});

test('ignore=true skips locking and leaves a foreign lock alone', () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, LOCK_FILE_NAME), `${process.pid}\n`);
  const lock = acquireDataDirLock(dir, { ignore: true });
  lock.release();
  assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE_NAME), 'utf8'), `${process.pid}\n`);
});

test('stale locks (dead pid, garbage, empty, pid 0) are taken over', () => {
  // Max pid on Linux is at most 2^22, so this pid cannot exist.
  for (const content of ['99999999\n', 'not a pid', '', '0', '-1']) {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, LOCK_FILE_NAME), content);
    const lock = acquireDataDirLock(dir, { ignore: false });
    assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE_NAME), 'utf8').trim(), String(process.pid), JSON.stringify(content));
    assert.deepEqual(fs.readdirSync(dir), [LOCK_FILE_NAME]);
    lock.release();
  }
});

test('a lock naming this process but not held by it is a previous incarnation\'s (a restarted container\'s pid 1): taken over', () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, LOCK_FILE_NAME), `${process.pid}\n`);
  const lock = acquireDataDirLock(dir, { ignore: false });
  assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE_NAME), 'utf8'), `${process.pid}\n`);
  // while held, this process cannot take it a second time
  assert.throws(() => acquireDataDirLock(dir, { ignore: false }), LockError);
  lock.release();
  assert.equal(fs.existsSync(path.join(dir, LOCK_FILE_NAME)), false);
});

test('release leaves a lock that no longer holds our pid', () => {
  const dir = tempDir();
  const lock = acquireDataDirLock(dir, { ignore: false });
  fs.writeFileSync(path.join(dir, LOCK_FILE_NAME), '424242\n');
  lock.release();
  assert.equal(fs.readFileSync(path.join(dir, LOCK_FILE_NAME), 'utf8'), '424242\n');
});
