/**
 * The writer thread: owns the only write connection to the database and commits queued jobs in
 * groups (group commit). Every message that arrived while a group was being applied becomes the
 * next group: one BEGIN IMMEDIATE … COMMIT (one fsync) serves many requests, and each job runs in
 * its own SAVEPOINT so a failing job rolls back alone.
 *
 * workerData: { path: string, busyTimeoutMs: number }
 * Messages in: a flat batch of jobs (the jobs of one main-thread event-loop turn; wire format in
 * src/db/write-protocol.ts) | { close: true }. Messages out: WriterReady, one flat outcome array a
 * group, { closed: true }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'libsql';
import { OUT_GUARD, OUT_OK, OUT_SQLITE, STEP_EXPECT_CHANGE, STEP_EXPECT_ROW, STEP_RETURN_ROWS } from '../src/db/write-protocol.js';

type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;
/** A prepared statement with what is asked of it on every run, asked of libsql once. */
interface Prepared {
  stmt: Stmt;
  /** returns rows (a SELECT, or a write with RETURNING): raw arrays, integers as BigInt */
  reader: boolean;
}

const MAX_GROUP = 2000;
const STMT_CACHE_MAX = 500;

const port = parentPort!;
let db: InstanceType<typeof Database>;
const stmtCache = new Map<string, Prepared>();
/** The queued jobs, in order: each is its batch and its start offset in it. */
let queue: Array<{ batch: unknown[]; at: number }> = [];
let scheduled = false;
let closing = false;

function prepare(sql: string): Prepared {
  let p = stmtCache.get(sql);
  if (p === undefined) {
    const stmt = db.prepare(sql);
    const reader = stmt.reader;
    if (reader) {
      stmt.raw(true);
      stmt.safeIntegers(true);
    }
    p = { stmt, reader };
    if (stmtCache.size >= STMT_CACHE_MAX) stmtCache.clear();
    stmtCache.set(sql, p);
  }
  return p;
}

const NO_PARAMS: unknown[] = [];
const exec = (sql: string) => prepare(sql).stmt.run(NO_PARAMS);

/**
 * Runs the job that starts at `at` in `batch`, appending its outcome to `out`. Returns false when
 * the job failed (a guard or an SQLite error); what it appended is then its failure outcome.
 */
function runJob(batch: unknown[], at: number, out: unknown[]): boolean {
  const id = batch[at] as number;
  const steps = batch[at + 1] as number;
  const mark = out.length;
  out.push(id, OUT_OK);
  let k = at + 2;
  for (let i = 0; i < steps; i++) {
    const flags = batch[k] as number;
    const sql = batch[k + 1] as string;
    const n = batch[k + 2] as number;
    const params = batch.slice(k + 3, k + 3 + n);
    k += 3 + n;
    try {
      const { stmt, reader } = prepare(sql);
      if (reader) {
        if (flags & STEP_RETURN_ROWS) {
          const rows = stmt.all(params) as unknown[][];
          if (flags & STEP_EXPECT_ROW && rows.length === 0) return fail(out, mark, id, OUT_GUARD, i);
          out.push(0, rows, stmt.columns().map((c: { name: string }) => c.name));
        } else {
          // One native call: a guard only asks whether a row exists.
          const row = stmt.get(params);
          if (flags & STEP_EXPECT_ROW && row === undefined) return fail(out, mark, id, OUT_GUARD, i);
          out.push(0);
        }
      } else {
        const info = stmt.run(params);
        if ((flags & STEP_EXPECT_CHANGE && info.changes === 0) || flags & STEP_EXPECT_ROW) return fail(out, mark, id, OUT_GUARD, i);
        out.push(info.changes);
        if (flags & STEP_RETURN_ROWS) out.push(undefined, undefined);
      }
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return fail(out, mark, id, OUT_SQLITE, i, e.code ?? 'SQLITE_ERROR', e.message ?? String(err));
    }
  }
  return true;
}

/** Replaces what a job appended from `mark` on with its failure outcome; returns false. */
function fail(out: unknown[], mark: number, id: number, kind: number, step: number, code?: string, message?: string): false {
  out.length = mark;
  out.push(id, kind, step);
  if (kind === OUT_SQLITE) out.push(code, message);
  return false;
}

/**
 * Applies one group in one transaction. Optimistic first: the jobs run without per-job
 * savepoints (two statements a job, about 10 µs of the writer's time saved per job). If any job
 * fails, the whole transaction is rolled back and the group runs again with a savepoint per job,
 * so only the failing jobs roll back; the order is the same, so every job sees what it would have
 * seen. Returns the flat outcomes of the group.
 */
function applyGroup(group: Array<{ batch: unknown[]; at: number }>): unknown[] {
  let out: unknown[] = [];
  exec('BEGIN IMMEDIATE');
  let failed = false;
  for (const { batch, at } of group) {
    if (!runJob(batch, at, out)) {
      failed = true;
      break;
    }
  }
  if (!failed) {
    exec('COMMIT');
    return out;
  }
  exec('ROLLBACK');
  out = [];
  exec('BEGIN IMMEDIATE');
  for (const { batch, at } of group) {
    exec('SAVEPOINT job');
    if (!runJob(batch, at, out)) exec('ROLLBACK TO job');
    exec('RELEASE job');
  }
  exec('COMMIT');
  return out;
}

function flush(): void {
  scheduled = false;
  while (queue.length > 0) {
    const group = queue.length > MAX_GROUP ? queue.splice(0, MAX_GROUP) : queue;
    if (group === queue) queue = [];
    let outcomes: unknown[];
    try {
      outcomes = applyGroup(group);
    } catch (err) {
      // The group itself failed (busy database, disk full, I/O error): nothing of it is durable.
      try { db.exec('ROLLBACK'); } catch { /* no transaction open */ }
      const message = (err as Error).message ?? String(err);
      const code = (err as { code?: string }).code ?? 'SQLITE_ERROR';
      outcomes = [];
      for (const { batch, at } of group) outcomes.push(batch[at], OUT_SQLITE, -1, code, message);
    }
    port.postMessage(outcomes);
  }
  if (closing) close();
}

function close(): void {
  try { db.close(); } catch { /* already closed */ }
  port.postMessage({ closed: true });
}

try {
  const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
  db = new Database(path);
  db.exec(`PRAGMA busy_timeout = ${Number(busyTimeoutMs) | 0}`);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA recursive_triggers = ON');
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ ready: false, message: (err as Error).message });
}

port.on('message', (msg: unknown[] | { close: true }) => {
  if (!Array.isArray(msg)) {
    closing = true;
    if (!scheduled) flush();
    return;
  }
  // Index the batch's jobs: the start of each, skipping its steps and their parameters.
  for (let at = 0; at < msg.length; ) {
    queue.push({ batch: msg, at });
    const steps = msg[at + 1] as number;
    at += 2;
    for (let i = 0; i < steps; i++) at += 3 + (msg[at + 2] as number);
  }
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
});
