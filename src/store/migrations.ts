/**
 * Running an app's migrations, on either backend (docs/framework.md, "Migrations";
 * docs/operations.md, "Migrations"): the types a migration sees and the one loop that applies them.
 * Each backend gives a `MigrationConnection` of its own (src/store/sqlite/migrations-sql.ts on the
 * data directory's file, src/store/pg/migrations-sql.ts under a cluster-wide lock).
 *
 * Migrations run before the server serves (or under `svc migrate`), when nothing else writes:
 * each one runs in one transaction together with the `_migrations` row that records it, so a
 * migration is either wholly applied and recorded or not at all. A migration may be async; its
 * statements still run inside its transaction, and reads see its own earlier writes. On SQLite a
 * statement answers at once; on PostgreSQL it answers a promise (the connection is a socket the
 * main thread never waits on), and the statements a migration did not await are awaited before
 * it is recorded.
 */
import type { WriteStep } from './write-job.js';

/** A value now (SQLite) or a promise of it (PostgreSQL). */
export type Answer<T> = T | Promise<T>;

/**
 * What a migration's `up(tx)` gets: statements inside the migration's transaction, answered at
 * once on SQLite and as promises on PostgreSQL (`await` them to run on both).
 */
export interface MigrationTx {
  /** Runs one statement; answers the rows it changed. */
  exec(sql: string, params?: unknown[]): Answer<{ changes: number }>;
  /** Runs a script of several statements (a `.sql` migration file), no parameters. */
  script(sql: string): Answer<void>;
  /** Rows of a query as objects keyed by column name. */
  query(sql: string, params?: unknown[]): Answer<Record<string, unknown>[]>;
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

/**
 * One backend's connection for the migration run: statements answered at once (SQLite) or as
 * promises run in the order they were sent (PostgreSQL). `rows` answers positional rows with
 * their column names; `begin` opens the transaction a migration runs in (SQLite's takes the write
 * lock at once); `rollback` may fail when the connection is gone (the server has rolled back
 * then).
 */
export interface MigrationConnection {
  run(sql: string, params?: readonly unknown[]): Answer<number>;
  rows(sql: string, params?: readonly unknown[]): Answer<{ columns: string[]; rows: unknown[][] }>;
  script(sql: string): Answer<void>;
  begin(): Answer<void>;
  commit(): Answer<void>;
  rollback(): Answer<void>;
  /** whether a transaction is open (after a failed statement, some databases have ended it) */
  inTransaction(): boolean;
  /** runs last inside each migration's transaction, after its `_migrations` row (the backend's announcements) */
  recorded?(): Answer<void>;
  /** the SQLSTATE of a statement refused because an earlier one failed in the transaction (PostgreSQL's 25P02) */
  abortedCode?: string;
}

/** The `_migrations` table: a migration's id and when it was applied. */
export const MIGRATIONS_DDL = 'CREATE TABLE IF NOT EXISTS "_migrations" ("id" TEXT PRIMARY KEY NOT NULL, "applied_at" TEXT NOT NULL)';
const APPLIED = 'SELECT "id", "applied_at" FROM "_migrations" ORDER BY "applied_at", "id"';

/** The error of a migration that failed and was rolled back: its message, `cause` and `migrationId`. */
export function migrationFailed(id: string, err: unknown): Error & { migrationId: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  return Object.assign(new Error(`migration ${id} failed and was rolled back: ${e.message}`, { cause: e }), { migrationId: id });
}

/** The applied migrations of a database that has the `_migrations` table, in the order applied. */
export async function readApplied(db: MigrationConnection): Promise<AppliedMigration[]> {
  return (await db.rows(APPLIED)).rows.map(([id, at]) => ({ id: String(id), applied_at: String(at) }));
}

const objects = ({ columns, rows }: { columns: string[]; rows: unknown[][] }): Record<string, unknown>[] => rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i]])));

/**
 * Applies, in the given order, every migration not yet recorded, after the backend's system
 * tables (`bootstrap`) and `_migrations` exist; answers the ids applied. The first failure rolls
 * its own migration back and is thrown (`migrationFailed`, with `migrationId` set); the ones
 * before it stay applied. `onApplied(id, ms)` is told of each one applied.
 */
export async function runMigrations(db: MigrationConnection, bootstrap: readonly WriteStep[], migrations: readonly RunnableMigration[], onApplied?: (id: string, ms: number) => void): Promise<string[]> {
  await db.begin();
  try {
    for (const s of bootstrap) await db.run(s.sql, s.params);
    await db.run(MIGRATIONS_DDL);
    await db.commit();
  } catch (err) {
    await db.rollback();
    throw err;
  }
  const done = new Set((await db.rows('SELECT "id" FROM "_migrations"')).rows.map((r) => String(r[0])));
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.id)) continue;
    const started = performance.now();
    let open = true;
    // PostgreSQL's answers the migration did not await: awaited before it is recorded, the first
    // failure kept to explain a refused record
    const sent: Promise<unknown>[] = [];
    let firstFailure: { err: unknown } | null = null;
    const track = <T>(answer: Answer<T>): Answer<T> => {
      if (answer instanceof Promise) sent.push(answer.catch((err: unknown) => void (firstFailure ??= { err })));
      return answer;
    };
    const live = (): void => {
      if (!open) throw new Error(`migration ${m.id}: its transaction has ended`);
    };
    const tx: MigrationTx = {
      exec(sql, params = []) {
        live();
        const n = db.run(sql, params);
        return track(n instanceof Promise ? n.then((changes) => ({ changes })) : { changes: n });
      },
      script(sql) {
        live();
        return track(db.script(sql));
      },
      query(sql, params = []) {
        live();
        const r = db.rows(sql, params);
        return track(r instanceof Promise ? r.then(objects) : objects(r));
      },
    };
    await db.begin();
    try {
      await m.up(tx);
      await Promise.all(sent);
      try {
        await db.run('INSERT INTO "_migrations" ("id", "applied_at") VALUES ($1, $2)', [m.id, new Date().toISOString()]);
      } catch (err) {
        // refused because a statement the migration did not await had failed: that one is the cause
        const f = firstFailure as { err: unknown } | null;
        throw f && (err as { code?: string }).code === db.abortedCode ? f.err : err;
      }
      await db.recorded?.();
      await db.commit();
    } catch (err) {
      await Promise.all(sent);
      try {
        if (db.inTransaction()) await db.rollback();
      } catch { /* the connection is gone: the database rolled back */ }
      throw migrationFailed(m.id, err);
    } finally {
      open = false;
    }
    applied.push(m.id);
    onApplied?.(m.id, performance.now() - started);
  }
  return applied;
}
