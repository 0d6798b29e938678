/**
 * The writer thread: owns the only write connection to the database and commits queued jobs in
 * groups (group commit). Every message that arrived while a group was being applied becomes the
 * next group: one BEGIN IMMEDIATE … COMMIT (one fsync) serves many requests, and each job runs in
 * its own SAVEPOINT so a failing job rolls back alone.
 *
 * The change feed starts here: TEMP triggers on every record table (this connection only) note each
 * updated and deleted row in `temp._changes`, so cascades and other trigger side effects are seen
 * too; a job rolled back to its savepoint takes its notes with it. Before each COMMIT the group's
 * notes are read, merged per record and sent with the group's outcomes. Inserts are not noted here
 * (a trigger costs the writer time on every row, bench/README.md, "Session 6: the architecture
 * step, paired"; and an insert never cascades): the creating step names its record
 * (WriteStep.creates) and the main thread adds it.
 *
 * workerData: { path: string, busyTimeoutMs: number }
 * Messages in: a flat batch of jobs (the jobs of one main-thread event-loop turn; wire format in
 * src/store/write-job.ts) | { close: true }. Messages out: WriterReady, one flat outcome array a
 * group (ending with the group's changes), { closed: true }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'libsql';
import { LRUCache } from 'lru-cache';
import {
  CHANGE_DELETE, CHANGE_UPDATE, MAX_CHANGES_LISTED, OUT_GUARD, OUT_OK, OUT_SQLITE, STEP_EXPECT_CHANGE, STEP_EXPECT_ROW, STEP_RETURN_ROWS,
} from '../src/store/write-job.js';
import { checkSlotOrder } from '../src/store/slots.js';

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
const stmtCache = new LRUCache<string, Prepared>({ max: STMT_CACHE_MAX });
/**
 * Statements that run `all()` (steps returning rows), apart: libsql 0.5.29 leaves a statement that
 * ran `all()` unreset, and a later `get()` on it cannot bind its parameters and runs it again with
 * the previous ones (measured: `UPDATE … RETURNING` by `all(['c', 4])` then `get(['d', 5])`
 * updated row 4 again and left row 5 as it was).
 */
const allStmtCache = new LRUCache<string, Prepared>({ max: STMT_CACHE_MAX });
/** The queued jobs, in order: each is its batch and its start offset in it. */
let queue: Array<{ batch: unknown[]; at: number }> = [];
let scheduled = false;
let closing = false;
/** A failed rollback left a transaction open: the thread takes no more writes (see rollBackGroup). */
let dead = false;

/**
 * TEST-ONLY fault injection, never set in production (docs/operations.md, "Test-only
 * variables"): `SVC_TEST_FAIL_ROLLBACK=<table>` makes the COMMIT of the first group that inserts
 * into or updates `<table>` fail and then its ROLLBACK fail, leaving that transaction open.
 * SQLite's ROLLBACK cannot fail on a live transaction by any fault a test can cause (it reports
 * only "no transaction is active"), so this is the only way to run the fatal path of
 * rollBackGroup end to end. Fires once.
 */
let faultTable: string | null = process.env.SVC_TEST_FAIL_ROLLBACK ? `"${process.env.SVC_TEST_FAIL_ROLLBACK}"` : null;
/** The current group wrote to `faultTable`: its COMMIT and ROLLBACK are to fail. */
let faultArmed = false;

function prepare(sql: string, forAll = false): Prepared {
  const cache = forAll ? allStmtCache : stmtCache;
  let p = cache.get(sql);
  if (p === undefined) {
    checkSlotOrder(sql);
    const stmt = db.prepare(sql);
    const reader = stmt.reader;
    if (reader) {
      stmt.raw(true);
      stmt.safeIntegers(true);
    }
    p = { stmt, reader };
    cache.set(sql, p);
  }
  return p;
}

const NO_PARAMS: unknown[] = [];
const exec = (sql: string) => prepare(sql).stmt.run(NO_PARAMS);

/** The main schema's version the change triggers were made for (-1: make them again). */
let triggersFor = -1;
/** Collections whose deletes report the deleted row (WriterClient.captureDeletedRows). */
let wantOld = new Set<string>();

/** A statement that changes the schema: the change triggers may need making again after it. */
const isDdl = (sql: string): boolean => {
  const c = sql.charCodeAt(0);
  return (c === 67 || c === 65 || c === 68) && /^(CREATE|ALTER|DROP)\b/i.test(sql); // C, A, D
};

/**
 * Makes the change triggers match the record tables named in `_collections`, when the main
 * schema changed since they were made. Runs inside or outside a transaction; TEMP schema changes
 * roll back with it, so after a rollback `triggersFor` is reset and this is called again.
 */
function syncChangeTriggers(): void {
  const version = Number((prepare('PRAGMA schema_version').stmt.get(NO_PARAMS) as unknown[])[0]);
  if (version === triggersFor) return;
  const old = db.prepare(`SELECT name FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE '\\_cf\\_%' ESCAPE '\\'`).raw(true).all() as unknown[][];
  for (const [name] of old) db.exec(`DROP TRIGGER temp."${String(name).replace(/"/g, '""')}"`);
  const hasCollections = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_collections'`).raw(true).get();
  const tables = hasCollections
    ? (db.prepare(`SELECT c."id", c."name" FROM "_collections" c JOIN sqlite_master m ON m.type = 'table' AND m.name = c."name"`).raw(true).all() as unknown[][])
    : [];
  for (const [id, name] of tables) {
    const cid = `'${String(id).replace(/'/g, "''")}'`;
    const tbl = `main."${String(name).replace(/"/g, '""')}"`;
    const trig = (suffix: string) => `"_cf_${String(id).replace(/"/g, '""')}_${suffix}"`;
    // In the collections realtime asked for (wantOld), a delete keeps the row as it was (JSON;
    // BLOB columns as null): realtime decides who may hear of a deleted record by its rules.
    let old = 'NULL';
    if (wantOld.has(String(id))) {
      const cols = db.prepare('SELECT name FROM pragma_table_info(?)').raw(true).all(String(name)) as unknown[][];
      old = `json_object(${cols.map(([col]) => {
        const c = `OLD."${String(col).replace(/"/g, '""')}"`;
        return `'${String(col).replace(/'/g, "''")}', iif(typeof(${c}) = 'blob', NULL, ${c})`;
      }).join(', ')})`;
    }
    db.exec(`CREATE TEMP TRIGGER ${trig('u')} AFTER UPDATE ON ${tbl} BEGIN INSERT INTO "_changes" VALUES (${cid}, NEW."id", ${CHANGE_UPDATE}, NULL); END`);
    db.exec(`CREATE TEMP TRIGGER ${trig('d')} AFTER DELETE ON ${tbl} BEGIN INSERT INTO "_changes" VALUES (${cid}, OLD."id", ${CHANGE_DELETE}, ${old}); END`);
  }
  triggersFor = version;
}

/**
 * The group's changes, read and cleared inside its transaction: `[flat, truncated]` where `flat`
 * repeats collectionId, recordId, op, old (one entry per record, ops merged: anything then a
 * delete is a delete; `old` is a deleted row as JSON text, else null), and `truncated` lists
 * collections whose changes were too many to list (MAX_CHANGES_LISTED).
 */
function takeChanges(): [unknown[] | null, string[] | null] {
  const rows = prepare('SELECT "c", "id", "op", "old" FROM temp."_changes"', true).stmt.all(NO_PARAMS) as unknown[][];
  if (rows.length === 0) return [null, null];
  exec('DELETE FROM temp."_changes"');
  if (rows.length > MAX_CHANGES_LISTED * 2) return [null, [...new Set(rows.map((r) => String(r[0])))]];
  if (rows.length === 1) return [[rows[0][0], rows[0][1], Number(rows[0][2]), rows[0][3]], null];
  const merged = new Map<string, [unknown, unknown, number, unknown]>();
  for (const [c, id, opRaw, old] of rows) {
    const op = Number(opRaw);
    const key = `${String(c)}\u0000${String(id)}`;
    const prev = merged.get(key);
    if (prev === undefined) merged.set(key, [c, id, op, old]);
    else if (op === CHANGE_DELETE) {
      prev[2] = CHANGE_DELETE;
      prev[3] = old;
    }
  }
  if (merged.size > MAX_CHANGES_LISTED) return [null, [...new Set(rows.map((r) => String(r[0])))]];
  const flat: unknown[] = [];
  for (const e of merged.values()) flat.push(e[0], e[1], e[2], e[3]);
  return [flat, null];
}

/**
 * Runs the job that starts at `at` in `batch`, appending its outcome to `out`. Returns false when
 * the job failed (a guard or an SQLite error); what it appended is then its failure outcome.
 */
function runJob(batch: unknown[], at: number, out: unknown[]): boolean {
  const id = batch[at] as number;
  const steps = batch[at + 1] as number;
  const mark = out.length;
  out.push(id, OUT_OK);
  let ddlPending = false;
  let hadDdl = false;
  let k = at + 2;
  for (let i = 0; i < steps; i++) {
    const flags = batch[k] as number;
    const sql = batch[k + 1] as string;
    const n = batch[k + 2] as number;
    const params = batch.slice(k + 3, k + 3 + n);
    k += 3 + n;
    if (faultTable !== null && sql.includes(faultTable) && /^(INSERT|UPDATE)\b/.test(sql)) faultArmed = true;
    try {
      // A record table created or renamed earlier in this job gets its change triggers before
      // the job writes to it (DDL steps come in runs: sync once after each run).
      const ddl = isDdl(sql);
      if (ddlPending && !ddl) syncChangeTriggers();
      ddlPending = ddl;
      hadDdl ||= ddl;
      if (ddl) analyzeDue = true;
      const { stmt, reader } = prepare(sql, (flags & STEP_RETURN_ROWS) !== 0);
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
      // libsql 0.5.29: a statement whose get() threw answers the next get() with the failed
      // call's parameters (an UPDATE … RETURNING refused by a constraint refused the next, valid
      // one too): a statement that threw is prepared afresh next time
      stmtCache.delete(sql);
      allStmtCache.delete(sql);
      const e = err as { code?: string; message?: string };
      return fail(out, mark, id, OUT_SQLITE, i, e.code ?? 'SQLITE_ERROR', e.message ?? String(err));
    }
  }
  if (hadDdl) {
    // the job may have registered the new tables in `_collections` after creating them
    triggersFor = -1;
    syncChangeTriggers();
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
 * Applies one group in one transaction. Optimistic first: the jobs run without per-job savepoints
 * (two statements a job saved: bench/README.md, "The writer and its messages"). If any job fails,
 * the whole transaction is rolled back and the group runs again with a savepoint per job, so only
 * the failing jobs roll back; the order is the same, so every job sees what it would have seen.
 * Returns the flat outcomes of the group.
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
  if (!failed) return commit(out);
  exec('ROLLBACK');
  rolledBack();
  out = [];
  exec('BEGIN IMMEDIATE');
  for (const { batch, at } of group) {
    exec('SAVEPOINT job');
    if (!runJob(batch, at, out)) {
      exec('ROLLBACK TO job');
      rolledBack();
    }
    exec('RELEASE job');
  }
  return commit(out);
}

/**
 * Planner statistics (ARCHITECTURE.md, "A read"). SQLite plans from `sqlite_stat1` (rows per index
 * key); without it every index looks alike, and a relation filter or a sort may be planned over the
 * wrong index. `ANALYZE` under `analysis_limit` reads at most that many entries of each index
 * (cheap: bench/README.md, "The writer and its messages"), and runs: when the writer starts (before
 * any reader connection opens, so all of them plan with it); inside every transaction that changed
 * the schema (new tables and indexes; readers reload the schema, and the statistics with it, when
 * they see it changed); after ANALYZE_AFTER_CHANGES rows changed since the last run; and once an
 * hour while the server runs. Statistics written by the last two reach connections that open
 * afterwards (reader-pool threads, the planner connection); the main thread's read connection loads
 * them with its next schema change.
 */
const ANALYSIS_LIMIT = 1000;
const ANALYZE_AFTER_CHANGES = 10_000;
const ANALYZE_EVERY_MS = 3_600_000;
/** A DDL step ran in the current group: analyze before its COMMIT. */
let analyzeDue = false;
/** total_changes() at the last ANALYZE. */
let changesAtAnalyze = 0;
let analyzeTimer: ReturnType<typeof setInterval> | null = null;

/** Runs ANALYZE; a failure (busy, read-only file) leaves the statistics as they were. */
function analyze(): void {
  try {
    exec('ANALYZE');
  } catch { /* tried again on the next trigger */ }
  changesAtAnalyze = totalChanges();
}

function totalChanges(): number {
  return Number((prepare('SELECT total_changes()').stmt.get(NO_PARAMS) as unknown[])[0]);
}

/** After a commit: ANALYZE once enough rows changed since the last run. */
function analyzeAfterWrites(): void {
  if (totalChanges() - changesAtAnalyze >= ANALYZE_AFTER_CHANGES) analyze();
}

/** Appends the group's changes to its outcomes and commits. */
function commit(out: unknown[]): unknown[] {
  const [changes, truncated] = takeChanges();
  if (analyzeDue) {
    analyzeDue = false;
    analyze();
  }
  if (faultArmed) throw new Error('injected COMMIT failure (SVC_TEST_FAIL_ROLLBACK, a test-only fault)');
  exec('COMMIT');
  out.push(changes, truncated);
  return out;
}

/**
 * Rolls back the transaction of a failed group. Returns null when no transaction is left open
 * (rolled back now, or already by SQLite, which then answers "no transaction is active"), else why
 * the ROLLBACK failed: the transaction is still live, every later BEGIN would fail, and what it
 * holds (a durable upload's acknowledged offset among them) is neither committed nor undone, so the
 * process must end (docs/operations.md, "Fatal storage failures": a failed rollback of a live
 * durable transaction terminates the process).
 */
function rollBackGroup(): string | null {
  try {
    if (faultArmed) {
      faultArmed = false;
      faultTable = null;
      throw new Error('injected ROLLBACK failure (SVC_TEST_FAIL_ROLLBACK, a test-only fault)');
    }
    db.exec('ROLLBACK');
    return null;
  } catch (err) {
    return db.inTransaction ? ((err as Error).message ?? String(err)) : null;
  }
}

/** After a rollback: TEMP triggers made since may be gone; make them again if so. */
function rolledBack(): void {
  analyzeDue = false;
  triggersFor = -1;
  syncChangeTriggers();
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
      const stuck = rollBackGroup();
      if (stuck !== null) {
        // Fatal: the main thread logs it and ends the process (WriterClientOptions.onFatal). No
        // outcome is sent: whether the group's jobs took effect is unknown until the next start.
        dead = true;
        queue = [];
        port.postMessage({ fatal: `the write transaction failed (${(err as Error).message ?? String(err)}) and could not be rolled back (${stuck})` });
        return;
      }
      try { rolledBack(); } catch { /* reported with the next group */ }
      const message = (err as Error).message ?? String(err);
      const code = (err as { code?: string }).code ?? 'SQLITE_ERROR';
      outcomes = [];
      for (const { batch, at } of group) outcomes.push(batch[at], OUT_SQLITE, -1, code, message);
      outcomes.push(null, null);
    }
    port.postMessage(outcomes);
  }
  analyzeAfterWrites();
  if (closing) close();
}

function close(): void {
  if (analyzeTimer) clearInterval(analyzeTimer);
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
  db.exec('PRAGMA temp_store = MEMORY');
  db.exec('CREATE TEMP TABLE IF NOT EXISTS "_changes" ("c" TEXT NOT NULL, "id" TEXT, "op" INTEGER NOT NULL, "old" TEXT)');
  db.exec(`PRAGMA analysis_limit = ${ANALYSIS_LIMIT}`);
  analyze();
  analyzeTimer = setInterval(() => {
    if (!scheduled && !closing) analyze();
  }, ANALYZE_EVERY_MS);
  analyzeTimer.unref();
  syncChangeTriggers();
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ ready: false, message: (err as Error).message });
}

port.on('message', (msg: unknown[] | { close: true } | { wantOld: string[] }) => {
  if (!Array.isArray(msg) && 'wantOld' in msg) {
    wantOld = new Set(msg.wantOld);
    triggersFor = -1;
    try { syncChangeTriggers(); } catch { /* made again before the next group */ }
    return;
  }
  if (dead) return; // the process is ending (a failed rollback)
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
