/**
 * The writer thread: owns the only write connection to the database and commits queued jobs in
 * groups (group commit). Every message that arrived while a group was being applied becomes the
 * next group: one BEGIN IMMEDIATE … COMMIT (one fsync) serves many requests, and each job runs in
 * its own SAVEPOINT so a failing job rolls back alone.
 *
 * workerData: { path: string, busyTimeoutMs: number }
 * Messages in: WriteJob[] (the jobs of one main-thread event-loop turn) | { close: true }. Messages out: WriterReady, WriteOutcome, { closed: true }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'libsql';
import type { WriteJob, WriteOutcome, StepResult } from '../src/db/write-protocol.js';

type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;

const MAX_GROUP = 2000;
const STMT_CACHE_MAX = 500;

const port = parentPort!;
let db: InstanceType<typeof Database>;
const stmtCache = new Map<string, Stmt>();
let queue: WriteJob[] = [];
let scheduled = false;
let closing = false;

function prepare(sql: string): Stmt {
  let s = stmtCache.get(sql);
  if (s === undefined) {
    s = db.prepare(sql);
    if (stmtCache.size >= STMT_CACHE_MAX) stmtCache.clear();
    stmtCache.set(sql, s);
  }
  return s;
}

/** Runs one job's steps; returns its outcome. Throws only for savepoint-level failures. */
function runJob(job: WriteJob): WriteOutcome {
  const results: StepResult[] = [];
  for (let i = 0; i < job.steps.length; i++) {
    const step = job.steps[i];
    let result: StepResult;
    try {
      const stmt = prepare(step.sql);
      if (stmt.reader) {
        stmt.raw(true);
        stmt.safeIntegers(true);
        const rows = stmt.all(step.params) as unknown[][];
        result = { changes: 0, rows };
        if (step.returnRows) result.columns = stmt.columns().map((c: { name: string }) => c.name);
        if (step.expect === 'row' && rows.length === 0) return guardFail(job, i);
      } else {
        const info = stmt.run(step.params);
        result = { changes: info.changes };
        if (step.expect === 'change' && info.changes === 0) return guardFail(job, i);
        if (step.expect === 'row') return guardFail(job, i);
      }
    } catch (err) {
      const e = err as { code?: string; message?: string };
      return { id: job.id, ok: false, kind: 'sqlite', step: i, sqliteCode: e.code ?? 'SQLITE_ERROR', message: e.message ?? String(err) };
    }
    if (!step.returnRows) { delete result.rows; }
    results.push(result);
  }
  return { id: job.id, ok: true, results };
}

function guardFail(job: WriteJob, i: number): WriteOutcome {
  const f = job.steps[i].fail ?? { status: 404, code: 'not_found', message: 'The requested resource was not found.' };
  return { id: job.id, ok: false, kind: 'guard', step: i, status: f.status, code: f.code, message: f.message, data: f.data };
}

/**
 * Applies one group in one transaction. Optimistic first: the jobs run without per-job
 * savepoints (two statements a job, about 10 µs of the writer's time saved per job). If any job
 * fails, the whole transaction is rolled back and the group runs again with a savepoint per job,
 * so only the failing jobs roll back; the order is the same, so every job sees what it would have
 * seen. Returns one outcome per job.
 */
function applyGroup(group: WriteJob[]): WriteOutcome[] {
  const optimistic: WriteOutcome[] = [];
  prepare('BEGIN IMMEDIATE').run([]);
  let failed = false;
  for (const job of group) {
    const out = runJob(job);
    if (!out.ok) {
      failed = true;
      break;
    }
    optimistic.push(out);
  }
  if (!failed) {
    prepare('COMMIT').run([]);
    return optimistic;
  }
  prepare('ROLLBACK').run([]);
  const outcomes: WriteOutcome[] = [];
  prepare('BEGIN IMMEDIATE').run([]);
  for (const job of group) {
    prepare('SAVEPOINT job').run([]);
    const out = runJob(job);
    if (!out.ok) prepare('ROLLBACK TO job').run([]);
    prepare('RELEASE job').run([]);
    outcomes.push(out);
  }
  prepare('COMMIT').run([]);
  return outcomes;
}

function flush(): void {
  scheduled = false;
  while (queue.length > 0) {
    const group = queue.length > MAX_GROUP ? queue.splice(0, MAX_GROUP) : queue;
    if (group === queue) queue = [];
    let outcomes: WriteOutcome[];
    try {
      outcomes = applyGroup(group);
    } catch (err) {
      // The group itself failed (busy database, disk full, I/O error): nothing of it is durable.
      try { db.exec('ROLLBACK'); } catch { /* no transaction open */ }
      const message = (err as Error).message ?? String(err);
      const code = (err as { code?: string }).code ?? 'SQLITE_ERROR';
      outcomes = group.map((job) => ({ id: job.id, ok: false, kind: 'sqlite', step: -1, sqliteCode: code, message }) as WriteOutcome);
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

port.on('message', (msg: WriteJob[] | { close: true }) => {
  if (!Array.isArray(msg)) {
    closing = true;
    if (!scheduled) flush();
    return;
  }
  for (const job of msg) queue.push(job);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
});
