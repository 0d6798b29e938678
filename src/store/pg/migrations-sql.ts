/**
 * The app's migrations on the server-SQL backend (docs/framework.md, "Migrations";
 * ARCHITECTURE.md, `src/store/pg/`): the PostgreSQL connection the shared runner
 * (src/store/migrations.ts) applies them on, a PgReader's synchronous bridge (PgReader.runSync),
 * so `tx.exec`, `tx.query` and `tx.script` keep their synchronous answers.
 *
 * Several instances starting at once (one database): the whole run holds a session advisory lock
 * (`svc-migrate`), so one instance applies the pending migrations while the others wait and then
 * find them recorded. The statements are PostgreSQL's: a migration written for SQLite may need
 * changes (`?` placeholders work on both).
 *
 * A migration's transaction also tells every running instance, through the cluster feed, that
 * every setting and experiment assignment may have changed (truncatedNotifySql), so their
 * FeatureService reloads them whether the server applied it at start or `svc migrate` did.
 */
import { PgReader } from './reader.js';
import { bootstrapSteps } from './bootstrap.js';
import { readApplied, runMigrations, type AppliedMigration, type MigrationConnection, type RunnableMigration } from '../migrations.js';
import { truncatedNotifySql } from './cluster-feed.js';
import { ASSIGNMENTS_FEED_ID, SETTINGS_FEED_ID } from '../change-feed.js';

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

/** The MigrationConnection over the bridge; bigint columns answer as numbers, as libsql's do. */
function connection(db: PgReader): MigrationConnection {
  return {
    run: (sql, params = []) => db.runSync(sql, params as never[]).changes,
    rows(sql, params = []) {
      const r = db.runSync(sql, params as never[]);
      return { columns: r.fields, rows: r.rows.map((row) => row.map((v) => (typeof v === 'bigint' ? Number(v) : v))) };
    },
    script: (sql) => void db.runSync(sql),
    begin: () => void db.runSync('BEGIN'),
    commit: () => void db.runSync('COMMIT'),
    rollback: () => void db.runSync('ROLLBACK'),
    // after a failed statement the transaction is aborted, not ended: it still needs its ROLLBACK
    inTransaction: () => true,
    // a migration may have written settings or assignments: every running instance reloads them
    recorded: () => void db.runSync(truncatedNotifySql([SETTINGS_FEED_ID, ASSIGNMENTS_FEED_ID])),
  };
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export function appliedMigrationsPg(url: string): Promise<AppliedMigration[]> {
  return session(url, async (db) => {
    const has = db.runSync(`SELECT 1 FROM pg_tables WHERE tablename = '_migrations' AND schemaname = current_schema()`).rows.length > 0;
    return has ? readApplied(connection(db)) : [];
  });
}

/**
 * Applies, in the given order, every migration not yet recorded (src/store/migrations.ts,
 * `runMigrations`) under the cluster-wide migration lock; answers the ids applied.
 * @throws the first failure, rolled back, with `migrationId` set
 */
export function applyMigrationsPg(url: string, migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  return session(url, async (db) => {
    db.runSync(LOCK);
    try {
      return await runMigrations(connection(db), bootstrapSteps(), migrations, onApplied);
    } finally {
      try {
        db.runSync(UNLOCK);
      } catch { /* closing the session releases it */ }
    }
  });
}
