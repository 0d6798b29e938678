/**
 * Reads on PostgreSQL (docs/deployment.md): the counterpart of the SQLite Reader
 * (src/store/sqlite/reader.ts) with the same methods and the same answers, so the domain runs
 * unchanged on either backend. Statements arrive spelled for SQLite's slots (`?`, renumbered by
 * toPgPlaceholders); rows come back as arrays in the SQLite reader's shapes (workers/pg-reader.ts
 * `readTypes`: integers as BigInt, booleans as 1n/0n, float and numeric as numbers, bytea as
 * Buffer, jsonb and everything else as text).
 *
 * Two paths:
 *
 * - Asynchronous reads (`get`, `all`, `plan`, `allOffThread`, `getOffThread`, and `getAuto`,
 *   `allAuto`, `getBalanced`, which on SQLite may stay on the main thread and here always go to
 *   the pool: every read is a round trip) use a pg.Pool directly: the driver is asynchronous
 *   already, no worker is needed. A time budget (`budgetMs`) counts the wait for a connection too; past it the read
 *   rejects with ReadBudgetExceeded (the SQLite reader's class) and, unlike on SQLite, the
 *   statement is stopped on the server: `pg_cancel_backend` at the deadline, and as a backstop a
 *   `statement_timeout` of the budget plus BUDGET_BACKSTOP_MS on the connection; the connection
 *   is then discarded rather than returned to the pool.
 * - Synchronous reads (`getSync`, `allSync`, `planSync`, `runSync`), for the callers not converted
 *   to promises yet, go through a SYNC BRIDGE: a worker thread (workers/pg-reader.ts) owns one
 *   pg.Client; the main thread posts the statement on a MessagePort and blocks in `Atomics.wait`
 *   on a SharedArrayBuffer flag until the worker has posted the answer, which it takes with
 *   `receiveMessageOnPort`. The main thread is blocked for the whole round trip to the server.
 *   The bridge connection has `statement_timeout` at 90 % of `bridgeTimeoutMs`, so a slow
 *   statement fails with SQLSTATE 57014 and the bridge stays up; past `bridgeTimeoutMs` (a stopped
 *   server, a silent network) the main thread stops waiting, throws PgBridgeTimeout and resets the
 *   bridge (a new worker and connection for the next read; the old backend is terminated). A
 *   connection that fails (killed backend, server restart) is replaced and the read tried once
 *   more, in the worker.
 *
 * Read snapshots (option `snapshots`, off by default): the bridge reads of one event-loop turn
 * share one `REPEATABLE READ READ ONLY` transaction, begun with the turn's first read (pipelined
 * with it: no extra network round trip) and committed at the end of the turn (setImmediate) or by
 * `endSnapshot()` (called by the domain once a write commits), whichever comes first. The COMMIT is
 * posted without waiting for it: the worker runs it before the next read. A statement that fails
 * inside a snapshot ends it (PostgreSQL refuses the rest of a failed transaction): the turn's later
 * reads see a new one. Unlike on SQLite they do not pay: a read inside a transaction costs
 * PostgreSQL no less, and BEGIN and COMMIT are two more statements for the server and the worker:
 * point reads measured slower with snapshots than without, at one and at ten reads a turn
 * (bench/README.md, "Read snapshots on PostgreSQL"). Without snapshots every read sees every commit
 * made before it (READ COMMITTED), which is what the domain relies on (a request sees the writes
 * acknowledged before it); only several reads of one turn may see different commits.
 *
 * `plan(sql, params)` runs EXPLAIN (FORMAT JSON) and maps the plan tree to short strings in the
 * spirit of SQLite's EXPLAIN QUERY PLAN (see planDetails), so the domain's plan tests
 * (`SEARCH r USING INDEX`, `TEMP B-TREE`) read the same on both backends. `isExpensive` applies the
 * SQLite reader's rules to them and also calls expensive any plan PostgreSQL estimates above
 * `costThreshold` (PLAN_COST_EXPENSIVE by default); it reads the plan on the bridge, and the
 * domain asks it only on SQLite (this reader's `…Auto` reads do not consult it).
 */
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { LRUCache } from 'lru-cache';
import type { SqlValue } from '../bind.js';
import type { ReaderPoolStats } from '../backend.js';
import { DEEP_OFFSET, expensivePlan } from '../sqlite/reader.js';
import { ReadBudgetExceeded } from '../read-budget.js';
import { workerScript } from '../worker-url.js';
import { readTypes, isConnectionFailure, type BridgeError, type BridgeInit, type BridgeReply, type BridgeRequest } from '../../../workers/pg-reader.js';
import { refuseNul, toPgPlaceholders } from './placeholders.js';

export { ReadBudgetExceeded };

/** Plans and verdicts kept, per SQL text (as the SQLite reader). */
const PLAN_CACHE_MAX = 1000;
/** Reads a balanced read may find waiting per pool connection before it runs on the bridge instead. */
const BALANCED_QUEUE = 1;
/**
 * PostgreSQL's estimated total cost (in its planner units: 1.0 = one sequential page read,
 * 0.01 = one row processed) above which a read is expensive whatever its plan shape. 1000 units
 * is about 100,000 rows processed or 1,000 pages read: milliseconds of server time, many times the
 * bridge's round trip, and far above any point or indexed page read (an index point read is
 * estimated at about 8). Plans are cached per SQL text, so the estimate is the one for the
 * first parameters seen.
 */
export const PLAN_COST_EXPENSIVE = 1000;
/** Added to a read's budget for the connection's statement_timeout (the backstop of the cancel). */
const BUDGET_BACKSTOP_MS = 1000;
/** How long close() waits for pool reads still running. */
const CLOSE_WAIT_MS = 10_000;

/** The bridge gave up waiting for the worker (see PgReaderOptions.bridgeTimeoutMs). */
export class PgBridgeTimeout extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(readonly timeoutMs: number) {
    super(`the PostgreSQL read did not answer within ${timeoutMs} ms; the read connection was reset`);
    this.name = 'PgBridgeTimeout';
  }
}

export interface PgReaderOptions {
  /** Pool connections for asynchronous reads (default 4). */
  poolSize?: number;
  /**
   * The longest a synchronous read blocks the main thread, ms (default 30,000). The bridge's
   * connection has statement_timeout at 90 % of it, so the server normally stops first (57014).
   */
  bridgeTimeoutMs?: number;
  /** Group each turn's bridge reads in one read snapshot (default false: it costs, see the module comment). */
  snapshots?: boolean;
  /** Estimated plan cost above which isExpensive says true (default PLAN_COST_EXPENSIVE). */
  costThreshold?: number;
  /** `application_name` prefix (default `svc-reader`): the bridge is `<name>-sync`, the pool `<name>-pool`. */
  applicationName?: string;
  /** Most time to open a connection, ms (default 10,000). */
  connectionTimeoutMs?: number;
  /** How long an idle pool connection is kept, ms (default 20,000). */
  idleTimeoutMs?: number;
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

/** The main thread's half of the sync bridge (the worker is workers/pg-reader.ts). */
class SyncBridge {
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private flag: Int32Array | null = null;
  /** Server process id of the bridge's connection, as last reported. */
  pid: number | null = null;
  /** Called with the backend pid of a bridge given up on (to terminate it). */
  onAbandon: ((pid: number) => void) | null = null;

  constructor(private readonly config: pg.ClientConfig, private readonly timeoutMs: number) {}

  get started(): boolean {
    return this.worker !== null;
  }

  get threadId(): number | null {
    return this.worker?.threadId ?? null;
  }

  private start(): void {
    const { file, execArgv } = workerScript('pg-reader');
    const { port1, port2 } = new MessageChannel();
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const init: BridgeInit = { svcPgBridge: true, port: port2, flag, config: this.config };
    // a small young generation, as the SQLite reader's workers: its allocations are rows that die at once
    const worker = new Worker(file, { workerData: init, transferList: [port2], execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    worker.on('error', () => undefined); // an answer with the error was posted (workers/pg-reader.ts)
    worker.on('exit', () => {
      if (this.worker === worker) this.forget();
    });
    // like the SQLite reader's connection, the bridge never keeps the process alive by itself
    worker.unref();
    this.worker = worker;
    this.port = port1;
    this.flag = flag;
  }

  private forget(): void {
    this.worker = null;
    this.port?.close();
    this.port = null;
    this.flag = null;
  }

  /** Drops the worker (it is terminated) and lets the owner end its backend; the next request starts a new one. */
  reset(): void {
    const w = this.worker;
    const pid = this.pid;
    this.forget();
    this.pid = null;
    if (w) void w.terminate().catch(() => undefined);
    if (pid !== null) this.onAbandon?.(pid);
  }

  /** Posts a request nobody waits for (`end`, `forget`); nothing when no worker runs. */
  post(msg: BridgeRequest): void {
    this.port?.postMessage(msg);
  }

  /**
   * Posts `msg` and blocks until the answer (at most timeoutMs).
   * @throws PgBridgeTimeout past timeoutMs (the bridge is reset)
   */
  request(msg: BridgeRequest): BridgeReply {
    if (!this.worker) this.start();
    const flag = this.flag!;
    const port = this.port!;
    Atomics.store(flag, 0, 0);
    port.postMessage(msg);
    const deadline = performance.now() + this.timeoutMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(flag, 0, 0, left) === 'timed-out') {
        this.reset();
        throw new PgBridgeTimeout(this.timeoutMs);
      }
      const got = receiveMessageOnPort(port);
      if (got) return this.took(got.message as BridgeReply);
      // woken without an answer (not expected): wait on
      Atomics.store(flag, 0, 0);
    }
  }

  /** As request, without blocking the event loop (start-up). */
  async requestAsync(msg: BridgeRequest): Promise<BridgeReply> {
    if (!this.worker) this.start();
    const flag = this.flag!;
    const port = this.port!;
    Atomics.store(flag, 0, 0);
    port.postMessage(msg);
    const w = (Atomics as AtomicsWithWaitAsync).waitAsync(flag, 0, 0, this.timeoutMs);
    // Atomics.waitAsync holds no handle of the event loop: without one, a program with nothing
    // else to do (`svc migrate`) would end with this await unsettled (exit 13)
    const keepAlive = w.async ? setInterval(() => undefined, 1 << 30) : null;
    const outcome = w.async ? await w.value.finally(() => clearInterval(keepAlive!)) : w.value;
    const got = port === this.port ? receiveMessageOnPort(port) : undefined;
    if (outcome === 'timed-out' || !got) {
      if (port === this.port) this.reset();
      throw new PgBridgeTimeout(this.timeoutMs);
    }
    return this.took(got.message as BridgeReply);
  }

  private took(reply: BridgeReply): BridgeReply {
    if (reply.pid !== null) this.pid = reply.pid;
    return reply;
  }

  /** Ends the connection and the worker; waits for the thread to exit. */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    try {
      await this.requestAsync({ op: 'close' });
    } catch { /* reset already */ }
    this.forget();
    this.pid = null;
    await w.terminate().catch(() => undefined);
  }
}

/**
 * Short plan strings for a PostgreSQL EXPLAIN (FORMAT JSON) plan, in the spirit of SQLite's
 * EXPLAIN QUERY PLAN, one per node that reads a table or sorts, in plan order:
 *
 * - Seq Scan → `SCAN <alias>`
 * - Index Scan / Index Only Scan with an index condition → `SEARCH <alias> USING INDEX <index>` /
 *   `SEARCH <alias> USING COVERING INDEX <index>`; without one (an index walked for its order) →
 *   `SCAN <alias> USING INDEX <index>` / `SCAN <alias> USING COVERING INDEX <index>`
 * - Bitmap Heap Scan → `SEARCH <alias> USING INDEX <first index of its bitmap>`
 * - Tid Scan → `SEARCH <alias> USING INTEGER PRIMARY KEY`
 * - Function Scan, CTE Scan, Values Scan, WorkTable Scan → `SCAN <alias>` (as SQLite's virtual
 *   tables and CTEs); Result with no input → `SCAN CONSTANT ROW`
 * - Sort → `USE TEMP B-TREE FOR ORDER BY` (`… FOR GROUP BY` under a sorted aggregate, `… FOR
 *   DISTINCT` under Unique); Incremental Sort → `USE TEMP B-TREE FOR RIGHT PART OF ORDER BY`;
 *   hashed aggregate → `USE TEMP B-TREE FOR GROUP BY` (it reads all its input, like SQLite's)
 * - a subplan → `SUBQUERY <its name>`, then its nodes
 *
 * Joins, limits, materialisation, hashing and gathering add no string; their inputs do.
 */
export function planDetails(plan: PgPlanNode): string[] {
  const out: string[] = [];
  walkPlan(plan, null, out);
  return out;
}

/** A node of EXPLAIN (FORMAT JSON) output (the fields read here). */
export interface PgPlanNode {
  'Node Type': string;
  'Alias'?: string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Strategy'?: string;
  'Function Name'?: string;
  'CTE Name'?: string;
  'Subplan Name'?: string;
  'Total Cost'?: number;
  'Plans'?: PgPlanNode[];
}

function walkPlan(node: PgPlanNode, parent: PgPlanNode | null, out: string[]): void {
  if (node['Subplan Name']) out.push(`SUBQUERY ${node['Subplan Name']}`);
  const alias = node['Alias'] ?? node['Relation Name'] ?? node['Function Name'] ?? node['CTE Name'] ?? '?';
  let children = node['Plans'] ?? [];
  switch (node['Node Type']) {
    case 'Seq Scan':
      out.push(`SCAN ${alias}`);
      break;
    case 'Index Scan':
    case 'Index Only Scan': {
      const covering = node['Node Type'] === 'Index Only Scan' ? 'COVERING ' : '';
      out.push(`${node['Index Cond'] ? 'SEARCH' : 'SCAN'} ${alias} USING ${covering}INDEX ${node['Index Name'] ?? '?'}`);
      break;
    }
    case 'Bitmap Heap Scan':
      out.push(`SEARCH ${alias} USING INDEX ${firstIndex(node) ?? '?'}`);
      // the bitmap's index scans are this search, except subplans they hold
      children = children.filter((c) => c['Subplan Name']);
      break;
    case 'Tid Scan':
    case 'Tid Range Scan':
      out.push(`SEARCH ${alias} USING INTEGER PRIMARY KEY`);
      break;
    case 'Function Scan':
    case 'Table Function Scan':
    case 'CTE Scan':
    case 'Values Scan':
    case 'WorkTable Scan':
    case 'Named Tuplestore Scan':
      out.push(`SCAN ${alias}`);
      break;
    case 'Result':
      if (children.length === 0) out.push('SCAN CONSTANT ROW');
      break;
    case 'Sort': {
      const p = parent?.['Node Type'];
      const what = p === 'Aggregate' || p === 'Group' || p === 'WindowAgg' ? 'GROUP BY' : p === 'Unique' ? 'DISTINCT' : 'ORDER BY';
      out.push(`USE TEMP B-TREE FOR ${what}`);
      break;
    }
    case 'Incremental Sort':
      out.push('USE TEMP B-TREE FOR RIGHT PART OF ORDER BY');
      break;
    case 'Aggregate':
      if (node['Strategy'] === 'Hashed' || node['Strategy'] === 'Mixed') out.push('USE TEMP B-TREE FOR GROUP BY');
      break;
    case 'HashAggregate':
      out.push('USE TEMP B-TREE FOR GROUP BY');
      break;
    default:
      break;
  }
  for (const c of children) walkPlan(c, node, out);
}

function firstIndex(node: PgPlanNode): string | null {
  if (node['Index Name']) return node['Index Name'];
  for (const c of node['Plans'] ?? []) {
    if (c['Subplan Name']) continue;
    const n = firstIndex(c);
    if (n) return n;
  }
  return null;
}

/** The first row of a result, or undefined. */
const first = (rows: unknown[][]): unknown[] | undefined => rows[0];

/** A pool client as this reader keeps it: the statement_timeout it has (ms; 0 none). */
const timeouts = new WeakMap<pg.PoolClient, number>();

export class PgReader {
  /** No synchronous reads on PostgreSQL (SqlReader.sync): every read is a round trip the main thread does not wait for. */
  readonly sync = null;
  private readonly bridge: SyncBridge;
  private readonly pool: pg.Pool;
  private readonly poolSize: number;
  private readonly snapshots: boolean;
  private readonly costThreshold: number;
  private readonly controlConfig: pg.ClientConfig;
  private planCache = new LRUCache<string, boolean>({ max: PLAN_CACHE_MAX });
  private plans = new LRUCache<string, { details: string[]; cost: number }>({ max: PLAN_CACHE_MAX });
  private closed = false;
  /** Cancels (and bridge backends terminations) under way; close() waits for them. */
  private pendingControl = new Set<Promise<void>>();
  /** Pool reads started and not yet settled. */
  private inFlight = 0;

  /**
   * @param connection a `postgres://` URL or a pg client configuration of plain data (the bridge
   *   sends it to its worker thread: no functions, e.g. no password callback)
   */
  constructor(connection: string | pg.ClientConfig, options: PgReaderOptions = {}) {
    const base: pg.ClientConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
    const app = options.applicationName ?? 'svc-reader';
    const common: pg.ClientConfig = {
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      ...base,
    };
    const bridgeTimeoutMs = options.bridgeTimeoutMs ?? 30_000;
    this.snapshots = options.snapshots ?? false;
    this.bridge = new SyncBridge(
      {
        ...common,
        // pipelining sends a snapshot's BEGIN with its first read; without snapshots, pg's plain path
        pipeline: this.snapshots,
        application_name: `${app}-sync`,
        statement_timeout: Math.max(1, Math.floor(bridgeTimeoutMs * 0.9)),
        connectionTimeoutMillis: Math.min(common.connectionTimeoutMillis ?? 10_000, Math.max(1, Math.floor(bridgeTimeoutMs * 0.9))),
      },
      bridgeTimeoutMs,
    );
    this.bridge.onAbandon = (pid) => this.control('SELECT pg_terminate_backend($1)', pid);
    this.poolSize = Math.max(1, options.poolSize ?? 4);
    this.pool = new pg.Pool({
      ...common,
      application_name: `${app}-pool`,
      types: readTypes(),
      max: this.poolSize,
      idleTimeoutMillis: options.idleTimeoutMs ?? 20_000,
      allowExitOnIdle: true,
    });
    // an idle connection that fails (killed backend, restart) is dropped by the pool; nothing to do
    this.pool.on('error', () => undefined);
    this.controlConfig = { ...common, application_name: `${app}-control` };
    this.costThreshold = options.costThreshold ?? PLAN_COST_EXPENSIVE;
  }

  /**
   * A reader whose bridge and pool are connected (without blocking the event loop): rejects when
   * the server cannot be reached, like PgWriter.start.
   */
  static async start(connection: string | pg.ClientConfig, options: PgReaderOptions = {}): Promise<PgReader> {
    const r = new PgReader(connection, options);
    try {
      const reply = await r.bridge.requestAsync({ op: 'connect' });
      if (!reply.ok) throw fromBridgeError(reply.error);
      await r.pool.query('SELECT 1');
    } catch (err) {
      await r.close();
      throw new Error(`cannot open the PostgreSQL database for reading: ${(err as Error).message}`, { cause: err });
    }
    return r;
  }

  /** Server process id of the bridge's connection (pg_stat_activity.pid), or null before its first read. */
  get bridgePid(): number | null {
    return this.bridge.pid;
  }

  /** Thread id of the bridge's worker, or null when none runs. */
  get bridgeThreadId(): number | null {
    return this.bridge.threadId;
  }

  // ---- synchronous reads: the bridge ----

  private inSnapshot = false;
  private readonly endSnapshotSoon = () => this.endSnapshot();

  /** Ends the current read snapshot, if any (cheap: the COMMIT is posted, not waited for). */
  endSnapshot(): void {
    if (!this.inSnapshot) return;
    this.inSnapshot = false;
    this.bridge.post({ op: 'end' });
  }

  /** Drops cached plans and prepared statements (after a schema change). */
  invalidate(): void {
    this.endSnapshot();
    this.planCache.clear();
    this.plans.clear();
    this.bridge.post({ op: 'forget' });
  }

  /**
   * One statement (or a script of several, without parameters) on the bridge's connection,
   * outside any read snapshot, never retried on a new connection (a transaction begun with
   * `BEGIN` through this method goes on on the same connection, or fails): for work that needs a
   * synchronous connection of its own, as app migrations do (migrations.ts). Rows are arrays,
   * `fields` their column names, `changes` the rows the statement changed.
   * @throws the server's error (a pg DatabaseError with its SQLSTATE `code`)
   */
  runSync(sql: string, params: SqlValue[] = []): { rows: unknown[][]; fields: string[]; changes: number } {
    if (this.closed) throw new Error('the PostgreSQL reader is closed');
    // a script without parameters is sent as it is (a literal '?' in it is no placeholder)
    const reply = this.bridge.request({ op: 'query', sql: params.length ? toPgPlaceholders(sql) : sql, params, snap: false, prepare: false, noRetry: true });
    if (!reply.ok) throw fromBridgeError(reply.error);
    return { rows: reply.rows, fields: reply.fields ?? [], changes: reply.changes ?? 0 };
  }

  /** One statement on the bridge; rows as the worker read them. */
  private bridged(sql: string, params: SqlValue[], snap: boolean, prepare: boolean): unknown[][] {
    if (this.closed) throw new Error('the PostgreSQL reader is closed');
    refuseNul(params);
    if (snap && !this.inSnapshot) {
      this.inSnapshot = true;
      setImmediate(this.endSnapshotSoon);
    }
    let reply: BridgeReply;
    try {
      reply = this.bridge.request({ op: 'query', sql: toPgPlaceholders(sql), params, snap, prepare });
    } catch (err) {
      this.inSnapshot = false; // the bridge was reset: its snapshot is gone
      throw err;
    }
    if (!reply.ok) throw fromBridgeError(reply.error);
    const rows = reply.rows;
    if (reply.blobs) {
      // bytea crosses the thread as a bare Uint8Array: give the domain the Buffer the SQLite reader gives
      for (const row of rows) {
        for (const i of reply.blobs) {
          const v = row[i];
          if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[i] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
        }
      }
    }
    return rows;
  }

  /** First row or undefined, on a pool connection (the main thread goes on meanwhile). */
  get(sql: string, params: SqlValue[]): Promise<unknown[] | undefined> {
    return this.pooled(toPgPlaceholders(sql), params, 0).then(first);
  }

  /** All rows, on a pool connection. */
  all(sql: string, params: SqlValue[]): Promise<unknown[][]> {
    return this.pooled(toPgPlaceholders(sql), params, 0);
  }

  /** First row or undefined, on the bridge (blocks the main thread for the round trip). */
  getSync(sql: string, params: SqlValue[]): unknown[] | undefined {
    return this.bridged(sql, params, this.snapshots, true)[0];
  }

  /** All rows, on the bridge (blocks the main thread for the round trip). */
  allSync(sql: string, params: SqlValue[]): unknown[][] {
    return this.bridged(sql, params, this.snapshots, true);
  }

  /**
   * The plan strings of `sql` (see planDetails), cached per SQL text until invalidate(); a plan not
   * cached yet is read with EXPLAIN on a pool connection.
   */
  async plan(sql: string, params: SqlValue[]): Promise<string[]> {
    const p = this.plans.get(sql);
    if (p !== undefined) return p.details;
    return this.explained(sql, await this.pooled(toPgPlaceholders(`EXPLAIN (FORMAT JSON) ${sql}`), params, 0)).details;
  }

  /**
   * plan on the bridge. Runs in the current snapshot when one is open; starts none.
   */
  planSync(sql: string, params: SqlValue[]): string[] {
    return this.explain(sql, params).details;
  }

  /** PostgreSQL's estimated total cost of `sql` (cached with its plan). */
  planCost(sql: string, params: SqlValue[]): number {
    return this.explain(sql, params).cost;
  }

  private explain(sql: string, params: SqlValue[]): { details: string[]; cost: number } {
    let p = this.plans.get(sql);
    if (p === undefined) {
      p = this.explained(sql, this.bridged(`EXPLAIN (FORMAT JSON) ${sql}`, params, this.inSnapshot, false));
    }
    return p;
  }

  /** The plan of `sql` from its EXPLAIN (FORMAT JSON) rows, cached. */
  private explained(sql: string, rows: unknown[][]): { details: string[]; cost: number } {
    const doc = JSON.parse(String(rows[0][0])) as Array<{ Plan: PgPlanNode }>;
    const root = doc[0].Plan;
    const p = { details: planDetails(root), cost: Number(root['Total Cost'] ?? 0) };
    this.plans.set(sql, p);
    return p;
  }

  /**
   * True when the query is expensive enough for the pool rather than the bridge: the SQLite
   * reader's rules on the plan strings (expensivePlan of src/store/sqlite/reader.ts: a temporary
   * b-tree; a filtered full scan; a filtered ORDER BY walked through an index) or a deep offset,
   * as there, or an estimated cost above costThreshold. Cached per SQL text.
   */
  isExpensive(sql: string, params: SqlValue[], visits = 0): boolean {
    if (visits > DEEP_OFFSET) return true;
    let v = this.planCache.get(sql);
    if (v === undefined) {
      const p = this.explain(sql, params);
      v = p.cost > this.costThreshold || expensivePlan(sql, p.details);
      this.planCache.set(sql, v);
    }
    return v;
  }

  // ---- asynchronous reads: the pool ----

  /**
   * All rows, on a pool connection. `budgetMs` (> 0): the longest the caller waits, the wait for
   * a connection included; past it the promise rejects with ReadBudgetExceeded and the statement
   * is cancelled on the server.
   * @throws ReadBudgetExceeded past the budget; the pg DatabaseError of the statement otherwise
   */
  async allOffThread(sql: string, params: SqlValue[], budgetMs = 0): Promise<unknown[][]> {
    return this.pooled(toPgPlaceholders(sql), params, budgetMs);
  }

  /** The first row or undefined, on a pool connection; the budget as allOffThread. */
  async getOffThread(sql: string, params: SqlValue[], budgetMs = 0): Promise<unknown[] | undefined> {
    return (await this.pooled(toPgPlaceholders(sql), params, budgetMs))[0];
  }

  /** The first row of a bounded read: on the pool, as every read here (the SQLite reader may keep it on its main thread). */
  getBalanced(sql: string, params: SqlValue[], budgetMs = 0): Promise<unknown[] | undefined> {
    return this.getOffThread(sql, params, budgetMs);
  }

  /** Pool reads that succeeded since start, and the milliseconds their statements ran (poolStats). */
  private ran = { completed: 0, busyMs: 0 };

  /** The pool connections now and the reads they ran since start (SqlReader.poolStats). */
  poolStats(): ReaderPoolStats {
    const p = this.pool;
    return { size: this.poolSize, busy: p.totalCount - p.idleCount, waiting: p.waitingCount, ...this.ran };
  }

  /** Whether a pool read would start soon (at most BALANCED_QUEUE waiting per connection). */
  workerFree(): boolean {
    return !this.closed && this.inFlight < this.poolSize + BALANCED_QUEUE;
  }

  /**
   * The first row, on the pool whatever its plan (`budgetMs`: see allOffThread): on SQLite a cheap
   * read stays on the main thread, here every read is a round trip the main thread need not wait for.
   */
  getAuto(sql: string, params: SqlValue[], _visits = 0, budgetMs = 0): Promise<unknown[] | undefined> {
    return this.getOffThread(sql, params, budgetMs);
  }

  /** All rows, on the pool whatever its plan (see getAuto). */
  allAuto(sql: string, params: SqlValue[], _visits = 0, budgetMs = 0): Promise<unknown[][]> {
    return this.allOffThread(sql, params, budgetMs);
  }

  private pooled(text: string, params: SqlValue[], budgetMs: number): Promise<unknown[][]> {
    if (this.closed) return Promise.reject(new Error('the PostgreSQL reader is closed'));
    try {
      refuseNul(params);
    } catch (err) {
      return Promise.reject(err);
    }
    const budget = budgetMs > 0 ? budgetMs : 0;
    this.inFlight++;
    return new Promise<unknown[][]>((resolve, reject) => {
      let settled = false;
      let over = false;
      let client: pg.PoolClient | null = null;
      const settle = (err: unknown, rows?: unknown[][]): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.inFlight--;
        if (err) reject(err);
        else resolve(rows!);
      };
      const timer = budget
        ? setTimeout(() => {
          over = true;
          settle(new ReadBudgetExceeded(budget));
          const pid = client ? (client as unknown as { processID: number | null }).processID : null;
          if (pid) this.control('SELECT pg_cancel_backend($1)', pid);
        }, budget)
        : undefined;
      void (async () => {
        for (let attempt = 0; ; attempt++) {
          try {
            client = await this.pool.connect();
          } catch (err) {
            settle(err);
            return;
          }
          if (over) {
            client.release();
            return;
          }
          try {
            // the backstop of the cancel: the server stops the statement by itself soon after the budget
            const want = budget ? budget + BUDGET_BACKSTOP_MS : 0;
            if ((timeouts.get(client) ?? 0) !== want) {
              await client.query(`SET statement_timeout = ${want}`);
              timeouts.set(client, want);
            }
            const started = performance.now();
            const r = (await client.query({ text, values: params, rowMode: 'array' })) as unknown as pg.QueryArrayResult;
            this.ran.completed++;
            this.ran.busyMs += performance.now() - started;
            // a connection a cancel was sent to is not given to another read (the cancel could land there)
            client.release(over ? true : undefined);
            settle(null, r.rows);
            return;
          } catch (err) {
            const broken = isConnectionFailure(err);
            client.release(broken || over ? (err as Error) : undefined);
            if (broken && !over && attempt === 0 && !this.closed) continue; // a connection lost while idle: once more
            settle(err);
            return;
          }
        }
      })();
    });
  }

  /** Runs `sql` with `pid` on a connection of its own (cancel, terminate), outside the pool that may be full. */
  private control(sql: string, pid: number): void {
    const job = (async () => {
      const c = new pg.Client(this.controlConfig);
      c.on('error', () => undefined);
      try {
        await c.connect();
        await c.query(sql, [pid]);
      } catch { /* best effort: the statement_timeout backstop remains */ } finally {
        await c.end().catch(() => undefined);
      }
    })();
    this.pendingControl.add(job);
    void job.finally(() => this.pendingControl.delete(job));
  }

  /**
   * Closes the bridge (its connection, then its thread) and the pool, waiting up to CLOSE_WAIT_MS
   * for pool reads still running. Reads after close() fail.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.endSnapshot();
    this.closed = true;
    await this.bridge.close();
    await Promise.all([...this.pendingControl]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.pool.end().catch(() => undefined), new Promise((r) => { timer = setTimeout(r, CLOSE_WAIT_MS); })]);
    clearTimeout(timer);
    this.planCache.clear();
    this.plans.clear();
  }
}
