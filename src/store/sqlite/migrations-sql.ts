/**
 * The app's migrations on the embedded database (docs/framework.md, "Migrations"): the SQLite
 * connection the shared runner (src/store/migrations.ts) applies them on. It is this module's
 * own connection to the data directory's file; each migration's transaction is `BEGIN
 * IMMEDIATE`, so it holds the write lock from its first statement.
 */
import Database from 'libsql';
import { bindAll, type SqlValue } from '../bind.js';
import { bootstrapSteps } from './bootstrap.js';
import { readApplied, runMigrations, type AppliedMigration, type MigrationConnection, type RunnableMigration } from '../migrations.js';

function open(dbPath: string): InstanceType<typeof Database> {
  const db = new Database(dbPath);
  db.exec('PRAGMA busy_timeout = 10000');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA foreign_keys = ON');
  return db;
}

/** The MigrationConnection over one libsql connection (raw rows: libsql's row objects carry extra properties). */
function connection(db: InstanceType<typeof Database>): MigrationConnection {
  return {
    run: (sql, params = []) => Number(db.prepare(sql).run(bindAll(params as SqlValue[])).changes),
    rows(sql, params = []) {
      const stmt = db.prepare(sql);
      return { columns: stmt.columns().map((c) => c.name), rows: stmt.raw(true).all(bindAll(params as SqlValue[])) as unknown[][] };
    },
    script: (sql) => void db.exec(sql),
    begin: () => void db.exec('BEGIN IMMEDIATE'),
    commit: () => void db.exec('COMMIT'),
    rollback: () => void db.exec('ROLLBACK'),
    inTransaction: () => db.inTransaction,
  };
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export async function appliedMigrations(dbPath: string): Promise<AppliedMigration[]> {
  const db = open(dbPath);
  try {
    const has = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'`).raw(true).get();
    return has ? await readApplied(connection(db)) : [];
  } finally {
    db.close();
  }
}

/**
 * Applies, in the given order, every migration not yet recorded (src/store/migrations.ts,
 * `runMigrations`); answers the ids applied.
 * @throws the first failure, rolled back, with `migrationId` set
 */
export async function applyMigrations(dbPath: string, migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  const db = open(dbPath);
  try {
    return await runMigrations(connection(db), bootstrapSteps(), migrations, onApplied);
  } finally {
    db.close();
  }
}
