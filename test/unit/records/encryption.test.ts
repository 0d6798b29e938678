/**
 * Field encryption in process (src/records/encryption.ts) and SERVICE_ENCRYPTION_KEY parsing
 * (src/config/config.ts): AES-256-GCM round trips, AAD binding, tampering, key file handling.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { decryptStored, encryptStored, installFieldCipher, isEncrypted, loadEncryptionKey } from '../../../src/records/encryption.js';
import { ConfigError, parseEncryptionKey } from '../../../src/config/config.js';

const warnings: string[] = [];
installFieldCipher(randomBytes(32), (m) => warnings.push(m));

test('round trip; random IVs; null and already-encrypted values pass through', () => {
  const a = encryptStored('col1', 'f1', 'rec1', 'héllo wörld ✓');
  assert.ok(isEncrypted(a));
  assert.match(String(a), /^enc:v1:[A-Za-z0-9+/]+=*$/);
  assert.equal(decryptStored('col1', 'f1', 'rec1', a), 'héllo wörld ✓');
  assert.notEqual(encryptStored('col1', 'f1', 'rec1', 'same'), encryptStored('col1', 'f1', 'rec1', 'same'));
  assert.equal(encryptStored('col1', 'f1', 'rec1', null), null);
  assert.equal(encryptStored('col1', 'f1', 'rec1', a), a, 'not encrypted twice');
  assert.equal(decryptStored('col1', 'f1', 'rec1', ''), '', 'plaintext (written before encryption was on) passes through');
  assert.equal(decryptStored('col1', 'f1', 'rec1', null), null);
  assert.equal(decryptStored('col1', 'f1', 'rec1', encryptStored('col1', 'f1', 'rec1', '')), '');
});

test('the ciphertext is bound to collection, field and record; tampering or another key reads null', () => {
  const a = String(encryptStored('col1', 'f1', 'rec1', 'secret'));
  assert.equal(decryptStored('col1', 'f1', 'rec2', a), null, 'copied to another record');
  assert.equal(decryptStored('col1', 'f2', 'rec1', a), null, 'copied to another field');
  assert.equal(decryptStored('col2', 'f1', 'rec1', a), null, 'copied to another collection');
  const raw = Buffer.from(a.slice('enc:v1:'.length), 'base64');
  raw[raw.length - 1] ^= 1;
  assert.equal(decryptStored('col1', 'f1', 'rec1', `enc:v1:${raw.toString('base64')}`), null, 'flipped bit');
  assert.equal(decryptStored('col1', 'f1', 'rec1', 'enc:v1:AAAA'), null, 'truncated');
  assert.ok(warnings.some((w) => w.includes('f1') && w.includes('col1')), 'a warning names the field');
  const n = warnings.length;
  decryptStored('col1', 'f1', 'rec9', a);
  assert.equal(warnings.length, n, 'one warning per field');
});

test('loadEncryptionKey: creates a 32-byte key file with mode 0600 once; an env key wins', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-key-'));
  try {
    const k1 = loadEncryptionKey(dir);
    assert.equal(k1.length, 32);
    assert.equal(statSync(join(dir, 'encryption_key')).mode & 0o777, 0o600);
    assert.deepEqual(loadEncryptionKey(dir), k1, 'reused');
    const env = randomBytes(32);
    assert.deepEqual(loadEncryptionKey(dir, env), env);
    assert.equal(Buffer.from(readFileSync(join(dir, 'encryption_key'), 'utf8'), 'base64').length, 32);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SERVICE_ENCRYPTION_KEY: hex, base64 or base64url of 32 bytes; anything else is a ConfigError without the value', () => {
  const key = randomBytes(32);
  assert.equal(parseEncryptionKey({}), undefined);
  assert.equal(parseEncryptionKey({ SERVICE_ENCRYPTION_KEY: '' }), undefined);
  for (const form of [key.toString('hex'), key.toString('hex').toUpperCase(), key.toString('base64'), key.toString('base64url'), ` ${key.toString('base64')} `]) {
    assert.deepEqual(parseEncryptionKey({ SERVICE_ENCRYPTION_KEY: form }), key, form);
  }
  for (const bad of ['secret', key.toString('hex').slice(2), randomBytes(31).toString('base64'), randomBytes(33).toString('hex'), '@'.repeat(44)]) {
    assert.throws(() => parseEncryptionKey({ SERVICE_ENCRYPTION_KEY: bad }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.variable, 'SERVICE_ENCRYPTION_KEY');
      assert.ok(!err.message.includes(bad), 'value not echoed');
      return true;
    }, bad);
  }
});
