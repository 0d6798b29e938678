/**
 * The app's migrations on the server-SQL backend (docs/framework.md, "Migrations";
 * ARCHITECTURE.md, `src/store/pg/`): the PostgreSQL connection the shared runner
 * (src/store/migrations.ts) applies them on, one `pg.Client` opened for the run (applying or
 * listing migrations, before the server listens or under `svc migrate`) and ended with it. Its
 * statements answer promises that the main thread never waits on; the client runs in `pg`'s
 * pipeline mode, which sends them in the order asked and answers each in turn, so a migration's
 * statements run in the order it made them, awaited or not, a failed one not stopping the rest.
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
import pg from 'pg';
import { toPgPlaceholders } from './placeholders.js';
import { bootstrapSteps } from './bootstrap.js';
import { readTypes } from './read-types.js';
import { readApplied, runMigrations, type AppliedMigration, type MigrationConnection, type RunnableMigration } from '../migrations.js';
import { truncatedNotifySql } from './cluster-feed.js';
import { ASSIGNMENTS_FEED_ID, SETTINGS_FEED_ID } from '../change-feed.js';

const LOCK = `SELECT pg_advisory_lock(hashtext('svc-migrate'))`;
const UNLOCK = `SELECT pg_advisory_unlock(hashtext('svc-migrate'))`;
/** SQLSTATE in_failed_sql_transaction: refused because an earlier statement of the transaction failed */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * One statement (or a script of several, without parameters) on the run's client: rows as
 * arrays, bigint columns as numbers (as libsql's answer them to a migration), `columns` their
 * names, `changes` the rows changed (a script answers its last statement's).
 * @throws the server's error (a pg DatabaseError with its SQLSTATE `code`)
 */
async function run(db: pg.Client, sql: string, params: readonly unknown[] = []): Promise<{ rows: unknown[][]; columns: string[]; changes: number }> {
  // a script without parameters goes as a simple query, as it is (a literal '?' in it is no placeholder)
  const text = params.length ? toPgPlaceholders(sql) : sql;
  const got = (await db.query({ text, values: params as unknown[], rowMode: 'array' })) as unknown as pg.QueryArrayResult | pg.QueryArrayResult[];
  const r = Array.isArray(got) ? got[got.length - 1] : got;
  return {
    rows: (r?.rows ?? []).map((row) => row.map((v) => (typeof v === 'bigint' ? Number(v) : v))),
    columns: r?.fields.map((f) => f.name) ?? [],
    changes: r?.rowCount ?? 0,
  };
}

/** Runs `fn` over a connection opened for it and ended after it. @throws Error when the server cannot be reached */
async function session<T>(url: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'svc-migrate', types: readTypes(), pipeline: true, connectionTimeoutMillis: 10_000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
  client.on('error', () => undefined); // a lost connection fails the next statement
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new Error(`cannot open the PostgreSQL database for migrations: ${(err as Error).message}`, { cause: err });
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The MigrationConnection over the run's connection. */
function connection(db: pg.Client): MigrationConnection {
  return {
    run: async (sql, params) => (await run(db, sql, params)).changes,
    rows: (sql, params) => run(db, sql, params),
    script: async (sql) => void (await run(db, sql)),
    begin: async () => void (await run(db, 'BEGIN')),
    commit: async () => void (await run(db, 'COMMIT')),
    rollback: async () => void (await run(db, 'ROLLBACK')),
    // after a failed statement the transaction is aborted, not ended: it still needs its ROLLBACK
    inTransaction: () => true,
    // a migration may have written settings or assignments: every running instance reloads them
    recorded: async () => void (await run(db, truncatedNotifySql([SETTINGS_FEED_ID, ASSIGNMENTS_FEED_ID]))),
    abortedCode: IN_FAILED_TRANSACTION,
  };
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export function appliedMigrationsPg(url: string): Promise<AppliedMigration[]> {
  return session(url, async (db) => {
    const has = (await run(db, `SELECT 1 FROM pg_tables WHERE tablename = '_migrations' AND schemaname = current_schema()`)).rows.length > 0;
    return has ? await readApplied(connection(db)) : [];
  });
}

/**
 * Applies, in the given order, every migration not yet recorded (src/store/migrations.ts,
 * `runMigrations`) under the cluster-wide migration lock; answers the ids applied.
 * @throws the first failure, rolled back, with `migrationId` set
 */
export function applyMigrationsPg(url: string, migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  return session(url, async (db) => {
    await run(db, LOCK);
    try {
      return await runMigrations(connection(db), bootstrapSteps(), migrations, onApplied);
    } finally {
      await run(db, UNLOCK).catch(() => undefined); // else ending the session releases it
    }
  });
}
