/**
 * A piscina reader worker: runs expensive read-only queries (counts over large tables, scans,
 * sorts without an index) off the main thread, on its own read-only connection.
 *
 * Task: { path, sql, params, mode: 'all' | 'get' } → raw rows (arrays), integers as BigInt.
 * Errors come back as plain Errors carrying the SQLite message and `code`.
 */
import Database from 'libsql';
import { workerData } from 'node:worker_threads';
import type { SqlValue } from '../src/store/bind.js';


type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;

let db: InstanceType<typeof Database> | null = null;
let dbPath = '';
/**
 * Prepared statements per mode: libsql 0.5.29 leaves a statement that ran `all()` unreset, and a
 * later `get()` on it answers with the previous parameters (src/store/sqlite/reader.ts, statement).
 */
const caches = { get: new Map<string, Stmt>(), all: new Map<string, Stmt>() };

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

/** Tasks finished by the workers of this process, read by Reader.workerFree (shared memory). */
const finished = (workerData as { finished?: Int32Array } | undefined)?.finished ?? new Int32Array(1);

export default function read(task: ReadTask): unknown {
  try {
    return runTask(task);
  } finally {
    Atomics.add(finished, 0, 1);
  }
}

function runTask(task: ReadTask): unknown {
  const conn = open(task.path);
  const cache = caches[task.mode];
  let stmt = cache.get(task.sql);
  if (stmt === undefined) {
    stmt = conn.prepare(task.sql);
    stmt.raw(true);
    stmt.safeIntegers(true);
    if (cache.size > 300) cache.clear();
    cache.set(task.sql, stmt);
  }
  try {
    return task.mode === 'get' ? stmt.get(task.params) ?? null : stmt.all(task.params);
  } catch (err) {
    // libsql's SqliteError reaches the main thread as a bare {code, rawCode} object; a plain
    // Error keeps the message (callers map SQLite messages, e.g. vector errors, to 400).
    const e = err as { message?: string; code?: string };
    throw Object.assign(new Error(String(e.message ?? err)), { code: e.code });
  }
}
