/**
 * Encrypted fields (docs/api.md, "Collections": `encrypted` on text, editor and json).
 *
 * Values are AES-256-GCM ciphertext at rest and plaintext over the API. The stored form is
 * `enc:v1:<base64(iv[12] | tag[16] | ciphertext)>`; the additional authenticated data binds a
 * value to its collection id, field id and record id, so a ciphertext copied into another row or
 * field does not decrypt. NULL stays NULL (absence is not hidden).
 *
 * The key (32 bytes) is SERVICE_ENCRYPTION_KEY when set (validated by src/config/config.ts), else
 * `<dataDir>/encryption_key` (base64, mode 0600), created on first run. It is installed once at
 * startup with {@link installFieldCipher}; the write path calls {@link encryptStored} and the
 * record codec calls {@link decryptStored}.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENCRYPTION_KEY_BYTES } from '../model/secrets.js';

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

let key: Buffer | null = null;
let warn: (msg: string) => void = () => {};
const warned = new Set<string>();

/** The key file inside a data directory. */
export function encryptionKeyPath(dataDir: string): string {
  return join(dataDir, 'encryption_key');
}

/**
 * The field-encryption key: `fromEnv` when given (SERVICE_ENCRYPTION_KEY), else the data
 * directory's key file, created with 32 random bytes (mode 0600) when missing.
 * @throws Error when the key file does not hold 32 bytes of base64
 */
export function loadEncryptionKey(dataDir: string, fromEnv?: Buffer): Buffer {
  if (fromEnv) return fromEnv;
  const file = encryptionKeyPath(dataDir);
  if (!existsSync(file)) writeFileSync(file, randomBytes(ENCRYPTION_KEY_BYTES).toString('base64'), { mode: 0o600, flag: 'wx' });
  const k = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (k.length !== ENCRYPTION_KEY_BYTES) throw new Error(`the encryption key in ${file} is not 32 bytes of base64; restore it from a backup (encrypted values cannot be read without it)`);
  return k;
}

/** Installs the process-wide key; `onWarn` receives one message per field whose values cannot be decrypted. */
export function installFieldCipher(k: Buffer, onWarn?: (msg: string) => void): void {
  if (k.length !== ENCRYPTION_KEY_BYTES) throw new Error('the field-encryption key must be 32 bytes');
  key = k;
  if (onWarn) warn = onWarn;
}

function requireKey(): Buffer {
  if (!key) throw new Error('field encryption is not initialised (installFieldCipher was not called)');
  return key;
}

function aad(collectionId: string, fieldId: string, recordId: string): Buffer {
  return Buffer.from(`svc:${collectionId}:${fieldId}:${recordId}`, 'utf8');
}

/** True when a stored value is in the encrypted form. */
export function isEncrypted(stored: unknown): boolean {
  return typeof stored === 'string' && stored.startsWith(PREFIX);
}

/**
 * Encrypts an encoded column value (the codec's TEXT output) for storage; null stays null and an
 * already encrypted value is returned as is.
 */
export function encryptStored<T>(collectionId: string, fieldId: string, recordId: string, value: T): T | string {
  if (value === null || value === undefined || isEncrypted(value)) return value;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', requireKey(), iv);
  cipher.setAAD(aad(collectionId, fieldId, recordId));
  const ct = Buffer.concat([cipher.update(String(value), 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
}

/**
 * Decrypts a stored value for the codec. A value not in the encrypted form (written before the
 * field was encrypted) is returned unchanged; one that fails authentication (another key, or a
 * value moved between rows) reads as null and logs one warning per field.
 */
export function decryptStored(collectionId: string, fieldId: string, recordId: string, stored: unknown): unknown {
  if (!isEncrypted(stored)) return stored;
  try {
    const raw = Buffer.from((stored as string).slice(PREFIX.length), 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('truncated');
    const decipher = createDecipheriv('aes-256-gcm', requireKey(), raw.subarray(0, IV_BYTES));
    decipher.setAAD(aad(collectionId, fieldId, recordId));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    const k = `${collectionId}:${fieldId}`;
    if (!warned.has(k)) {
      warned.add(k);
      warn(`cannot decrypt values of field ${fieldId} in collection ${collectionId} (wrong SERVICE_ENCRYPTION_KEY or encryption_key?); they read as null`);
    }
    return null;
  }
}
