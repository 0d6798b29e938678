/**
 * The app's migrations on the server-SQL backend (issue 24): the counterpart of
 * src/store/sqlite/migrations-sql.ts, with the same MigrationTx (synchronous statements inside
 * the migration's transaction) over a connection of its own: a PgReader's synchronous bridge
 * (PgReader.runSync), so `tx.exec`, `tx.query` and `tx.script` keep their synchronous answers.
 *
 * Several instances starting at once (one database): the whole run holds a session advisory lock
 * (`svc-migrate`), so one instance applies the pending migrations while the others wait and then
 * find them recorded. Each migration runs in one transaction together with its `_migrations`
 * row: wholly applied and recorded, or not at all. The statements are PostgreSQL's: a migration
 * written for SQLite may need changes (`?` placeholders work on both).
 */
import { migrationFailed, type AppliedMigration, type MigrationTx, type RunnableMigration } from '../sqlite/migrations-sql.js';
import { PgReader } from './reader.js';
import { bootstrapSteps } from './bootstrap.js';

const CREATE = 'CREATE TABLE IF NOT EXISTS "_migrations" ("id" text PRIMARY KEY NOT NULL, "applied_at" text NOT NULL)';
const LOCK = `SELECT pg_advisory_lock(hashtext('svc-migrate'))`;
const UNLOCK = `SELECT pg_advisory_unlock(hashtext('svc-migrate'))`;

async function session<T>(url: string, fn: (db: PgReader) => Promise<T>): Promise<T> {
  const db = await PgReader.start(url, { poolSize: 1, applicationName: 'svc-migrate', bridgeTimeoutMs: 600_000 });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export function appliedMigrationsPg(url: string): Promise<AppliedMigration[]> {
  return session(url, async (db) => {
    const has = db.runSync(`SELECT 1 FROM pg_tables WHERE tablename = '_migrations' AND schemaname = current_schema()`).rows.length > 0;
    if (!has) return [];
    return db.runSync('SELECT "id", "applied_at" FROM "_migrations" ORDER BY "applied_at", "id"').rows.map(([id, at]) => ({ id: String(id), applied_at: String(at) }));
  });
}

/**
 * Applies, in the given order, every migration not yet recorded; answers the ids applied. The
 * first failure rolls its own migration back and is thrown (with `migrationId` set); the ones
 * before it stay applied.
 */
export function applyMigrationsPg(url: string, migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  return session(url, async (db) => {
    db.runSync(LOCK);
    try {
      db.runSync('BEGIN');
      try {
        for (const s of bootstrapSteps()) db.runSync(s.sql, s.params);
        db.runSync(CREATE);
        db.runSync('COMMIT');
      } catch (err) {
        db.runSync('ROLLBACK');
        throw err;
      }
      const done = new Set(db.runSync('SELECT "id" FROM "_migrations"').rows.map((r) => String(r[0])));
      const applied: string[] = [];
      for (const m of migrations) {
        if (done.has(m.id)) continue;
        const started = performance.now();
        let open = true;
        const live = (): void => {
          if (!open) throw new Error(`migration ${m.id}: its transaction has ended`);
        };
        const tx: MigrationTx = {
          exec(sql, params = []) {
            live();
            return { changes: db.runSync(sql, params as never[]).changes };
          },
          script(sql) {
            live();
            db.runSync(sql);
          },
          query(sql, params = []) {
            live();
            const r = db.runSync(sql, params as never[]);
            return r.rows.map((row) => Object.fromEntries(r.fields.map((f, i) => [f, typeof row[i] === 'bigint' ? Number(row[i]) : row[i]])));
          },
        };
        db.runSync('BEGIN');
        try {
          await m.up(tx);
          db.runSync('INSERT INTO "_migrations" ("id", "applied_at") VALUES (?, ?)', [m.id, new Date().toISOString()]);
          db.runSync('COMMIT');
        } catch (err) {
          try {
            db.runSync('ROLLBACK');
          } catch { /* the connection is gone: the server rolled back */ }
          throw migrationFailed(m.id, err);
        } finally {
          open = false;
        }
        applied.push(m.id);
        onApplied?.(m.id, performance.now() - started);
      }
      return applied;
    } finally {
      try {
        db.runSync(UNLOCK);
      } catch { /* closing the session releases it */ }
    }
  });
}
