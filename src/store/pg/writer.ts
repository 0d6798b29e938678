/**
 * The PostgreSQL writer (docs/deployment.md): applies write jobs (src/store/write-job.ts) with
 * group commit on ONE dedicated connection and publishes the change feed
 * (src/store/change-feed.ts), with the semantics of the SQLite writer (workers/writer.ts and
 * src/store/sqlite/writer-client.ts). It is the write half of the PostgreSQL backend
 * (docs/deployment.md); its change feed serves realtime (docs/realtime.md) and cache invalidation
 * (ARCHITECTURE.md, "The change feed"), and its constraint failures become the 409 `conflict` of
 * docs/api.md, "Errors", through src/store/pg/dialect.ts.
 *
 * Group commit. Jobs queue on the main thread; the jobs of one event-loop turn, and every job that
 * arrives while a transaction is in flight, form the next group: one BEGIN … COMMIT (one WAL
 * flush, synchronous_commit as the server sets it) serves them all, at most MAX_GROUP jobs. Each
 * job runs inside the savepoint `svc_job`: a job whose guard fails (WriteStep.expect) or whose
 * statement fails is rolled back to it (its change notes with it) and the others of the group
 * still commit. A job is answered only after the COMMIT that holds it returned. Isolation is
 * PostgreSQL's default, READ COMMITTED.
 *
 * While jobs have not been failing (CLEAN_GROUPS_BEFORE_OPTIMISTIC groups in a row), a group of
 * several jobs runs without savepoints; when one of its jobs fails, the transaction is rolled
 * back and the group runs again with the savepoints, so the answers are the same either way.
 *
 * Round trips per group: `BEGIN; SAVEPOINT` once, each step once, `RELEASE; SAVEPOINT` (or
 * `ROLLBACK TO`) between jobs, and one last `RELEASE; <take changes>; COMMIT`; without
 * savepoints, two: `BEGIN` and every step sent together on the pipelined connection
 * (runGroupPipelined; a group with a DDL step or a step without parameters sends its steps one
 * at a time), then `<take changes>; COMMIT`. Statements with
 * parameters are prepared once per connection (named, at most NAMED_MAX; a DDL step forgets the
 * names, and the connection is renewed between groups once the budget is spent).
 *
 * Change capture. PostgreSQL has no per-connection triggers, so the capture is permanent and
 * shared by every session but gated per session:
 * - Each record table the caller names (syncChangeTriggers / changeTriggersStep) gets two
 *   statement-level triggers, `_svc_cf_u` AFTER UPDATE (transition table of new rows) and
 *   `_svc_cf_d` AFTER DELETE (transition table of old rows). Statement-level, so a bulk update
 *   costs one trigger call and one INSERT … SELECT, not one per row. Referential actions
 *   (ON DELETE CASCADE, SET NULL) run as statements on the child table and fire its triggers, so
 *   cascaded deletes are noted like any other.
 * - The trigger functions note rows only in a session where `svc.cf` is `on` (only this writer's
 *   connection sets it): there they insert (collection id, record id, op) into the session's temp
 *   table `_svc_changes`; any other session (readers, psql, another tool) pays one setting lookup
 *   per statement and notes nothing. Several writers (several instances) each note their own
 *   writes in their own temp table.
 * - A delete in a collection named by captureDeletedRows also keeps the row as it was
 *   (`to_jsonb`, bytea columns as null; the per-session setting `svc.cf_old` lists them, or is
 *   `*` for every collection after captureAllDeletedRows).
 * - Before COMMIT, in the same round trip, the notes are read and cleared
 *   (`DELETE … RETURNING`) and merged per record (anything then a delete is a delete). Inserts
 *   are not noted: the creating step names its record (WriteStep.creates) and the writer reports
 *   it when its job commits. TRUNCATE is not noted.
 * - Past MAX_CHANGES_LISTED records a batch names the collections only (ChangeBatch.truncated).
 * - The functions (`_svc_cf_updated`, `_svc_cf_deleted`, `_svc_cf_install`) are made again in the
 *   connection's current schema each time the writer connects, under an advisory lock; the
 *   role needs CREATE on that schema. A `Change.old` holds the row as JSON: int8 and numeric
 *   values past 2^53 lose precision there.
 *
 * Errors (src/store/errors/store-errors.ts). A guard failure rejects with GuardFailed, carrying
 * the step's `fail` (none: the API answers 404); a statement PostgreSQL refused rejects with
 * PgWriteError (SQLSTATE, step index; -1 when the group as a whole failed, e.g. at COMMIT). A lost connection (server restart,
 * pg_terminate_backend, network) rejects the in-flight group and every queued job with
 * PgConnectionError, at once (lost during COMMIT: the message says the write may or may not have
 * applied); the next write connects again. A connection found dead at BEGIN (lost while idle and
 * not yet noticed) sent nothing: that group is tried once on a new connection. A silent partition is
 * detected by TCP keepalive. After close() writes reject with WriterClosed (503 `overloaded`), as
 * on the SQLite writer.
 */
import pg from 'pg';
import { GuardFailed, InvalidValue, WriterClosed } from '../errors/store-errors.js';
import { ChangeFeed, decodeChanges, type Change } from '../change-feed.js';
import { Subscribers } from '../subscribers.js';
import { CHANGE_DELETE, MAX_CHANGES_LISTED, type StepResult, type WriteStep } from '../write-job.js';
import { refuseNul } from './placeholders.js';
import { isConnectionFailure } from './read-types.js';
import { StatementNames, isResultTypeChanged } from './statement-names.js';

/**
 * Most jobs in one group. Every job that writes gets a subtransaction id in its savepoint, and a
 * transaction with more than 64 of them overflows PostgreSQL's per-backend cache of them
 * (PGPROC_MAX_CACHED_SUBXIDS): every other session's snapshot then looks subtransactions up in
 * pg_subtrans while the group is in flight.
 */
export const MAX_GROUP = 64;
/** Most statements prepared (named) on one connection before it is renewed. */
export const NAMED_MAX = 1000;

/** A statement PostgreSQL refused (constraint, schema, permissions, timeout). */
export class PgWriteError extends Error {
  /** the SQLSTATE, e.g. 23505 for a unique violation */
  readonly sqlState: string;
  /** index of the failing step in its job; -1 when the group failed as a whole (BEGIN, COMMIT) */
  readonly step: number;
  /** PostgreSQL's detail line, e.g. `Key (email)=(a@b.c) already exists.` */
  readonly detail?: string;
  /** the constraint, table and column PostgreSQL names, when it names them */
  readonly constraint?: string;
  readonly table?: string;
  readonly column?: string;

  constructor(sqlState: string, message: string, step: number, from?: pg.DatabaseError) {
    super(message);
    this.name = 'PgWriteError';
    this.sqlState = sqlState;
    this.step = step;
    if (from?.detail) this.detail = from.detail;
    if (from?.constraint) this.constraint = from.constraint;
    if (from?.table) this.table = from.table;
    if (from?.column) this.column = from.column;
  }
}

/** The write connection was lost or could not be made; the message says whether the job may have applied. */
export class PgConnectionError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'PgConnectionError';
  }
}

/** A record table whose updates and deletes the change feed reports. */
export interface ChangeTable {
  /** the collection id reported in the feed */
  collection: string;
  /** the table's name (unqualified: resolved by the connection's search_path); it has an `id` column */
  table: string;
}

export interface PgWriterOptions {
  /** Most time to open the connection, ms (default 10,000): a dead server fails writes, never hangs them. */
  connectionTimeoutMs?: number;
  /** TCP keepalive idle time before probes, ms (default 10,000). */
  keepAliveMs?: number;
  /** `application_name` of the connection (default `svc-writer`), as pg_stat_activity shows it. */
  applicationName?: string;
  /** Type parsers for returned rows (default: pg's, with int8 as BigInt like the SQLite writer's integers). */
  types?: pg.CustomTypesConfig;
}

/** A queued job; `at`: when it was queued (performance.now(), ms), for commitLatency. */
type Job = { steps: WriteStep[]; resolve: (r: StepResult[]) => void; reject: (e: unknown) => void; at: number };

const INT8_OID = 20;
const defaultTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/*
 * The shared part of change capture, made (again) whenever the writer connects, under an advisory
 * lock so that several instances connecting at once do not race on the catalog.
 */
const CAPTURE_FUNCTIONS = `
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('svc:change-triggers'));
CREATE OR REPLACE FUNCTION _svc_cf_updated() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF current_setting('svc.cf', true) = 'on' THEN
    INSERT INTO pg_temp._svc_changes (c, id, op) SELECT TG_ARGV[0], n."id"::text, 2 FROM _svc_new n;
  END IF;
  RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION _svc_cf_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF current_setting('svc.cf', true) = 'on' THEN
    IF current_setting('svc.cf_old', true) = '*' OR strpos(current_setting('svc.cf_old', true), ',' || TG_ARGV[0] || ',') > 0 THEN
      INSERT INTO pg_temp._svc_changes (c, id, op, old)
        SELECT TG_ARGV[0], o."id"::text, 3, to_jsonb(o) || TG_ARGV[1]::jsonb FROM _svc_old o;
    ELSE
      INSERT INTO pg_temp._svc_changes (c, id, op) SELECT TG_ARGV[0], o."id"::text, 3 FROM _svc_old o;
    END IF;
  END IF;
  RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION _svc_cf_install(tables jsonb) RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
  t record;
  rel regclass;
  rels regclass[] := '{}';
  blobs jsonb;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc:change-triggers'));
  FOR t IN SELECT e->>'collection' AS c, e->>'table' AS tbl FROM jsonb_array_elements(tables) e LOOP
    rel := to_regclass(quote_ident(t.tbl));
    IF rel IS NULL THEN
      RAISE EXCEPTION 'change capture: there is no table %', quote_ident(t.tbl) USING ERRCODE = 'undefined_table';
    END IF;
    rels := rels || rel;
    SELECT coalesce(jsonb_object_agg(a.attname, NULL), '{}'::jsonb) INTO blobs FROM pg_attribute a
      WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'bytea'::regtype;
    EXECUTE format('CREATE OR REPLACE TRIGGER _svc_cf_u AFTER UPDATE ON %s REFERENCING NEW TABLE AS _svc_new '
      'FOR EACH STATEMENT EXECUTE FUNCTION _svc_cf_updated(%L)', rel, t.c);
    EXECUTE format('CREATE OR REPLACE TRIGGER _svc_cf_d AFTER DELETE ON %s REFERENCING OLD TABLE AS _svc_old '
      'FOR EACH STATEMENT EXECUTE FUNCTION _svc_cf_deleted(%L, %L)', rel, t.c, blobs::text);
  END LOOP;
  FOR t IN SELECT g.tgname AS name, g.tgrelid::regclass AS r FROM pg_trigger g
      WHERE g.tgfoid IN ('_svc_cf_updated'::regproc, '_svc_cf_deleted'::regproc) AND NOT (g.tgrelid::regclass = ANY (rels)) LOOP
    EXECUTE format('DROP TRIGGER %I ON %s', t.name, t.r);
  END LOOP;
  RETURN cardinality(rels);
END $f$;
COMMIT;
SET svc.cf = 'on';
CREATE TEMP TABLE IF NOT EXISTS _svc_changes (c text NOT NULL, id text, op smallint NOT NULL, old jsonb);
`;

/** The records the committed jobs of a group create (their steps' `creates`), in job order. */
function createsOf(group: Job[], outcomes: Array<StepResult[] | Error>): Change[] {
  const created: Change[] = [];
  group.forEach((j, k) => {
    if (outcomes[k] instanceof Error) return;
    for (const s of j.steps) if (s.creates) created.push({ collection: s.creates.collection, id: s.creates.id, op: 'create' });
  });
  return created;
}

/*
 * The end of every group, one round trip: release the last job's savepoint, read and clear the
 * notes, commit. Past 2 × MAX_CHANGES_LISTED notes only the collections come back (op null).
 */
/** The notes read and cleared, then COMMIT (a group run without savepoints: see applyGroup). */
const TAKE_AND_COMMIT_SQL = `WITH d AS (DELETE FROM pg_temp._svc_changes RETURNING c, id, op, old), n AS (SELECT count(*) AS n FROM d)
SELECT d.c, d.id, d.op, d.old::text FROM d, n WHERE n.n <= ${MAX_CHANGES_LISTED * 2}
UNION ALL SELECT DISTINCT d.c, NULL::text, NULL::smallint, NULL::text FROM d, n WHERE n.n > ${MAX_CHANGES_LISTED * 2};
COMMIT`;
const COMMIT_SQL = `RELEASE SAVEPOINT svc_job;
${TAKE_AND_COMMIT_SQL}`;
/**
 * Groups in a row that must have committed without a failed job before the next group runs
 * without savepoints (applyGroup): a failed job then costs its whole group a second run.
 */
const CLEAN_GROUPS_BEFORE_OPTIMISTIC = 8;

/** A statement that changes the schema: prepared statements may plan differently after it. */
const isDdl = (sql: string): boolean => /^\s*(CREATE|ALTER|DROP)\b/i.test(sql);

/**
 * What a job's value PostgreSQL cannot hold answers, by SQLSTATE: 22P05 (untranslatable_character:
 * jsonb refuses the `\u0000` escape, which SQLite's JSON text keeps) and 22021
 * (character_not_in_repertoire).
 */
const UNSTORABLE_VALUE = new Map([
  ['22P05', 'JSON may not contain the NUL character (\\u0000) on this server.'],
  ['22021', 'Text holds a character this server cannot store.'],
]);

/** A prepared statement whose result shape changed under it (DDL in another session). */
const isStalePlan = (err: unknown): boolean => err instanceof PgWriteError && isResultTypeChanged(err.sqlState, err.message);

function stepError(err: unknown, step: number): PgWriteError {
  const e = err as pg.DatabaseError;
  return new PgWriteError(e.code ?? 'XX000', e.message, step, e);
}

/** A job's failed statement: InvalidValue for a value the server cannot hold (bad input, docs/deployment.md), else stepError. */
function jobError(err: unknown, step: number): PgWriteError | InvalidValue {
  const refused = UNSTORABLE_VALUE.get((err as pg.DatabaseError).code ?? '');
  return refused ? new InvalidValue(refused) : stepError(err, step);
}

function guardError(steps: WriteStep[], i: number): GuardFailed {
  return new GuardFailed(i, steps[i].fail);
}

/** Step `i`'s result from its statement's answer `r`, or GuardFailed when its `expect` is not met. */
function stepOutcome(steps: WriteStep[], i: number, r: pg.QueryArrayResult): StepResult | GuardFailed {
  const step = steps[i];
  if (step.expect === 'row' && r.rows.length === 0) return guardError(steps, i);
  const changes = changesOf(r);
  if (step.expect === 'change' && changes === 0) return guardError(steps, i);
  return step.returnRows ? { changes, rows: r.rows, columns: r.fields.map((f) => f.name) } : { changes };
}

/**
 * Whether an optimistic group may go out pipelined (runGroupPipelined): every step has parameters
 * (the extended protocol, one statement each) and none is DDL (after which prepared statements are
 * made again, one at a time).
 */
function pipelinable(group: readonly Job[]): boolean {
  for (const j of group) for (const s of j.steps) if (s.params.length === 0 || isDdl(s.sql)) return false;
  return true;
}

/** Rows changed by a command (PostgreSQL reports a row count for SELECT too: that is no change). */
function changesOf(r: pg.QueryArrayResult): number {
  switch (r.command) {
    case 'INSERT':
    case 'UPDATE':
    case 'DELETE':
    case 'MERGE':
      return r.rowCount ?? 0;
    default:
      return 0;
  }
}

export class PgWriter {
  /**
   * The committed changes, delivered after `committed` and before the jobs of the commit settle; a
   * batch delivered late (ChangeFeed's onLate) counts as one more commit.
   */
  readonly changes = new ChangeFeed(() => void this.commits++);
  /** Commits so far (SqlWriter.commits: caches of rendered reads are valid for one count). */
  commits = 0;
  /** This writer's own group commits (SqlWriter.groupCommits). */
  groupCommits = 0;
  /** Called after each group commit, before any of its jobs' promises settle. */
  readonly committed = new Subscribers<[]>();
  /** Called after each group commit with its latency (SqlWriter.commitLatency). */
  readonly commitLatency = new Subscribers<[latencyMs: number]>();
  /**
   * SQL sent in each group's commit round trip, before its notes are taken and the COMMIT, given
   * the creates of the group's committed jobs ('' for none), each subscriber's in subscription
   * order: the cluster feed's NOTIFY (ClusterFeed.commitSql), so other instances hear of a commit
   * exactly when it happens.
   */
  readonly commitSql = new Subscribers<[created: Change[]], string>();

  private readonly config: pg.ClientConfig;
  private readonly types: pg.CustomTypesConfig;
  private queue: Job[] = [];
  /** Jobs written and not yet answered. */
  private pending = 0;
  private loop: Promise<void> | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  private client: pg.Client | null = null;
  /** Why the current client can no longer be used (its 'error' or 'end' event), or null. */
  private lostWith: Error | null = null;
  /** Prepared statement names of the current connection, by statement text. */
  private names = new StatementNames('svc_w', NAMED_MAX);
  /** `svc.cf_old` as wanted (`,id,id,`) and as the connection has it (null: unknown). */
  private wantOld = '';
  /** captureAllDeletedRows was called: `svc.cf_old` is `*` for good */
  private allOld = false;
  private sentOld: string | null = null;
  /** groups committed in a row with no failed job (CLEAN_GROUPS_BEFORE_OPTIMISTIC) */
  private cleanGroups = 0;

  /**
   * @param connection a `postgres://` URL or a pg client configuration (the writer adds
   *   keepalive, a connect timeout and its application_name unless given)
   */
  constructor(connection: string | pg.ClientConfig, options: PgWriterOptions = {}) {
    const base: pg.ClientConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
    this.config = {
      application_name: options.applicationName ?? 'svc-writer',
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: options.keepAliveMs ?? 10_000,
      ...base,
    };
    this.types = options.types ?? defaultTypes;
  }

  /**
   * A writer whose connection is open (and change capture's functions made): rejects when it
   * cannot connect, like WriterClient.start. Installs no triggers: see syncChangeTriggers.
   */
  static async start(connection: string | pg.ClientConfig, options: PgWriterOptions = {}): Promise<PgWriter> {
    const w = new PgWriter(connection, options);
    try {
      await w.connection();
    } catch (err) {
      throw new Error(`cannot open the PostgreSQL database for writing: ${(err as Error).message}`, { cause: err });
    }
    return w;
  }

  /** Jobs queued or in the group in flight, not yet answered. */
  get inFlight(): number {
    return this.pending;
  }

  /** The server process id of the write connection (pg_stat_activity.pid), or null when not connected. */
  get backendPid(): number | null {
    return this.client && !this.lostWith ? ((this.client as unknown as { processID: number | null }).processID ?? null) : null;
  }

  /**
   * Queues one job. Resolves with one result per step after the COMMIT that holds it; rejects
   * with GuardFailed for a failed guard (carrying the step's `fail`), PgWriteError for a statement
   * PostgreSQL refused, PgConnectionError when the connection was lost, WriterClosed after close().
   * `changes` counts the rows an INSERT, UPDATE, DELETE or MERGE changed (0 for anything else);
   * with `returnRows` the result has the rows as arrays and the column names.
   */
  write(steps: WriteStep[]): Promise<StepResult[]> {
    if (this.closed) return Promise.reject(new WriterClosed());
    try {
      for (const s of steps) refuseNul(s.params);
    } catch (err) {
      return Promise.reject(err);
    }
    this.pending++;
    return new Promise<StepResult[]>((resolve, reject) => {
      let settled = false;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        this.pending--;
        return true;
      };
      this.queue.push({
        steps,
        resolve: (r) => settle() && resolve(r),
        reject: (e) => settle() && reject(e),
        at: performance.now(),
      });
      this.schedule();
    });
  }

  /**
   * The step that makes change capture cover exactly `tables` (and no other table): triggers
   * made or remade on each (after a table is created, renamed or its columns change), removed
   * from tables no longer named. Put it in the job that creates a record table so its changes
   * are noted from the start. The step fails the job with PgWriteError 42P01 when a table does
   * not exist.
   */
  static changeTriggersStep(tables: readonly ChangeTable[]): WriteStep {
    return { sql: 'SELECT _svc_cf_install($1::jsonb)', params: [JSON.stringify(tables.map((t) => ({ collection: t.collection, table: t.table })))] };
  }

  /** Runs changeTriggersStep(tables) as a job of its own; resolves with the number of tables covered. */
  async syncChangeTriggers(tables: readonly ChangeTable[]): Promise<number> {
    const [r] = await this.write([{ ...PgWriter.changeTriggersStep(tables), returnRows: true }]);
    return Number(r.rows?.[0]?.[0] ?? 0);
  }

  /**
   * Which collections' deletes carry the deleted row (`Change.old`): realtime asks for the
   * collections it has subscribers of. Takes effect from the next group.
   */
  captureDeletedRows(collectionIds: string[]): void {
    if (this.allOld) return;
    this.wantOld = collectionIds.length ? `,${collectionIds.join(',')},` : '';
  }

  /**
   * Every collection's deletes carry the deleted row from the next group on, whatever
   * captureDeletedRows asks: with the cluster feed (cluster-feed.ts) another instance's realtime
   * may need the row of a collection this one has no subscriber of.
   */
  captureAllDeletedRows(): void {
    this.allOld = true;
    this.wantOld = '*';
  }

  /** Stops taking writes, commits every queued job, then closes the connection. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = (async () => {
      while (this.loop) await this.loop;
      const c = this.client;
      this.client = null;
      if (c) await c.end().catch(() => undefined);
    })();
    return this.closing;
  }

  private schedule(): void {
    if (this.loop) return;
    // The jobs of this event-loop turn go together: start on the next turn.
    this.loop = new Promise<void>((r) => setImmediate(r))
      .then(() => this.drain())
      .finally(() => {
        this.loop = null;
        if (this.queue.length) this.schedule();
      });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, MAX_GROUP);
      try {
        await this.applyGroup(group);
      } catch (err) {
        // not expected: applyGroup answers every job itself; never leave a job hanging
        for (const j of group) j.reject(err);
      }
      if (this.names.made >= NAMED_MAX && this.client) this.dropClient(true);
    }
  }

  /** The open connection, connecting (again) when there is none or it was lost. */
  private async connection(): Promise<pg.Client> {
    if (this.client && !this.lostWith) return this.client;
    if (this.client) this.dropClient(false);
    // pipeline mode: the statements of an optimistic group go out together (runGroupPipelined);
    // every other path awaits each statement, as without it
    const client = new pg.Client({ ...this.config, types: this.types, pipeline: true });
    this.lostWith = null;
    client.on('error', (err) => {
      if (this.client === client) this.lostWith ??= err;
    });
    client.on('end', () => {
      if (this.client === client) this.lostWith ??= new Error('the connection ended');
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(CAPTURE_FUNCTIONS);
      if (this.lostWith) throw this.lostWith;
    } catch (err) {
      this.dropClient(false);
      throw err;
    }
    this.names.reset();
    this.sentOld = null;
    return client;
  }

  /** Forgets the current connection; `graceful` lets it say goodbye, otherwise its socket is cut. */
  private dropClient(graceful: boolean): void {
    const c = this.client;
    this.client = null;
    this.lostWith = null;
    if (!c) return;
    if (graceful) c.end().catch(() => undefined);
    else {
      try {
        (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      } catch { /* already gone */ }
      c.end().catch(() => undefined);
    }
  }

  /**
   * Applies one group in one transaction and answers each of its jobs. Never throws. When the
   * connection turns out dead at BEGIN (lost while idle, not yet noticed), no job was sent: the
   * group is tried once more on a new connection (`retry` false then).
   */
  private async applyGroup(group: Job[], retry = true): Promise<void> {
    let client: pg.Client;
    try {
      client = await this.connection();
    } catch (err) {
      const e = new PgConnectionError(`cannot connect to PostgreSQL for writing: ${(err as Error).message}; the write was not applied`, err);
      this.failQueued(e);
      for (const j of group) j.reject(e);
      return;
    }
    const outcomes: Array<StepResult[] | Error> = new Array(group.length);
    let atCommit = false;
    let taken: unknown[][];
    const oldWanted = this.wantOld;
    let begun = false;
    // A group of several jobs runs without savepoints while jobs have not been failing: a
    // savepoint costs a round trip and a subtransaction a job. If a job then fails, the whole
    // transaction is rolled back and the group runs again with a savepoint a job (below).
    let optimistic = group.length > 1 && this.cleanGroups >= CLEAN_GROUPS_BEFORE_OPTIMISTIC;
    try {
      const setOldSql = `SELECT set_config('svc.cf_old', ${pg.escapeLiteral(oldWanted)}, false); `;
      const setOld = oldWanted !== this.sentOld ? setOldSql : '';
      const piping = optimistic && pipelinable(group);
      if (!piping) {
        await client.query(optimistic ? `BEGIN; ${setOld}` : `BEGIN; ${setOld}SAVEPOINT svc_job`);
        begun = true;
        this.sentOld = oldWanted;
      }
      if (optimistic) {
        if (piping) {
          // BEGIN goes out with the group's statements
          const piped = await this.runGroupPipelined(client, group, `BEGIN; ${setOld}`, () => {
            begun = true;
            this.sentOld = oldWanted;
          });
          for (let j = 0; j < group.length; j++) {
            if (piped[j] instanceof Error) optimistic = false;
            else outcomes[j] = piped[j];
          }
        } else {
          for (let j = 0; j < group.length && optimistic; j++) {
            const outcome = await this.runJob(client, group[j].steps);
            if (outcome instanceof Error) optimistic = false;
            else outcomes[j] = outcome;
          }
        }
        if (!optimistic) {
          // the set_config of this transaction is undone with it: sent again (the loop below
          // gives every job its outcome anew)
          this.cleanGroups = 0;
          await client.query(`ROLLBACK; BEGIN; ${setOldSql}SAVEPOINT svc_job`);
        }
      }
      for (let j = 0; j < group.length && !optimistic; j++) {
        let outcome = await this.runJob(client, group[j].steps);
        if (isStalePlan(outcome)) {
          // another session changed a table under a prepared statement: prepare again, once
          await client.query('ROLLBACK TO SAVEPOINT svc_job');
          this.names.forgetAll();
          outcome = await this.runJob(client, group[j].steps);
        }
        outcomes[j] = outcome;
        if (outcome instanceof Error) await client.query('ROLLBACK TO SAVEPOINT svc_job');
        else if (j < group.length - 1) await client.query('RELEASE SAVEPOINT svc_job; SAVEPOINT svc_job');
      }
      atCommit = true;
      const before = this.commitSql.any ? this.commitSql.results(createsOf(group, outcomes)).join('') : '';
      const res = (await client.query({ text: before + (optimistic ? TAKE_AND_COMMIT_SQL : COMMIT_SQL), rowMode: 'array' })) as unknown as pg.QueryArrayResult[];
      taken = res[res.length - 2].rows; // the notes: the statement before COMMIT
    } catch (err) {
      this.sentOld = null;
      if (isConnectionFailure(err) || this.lostWith) {
        const cause = this.lostWith ?? err;
        this.dropClient(false);
        if (!begun && retry) return this.applyGroup(group, false);
        const why = (cause as Error).message;
        const lost = new PgConnectionError(
          atCommit
            ? `the PostgreSQL write connection was lost during COMMIT (${why}): the write may or may not have been applied`
            : `the PostgreSQL write connection was lost (${why}): the write was not applied`,
          cause,
        );
        this.failQueued(new PgConnectionError(`the PostgreSQL write connection was lost (${why}): the write was not applied`, cause));
        group.forEach((j, k) => j.reject(outcomes[k] instanceof Error && !atCommit ? outcomes[k] : lost));
        return;
      }
      // The group failed as a whole (at BEGIN, a savepoint or COMMIT): nothing of it applied.
      await client.query('ROLLBACK').catch(() => undefined);
      const failed = stepError(err, -1);
      group.forEach((j, k) => j.reject(outcomes[k] instanceof Error ? outcomes[k] : failed));
      return;
    }
    if (outcomes.some((o) => o instanceof Error)) this.cleanGroups = 0;
    else this.cleanGroups++;
    this.commits++;
    this.groupCommits++;
    this.committed.call();
    if (group.length && this.commitLatency.any) this.commitLatency.call(performance.now() - group[0]!.at);
    const created = createsOf(group, outcomes);
    const [flat, truncated] = mergeNotes(taken);
    // The jobs are answered once the feed has delivered their commit: at once, or, when a
    // listener reads first (a schema or settings reload, change-feed.ts), after that read.
    const delivered = created.length || flat || truncated ? this.changes.emit(decodeChanges(this.commits, created, flat, truncated)) : undefined;
    const answer = (): void => group.forEach((j, k) => {
      const o = outcomes[k];
      if (o instanceof Error) j.reject(o);
      else j.resolve(o);
    });
    if (delivered) void delivered.then(answer);
    else answer();
  }

  /**
   * Runs one job's steps in order. Returns their results, or the job's failure (GuardFailed for
   * a guard, PgWriteError for a statement); throws only when the connection failed.
   */
  private async runJob(client: pg.Client, steps: WriteStep[]): Promise<StepResult[] | Error> {
    const results: StepResult[] = [];
    for (let i = 0; i < steps.length; i++) {
      let r: pg.QueryArrayResult;
      try {
        r = await this.exec(client, steps[i]);
      } catch (err) {
        if (isConnectionFailure(err)) throw err;
        return jobError(err, i);
      }
      const out = stepOutcome(steps, i, r);
      if (out instanceof Error) return out;
      results.push(out);
    }
    return results;
  }

  /**
   * An optimistic group's jobs (see pipelinable) sent at once on the pipelined connection: `begin`
   * (the transaction's BEGIN), then every statement in job and step order, in one write to the
   * socket: one round trip for the group instead of one a statement. `begun` is called once BEGIN
   * has succeeded. Answers each job's results or failure as runJob does; after a failure
   * PostgreSQL refuses the rest of the transaction (25P02), which the caller rolls back and runs
   * again with savepoints.
   * @throws BEGIN's error (nothing of the group ran); a lost connection's
   */
  private async runGroupPipelined(client: pg.Client, group: Job[], begin: string, begun: () => void): Promise<Array<StepResult[] | Error>> {
    const sent: Promise<pg.QueryArrayResult>[] = [];
    const stream = (client as unknown as { connection: { stream: { cork?(): void; uncork?(): void } } }).connection.stream;
    let began: Promise<unknown>;
    stream.cork?.();
    try {
      began = client.query(begin);
      for (const j of group) {
        for (const step of j.steps) sent.push(this.sendPrepared(client, step));
      }
    } finally {
      stream.uncork?.();
    }
    const [start, ...settled] = await Promise.allSettled([began, ...sent]);
    if (start.status === 'rejected') throw start.reason;
    begun();
    const out: Array<StepResult[] | Error> = [];
    let k = 0;
    for (const j of group) {
      let job: StepResult[] | Error = [];
      for (let i = 0; i < j.steps.length; i++, k++) {
        const r = settled[k];
        if (job instanceof Error) continue;
        if (r.status === 'rejected') {
          if (isConnectionFailure(r.reason)) throw r.reason;
          job = jobError(r.reason, i);
          continue;
        }
        const step = stepOutcome(j.steps, i, r.value);
        if (step instanceof Error) job = step;
        else job.push(step);
      }
      out.push(job);
    }
    return out;
  }

  /**
   * One step. With parameters: `?` slots renumbered, prepared once per connection. Without: the
   * simple protocol, which also runs several statements in one step (a migration's DDL); the last
   * statement's result is the step's.
   */
  private async exec(client: pg.Client, step: WriteStep): Promise<pg.QueryArrayResult> {
    if (step.params.length === 0) {
      const r = (await client.query({ text: step.sql, rowMode: 'array' })) as pg.QueryArrayResult | pg.QueryArrayResult[];
      if (isDdl(step.sql)) this.names.forgetAll();
      return Array.isArray(r) ? r[r.length - 1] : r;
    }
    const r = await this.sendPrepared(client, step);
    if (isDdl(step.sql)) this.names.forgetAll();
    return r;
  }

  /** A step with parameters sent as a prepared statement (named once per connection). */
  private sendPrepared(client: pg.Client, step: WriteStep): Promise<pg.QueryArrayResult> {
    return client.query({ text: step.sql, values: step.params, rowMode: 'array', name: this.names.of(step.sql) });
  }

  private failQueued(err: Error): void {
    const queued = this.queue;
    this.queue = [];
    for (const j of queued) j.reject(err);
  }
}

/**
 * The notes of one transaction (rows of collection, record id, op, old row as JSON text) merged
 * per record, in the change feed's wire form (write-job.ts: flat `collection, id, op, old`
 * quads): anything then a delete is a delete, carrying the deleted row. Returns
 * `[flat | null, truncated collections | null]`.
 */
function mergeNotes(rows: unknown[][]): [unknown[] | null, string[] | null] {
  if (rows.length === 0) return [null, null];
  if (rows[0][2] === null) return [null, [...new Set(rows.map((r) => String(r[0])))]];
  const merged = new Map<string, unknown[]>();
  for (const row of rows) {
    const key = `${String(row[0])}\u0000${String(row[1])}`;
    const prev = merged.get(key);
    if (prev === undefined) merged.set(key, [row[0], row[1], Number(row[2]), row[3]]);
    else if (Number(row[2]) === CHANGE_DELETE) {
      prev[2] = CHANGE_DELETE;
      prev[3] = row[3];
    }
  }
  if (merged.size > MAX_CHANGES_LISTED) return [null, [...new Set(rows.map((r) => String(r[0])))]];
  const flat: unknown[] = [];
  for (const e of merged.values()) flat.push(e[0], e[1], e[2], e[3]);
  return [flat, null];
}
