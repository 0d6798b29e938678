/**
 * The app's migrations on the server-SQL backend (docs/framework.md, "Migrations";
 * ARCHITECTURE.md, `src/store/pg/`): the PostgreSQL connection the shared runner
 * (src/store/migrations.ts) applies them on. Its API is synchronous (`tx.exec`, `tx.query` and
 * `tx.script` answer at once), so the connection is a blocking bridge to a worker thread
 * (MigrationBridge, the worker is workers/pg-reader.ts): the main thread posts a statement and
 * waits in `Atomics.wait` for the answer. The bridge lives here only: a worker is started for one
 * run (applying or listing migrations, before the server listens or under `svc migrate`) and
 * terminated when the run ends, so no path that serves requests can block on it. Every other
 * read on PostgreSQL is a promise (src/store/pg/reader.ts).
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
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import type { SqlValue } from '../bind.js';
import { workerScript } from '../worker-url.js';
import type { BridgeError, BridgeInit, BridgeReply, BridgeRequest } from '../../../workers/pg-reader.js';
import { toPgPlaceholders } from './placeholders.js';
import { bootstrapSteps } from './bootstrap.js';
import { readApplied, runMigrations, type AppliedMigration, type MigrationConnection, type RunnableMigration } from '../migrations.js';
import { truncatedNotifySql } from './cluster-feed.js';
import { ASSIGNMENTS_FEED_ID, SETTINGS_FEED_ID } from '../change-feed.js';

const LOCK = `SELECT pg_advisory_lock(hashtext('svc-migrate'))`;
const UNLOCK = `SELECT pg_advisory_unlock(hashtext('svc-migrate'))`;
/** The longest one migration statement may block the main thread, ms (the server stops it first, at 90 %). */
const MIGRATION_TIMEOUT_MS = 600_000;

/** The migration connection gave up waiting for its worker (MigrationBridge's `timeoutMs`). */
export class PgBridgeTimeout extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(readonly timeoutMs: number) {
    super(`the PostgreSQL migration statement did not answer within ${timeoutMs} ms; its connection was closed`);
    this.name = 'PgBridgeTimeout';
  }
}

/** A bridge error as the domain sees errors of `pg`: a DatabaseError with its SQLSTATE `code`, or an Error with the socket's code. */
function fromBridgeError(e: BridgeError): Error {
  const err: Error = e.database ? new pg.DatabaseError(e.message, 0, 'error') : new Error(e.message);
  const fields = err as unknown as Record<string, unknown>;
  for (const k of ['code', 'severity', 'detail', 'hint', 'constraint', 'table', 'column'] as const) if (e[k] !== undefined) fields[k] = e[k];
  return err;
}

type AtomicsWithWaitAsync = typeof Atomics & {
  waitAsync(buf: Int32Array, index: number, value: number, timeout?: number): { async: false; value: string } | { async: true; value: Promise<string> };
};

/**
 * One synchronous PostgreSQL connection for the length of a migration run: a worker thread
 * (workers/pg-reader.ts) owns a pg.Client; `run` blocks the main thread until the worker has
 * answered. The connection has `statement_timeout` at 90 % of `timeoutMs`, so a slow statement
 * fails with SQLSTATE 57014; past `timeoutMs` (a stopped server, a silent network) the main thread
 * stops waiting, the worker is terminated (its connection, and the session's advisory lock, go
 * with it) and PgBridgeTimeout is thrown. Used by this module only.
 */
export class MigrationBridge {
  private worker: Worker | null;
  private port: MessagePort;
  private flag: Int32Array;

  private constructor(config: pg.ClientConfig, private readonly timeoutMs: number) {
    const { file, execArgv } = workerScript('pg-reader');
    const { port1, port2 } = new MessageChannel();
    this.flag = new Int32Array(new SharedArrayBuffer(4));
    const init: BridgeInit = { svcPgBridge: true, port: port2, flag: this.flag, config };
    this.worker = new Worker(file, { workerData: init, transferList: [port2], execArgv });
    this.worker.on('error', () => undefined); // an answer with the error was posted (workers/pg-reader.ts)
    this.port = port1;
  }

  /**
   * A bridge whose connection is open (connected without blocking the event loop).
   * @throws Error when the server cannot be reached
   */
  static async start(url: string, applicationName: string, timeoutMs = MIGRATION_TIMEOUT_MS): Promise<MigrationBridge> {
    const statementTimeout = Math.max(1, Math.floor(timeoutMs * 0.9));
    const b = new MigrationBridge({ connectionString: url, application_name: applicationName, statement_timeout: statementTimeout, connectionTimeoutMillis: Math.min(10_000, statementTimeout), keepAlive: true, keepAliveInitialDelayMillis: 10_000 }, timeoutMs);
    try {
      const reply = await b.requestAsync({ op: 'connect' });
      if (!reply.ok) throw fromBridgeError(reply.error);
    } catch (err) {
      await b.close();
      throw new Error(`cannot open the PostgreSQL database for migrations: ${(err as Error).message}`, { cause: err });
    }
    return b;
  }

  /**
   * One statement (or a script of several, without parameters), answered before this returns:
   * rows as arrays (values as readTypes parses them; bytea as the Uint8Array that crossed the
   * thread), `fields` their column names, `changes` the rows the statement changed.
   * @throws the server's error (a pg DatabaseError with its SQLSTATE `code`); PgBridgeTimeout past the timeout
   */
  run(sql: string, params: SqlValue[] = []): { rows: unknown[][]; fields: string[]; changes: number } {
    // a script without parameters is sent as it is (a literal '?' in it is no placeholder)
    const reply = this.request({ op: 'query', sql: params.length ? toPgPlaceholders(sql) : sql, params });
    if (!reply.ok) throw fromBridgeError(reply.error);
    return { rows: reply.rows, fields: reply.fields ?? [], changes: reply.changes ?? 0 };
  }

  /** Posts `msg` and blocks until the answer (at most timeoutMs). @throws PgBridgeTimeout past it (the worker is terminated) */
  private request(msg: BridgeRequest): BridgeReply {
    if (!this.worker) throw new Error('the PostgreSQL migration connection is closed');
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(msg);
    const deadline = performance.now() + this.timeoutMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(this.flag, 0, 0, left) === 'timed-out') {
        this.terminate();
        throw new PgBridgeTimeout(this.timeoutMs);
      }
      const got = receiveMessageOnPort(this.port);
      if (got) return got.message as BridgeReply;
      // woken without an answer (not expected): wait on
      Atomics.store(this.flag, 0, 0);
    }
  }

  /** As request, without blocking the event loop (connecting, closing). */
  private async requestAsync(msg: BridgeRequest): Promise<BridgeReply> {
    if (!this.worker) throw new Error('the PostgreSQL migration connection is closed');
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(msg);
    const w = (Atomics as AtomicsWithWaitAsync).waitAsync(this.flag, 0, 0, this.timeoutMs);
    // Atomics.waitAsync holds no handle of the event loop: without one, a program with nothing
    // else to do (`svc migrate`) would end with this await unsettled (exit 13)
    const keepAlive = w.async ? setInterval(() => undefined, 1 << 30) : null;
    const outcome = w.async ? await w.value.finally(() => clearInterval(keepAlive!)) : w.value;
    const got = this.worker ? receiveMessageOnPort(this.port) : undefined;
    if (outcome === 'timed-out' || !got) {
      this.terminate();
      throw new PgBridgeTimeout(this.timeoutMs);
    }
    return got.message as BridgeReply;
  }

  /** Ends the worker at once (its connection goes with it). */
  private terminate(): void {
    const w = this.worker;
    this.worker = null;
    this.port.close();
    if (w) void w.terminate().catch(() => undefined);
  }

  /** Ends the connection, then the worker; waits for the thread to exit. */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    try {
      await this.requestAsync({ op: 'close' });
    } catch { /* terminated already */ }
    this.worker = null;
    this.port.close();
    await w.terminate().catch(() => undefined);
  }
}

/** Runs `fn` over a migration bridge started for it and closed after it. */
async function session<T>(url: string, fn: (db: MigrationBridge) => Promise<T>): Promise<T> {
  const db = await MigrationBridge.start(url, 'svc-migrate-sync');
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** The MigrationConnection over the bridge; bigint columns answer as numbers, as libsql's do. */
function connection(db: MigrationBridge): MigrationConnection {
  return {
    run: (sql, params = []) => db.run(sql, params as SqlValue[]).changes,
    rows(sql, params = []) {
      const r = db.run(sql, params as SqlValue[]);
      return { columns: r.fields, rows: r.rows.map((row) => row.map((v) => (typeof v === 'bigint' ? Number(v) : v))) };
    },
    script: (sql) => void db.run(sql),
    begin: () => void db.run('BEGIN'),
    commit: () => void db.run('COMMIT'),
    rollback: () => void db.run('ROLLBACK'),
    // after a failed statement the transaction is aborted, not ended: it still needs its ROLLBACK
    inTransaction: () => true,
    // a migration may have written settings or assignments: every running instance reloads them
    recorded: () => void db.run(truncatedNotifySql([SETTINGS_FEED_ID, ASSIGNMENTS_FEED_ID])),
  };
}

/** The applied migrations in the order they were applied (empty when none ever was). */
export function appliedMigrationsPg(url: string): Promise<AppliedMigration[]> {
  return session(url, async (db) => {
    const has = db.run(`SELECT 1 FROM pg_tables WHERE tablename = '_migrations' AND schemaname = current_schema()`).rows.length > 0;
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
    db.run(LOCK);
    try {
      return await runMigrations(connection(db), bootstrapSteps(), migrations, onApplied);
    } finally {
      try {
        db.run(UNLOCK);
      } catch { /* closing the session releases it */ }
    }
  });
}
