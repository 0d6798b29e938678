/**
 * The app's migrations on the embedded database (0-conventions.md, "Embedding": `migrations`;
 * spec 1-core-api.md, "Command line": `migrate`, `migrate status`).
 *
 * Migrations run before the server serves (or under `svc migrate`, with the data directory locked),
 * when nothing else writes: each one runs on this module's own connection in one
 * `BEGIN IMMEDIATE` transaction together with the row that records it in `_migrations`, so a
 * migration is either wholly applied and recorded or not at all. A migration may be async; its
 * statements still run inside its transaction, and reads see its own earlier writes.
 */
import Database from 'libsql';
import { bindAll, type SqlValue } from '../bind.js';
import { bootstrapSteps } from './bootstrap.js';

/** What a migration's `up(tx)` gets: statements inside the migration's transaction. */
export interface MigrationTx {
  /** Runs one statement; answers the rows it changed. */
  exec(sql: string, params?: unknown[]): { changes: number };
  /** Runs a script of several statements (a `.sql` migration file), no parameters. */
  script(sql: string): void;
  /** Rows of a query as objects keyed by column name. */
  query(sql: string, params?: unknown[]): Record<string, unknown>[];
}

/** One migration to run: `id` orders and records it. */
export interface RunnableMigration {
  id: string;
  up(tx: MigrationTx): unknown;
}

/** An applied migration as recorded. */
export interface AppliedMigration {
  id: string;
  /** ISO 8601 UTC with milliseconds */
  applied_at: string;
}

const CREATE = 'CREATE TABLE IF NOT EXISTS "_migrations" ("id" TEXT PRIMARY KEY NOT NULL, "applied_at" TEXT NOT NULL)';

function open(dbPath: string): InstanceType<typeof Database> {
  const db = new Database(dbPath);
  db.exec('PRAGMA busy_timeout = 10000');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA foreign_keys = ON');
  return db;
}

function rowsOf(stmt: ReturnType<InstanceType<typeof Database>['prepare']>, params: SqlValue[]): Record<string, unknown>[] {
  const cols = stmt.columns().map((c) => c.name);
  return (stmt.raw(true).all(params) as unknown[][]).map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]])));
}

/** The error of a migration that failed and was rolled back: its message, `cause` and `migrationId`. */
export function migrationFailed(id: string, err: unknown): Error & { migrationId: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  return Object.assign(new Error(`migration ${id} failed and was rolled back: ${e.message}`, { cause: e }), { migrationId: id });
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export function appliedMigrations(dbPath: string): AppliedMigration[] {
  const db = open(dbPath);
  try {
    const has = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'`).raw(true).get();
    if (!has) return [];
    return (db.prepare('SELECT "id", "applied_at" FROM "_migrations" ORDER BY "applied_at", "id"').raw(true).all() as unknown[][])
      .map(([id, at]) => ({ id: String(id), applied_at: String(at) }));
  } finally {
    db.close();
  }
}

/**
 * Applies, in the given order, every migration not yet recorded; answers the ids applied.
 * The first failure rolls its own migration back and is thrown (with `migrationId` set); the ones
 * before it stay applied.
 */
export async function applyMigrations(dbPath: string, migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  const db = open(dbPath);
  const applied: string[] = [];
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const s of bootstrapSteps()) db.prepare(s.sql).run(bindAll(s.params));
      db.exec(CREATE);
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
    const done = new Set((db.prepare('SELECT "id" FROM "_migrations"').raw(true).all() as unknown[][]).map((r) => String(r[0])));
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      const started = performance.now();
      let open = true;
      const tx: MigrationTx = {
        exec(sql, params = []) {
          if (!open) throw new Error(`migration ${m.id}: its transaction has ended`);
          return { changes: Number(db.prepare(sql).run(bindAll(params)).changes) };
        },
        script(sql) {
          if (!open) throw new Error(`migration ${m.id}: its transaction has ended`);
          db.exec(sql);
        },
        query(sql, params = []) {
          if (!open) throw new Error(`migration ${m.id}: its transaction has ended`);
          return rowsOf(db.prepare(sql), bindAll(params));
        },
      };
      db.exec('BEGIN IMMEDIATE');
      try {
        await m.up(tx);
        db.prepare('INSERT INTO "_migrations" ("id", "applied_at") VALUES (?, ?)').run([m.id, new Date().toISOString()]);
        db.exec('COMMIT');
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw migrationFailed(m.id, err);
      } finally {
        open = false;
      }
      applied.push(m.id);
      onApplied?.(m.id, performance.now() - started);
    }
    return applied;
  } finally {
    db.close();
  }
}
