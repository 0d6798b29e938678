/**
 * `svc superuser create|upsert`: writes a superuser straight into the data directory's database,
 * or the PostgreSQL database of SERVICE_DATABASE_URL when set (creating the system tables if needed). Safe while a server runs on the same directory: WAL and
 * a busy timeout serialize the write with the server's writer thread.
 */
import { ApiError, type FieldError } from '../errors/api-error.js';
import { saveSuperuserDirect } from '../store/superuser-direct.js';
import { encodeValue, nowDate } from '../collections/fields/index.js';
import { newId, randomToken } from '../records/ids.js';
import { hashPassword } from './passwords.js';
import { createDatabaseFile, databasePath, ensureDataDir } from '../files/data-paths.js';
import { DEFAULT_MIN_PASSWORD_LENGTH, authSystemFields } from '../model/auth-schema.js';

export interface SuperuserResult {
  id: string;
  email: string;
  created: boolean;
}

function validate(email: string, password: string): string {
  const errors: Record<string, FieldError> = {};
  const emailField = authSystemFields().find((f) => f.name === 'email')!;
  const res = encodeValue(emailField, email, 'create');
  if ('error' in res) errors.email = res.error;
  if ([...password].length < DEFAULT_MIN_PASSWORD_LENGTH) errors.password = { code: 'validation_min', message: `Must be at least ${DEFAULT_MIN_PASSWORD_LENGTH} characters.` };
  if (Object.keys(errors).length) throw ApiError.validation(errors);
  return String((res as { value: unknown }).value);
}

async function write(dataDir: string, email: string, password: string, mode: 'create' | 'upsert', databaseUrl = process.env.SERVICE_DATABASE_URL?.trim()): Promise<SuperuserResult> {
  const normalized = validate(email, password);
  const hash = await hashPassword(password);
  // An existing superuser gets a new token key: every session of it ends.
  const w = { email: normalized, passwordHash: hash, tokenKey: randomToken(24), newId: newId(), now: nowDate() };
  const url = databaseUrl;
  if (!url) {
    ensureDataDir(dataDir);
    createDatabaseFile(dataDir);
  }
  // the server-SQL backend (PostgreSQL) when a URL is given: the database the servers of SERVICE_DATABASE_URL use
  const result = await saveSuperuserDirect(url ? { url } : { dbPath: databasePath(dataDir) }, w, mode);
  if (result === 'exists') throw ApiError.validation({ email: { code: 'validation_value', message: 'A superuser with this email already exists; use `svc superuser upsert` to change its password.' } });
  return result;
}

/**
 * Creates a superuser; 400 validation_failed if the email exists or input is invalid.
 * `databaseUrl`: the PostgreSQL database to write (default SERVICE_DATABASE_URL; unset: the data
 * directory's database).
 */
export function createSuperuser(dataDir: string, email: string, password: string, databaseUrl?: string): Promise<SuperuserResult> {
  return write(dataDir, email, password, 'create', databaseUrl ?? process.env.SERVICE_DATABASE_URL?.trim());
}

/** Creates a superuser or sets the password of the existing one with that email. */
export function upsertSuperuser(dataDir: string, email: string, password: string): Promise<SuperuserResult> {
  return write(dataDir, email, password, 'upsert');
}
