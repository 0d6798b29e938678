/**
 * `svc superuser create|upsert`: writes a superuser straight into the data directory's database
 * (creating the system tables if needed). Safe while a server runs on the same directory: WAL and
 * a busy timeout serialize the write with the server's writer thread.
 */
import { mkdirSync } from 'node:fs';
import Database from 'libsql';
import { ApiError, type FieldError } from '../errors/api-error.js';
import { bootstrapSteps } from '../store/sqlite/bootstrap.js';
import { bindAll } from '../store/bind.js';
import { encodeValue, nowDate } from '../collections/fields/index.js';
import { authSystemFields } from './auth-fields.js';
import { newId, randomToken } from '../records/ids.js';
import { hashPassword } from './passwords.js';
import { databasePath } from '../files/data-paths.js';

const MIN_PASSWORD = 8;

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
  if ([...password].length < MIN_PASSWORD) errors.password = { code: 'validation_min', message: `Must be at least ${MIN_PASSWORD} characters.` };
  if (Object.keys(errors).length) throw ApiError.validation(errors);
  return String((res as { value: unknown }).value);
}

async function write(dataDir: string, email: string, password: string, mode: 'create' | 'upsert'): Promise<SuperuserResult> {
  const normalized = validate(email, password);
  const hash = await hashPassword(password);
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(databasePath(dataDir));
  try {
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const s of bootstrapSteps()) db.prepare(s.sql).run(bindAll(s.params));
      const existing = db.prepare('SELECT "id", "email" FROM "_superusers" WHERE "email" = ? COLLATE NOCASE').raw(true).get([normalized]) as unknown[] | undefined;
      let result: SuperuserResult;
      if (existing) {
        if (mode === 'create') throw ApiError.validation({ email: { code: 'validation_value', message: 'A superuser with this email already exists; use `svc superuser upsert` to change its password.' } });
        // A new token key ends every session of this superuser.
        db.prepare('UPDATE "_superusers" SET "passwordHash" = ?, "tokenKey" = ?, "updated" = ? WHERE "id" = ?').run([hash, randomToken(24), nowDate(), existing[0] as string]);
        result = { id: String(existing[0]), email: String(existing[1]), created: false };
      } else {
        const id = newId();
        const now = nowDate();
        db.prepare('INSERT INTO "_superusers" ("id","created","updated","email","emailVisibility","verified","passwordHash","tokenKey","token_epoch") VALUES (?,?,?,?,0,1,?,?,0)')
          .run([id, now, now, normalized, hash, randomToken(24)]);
        result = { id, email: normalized, created: true };
      }
      db.exec('COMMIT');
      return result;
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  } finally {
    db.close();
  }
}

/** Creates a superuser; 400 validation_failed if the email exists or input is invalid. */
export function createSuperuser(dataDir: string, email: string, password: string): Promise<SuperuserResult> {
  return write(dataDir, email, password, 'create');
}

/** Creates a superuser or sets the password of the existing one with that email. */
export function upsertSuperuser(dataDir: string, email: string, password: string): Promise<SuperuserResult> {
  return write(dataDir, email, password, 'upsert');
}
