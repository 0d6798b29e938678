/**
 * `svc superuser create|upsert` on the server-SQL backend (docs/deployment.md): the counterpart of
 * src/store/sqlite/superuser-sql.ts, on a connection of its own to the database of
 * SERVICE_DATABASE_URL. Creates the system tables when missing (bootstrap.ts, idempotent), then
 * writes the superuser in one transaction; the email is compared case-insensitively as the unique
 * index on lower("email") does. Safe while servers run on the database: the row lock of the update,
 * or the unique index of the insert, serializes it with their writers.
 */
import pg from 'pg';
import type { SuperuserWrite } from '../auth-store.js';
import { bootstrapSteps } from './bootstrap.js';

/**
 * Writes the superuser; 'exists' when `mode` is create and the email is taken.
 * @throws Error when the database cannot be reached or a statement fails
 */
export async function saveSuperuserPg(url: string, w: SuperuserWrite, mode: 'create' | 'upsert'): Promise<{ id: string; email: string; created: boolean } | 'exists'> {
  const client = new pg.Client({ connectionString: url, application_name: 'svc-cli', connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query('BEGIN');
    try {
      for (const s of bootstrapSteps()) await client.query(s.sql, s.params as unknown[]);
      const existing = await client.query({ text: 'SELECT "id", "email" FROM "_superusers" WHERE lower("email") = lower($1) FOR UPDATE', values: [w.email], rowMode: 'array' });
      let result: { id: string; email: string; created: boolean } | 'exists';
      if (existing.rows.length) {
        const [id, email] = existing.rows[0] as [string, string];
        if (mode === 'create') result = 'exists';
        else {
          await client.query('UPDATE "_superusers" SET "passwordHash" = $1, "tokenKey" = $2, "updated" = $3 WHERE "id" = $4', [w.passwordHash, w.tokenKey, w.now, id]);
          result = { id, email, created: false };
        }
      } else {
        await client.query('INSERT INTO "_superusers" ("id","created","updated","email","emailVisibility","verified","passwordHash","tokenKey","token_epoch") VALUES ($1,$2,$2,$3,0,1,$4,$5,0)', [
          w.newId, w.now, w.email, w.passwordHash, w.tokenKey,
        ]);
        result = { id: w.newId, email: w.email, created: true };
      }
      await client.query(result === 'exists' ? 'ROLLBACK' : 'COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
