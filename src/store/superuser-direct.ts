/**
 * `svc superuser create|upsert` outside an open Store (docs/operations.md): the superuser written
 * on a connection of its own, to the data directory's SQLite file or, given a URL, to the
 * PostgreSQL database the servers of SERVICE_DATABASE_URL use. The target picks the backend here,
 * in storage, so src/auth/superuser-admin.ts imports neither. Each backend's module is loaded only
 * when asked for (neither libsql nor pg is loaded by importing this one).
 */
import type { SuperuserWrite } from './auth-store.js';

/** Where the superuser is written: a SQLite database file, or a PostgreSQL connection URL. */
export type SuperuserTarget = { dbPath: string } | { url: string };

/**
 * Writes the superuser `w` in one transaction, creating the system tables when missing; resolves
 * 'exists' (nothing written) when `mode` is create and the email is taken, else the stored id and
 * email and whether a row was created (src/store/auth-store.ts, SuperuserAdminStore).
 * @throws Error when the database cannot be opened or reached, or a statement fails
 */
export async function saveSuperuserDirect(target: SuperuserTarget, w: SuperuserWrite, mode: 'create' | 'upsert'): Promise<{ id: string; email: string; created: boolean } | 'exists'> {
  if ('url' in target) return (await import('./pg/superuser-sql.js')).saveSuperuserPg(target.url, w, mode);
  return (await import('./sqlite/superuser-sql.js')).saveSuperuser(target.dbPath, w, mode);
}
