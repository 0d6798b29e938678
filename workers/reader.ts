/**
 * A piscina reader worker: runs expensive read-only queries (counts over large tables, scans,
 * sorts without an index) off the main thread, on its own read-only connection.
 *
 * Task: { path, sql, params, mode: 'all' | 'get' } → raw rows (arrays), integers as BigInt.
 * Errors come back as plain Errors carrying the SQLite message and `code`.
 */
import Database from 'libsql';
import { threadId, workerData } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import type { SqlValue } from '../src/store/bind.js';
import { checkSlotOrder } from '../src/store/slots.js';


type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;

let db: InstanceType<typeof Database> | null = null;
let dbPath = '';
/** Prepared statements kept per mode (the least recently used go first past it). */
const STMT_CACHE_MAX = 300;
/**
 * Prepared statements per mode: libsql 0.5.29 leaves a statement that ran `all()` unreset, and a
 * later `get()` on it answers with the previous parameters (src/store/sqlite/reader.ts, statement).
 */
const caches = { get: new LRUCache<string, Stmt>({ max: STMT_CACHE_MAX }), all: new LRUCache<string, Stmt>({ max: STMT_CACHE_MAX }) };

function open(path: string): InstanceType<typeof Database> {
  if (db && dbPath === path) return db;
  db?.close();
  caches.get.clear();
  caches.all.clear();
  db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA query_only = 1');
  dbPath = path;
  return db;
}

/** One read (src/store/sqlite/reader.ts, ReadTask). */
interface ReadTask {
  path: string;
  sql: string;
  params: SqlValue[];
  mode: 'all' | 'get';
}

/**
 * Reads finished, in memory shared with the Reader (src/store/sqlite/reader.ts, PoolCounts): [0]
 * by every thread of the pool, then per slot a thread's id and its own count. The Reader reads
 * them to see a thread idle before it has taken the thread's answers in.
 */
const finished = (workerData as { finished?: Int32Array } | undefined)?.finished ?? new Int32Array(1);
/**
 * This thread's slot, or -1 when all are taken (the Reader then goes by piscina's count). piscina
 * ends idle threads with `terminate()`, which runs no exit handler: the Reader frees their slots
 * (`workerDestroy`); the handler here covers a thread that exits by itself.
 */
const slot = claimSlot();

function claimSlot(): number {
  for (let i = 0; 2 + 2 * i < finished.length; i++) {
    // a free slot's count is 0 (reset before it is freed)
    if (Atomics.compareExchange(finished, 1 + 2 * i, 0, threadId) === 0) {
      process.once('exit', () => {
        Atomics.store(finished, 2 + 2 * i, 0);
        Atomics.store(finished, 1 + 2 * i, 0);
      });
      return i;
    }
  }
  return -1;
}

export default function read(task: ReadTask): unknown {
  try {
    return runTask(task);
  } finally {
    if (slot >= 0) Atomics.add(finished, 2 + 2 * slot, 1);
    Atomics.add(finished, 0, 1);
  }
}

function runTask(task: ReadTask): unknown {
  const conn = open(task.path);
  const cache = caches[task.mode];
  let stmt = cache.get(task.sql);
  if (stmt === undefined) {
    checkSlotOrder(task.sql);
    stmt = conn.prepare(task.sql);
    stmt.raw(true);
    stmt.safeIntegers(true);
    cache.set(task.sql, stmt);
  }
  try {
    return task.mode === 'get' ? stmt.get(task.params) ?? null : stmt.all(task.params);
  } catch (err) {
    // libsql 0.5.29 runs the next get() of a statement that threw with the failed call's
    // parameters (another caller's row): prepare it afresh next time
    cache.delete(task.sql);
    // libsql's SqliteError reaches the main thread as a bare {code, rawCode} object; a plain
    // Error keeps the message (callers map SQLite messages, e.g. vector errors, to 400).
    const e = err as { message?: string; code?: string };
    throw Object.assign(new Error(String(e.message ?? err)), { code: e.code });
  }
}
