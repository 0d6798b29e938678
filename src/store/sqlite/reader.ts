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
import { LRUCache } from 'lru-cache';
import type { SqlValue } from '../bind.js';
import type { PoolRead, ReaderPoolStats, SyncReads } from '../backend.js';
import { ReadBudgetExceeded } from '../read-budget.js';
import { piscinaRan, workerScript } from '../worker-url.js';
import { checkSlotOrder } from '../slots.js';

type Stmt = ReturnType<InstanceType<typeof Database>['prepare']>;

const STMT_CACHE_MAX = 1000;
/**
 * Multi-row tasks a reader pool serves before it is replaced by a fresh one (the old one finishes
 * what it has, then its threads exit). libsql 0.5.29 keeps about 1 KB of native memory per `all()`
 * (its rows object) until the thread's event loop turns; a piscina worker kept busy never turns it:
 * measured, a pool serving one list query grew the process steadily, and hardly at all when
 * replaced every 10,000 tasks (bench/README.md, "Reader pool"; bench/SOAK.md). `get()` keeps
 * nothing (measured on a worker: no growth), so one-row reads do not count. On the main thread the
 * memory comes back every turn (bench/README.md, "Lists over the cities").
 */
const POOL_RECYCLE_TASKS = 10_000;
/** Reader pools left finishing over-budget reads at once (Reader.retirePool). */
const MAX_RETIRED_POOLS = 2;
/** How long closing waits for reads still running on retired pools. */
const RETIRED_CLOSE_WAIT_MS = 10_000;
/**
 * Reads a balanced read may find waiting per reader thread before it runs on the main thread
 * instead (Reader.getBalanced): one, measured faster than none on the cities' relation-filter pages
 * and no different from three (bench/README.md, "Reader pool").
 */
const BALANCED_QUEUE = 1;
/** Rows a page may visit (offset + limit) before it is read off the main thread. */
export const DEEP_OFFSET = 2000;

/**
 * Whether a statement with this query plan (EXPLAIN QUERY PLAN details in SQLite's wording)
 * reads enough rows to be worth running off the main thread: sorting through a temporary b-tree
 * reads every matching row; under a WHERE clause, so
 * does a scan without an index (it may walk the table to find a page), and so may an ORDER BY
 * answered by walking an index, which stops only after enough rows pass the filter (a selective
 * filter makes it walk the whole index: bench/README.md, "Lists over the cities"). A scan with
 * neither stops after the rows it returns. Used by `isExpensive` (PostgreSQL has none: every read
 * there is on its pool already).
 */
export function expensivePlan(sql: string, plan: readonly string[]): boolean {
  if (plan.some((d) => d.includes('TEMP B-TREE'))) return true;
  if (!/ WHERE /i.test(sql)) return false;
  if (/ ORDER BY /i.test(sql)) return true;
  return plan.some((d) => /^SCAN /.test(d) && !/USING (COVERING )?INDEX/.test(d) && !/^SCAN CONSTANT/.test(d));
}

/**
 * Tasks piscina may hand one reader thread before it queues them itself. The Reader queues reads
 * itself (Reader.pump) and hands a thread a read only when the workers report it idle, so this only
 * has to exceed what a busy main thread has not yet taken answers of (piscina learns that a task is
 * done only when this thread's event loop turns). It also cut piscina's own cost on the main thread
 * to under half of what one task a thread cost (bench/README.md, "Session 14: the reader thread
 * kept busy"). Which thread takes a read is the Reader's choice (threadBalancer), not piscina's:
 * piscina counts a task until this thread takes its answer in.
 */
const PISCINA_TASKS_PER_THREAD = 64;
/**
 * Threads of one pool that can report their own finished reads (workers/reader.ts claims a slot
 * when it starts and frees it when it exits; a thread without a slot is judged by piscina's count).
 */
const READER_THREAD_SLOTS = 16;

/** A reader thread as piscina shows it to a `loadBalancer` (its `id` is the thread id). */
type PiscinaOptions = NonNullable<ConstructorParameters<typeof Piscina>[0]>;
type PiscinaWorker = Parameters<NonNullable<PiscinaOptions['loadBalancer']>>[1][number];

/** A read waiting for a reader thread (Reader.pump). */
interface QueuedRead {
  task: ReadTask;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** given up on (over its budget) before it reached a thread */
  dropped: boolean;
  /** the pool it was handed to (pump) */
  pool: Piscina | null;
}

interface ReadTask {
  path: string;
  sql: string;
  params: SqlValue[];
  mode: 'all' | 'get';
}

/**
 * What the Reader knows of one pool: the reads it handed the pool's threads, and (shared memory,
 * workers/reader.ts adds to [0]) the reads those threads finished. Their difference is what the
 * threads hold now, known without waiting for this thread's event loop to take the answers in.
 */
interface PoolCounts {
  handed: number;
  /** [0]: reads finished by all threads; [1 + 2i], [2 + 2i]: slot i's thread id (0: free) and its reads finished */
  finished: Int32Array;
  /** reads handed per thread id (threadBalancer) */
  byThread: Map<number, number>;
  /**
   * Reads handed whose answer this thread has not taken in yet: a bound on what the threads hold
   * that a thread ending without finishing its reads (its answers are then errors) cannot drift.
   */
  unanswered: number;
}

/**
 * The reads one thread of a pool holds now (handed to it and not finished), from what it reports
 * in shared memory; null when it has no slot (workers/reader.ts).
 */
function threadHeld(c: PoolCounts, threadId: number): number | null {
  for (let i = 0; i < READER_THREAD_SLOTS; i++) {
    if (Atomics.load(c.finished, 1 + 2 * i) === threadId) return (c.byThread.get(threadId) ?? 0) - Atomics.load(c.finished, 2 + 2 * i);
  }
  return null;
}

/** Frees the slot of a thread that ended (its count first: a free slot counts 0). */
function freeSlot(c: PoolCounts, threadId: number): void {
  for (let i = 0; i < READER_THREAD_SLOTS; i++) {
    if (Atomics.load(c.finished, 1 + 2 * i) !== threadId) continue;
    Atomics.store(c.finished, 2 + 2 * i, 0);
    Atomics.store(c.finished, 1 + 2 * i, 0);
  }
  c.byThread.delete(threadId);
}

/**
 * piscina's choice of thread for a read (its `loadBalancer`): an idle thread by what the threads
 * report finished, else, while the pool has fewer than `maxThreads` ready threads, none (piscina
 * queues the read and starts a thread), else the one holding fewest. piscina's own balancer
 * counts a read until this thread takes its answer in, so while the main thread was busy it
 * could hand a cheap read to the thread running a long one with the other idle (measured in
 * test/unit/store/reader-pool.test.ts: the read waited for the long one to end).
 */
function threadBalancer(c: PoolCounts, workers: PiscinaWorker[], maxThreads: number): PiscinaWorker | null {
  let best: PiscinaWorker | null = null;
  let fewest = Infinity;
  for (const w of workers) {
    if (w.terminating || w.destroyed) continue;
    const held = threadHeld(c, w.id) ?? w.currentUsage;
    if (held < fewest) {
      best = w;
      fewest = held;
      if (held <= 0) break;
    }
  }
  if (best === null || fewest >= PISCINA_TASKS_PER_THREAD || (fewest > 0 && workers.length < maxThreads)) return null;
  c.byThread.set(best.id, (c.byThread.get(best.id) ?? 0) + 1);
  return best;
}

/** A query-only connection for EXPLAIN QUERY PLAN (see Reader.planner). */
function openPlanner(path: string): InstanceType<typeof Database> {
  const db = new Database(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA query_only = 1');
  return db;
}

export class Reader implements SyncReads {
  readonly db: InstanceType<typeof Database>;
  /** This reader's synchronous reads (SqlReader.sync): libsql answers on the main thread at once. */
  readonly sync: SyncReads = this;
  private cache = new LRUCache<string, Stmt>({ max: STMT_CACHE_MAX });
  /** statements that run `all()` (see statement) */
  private allCache = new LRUCache<string, Stmt>({ max: STMT_CACHE_MAX });
  private planCache = new LRUCache<string, boolean>({ max: STMT_CACHE_MAX });
  private plans = new LRUCache<string, string[]>({ max: STMT_CACHE_MAX });
  private pool: Piscina | null = null;
  private readonly counts = new WeakMap<Piscina, PoolCounts>();
  /** Reads waiting for a reader thread, oldest first (pump). */
  private queue: QueuedRead[] = [];
  private makePool: (() => Piscina) | null = null;
  private poolTasks = 0;
  /**
   * A connection used only for EXPLAIN QUERY PLAN. Running EXPLAIN QUERY PLAN and then the same
   * query on one libsql connection leaves that connection reading a stale snapshot (measured with
   * libsql 0.5.29: later commits stay invisible to it), so plans never touch the read connection.
   */
  private planner: InstanceType<typeof Database>;

  /**
   * Opens the main-thread read connection (query_only) on an existing database file.
   * `poolThreads`: reader threads (0: none, every read on the main thread); `threadIdleMs`: how
   * long a reader thread waits for a read before it ends (tests shorten it).
   */
  constructor(readonly path: string, poolThreads = 2, threadIdleMs = 20_000) {
    this.db = new Database(path);
    this.db.exec('PRAGMA busy_timeout = 5000');
    this.db.exec('PRAGMA query_only = 1');
    this.planner = openPlanner(path);
    if (poolThreads > 0) {
      const { file, execArgv } = workerScript('reader');
      // Worker isolates get a small young generation: their tasks allocate row arrays that die at
      // once, and the default (16 MiB semi-spaces) mostly adds resident memory. No thread is kept
      // while no expensive read comes (minThreads 0): an idle worker holds memory of its own
      // (isolate, connection, page cache; bench/README.md, "Memory"), and most workloads never send
      // one; the first pays the start of the worker (tens of ms), later ones find it warm until it
      // idles for 20 seconds (a burst of heavy reads keeps it; a quiet spell gives its memory
      // back). closeTimeout: a retired pool (retirePool) waits for its running statements however
      // long they take; terminating a thread inside a libsql call aborts the process
      this.makePool = () => {
        const finished = new Int32Array(new SharedArrayBuffer(4 * (1 + 2 * READER_THREAD_SLOTS)));
        const counts: PoolCounts = { handed: 0, finished, byThread: new Map(), unanswered: 0 };
        const pool = new Piscina({ filename: file, minThreads: 0, maxThreads: poolThreads, concurrentTasksPerWorker: PISCINA_TASKS_PER_THREAD, loadBalancer: (_task, workers) => threadBalancer(counts, workers, poolThreads), workerData: { finished }, idleTimeout: threadIdleMs, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 }, closeTimeout: 2_147_483_647 });
        pool.on('error', () => undefined);
        // a thread piscina ends (idle, or its pool closed) is terminated: it cannot free its slot itself
        pool.on('workerDestroy', (w: PiscinaWorker) => freeSlot(counts, w.id));
        this.counts.set(pool, counts);
        return pool;
      };
      this.pool = this.makePool();
    }
  }

  /**
   * A cached raw statement (rows as arrays, integers as BigInt) for `get()` or, from a cache of
   * its own, for `all()`: libsql 0.5.29 leaves a statement that ran `all()` unreset, so a later
   * `get()` on it cannot bind its parameters and answers with the previous ones (measured:
   * `all([3])` then `get([4])` on `SELECT count(*) … WHERE n % ? = 0` gave the count for 3).
   * Likewise a statement whose `get()` threw answers the next `get()` with the failed call's
   * parameters (another caller's row): `get` and `all` drop a statement that threw.
   */
  statement(sql: string, mode: 'get' | 'all' = 'get'): Stmt {
    const cache = mode === 'get' ? this.cache : this.allCache;
    let s = cache.get(sql);
    if (s === undefined) {
      checkSlotOrder(sql);
      s = this.db.prepare(sql);
      s.raw(true);
      s.safeIntegers(true);
      cache.set(sql, s);
    }
    return s;
  }

  /**
   * Read snapshots. Main-thread reads of one event-loop turn share one read transaction (a point
   * read costs about half inside an open transaction, measured with libsql 0.5.29: bench/README.md,
   * "Record read by id"). The snapshot ends at the end of the turn (setImmediate) and whenever the
   * writer reports a commit (`endSnapshot`, called before any write promise resolves), so a request
   * always sees every write acknowledged before it, and other processes' commits (the CLI) from the
   * next turn on.
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
    this.allCache.clear();
    this.planCache.clear();
    this.plans.clear();
    // The planner's statements are never reset explicitly, so it may still hold a read
    // transaction from before the change and not see a new table ("no such table"): reopen it.
    this.planner.close();
    this.planner = openPlanner(this.path);
  }

  /**
   * First row or undefined, read on the main thread's connection; the promise is settled at once
   * (libsql is synchronous: the read itself costs no extra turn, only the caller's `await`).
   */
  get(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[] | undefined> {
    if (pool) return this.getPooled(sql, params, pool.budgetMs ?? 0);
    try {
      return Promise.resolve(this.getSync(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** All rows, read on the main thread's connection (settled at once, see get), or on the pool with `pool`. */
  all(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[][]> {
    if (pool) return this.allPooled(sql, params, pool.budgetMs ?? 0);
    try {
      return Promise.resolve(this.allSync(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** First row or undefined, on the main thread, synchronously. */
  getSync(sql: string, params: SqlValue[]): unknown[] | undefined {
    if (this.queue.length) this.pump(); // a busy main thread still feeds the threads (pump)
    if (!this.inSnapshot) this.beginSnapshot();
    try {
      return this.statement(sql).get(params) as unknown[] | undefined;
    } catch (err) {
      this.cache.delete(sql); // see statement(): a statement that threw is not used again
      throw err;
    }
  }

  /** All rows, on the main thread, synchronously. */
  allSync(sql: string, params: SqlValue[]): unknown[][] {
    if (this.queue.length) this.pump();
    if (!this.inSnapshot) this.beginSnapshot();
    try {
      return this.statement(sql, 'all').all(params) as unknown[][];
    } catch (err) {
      this.allCache.delete(sql);
      throw err;
    }
  }

  /**
   * True when the query is expensive enough for a reader worker (dearer than a round trip to it:
   * bench/README.md, "Reader pool"): judged by its plan ({@link expensivePlan}), cached per SQL
   * text. `visits` is the offset + limit of the page: a deep offset is expensive whatever the plan.
   */
  isExpensive(sql: string, params: SqlValue[], visits = 0): boolean {
    if (visits > DEEP_OFFSET) return true;
    let v = this.planCache.get(sql);
    if (v === undefined) {
      v = expensivePlan(sql, this.planSync(sql, params));
      this.planCache.set(sql, v);
    }
    return v;
  }

  /**
   * The EXPLAIN QUERY PLAN details of `sql` (one string a plan row, e.g. `SEARCH r USING INDEX
   * … (country=?)`), cached per SQL text until the schema changes. SQLite's plan does not depend
   * on the bound values here (no STAT4 in this build), only on the schema and `sqlite_stat1`.
   */
  plan(sql: string, params: SqlValue[]): Promise<string[]> {
    try {
      return Promise.resolve(this.planSync(sql, params));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** plan, synchronously. */
  planSync(sql: string, params: SqlValue[]): string[] {
    let p = this.plans.get(sql);
    if (p === undefined) {
      p = (this.planner.prepare(`EXPLAIN QUERY PLAN ${sql}`).raw(true).all(params) as unknown[][]).map((row) => String(row[row.length - 1]));
      this.plans.set(sql, p);
    }
    return p;
  }

  /**
   * All rows, on a reader worker (falls back to the main thread without a pool). `budgetMs` (> 0):
   * the longest the caller waits, queue time included; past it the promise rejects with
   * ReadBudgetExceeded and the pool is retired (retirePool), so the next reads get fresh threads
   * instead of queueing behind the one still running.
   *
   * Why not stop the statement: libsql 0.5.29 can interrupt a connection only from the thread
   * that owns it (`Database.interrupt()` is a method of the worker's own object, and the worker is
   * blocked inside the statement), has no progress handler, and terminating the worker thread
   * while a statement runs aborts the whole process (a panic in the native binding, measured).
   * The statement therefore runs to its end on its retired thread, which then exits.
   * @throws ReadBudgetExceeded past the budget; the SQLite error of the statement otherwise
   */
  private async allPooled(sql: string, params: SqlValue[], budgetMs: number): Promise<unknown[][]> {
    if (!this.pool) return this.allSync(sql, params);
    return this.offThread('all', sql, params, budgetMs) as Promise<unknown[][]>;
  }

  /**
   * The first row or undefined, on a reader worker (falls back to the main thread without a
   * pool); the budget as allPooled. One-row reads (a page rendered as one aggregate, a count)
   * leave nothing behind on the worker (see POOL_RECYCLE_TASKS), so they do not count towards
   * replacing the pool.
   * @throws ReadBudgetExceeded past the budget; the SQLite error of the statement otherwise
   */
  private async getPooled(sql: string, params: SqlValue[], budgetMs: number): Promise<unknown[] | undefined> {
    if (!this.pool) return this.getSync(sql, params);
    return ((await this.offThread('get', sql, params, budgetMs)) as unknown[] | null) ?? undefined;
  }

  /**
   * The first row of a bounded read (one whose cost is known to be small, e.g. a deep page's 20
   * rows rendered after an offset-walk checkpoint): on a reader worker while one is free
   * (workerFree), else here on the main thread, so both cores work when such reads arrive faster
   * than the pool's threads finish them (measured on the cities' random deep pages: with every such
   * read on the pool, the one reader thread of a two-core machine and the main thread each waited
   * on the other; bench/README.md, "Reader pool").
   * @throws ReadBudgetExceeded past the budget (on a worker); the SQLite error otherwise
   */
  getBalanced(sql: string, params: SqlValue[], budgetMs = 0): unknown[] | undefined | Promise<unknown[] | undefined> {
    if (!this.workerFree()) return this.getSync(sql, params);
    return (this.offThread('get', sql, params, budgetMs, true) as Promise<unknown[] | null>).then((row) => row ?? undefined);
  }

  /**
   * Whether a reader worker would start a read soon: no read queued, and at most BALANCED_QUEUE
   * held per thread. Judged by what the threads report finished (PoolCounts), not by the answers
   * this thread has taken in: a busy main thread takes them in only when its event loop turns, and
   * counting by answers kept the reader thread idle meanwhile (measured on the cities' random deep
   * pages: almost no balanced read went to the worker while the main thread was saturated;
   * bench/README.md, "Session 14: the reader thread kept busy").
   */
  workerFree(): boolean {
    const pool = this.pool;
    if (!pool) return false;
    this.pump();
    return this.queue.length === 0 && this.held(pool) < pool.options.maxThreads + BALANCED_QUEUE;
  }

  /** Reads the pool's threads hold now: handed to them and not finished. */
  private held(pool: Piscina): number {
    const c = this.counts.get(pool)!;
    return Math.min(c.unanswered, c.handed - Atomics.load(c.finished, 0));
  }

  /** Hands `task` to the pool's threads now (piscina posts it at once: PISCINA_TASKS_PER_THREAD). */
  private hand(pool: Piscina, task: ReadTask): Promise<unknown> {
    const c = this.counts.get(pool)!;
    c.handed++;
    c.unanswered++;
    const answered = () => {
      // nothing outstanding: the workers' count is the truth again
      if (--c.unanswered === 0) c.handed = Atomics.load(c.finished, 0);
      this.pump();
    };
    const run = pool.run(task) as Promise<unknown>;
    run.then(answered, answered);
    return run;
  }

  /**
   * Hands queued reads, oldest first, to the current pool while one of its threads is idle, so a
   * read never waits on a thread behind another (a long one would hold it: see retirePool). Runs
   * when a read is queued, when one is answered, and whenever the main thread reads or a balanced
   * read asks (workerFree), so a busy main thread keeps the threads fed between turns of its
   * event loop.
   */
  private pump(): void {
    const pool = this.pool;
    if (!pool) return;
    while (this.queue.length && this.held(pool) < pool.options.maxThreads) {
      const q = this.queue.shift()!;
      if (q.dropped) continue;
      q.pool = pool;
      this.hand(pool, q.task).then(q.resolve, q.reject);
    }
  }

  private async offThread(mode: 'all' | 'get', sql: string, params: SqlValue[], budgetMs: number, now = false): Promise<unknown> {
    if (mode === 'all') this.countTask();
    const pool = this.pool!;
    const task: ReadTask = { path: this.path, sql, params, mode };
    let queued: QueuedRead | null = null;
    let handed: Promise<unknown>;
    if (now) handed = this.hand(pool, task);
    else {
      handed = new Promise((resolve, reject) => { queued = { task, resolve, reject, dropped: false, pool: null }; });
      this.queue.push(queued!);
      this.pump();
    }
    // a read a pool retired meanwhile refused (retirePool) is run again on the current one
    const run = handed.catch((err: unknown) => {
      const to = queued ? (queued as QueuedRead).pool : pool;
      if (!to || to === this.pool || !this.pool || (err as { code?: unknown }).code !== undefined) throw err;
      return this.hand(this.pool, task);
    });
    if (!(budgetMs > 0)) return run;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (queued) queued.dropped = true; // still waiting for a thread: never run
        this.retirePool(pool);
        reject(new ReadBudgetExceeded(budgetMs));
      }, budgetMs);
    });
    try {
      return await Promise.race([run, late]);
    } finally {
      clearTimeout(timer);
      run.catch(() => undefined); // a read given up on may still fail later
    }
  }

  /** Starts a pool's threads (and their connections) with one trivial read each. */
  private warm(pool: Piscina): void {
    for (let i = 0; i < pool.options.maxThreads; i++) void this.hand(pool, { path: this.path, sql: 'SELECT 1', params: [], mode: 'get' }).catch(() => undefined);
  }

  /** The next pool, started ahead of the switch (countTask). */
  private nextPool: Piscina | null = null;

  /**
   * Counts a multi-row task towards POOL_RECYCLE_TASKS. The replacement pool is made and its
   * threads started a tenth of the way before the switch, so reads never wait for a thread to start
   * (measured before: with every deep page on the pool, a switch every few seconds showed in the
   * 99th percentile; bench/README.md, "Reader pool").
   */
  private countTask(): void {
    if (!this.makePool) return;
    this.poolTasks++;
    if (this.poolTasks === Math.floor(POOL_RECYCLE_TASKS * 0.9) && !this.nextPool) {
      this.nextPool = this.makePool();
      this.warm(this.nextPool);
    }
    if (this.poolTasks < POOL_RECYCLE_TASKS) return;
    this.poolTasks = 0;
    const old = this.pool;
    this.pool = this.nextPool ?? this.makePool();
    this.nextPool = null;
    if (old) void this.closePool(old);
  }

  /** Pools retired by a read over its budget whose threads have not all exited yet. */
  private retired = 0;
  /** Their close() promises (Reader.close waits for them). */
  private closing = new Set<Promise<void>>();

  /**
   * Replaces `pool` (if still current) by a fresh one: reads already queued or running on it
   * finish there, and its threads exit once idle. At most MAX_RETIRED_POOLS are left finishing
   * at once (each may hold up to its thread count of long statements); past that the pool is
   * kept, and reads over their budget are answered without waiting while it stays busy.
   */
  private retirePool(pool: Piscina): void {
    if (pool !== this.pool || !this.makePool || this.retired >= MAX_RETIRED_POOLS) return;
    this.retired++;
    this.poolTasks = 0;
    this.pool = this.nextPool ?? this.makePool();
    this.nextPool = null;
    // start the new pool's threads and connections now rather than with the next reads
    this.warm(this.pool);
    const closed: Promise<void> = this.closePool(pool).finally(() => {
      this.retired--;
      this.closing.delete(closed);
    });
    this.closing.add(closed);
  }

  /** Reads and their run time of the pools closed so far (poolStats). */
  private closedReads = { completed: 0, busyMs: 0 };

  /** Closes `pool` (its running reads finish first), then adds what it ran to closedReads. */
  private closePool(pool: Piscina): Promise<void> {
    return pool.close().catch(() => undefined).finally(() => {
      const ran = piscinaRan(pool);
      this.closedReads.completed += ran.completed;
      this.closedReads.busyMs += ran.busyMs;
    });
  }

  /**
   * The reader threads now and since the reader opened (SqlReader.poolStats): the current pool's
   * threads and reads, plus the reads of the pools replaced or retired before it (a pool that is
   * still finishing its reads after a replacement is counted once it closed).
   */
  poolStats(): ReaderPoolStats {
    const pool = this.pool;
    if (!pool) return { size: 0, busy: 0, waiting: this.queue.length, ...this.closedReads };
    const ran = piscinaRan(pool);
    return {
      size: pool.options.maxThreads,
      busy: this.held(pool),
      waiting: this.queue.length + pool.queueSize,
      completed: this.closedReads.completed + ran.completed,
      busyMs: this.closedReads.busyMs + ran.busyMs,
    };
  }

  /** The first row, where the plan says it is cheapest to read (`budgetMs`: see allPooled). */
  getAuto(sql: string, params: SqlValue[], visits = 0, budgetMs = 0): unknown[] | undefined | Promise<unknown[] | undefined> {
    return this.isExpensive(sql, params, visits) ? this.getPooled(sql, params, budgetMs) : this.getSync(sql, params);
  }

  /** All rows, where the plan says they are cheapest to read (`budgetMs`: see allPooled). */
  allAuto(sql: string, params: SqlValue[], visits = 0, budgetMs = 0): unknown[][] | Promise<unknown[][]> {
    return this.isExpensive(sql, params, visits) ? this.allPooled(sql, params, budgetMs) : this.allSync(sql, params);
  }

  /**
   * Closes the pool and the connections. Reads still running on the pool or on retired pools are
   * waited for up to RETIRED_CLOSE_WAIT_MS: a process that exits while a reader thread is inside a libsql
   * call aborts (the native binding panics), after every write was committed.
   */
  async close(): Promise<void> {
    for (const q of this.queue.splice(0)) if (!q.dropped) q.reject(new Error('the reader is closed'));
    const pools = [...this.closing];
    if (this.pool) pools.push(this.closePool(this.pool));
    if (this.nextPool) pools.push(this.closePool(this.nextPool));
    this.pool = null;
    this.nextPool = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all(pools), new Promise((r) => { timer = setTimeout(r, RETIRED_CLOSE_WAIT_MS); })]);
    clearTimeout(timer);
    this.endSnapshot();
    this.cache.clear();
    this.allCache.clear();
    this.planner.close();
    this.db.close();
  }
}
