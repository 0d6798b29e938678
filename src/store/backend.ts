/**
 * The two halves of a database backend as the domain sees them (ARCHITECTURE.md, "Folders"): a
 * reader and a writer. The embedded default implements them with libsql
 * (src/store/sqlite/reader.ts, Reader; src/store/sqlite/writer-client.ts, WriterClient), the
 * server-SQL backend with PostgreSQL (src/store/pg/reader.ts, PgReader; src/store/pg/writer.ts,
 * PgWriter). A Store holds one of each; which one is chosen by src/store/open.ts
 * (`SERVICE_DATABASE_URL`).
 *
 * Rows are arrays of column values in select order (never objects); a value is what the backend's
 * driver gives for the column's type, bound values are SqlValue (src/store/bind.ts). Statement
 * text is the backend's own dialect, always with `?` placeholders (PostgreSQL's are numbered by
 * the backend, src/store/pg/placeholders.ts).
 */
import type { SqlValue } from './bind.js';
import type { ChangeFeed } from './change-feed.js';
import type { Subscribers } from './subscribers.js';
import type { StepResult, WriteStep } from './write-job.js';

/** Which backend a Store runs on (`/api/meta` capability `serverSql` is `backend === 'postgres'`). */
export type BackendKind = 'sqlite' | 'postgres';

/**
 * Reads. `get`, `all` and `plan` return promises on both backends: SQLite reads on the main
 * thread's own connection and settles at once (libsql is synchronous), PostgreSQL reads on a
 * connection pool while the main thread goes on. `get` and `all` given a PoolRead run on the
 * pool (SQLite's reader threads). Pool reads and the `…Balanced` and `…Auto` reads (which choose
 * between the main thread and the pool on SQLite; on PostgreSQL every read is on the pool) take a
 * time budget in milliseconds (0: none), past which they reject with ReadBudgetExceeded
 * (src/store/read-budget.ts).
 *
 * `sync` is the reader's synchronous reads, or null: only SQLite has them (its connection answers
 * on the main thread at once); on PostgreSQL every read is a round trip the main thread does not
 * wait for, so nothing serving requests can block on one (docs/deployment.md).
 */
export interface SqlReader {
  /** The first row, or undefined; on the pool with `pool`. @throws ReadBudgetExceeded past `pool.budgetMs`; the driver's error */
  get(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[] | undefined>;
  /** Every row; on the pool with `pool`. @throws ReadBudgetExceeded past `pool.budgetMs`; the driver's error */
  all(sql: string, params: SqlValue[], pool?: PoolRead): Promise<unknown[][]>;
  /** The query plan's details, one line a step, in SQLite's EXPLAIN QUERY PLAN wording. */
  plan(sql: string, params: SqlValue[]): Promise<string[]>;
  /** The synchronous reads of SQLite's reader (SyncReads); null on PostgreSQL. */
  readonly sync: SyncReads | null;
  /** On a pool thread while one is free, else on the main thread. */
  getBalanced(sql: string, params: SqlValue[], budgetMs?: number): unknown[] | undefined | Promise<unknown[] | undefined>;
  /** Whether the pool has a free thread now. */
  workerFree(): boolean;
  /** What the pool of off-thread reads is doing now, and has done since start (read at a metrics scrape). */
  poolStats(): ReaderPoolStats;
  /** On the pool when isExpensive says so, else on the main thread. */
  getAuto(sql: string, params: SqlValue[], visits?: number, budgetMs?: number): unknown[] | undefined | Promise<unknown[] | undefined>;
  allAuto(sql: string, params: SqlValue[], visits?: number, budgetMs?: number): unknown[][] | Promise<unknown[][]>;
  /** Ends the main thread's read snapshot (after a commit), so the next read sees it. */
  endSnapshot(): void;
  /** Drops prepared statements and plans (after a schema change). */
  invalidate(): void;
  close(): Promise<void>;
}

/**
 * A read for the pool, `get`'s and `all`'s last argument: on SQLite it runs on a reader thread
 * rather than the main thread's connection (a scan, a sort, a count over a filter: work that would
 * hold up every request meanwhile); PostgreSQL reads on its pool anyway and runs it as a statement
 * of its own. `budgetMs` (> 0): the longest the caller waits, the wait for a thread or connection
 * included; past it the read rejects with ReadBudgetExceeded (SQLite retires the thread's pool,
 * PostgreSQL cancels the statement).
 */
export interface PoolRead {
  pool: true;
  budgetMs?: number;
}

/**
 * Reads answered at once on the main thread's own connection: the SQLite reader's
 * (src/store/sqlite/reader.ts), reached through `SqlReader.sync`, for the SQLite-only paths (a
 * plain page assembled from the row cache in one event-loop turn, src/records/list/render.ts;
 * start-up checks of SQLite's schema). Each throws the driver's error.
 */
export interface SyncReads {
  /** The first row, or undefined. */
  getSync(sql: string, params: SqlValue[]): unknown[] | undefined;
  /** Every row. */
  allSync(sql: string, params: SqlValue[]): unknown[][];
  /** The query plan's details (see SqlReader.plan). */
  planSync(sql: string, params: SqlValue[]): string[];
  /** Whether the statement is worth running off the main thread (a full scan, a temp sort…; `visits`: rows an offset skips). */
  isExpensive(sql: string, params: SqlValue[], visits?: number): boolean;
}

/**
 * What a reader's pool of off-thread reads is doing (SQLite: the reader threads; PostgreSQL: the
 * pool connections), for `GET /api/metrics` (docs/operations.md, "Metrics").
 */
export interface ReaderPoolStats {
  /** threads (SQLite) or connections (PostgreSQL) the pool runs at most; 0: no pool */
  size: number;
  /** reads running on the pool now */
  busy: number;
  /** reads waiting for a thread or a connection */
  waiting: number;
  /** reads the pool finished since the reader opened */
  completed: number;
  /** milliseconds those reads ran, summed (SQLite: from piscina's run-time histogram, so a mean times a count) */
  busyMs: number;
}

/**
 * Writes: jobs of steps, committed in groups by one writer; each job applies whole or not at all.
 * `write` rejects with the backend's write error (told apart by `StoreSql.dialect.writeFailure`).
 */
export interface SqlWriter {
  /** The committed changes of this instance (and, on PostgreSQL, of the others: ClusterFeed). */
  readonly changes: ChangeFeed;
  /**
   * Commits reported so far; caches of rendered reads are valid for one count. Besides this
   * writer's group commits it counts other instances' commits (PostgreSQL's ClusterFeed) and
   * a batch whose delivery waited (ChangeFeed's onLate).
   */
  commits: number;
  /** This writer's own group commits so far (what `svc_writer_commits_total` reports). */
  readonly groupCommits: number;
  /** Called after each group commit, before any of its jobs' promises settle (snapshots end there). */
  readonly committed: Subscribers<[]>;
  /** Jobs written and not yet answered. */
  readonly inFlight: number;
  /**
   * Called after each group commit, after `committed`, with the group's latency: milliseconds from
   * its oldest job being queued on the main thread to the commit being reported there (the
   * metrics, docs/operations.md "Metrics"); null: not timed. Must be cheap and must not throw.
   */
  readonly commitLatency: Subscribers<[latencyMs: number]>;
  write(steps: WriteStep[]): Promise<StepResult[]>;
  /** Which collections' deletes carry the deleted row (`Change.old`). */
  captureDeletedRows(collectionIds: string[]): void;
  /** Stops taking writes, commits every queued job, then closes. */
  close(): Promise<void>;
}

/**
 * Requests to the other instances of a cluster, for state one instance keeps in memory (an SSE
 * client's subscriptions): implemented by the PostgreSQL cluster feed (src/store/pg/cluster-feed.ts,
 * "Relay"); there is none on the embedded backend.
 */
export interface ClusterRelay {
  /** Asks every other instance; resolves the first reply, or undefined when none came within `timeoutMs`. @throws RangeError for a body too large to relay */
  request(kind: string, body: unknown, timeoutMs?: number): Promise<unknown>;
  /** Answers other instances' requests of `kind`: `fn` returns the reply, or undefined to stay silent (nothing here for it). */
  handle(kind: string, fn: (body: unknown) => Promise<unknown> | unknown): void;
}
