/**
 * Reads on PostgreSQL (docs/deployment.md): the counterpart of the SQLite Reader
 * (src/store/sqlite/reader.ts) with the same asynchronous methods and the same answers, so the
 * domain runs unchanged on either backend. Statements arrive in PostgreSQL's own syntax, their
 * parameters `$1…$n` (src/store/slots.ts); rows come back as arrays of PostgreSQL's own types
 * (src/store/pg/read-types.ts `readTypes`: int8 as BigInt, int2 and int4 as numbers, booleans as
 * booleans, float and numeric as numbers, bytea as Buffer, jsonb and everything else as text).
 *
 * Every read is asynchronous, on a pg.Pool (`get`, `all`, `plan`, and `getAuto`, `allAuto`,
 * `getBalanced`, which on SQLite may stay on the main thread and here are pool reads of `get` and
 * `all`: every read is a round trip). There are no synchronous reads (`sync` is null,
 * src/store/backend.ts): nothing that serves requests can block the main thread on the server.
 *
 * Each pool connection prepares a statement once (named, the first READ_NAMED_MAX texts) rather
 * than parsing and planning it at every read. Point reads (`get` of a `… LIMIT 1` statement whose
 * first parameter is a text: a record by id) made in one event-loop turn run as one statement
 * over the array of their ids (flushPoints), one round trip for all of them: under load the
 * round trips, not the statements, are most of a point read's cost (bench/README.md,
 * "PostgreSQL point reads").
 *
 * A time budget (`budgetMs`) counts the wait for a connection too; past it the read rejects with
 * ReadBudgetExceeded (the SQLite reader's class) and, unlike on SQLite, the statement is stopped
 * on the server: `pg_cancel_backend` at the deadline, and as a backstop a `statement_timeout` of
 * the budget plus BUDGET_BACKSTOP_MS on the connection; the connection is then discarded rather
 * than returned to the pool. Every read sees every commit made before it (READ COMMITTED), which
 * is what the domain relies on (a request sees the writes acknowledged before it).
 *
 * `plan(sql, params)` runs EXPLAIN (FORMAT JSON) and maps the plan tree to short strings in the
 * spirit of SQLite's EXPLAIN QUERY PLAN (see planDetails), so the domain's plan tests
 * (`SEARCH r USING INDEX`, `TEMP B-TREE`) and the slow-query log read the same on both backends.
 */
import pg from 'pg';
import { LRUCache } from 'lru-cache';
import type { SqlValue } from '../bind.js';
import type { PoolRead, ReaderPoolStats } from '../backend.js';
import { ReadBudgetExceeded } from '../read-budget.js';
import { readTypes, isConnectionFailure } from './read-types.js';
import { refuseNul } from './placeholders.js';
import { StatementNames, isResultTypeChanged } from './statement-names.js';

export { ReadBudgetExceeded };

/** Plans kept, per SQL text (as the SQLite reader). */
const PLAN_CACHE_MAX = 1000;
/** Reads a balanced read may find waiting per pool connection before workerFree says no. */
const BALANCED_QUEUE = 1;
/** Added to a read's budget for the connection's statement_timeout (the backstop of the cancel). */
const BUDGET_BACKSTOP_MS = 1000;
/**
 * Statement texts given a name, so each pool connection parses and plans them once (a prepared
 * statement) instead of at every read; later texts run unnamed. Bounded because a connection
 * keeps every statement it prepared until it closes.
 */
export const READ_NAMED_MAX = 1000;
/** Point reads combined into one statement at most (PointBatch). */
const POINT_BATCH_MAX = 64;
/** Texts whose combined form PostgreSQL refused (they run one by one from then on), kept at most. */
const UNBATCHABLE_MAX = 1000;
/** How long close() waits for pool reads still running. */
const CLOSE_WAIT_MS = 10_000;

export interface PgReaderOptions {
  /** Pool connections (default 4). */
  poolSize?: number;
  /** `application_name` prefix (default `svc-reader`): the pool's connections are `<name>-pool`. */
  applicationName?: string;
  /** Most time to open a connection, ms (default 10,000). */
  connectionTimeoutMs?: number;
  /** How long an idle pool connection is kept, ms (default 20,000). */
  idleTimeoutMs?: number;
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

interface PointWaiter {
  id: string;
  resolve(row: unknown[] | undefined): void;
  reject(err: unknown): void;
}

/** The point reads of one statement and one set of other parameters, waiting for the end of the turn. */
interface PointBatch {
  text: string;
  /** the parameters after the first, the same for every read of the batch */
  rest: SqlValue[];
  waiting: PointWaiter[];
}

/**
 * The batch key of a point read (PgReader.get): the statement and its other parameters, or null
 * when the read is not one (no `LIMIT 1` at the end, a first parameter that is not a text, or a
 * NUL in it, which the read refuses on its own; other parameters that are not plain values).
 */
function pointKey(text: string, params: SqlValue[]): string | null {
  if (typeof params[0] !== 'string' || !text.endsWith(' LIMIT 1') || params[0].includes('\u0000')) return null;
  if (params.length === 1) return text;
  let key = text;
  for (let i = 1; i < params.length; i++) {
    const p = params[i];
    if (p === null) key += '\u0000n';
    else if (typeof p === 'string' && !p.includes('\u0000')) key += `\u0000s${p}`;
    else if (typeof p === 'number') key += `\u0000d${p}`;
    else return null;
  }
  return key;
}

/** A pool client as this reader keeps it: the statement_timeout it has (ms; 0 none; -1 not known). */
const timeouts = new WeakMap<pg.PoolClient, number>();

export class PgReader {
  /** No synchronous reads on PostgreSQL (SqlReader.sync): every read is a round trip the main thread does not wait for. */
  readonly sync = null;
  private readonly pool: pg.Pool;
  private readonly poolSize: number;
  private readonly controlConfig: pg.ClientConfig;
  private plans = new LRUCache<string, string[]>({ max: PLAN_CACHE_MAX });
  /** statement names by text (READ_NAMED_MAX), shared by the pool's connections */
  private names = new StatementNames('svc_r', READ_NAMED_MAX);
  private closed = false;
  /** Cancels under way; close() waits for them. */
  private pendingControl = new Set<Promise<void>>();
  /** Pool reads started and not yet settled. */
  private inFlight = 0;

  /** @param connection a `postgres://` URL or a pg client configuration */
  constructor(connection: string | pg.ClientConfig, options: PgReaderOptions = {}) {
    const base: pg.ClientConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
    const app = options.applicationName ?? 'svc-reader';
    const common: pg.ClientConfig = {
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      ...base,
    };
    this.poolSize = Math.max(1, options.poolSize ?? 4);
    this.pool = new pg.Pool({
      ...common,
      application_name: `${app}-pool`,
      types: readTypes(),
      // a read's SET statement_timeout goes out with it (pooled)
      pipeline: true,
      max: this.poolSize,
      idleTimeoutMillis: options.idleTimeoutMs ?? 20_000,
      allowExitOnIdle: true,
    });
    // an idle connection that fails (killed backend, restart) is dropped by the pool; nothing to do
    this.pool.on('error', () => undefined);
    this.controlConfig = { ...common, application_name: `${app}-control` };
  }

  /**
   * A reader whose pool has connected once: rejects when the server cannot be reached, like
   * PgWriter.start.
   */
  static async start(connection: string | pg.ClientConfig, options: PgReaderOptions = {}): Promise<PgReader> {
    const r = new PgReader(connection, options);
    try {
      await r.pool.query('SELECT 1');
    } catch (err) {
      await r.close();
      throw new Error(`cannot open the PostgreSQL database for reading: ${(err as Error).message}`, { cause: err });
    }
    return r;
  }

  /** Nothing to end: no read here holds a snapshot (SqlReader.endSnapshot; every read is READ COMMITTED on its own). */
  endSnapshot(): void {}

  /** Drops cached plans (after a schema change). */
  invalidate(): void {
    this.plans.clear();
  }

  /**
   * First row or undefined, on a pool connection (the main thread goes on meanwhile). A point
   * read (a `… LIMIT 1` statement whose first parameter is a text, such as a record by id) waits
   * for the end of the event loop turn, and the point reads of one statement made in that turn
   * run as one (see flushPoints): one round trip instead of one each.
   */
  get(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[] | undefined> {
    if (pool) return this.pooled(sql, params, pool.budgetMs ?? 0).then(first);
    const key = pointKey(sql, params);
    if (key === null || this.unbatchable.has(sql)) return this.pooled(sql, params, 0).then(first);
    return new Promise((resolve, reject) => {
      let batch = this.points.get(key);
      if (batch === undefined) this.points.set(key, (batch = { text: sql, rest: params.slice(1), waiting: [] }));
      batch.waiting.push({ id: params[0] as string, resolve, reject });
      if (!this.pointsScheduled) {
        this.pointsScheduled = true;
        setImmediate(this.flushPoints);
      }
    });
  }

  /** Point reads waiting for the end of the turn, by statement and other parameters (pointKey). */
  private points = new Map<string, PointBatch>();
  private pointsScheduled = false;
  /** statements whose combined form failed (a parameter typed other than text, for one) */
  private unbatchable = new LRUCache<string, true>({ max: UNBATCHABLE_MAX });

  /**
   * Runs the point reads of the turn: one alone as it is; several of one statement as one
   * statement over the array of their ids (`unnest … WITH ORDINALITY`, the statement joined
   * LATERAL with its first parameter replaced by each id), each caller given the row of its
   * ordinal. If PostgreSQL refuses the combined form, each read runs on its own, and the
   * statement is not combined again.
   */
  private readonly flushPoints = (): void => {
    this.pointsScheduled = false;
    const batches = [...this.points.values()];
    this.points.clear();
    for (const b of batches) {
      for (let i = 0; i < b.waiting.length; i += POINT_BATCH_MAX) {
        const part = b.waiting.slice(i, i + POINT_BATCH_MAX);
        if (part.length === 1 || this.unbatchable.has(b.text)) this.pointsOneByOne(b, part);
        else this.pointsTogether(b, part);
      }
    }
  };

  private pointsOneByOne(b: PointBatch, part: PointWaiter[]): void {
    for (const w of part) this.pooled(b.text, [w.id, ...b.rest], 0).then((rows) => w.resolve(rows[0]), w.reject);
  }

  private pointsTogether(b: PointBatch, part: PointWaiter[]): void {
    const inner = b.text.replace(/\$1(?!\d)/g, 'svc_pt.v');
    const sql = `SELECT svc_pt.o, svc_px.* FROM unnest($1::text[]) WITH ORDINALITY AS svc_pt(v, o) CROSS JOIN LATERAL (${inner}) svc_px`;
    this.pooled(sql, [part.map((w) => w.id) as unknown as SqlValue, ...b.rest], 0).then(
      (rows) => {
        const found: Array<unknown[] | undefined> = new Array(part.length);
        for (const row of rows) {
          const at = Number(row[0]) - 1;
          if (found[at] === undefined) found[at] = row.slice(1);
        }
        for (let i = 0; i < part.length; i++) part[i].resolve(found[i]);
      },
      (err: unknown) => {
        if (isConnectionFailure(err) || this.closed) {
          for (const w of part) w.reject(err);
          return;
        }
        this.unbatchable.set(b.text, true);
        this.pointsOneByOne(b, part);
      },
    );
  }

  /**
   * All rows, on a pool connection. With `pool.budgetMs` (> 0): the longest the caller waits, the
   * wait for a connection included; past it the promise rejects with ReadBudgetExceeded and the
   * statement is cancelled on the server.
   * @throws ReadBudgetExceeded past the budget; the pg DatabaseError of the statement otherwise
   */
  all(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[][]> {
    return this.pooled(sql, params, pool?.budgetMs ?? 0);
  }

  /**
   * The plan strings of `sql` (see planDetails), cached per SQL text until invalidate(); a plan not
   * cached yet is read with EXPLAIN on a pool connection.
   */
  async plan(sql: string, params: SqlValue[]): Promise<string[]> {
    const p = this.plans.get(sql);
    if (p !== undefined) return p;
    const rows = await this.pooled(`EXPLAIN (FORMAT JSON) ${sql}`, params, 0);
    const doc = JSON.parse(String(rows[0][0])) as Array<{ Plan: PgPlanNode }>;
    const details = planDetails(doc[0].Plan);
    this.plans.set(sql, details);
    return details;
  }

  // ---- asynchronous reads: the pool ----

  /** The first row of a bounded read: on the pool, as every read here (the SQLite reader may keep it on its main thread). */
  getBalanced(sql: string, params: SqlValue[], budgetMs = 0): Promise<unknown[] | undefined> {
    return this.get(sql, params, { pool: true, budgetMs });
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
   * The first row, on the pool whatever its plan (`budgetMs`: see all): on SQLite a cheap
   * read stays on the main thread, here every read is a round trip the main thread need not wait for.
   */
  getAuto(sql: string, params: SqlValue[], _visits = 0, budgetMs = 0): Promise<unknown[] | undefined> {
    return this.get(sql, params, { pool: true, budgetMs });
  }

  /** All rows, on the pool whatever its plan (see getAuto). */
  allAuto(sql: string, params: SqlValue[], _visits = 0, budgetMs = 0): Promise<unknown[][]> {
    return this.all(sql, params, { pool: true, budgetMs });
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
            // the backstop of the cancel: the server stops the statement by itself soon after the
            // budget; a connection whose timeout differs gets it in the same write as the read
            // (pipeline mode), not a round trip of its own
            const want = budget ? budget + BUDGET_BACKSTOP_MS : 0;
            let setting: Promise<unknown> | undefined;
            if ((timeouts.get(client) ?? 0) !== want) {
              setting = client.query(`SET statement_timeout = ${want}`);
              timeouts.set(client, want);
            }
            const started = performance.now();
            const read = client.query({ text, values: params, rowMode: 'array', name: this.names.of(text) }) as unknown as Promise<pg.QueryArrayResult>;
            let r: pg.QueryArrayResult;
            try {
              r = setting ? (await Promise.all([setting, read]))[1] : await read;
            } catch (err) {
              // whether the SET took is not known: the next read on this connection sends one
              if (setting) timeouts.set(client, -1);
              throw err;
            }
            this.ran.completed++;
            this.ran.busyMs += performance.now() - started;
            // a connection a cancel was sent to is not given to another read (the cancel could land there)
            client.release(over ? true : undefined);
            settle(null, r.rows);
            return;
          } catch (err) {
            if (attempt === 0 && isResultTypeChanged((err as { code?: string }).code, (err as Error).message) && this.names.forget(text)) {
              // the schema changed under the prepared statement: prepare it again under a new name
              client.release();
              continue;
            }
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

  /** Runs `sql` with `pid` on a connection of its own (a cancel), outside the pool that may be full. */
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

  /** Closes the pool, waiting up to CLOSE_WAIT_MS for reads still running. Reads after close() fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.pendingControl]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.pool.end().catch(() => undefined), new Promise((r) => { timer = setTimeout(r, CLOSE_WAIT_MS); })]);
    clearTimeout(timer);
    this.plans.clear();
  }
}
