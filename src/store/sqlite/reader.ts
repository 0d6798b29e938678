/**
 * Reads. Cheap reads (by id, indexed pages) run synchronously on the main thread's read
 * connection: a worker round trip costs more than the read itself. Expensive reads (counts over
 * large tables, scans, sorts without an index) go to a piscina pool of reader workers.
 *
 * `isExpensive(sql)` decides by the query plan: a plan that scans a table without an index, or
 * builds a temporary b-tree to sort, is expensive. The verdict is cached per SQL text.
 */
import Database from 'libsql';
import { Piscina } from 'piscina';
import type { SqlValue } from '../bind.js';
import { workerScript } from './worker-url.js';

type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;

const STMT_CACHE_MAX = 1000;
/**
 * Tasks a reader pool serves before it is replaced by a fresh one (the old one finishes what it
 * has, then its threads exit). libsql 0.5.29 leaves about 1 KB of native memory behind per
 * `all()` on a piscina worker thread, freed only when the thread exits: measured, a pool serving
 * one list query 60,000 times grew the process by 50 MB, and by under 1 MB when replaced every
 * 10,000 tasks. A new worker costs a few tens of milliseconds, once per 10,000 expensive reads.
 */
const POOL_RECYCLE_TASKS = 10_000;
/** Rows a page may visit (offset + limit) before it is read off the main thread. */
const DEEP_OFFSET = 2000;

/** A query-only connection for EXPLAIN QUERY PLAN (see Reader.planner). */
function openPlanner(path: string): InstanceType<typeof Database> {
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA query_only = 1');
  return db;
}

export class Reader {
  readonly db: InstanceType<typeof Database>;
  private cache = new Map<string, Stmt>();
  private planCache = new Map<string, boolean>();
  private pool: Piscina | null = null;
  private makePool: (() => Piscina) | null = null;
  private poolTasks = 0;
  /**
   * A connection used only for EXPLAIN QUERY PLAN. Running EXPLAIN QUERY PLAN and then the same
   * query on one libsql connection leaves that connection reading a stale snapshot (measured with
   * libsql 0.5.29: later commits stay invisible to it), so plans never touch the read connection.
   */
  private planner: InstanceType<typeof Database>;

  /** Opens the main-thread read connection (query_only) on an existing database file. */
  constructor(readonly path: string, poolThreads = 2) {
    this.db = new Database(path);
    this.db.exec('PRAGMA busy_timeout = 5000');
    this.db.exec('PRAGMA query_only = 1');
    this.planner = openPlanner(path);
    if (poolThreads > 0) {
      const { file, execArgv } = workerScript('reader');
      // Worker isolates get a small young generation: their tasks allocate row arrays that die at
      // once, and the default (16 MiB semi-spaces) mostly adds resident memory. No thread is kept
      // while no expensive read comes (minThreads 0): an idle worker holds about 12 MB (isolate,
      // connection, page cache), and most workloads never send one; the first pays the start
      // of the worker (tens of ms), later ones find it warm until it idles for 20 seconds (a
      // burst of heavy reads keeps it; a quiet spell gives its memory back).
      this.makePool = () => new Piscina({ filename: file, minThreads: 0, maxThreads: poolThreads, idleTimeout: 20_000, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
      this.pool = this.makePool();
    }
  }

  /** A cached raw statement (rows as arrays, integers as BigInt). */
  statement(sql: string): Stmt {
    let s = this.cache.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      s.raw(true);
      s.safeIntegers(true);
      if (this.cache.size >= STMT_CACHE_MAX) this.cache.clear();
      this.cache.set(sql, s);
    }
    return s;
  }

  /**
   * Read snapshots. Main-thread reads of one event-loop turn share one read transaction (a point
   * read costs about half inside an open transaction: 5 µs against 11 µs measured with libsql
   * 0.5.29). The snapshot ends at the end of the turn (setImmediate) and whenever the writer
   * reports a commit (`endSnapshot`, called before any write promise resolves), so a request
   * always sees every write acknowledged before it, and other processes' commits (the CLI) from
   * the next turn on.
   */
  private inSnapshot = false;
  private readonly endSnapshotSoon = () => this.endSnapshot();

  private beginSnapshot(): void {
    this.db.exec('BEGIN');
    this.inSnapshot = true;
    setImmediate(this.endSnapshotSoon);
  }

  /** Ends the current read snapshot, if any (cheap when none is open). */
  endSnapshot(): void {
    if (!this.inSnapshot) return;
    this.inSnapshot = false;
    this.db.exec('COMMIT');
  }

  /** Drops cached statements (after a schema change). */
  invalidate(): void {
    this.endSnapshot();
    this.cache.clear();
    this.planCache.clear();
    // The planner's statements are never reset explicitly, so it may still hold a read
    // transaction from before the change and not see a new table ("no such table"): reopen it.
    this.planner.close();
    this.planner = openPlanner(this.path);
  }

  /** First row or undefined, on the main thread. */
  get(sql: string, params: SqlValue[]): unknown[] | undefined {
    if (!this.inSnapshot) this.beginSnapshot();
    return this.statement(sql).get(params) as unknown[] | undefined;
  }

  /** All rows, on the main thread. */
  all(sql: string, params: SqlValue[]): unknown[][] {
    if (!this.inSnapshot) this.beginSnapshot();
    return this.statement(sql).all(params) as unknown[][];
  }

  /**
   * True when the query is expensive enough for a reader worker (a round trip costs about 34 µs).
   * Judged by the plan: sorting through a temporary b-tree reads every matching row, and so does
   * a scan without an index under a WHERE clause (it may walk the table to find a page); a scan
   * with neither stops after the rows it returns. `visits` is the offset + limit of the page: a
   * deep offset is expensive whatever the plan.
   */
  isExpensive(sql: string, params: SqlValue[], visits = 0): boolean {
    if (visits > DEEP_OFFSET) return true;
    let v = this.planCache.get(sql);
    if (v === undefined) {
      const plan = this.planner.prepare(`EXPLAIN QUERY PLAN ${sql}`).raw(true).all(params) as unknown[][];
      const filtered = / WHERE /i.test(sql);
      v = plan.some((row) => {
        const detail = String(row[row.length - 1]);
        if (detail.includes('TEMP B-TREE')) return true;
        const fullScan = /^SCAN /.test(detail) && !/USING (COVERING )?INDEX/.test(detail) && !/^SCAN CONSTANT/.test(detail);
        return fullScan && filtered;
      });
      if (this.planCache.size >= STMT_CACHE_MAX) this.planCache.clear();
      this.planCache.set(sql, v);
    }
    return v;
  }

  /** All rows, on a reader worker (falls back to the main thread without a pool). */
  async allOffThread(sql: string, params: SqlValue[]): Promise<unknown[][]> {
    if (!this.pool) return this.all(sql, params);
    if (++this.poolTasks >= POOL_RECYCLE_TASKS && this.makePool) {
      this.poolTasks = 0;
      const old = this.pool;
      this.pool = this.makePool();
      void old.close().catch(() => undefined);
    }
    return (await this.pool.run({ path: this.path, sql, params, mode: 'all' })) as unknown[][];
  }

  /** All rows, where the plan says they are cheapest to read. */
  allAuto(sql: string, params: SqlValue[], visits = 0): unknown[][] | Promise<unknown[][]> {
    return this.isExpensive(sql, params, visits) ? this.allOffThread(sql, params) : this.all(sql, params);
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
    this.endSnapshot();
    this.cache.clear();
    this.planner.close();
    this.db.close();
  }
}
