/**
 * The cluster-wide change feed (docs/deployment.md, "Several instances"): every instance's PgWriter
 * publishes what each of its commits changed to every other instance on the same PostgreSQL
 * database, and each instance delivers the others' batches into its own local ChangeFeed
 * (src/store/change-feed.ts), so its caches invalidate and its realtime hub delivers (reading the
 * records itself) as if the write had been made locally.
 *
 * Transport: LISTEN/NOTIFY on one channel (default `svc_changes`) of the database. A notification
 * carries ids: collection id, record id and op; creates and updates never carry record data (the
 * delivering instance reads the record), a delete carries the row as it was (see "Deletes"
 * below). Its payload is compact JSON:
 *
 *   {"i":"<instance id>","s":<publish seq>,"k":<chunk index>,"e":1?,"c":[["<collection>","<id>",<op>,<old row>?],…]}
 *
 * with op 1 create, 2 update, 3 delete, and 0 for "every record of this collection may have
 * changed" (ChangeBatch.truncated; the id is null). The collection may also be one of the reserved
 * ids of src/store/change-feed.ts (settings, sticky assignments, ended sessions), named by the
 * writing step's `creates` like a created record: they travel the same way. `e` marks the last
 * chunk of a batch. An instance ignores notifications that carry its own instance id (its writer
 * already delivered them locally).
 *
 * Payload limit (PostgreSQL refuses a NOTIFY payload of 8000 bytes or more). A batch is split into
 * as many notifications as it takes (each under ~7,800 bytes, about 150–200 changes with 15-char
 * ids); the receiver buffers the chunks of one (instance, seq) and delivers the batch whole, as
 * one ChangeBatch, when the chunk marked `e` arrives. A batch of more than `maxListed` records
 * (default 2,000, ≈ 12 notifications) is sent as its collections only (truncated markers), like
 * the writer's own MAX_CHANGES_LISTED: past that size naming every id costs the whole cluster more
 * than dropping a few collections' caches. A single entry too long for one notification (an id
 * of several kB) also becomes its collection's truncated marker.
 *
 * Inside the committing transaction. The notifications are queued by `pg_notify` on the WRITER's
 * connection, in the transaction that commits the changes: PostgreSQL delivers them when, and
 * only if, that transaction commits; a job rolled back to its savepoint takes its notifications
 * with it. PostgreSQL also keeps the notification queue in commit order across sessions and the
 * notifications of one transaction together, so batches arrive per publishing instance in commit
 * order (and in global commit order, in fact). The work happens in a SQL function,
 * `_svc_cl_publish`, which {@link ClusterFeed.start} creates (again) in the connection's current
 * schema: it reads the writer's change notes (`pg_temp._svc_changes`, see writer.ts) plus the
 * creates the caller names, merges them per record as the writer does (anything then a delete is a
 * delete, a create then updates is a create), chunks and notifies. Two ways to call it:
 *
 * - {@link ClusterFeed.commitSql} (the intended hook, zero extra round trips): the statement to
 *   send in the writer's commit round trip, before its `COMMIT_SQL` (it runs before the notes are
 *   taken and cleared): `writer.commitSql.subscribe((created) => cluster.commitSql(created))`
 *   (PgWriter.commitSql), and other instances get one batch per commit.
 * - {@link ClusterFeed.publishStep} / {@link ClusterFeed.write} (works through PgWriter's public
 *   `write` today): one more step at the end of each job, publishing the job's creates and what
 *   the change triggers noted since the previous publish of the same transaction (the function
 *   keeps what it already sent in a temp table that empties on commit, and rolls back with the
 *   job's savepoint). Costs one round trip per job; a group's jobs then reach other instances as
 *   one batch per job (still in commit order) rather than one per commit.
 *
 * The listener. One dedicated connection (not the pool, not the writer's) runs LISTEN. When it is
 * lost (server restart, pg_terminate_backend, network; TCP keepalive finds a silent partition) it
 * connects again with backoff (100 ms doubling to 5 s). Notifications sent while no session
 * listened are gone, and the instance cannot know what they were: after every reconnect it
 * delivers one "everything may have changed" batch naming every collection as truncated (the
 * `collections` option lists them), so caches drop everything; it does so right after LISTEN is
 * in place again, so every later commit is delivered by notification. A batch half received when
 * the connection dropped is discarded (the everything batch covers it).
 *
 * Relay. State that lives in one instance's memory (an SSE client's stream) is reached from the
 * others by request and reply over a second channel, `<channel>_relay`, on the same listener
 * connection: {@link ClusterFeed.request} notifies `{"q":<request seq>,"f":"<instance>","k":"<kind>",
 * "b":<body>}` to every instance; those with a handler for the kind (ClusterFeed.handle) run it,
 * and one that has what the request names answers `{"r":<seq>,"t":"<asking instance>","b":<reply>}`.
 * The asker takes the first reply; with none within the timeout (default 1 s: no instance has
 * it, or the listener is down) it gets undefined. Requests and replies must each fit one
 * notification.
 *
 * Commit counts. Remote batches advance the local commit count (`counter.commits`, the writer's
 * public `commits`, which caches of rendered reads compare: src/records/records-list.ts) and carry
 * the new count as their `commit`, so a count-keyed cache entry made before a remote commit is not
 * served after it.
 *
 * Deletes. The row is gone when another instance hears of its delete, so the delete's entry
 * carries the row as it was (`Change.old`, as the local writer reports it: `to_jsonb` of the row,
 * bytea columns null, without `passwordHash` and `tokenKey`), and realtime on every instance
 * decides the subscribers' rules and filters on it (src/realtime/visibility.ts) as it does for a local delete. The
 * writer notes every deleted row for this (PgWriter.captureAllDeletedRows), since the instances
 * that need a collection's rows are not known to the one deleting. An entry whose row would not
 * fit one notification is sent with its id alone: realtime then fails closed for subscribers whose
 * rule or filter needs the row (only those whose rule needs none hear of it).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Change, ChangeBatch, ChangeFeed, ChangeOp } from '../change-feed.js';
import type { StepResult, WriteStep } from '../write-job.js';

/** The default LISTEN/NOTIFY channel. */
export const CLUSTER_CHANNEL = 'svc_changes';
/** Default most records named one by one in a cluster batch; past it, collections only. */
export const CLUSTER_MAX_LISTED = 2000;
/**
 * Most bytes of the JSON entries of one notification: PostgreSQL's limit is < 8000 bytes for the
 * whole payload; the head (instance id, seq, chunk index, brackets) fits in the rest.
 */
export const NOTIFY_BODY_LIMIT = 7800;
/** PostgreSQL refuses a NOTIFY payload of this many bytes or more. */
const NOTIFY_PAYLOAD_LIMIT = 8000;
/** How long a relay request waits for a reply by default, ms. */
export const RELAY_TIMEOUT_MS = 1000;

/** Anything with a commit count the feed advances on remote batches (a PgWriter). */
export interface CommitCounter {
  commits: number;
}

export interface ClusterFeedOptions {
  /** the database (`postgres://` URL or pg client configuration) every instance shares */
  connection: string | pg.ClientConfig;
  /** this instance's local feed: remote batches are emitted into it (the writer's `changes`) */
  feed: ChangeFeed;
  /** advanced by one per remote batch (pass the PgWriter); a private counter when absent */
  counter?: CommitCounter;
  /** every collection id, for the "everything may have changed" batch after a reconnect */
  collections: () => Iterable<string>;
  /** this instance's id (default: 12 random hex characters); [A-Za-z0-9_-] only */
  instanceId?: string;
  /** the NOTIFY channel (default `svc_changes`); every instance must use the same */
  channel?: string;
  /** records named one by one per batch before it is sent as collections only (default 2,000) */
  maxListed?: number;
  /** first and longest wait before connecting the listener again, ms (default 100 and 5,000) */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** TCP keepalive idle time of the listener, ms (default 10,000) */
  keepAliveMs?: number;
  /** told of listener failures and undecodable notifications (default: ignored) */
  onError?: (err: Error) => void;
}

/**
 * The merge (per record) of created ids and the notes of `fresh`, as entries, their count and
 * their collections. A delete's entry carries the deleted row as noted (the writer notes every
 * row with captureAllDeletedRows), without the auth columns no rule reads.
 */
const mergeSql = (fresh: string): string => `
    SELECT coalesce(array_agg('[' || to_json(m.c)::text || ',' || to_json(m.id)::text || ',' || m.op
             || CASE WHEN m.op = 3 AND m.old IS NOT NULL THEN ',' || (m.old - 'passwordHash' - 'tokenKey')::text ELSE '' END || ']' ORDER BY m.o), '{}'),
           count(*), coalesce(array_agg(DISTINCT m.c), '{}')
      INTO entries, n, colls
      FROM (SELECT a.c, a.id, CASE WHEN bool_or(a.op = 3) THEN 3 WHEN bool_or(a.op = 1) THEN 1 ELSE 2 END AS op, min(a.o) AS o,
                   (array_agg(a.old) FILTER (WHERE a.old IS NOT NULL))[1] AS old
              FROM (SELECT x.e->>0 AS c, x.e->>1 AS id, 1 AS op, x.ord AS o, NULL::jsonb AS old FROM jsonb_array_elements(created) WITH ORDINALITY AS x(e, ord)
                    UNION ALL
                    SELECT f.c, f.id, f.op, 1000000000 + row_number() OVER (), f.old FROM (${fresh}) f) a
             GROUP BY a.c, a.id) m;`;

/*
 * The publishing function. Runs on the writer's connection inside the committing transaction.
 * `since_last`: publish only the notes not yet published in this transaction (per-job steps).
 */
const PUBLISH_FUNCTION = `
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('svc:cluster-feed'));
CREATE OR REPLACE FUNCTION _svc_cl_publish(channel text, head text, created jsonb, max_listed integer, since_last boolean)
RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
  entries text[];
  colls text[];
  n bigint;
  e text;
  body text := '';
  k integer := 0;
  lim integer := ${NOTIFY_BODY_LIMIT} - octet_length(head);
BEGIN
  IF since_last THEN
    IF to_regclass('pg_temp._svc_cl_sent') IS NULL THEN
      CREATE TEMP TABLE _svc_cl_sent (c text, id text, op smallint, old jsonb) ON COMMIT DELETE ROWS;
    END IF;
    ${mergeSql('SELECT c, id, op, old FROM pg_temp._svc_changes EXCEPT ALL SELECT c, id, op, old FROM pg_temp._svc_cl_sent')}
    IF n > 0 THEN
      DELETE FROM pg_temp._svc_cl_sent;
      INSERT INTO pg_temp._svc_cl_sent SELECT c, id, op, old FROM pg_temp._svc_changes;
    END IF;
  ELSE
    ${mergeSql('SELECT c, id, op, old FROM pg_temp._svc_changes')}
  END IF;
  IF n = 0 THEN
    RETURN 0;
  END IF;
  IF n > max_listed THEN
    entries := ARRAY(SELECT '[' || to_json(x)::text || ',null,0]' FROM unnest(colls) x);
  END IF;
  FOREACH e IN ARRAY entries LOOP
    IF octet_length(e) > lim AND jsonb_array_length(e::jsonb) = 4 THEN
      e := (e::jsonb - 3)::text; -- a delete whose row does not fit: its id alone
    END IF;
    IF octet_length(e) > lim THEN
      e := '[' || to_json(e::jsonb->>0)::text || ',null,0]';
    END IF;
    IF body <> '' AND octet_length(body) + octet_length(e) + 1 > lim THEN
      PERFORM pg_notify(channel, '{' || head || ',"k":' || k || ',"c":[' || body || ']}');
      k := k + 1;
      body := '';
    END IF;
    body := CASE WHEN body = '' THEN e ELSE body || ',' || e END;
  END LOOP;
  PERFORM pg_notify(channel, '{' || head || ',"k":' || k || ',"e":1,"c":[' || body || ']}');
  RETURN k + 1;
END $f$;
COMMIT;`;

/**
 * A statement that tells every listening instance that everything under `ids` (collection ids or
 * the reserved ids of src/store/change-feed.ts) may have changed: one batch of truncated markers
 * from no instance (its id is random), for a transaction that writes outside every instance's
 * writer (the app's migrations, src/store/pg/migrations-sql.ts); run inside it, it is delivered
 * only if that commits. `ids` must fit one notification.
 */
export function truncatedNotifySql(ids: readonly string[], channel: string = CLUSTER_CHANNEL): string {
  const payload = JSON.stringify({ i: `x${randomBytes(6).toString('hex')}`, s: 1, k: 0, e: 1, c: ids.map((id) => [id, null, 0]) });
  return `SELECT pg_notify(${pg.escapeLiteral(channel)}, ${pg.escapeLiteral(payload)})`;
}

const OPS: Record<number, ChangeOp> = { 1: 'create', 2: 'update', 3: 'delete' };

type Payload = { i: string; s: number; k: number; e?: number; c: Array<[string, string | null, number, Record<string, unknown>?]> };

/** The cluster-wide change feed of one instance: see the file comment. */
export class ClusterFeed {
  readonly instanceId: string;
  readonly channel: string;
  /** Times the listener connected again after losing its connection. */
  reconnects = 0;
  /** Remote batches delivered into the local feed (everything batches included). */
  delivered = 0;

  private readonly config: pg.ClientConfig;
  private readonly opts: ClusterFeedOptions;
  private readonly counter: CommitCounter;
  private readonly maxListed: number;
  private seq = 0;
  private client: pg.Client | null = null;
  private listening = false;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private backoff: number;
  /** Chunks received of batches not yet complete, by `instance:seq`. */
  private partial = new Map<string, Change[]>();
  private readonly truncatedOf = new Map<string, Set<string>>();
  /** the relay's channel (`<channel>_relay`), its handlers and the requests awaiting a reply */
  private readonly relayChannel: string;
  private readonly handlers = new Map<string, (body: unknown) => Promise<unknown> | unknown>();
  private readonly waiting = new Map<number, (reply: unknown) => void>();
  private relaySeq = 0;

  private constructor(opts: ClusterFeedOptions) {
    this.opts = opts;
    this.instanceId = opts.instanceId ?? randomBytes(6).toString('hex');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(this.instanceId)) throw new Error(`cluster feed: the instance id ${JSON.stringify(this.instanceId)} is not 1–64 of [A-Za-z0-9_-]`);
    this.channel = opts.channel ?? CLUSTER_CHANNEL;
    this.relayChannel = `${this.channel}_relay`;
    this.counter = opts.counter ?? { commits: 0 };
    this.maxListed = opts.maxListed ?? CLUSTER_MAX_LISTED;
    this.backoff = opts.reconnectMinMs ?? 100;
    const base: pg.ClientConfig = typeof opts.connection === 'string' ? { connectionString: opts.connection } : { ...opts.connection };
    this.config = {
      application_name: 'svc-cluster-feed',
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: opts.keepAliveMs ?? 10_000,
      ...base,
    };
  }

  /**
   * Creates the publishing function, connects the listener and LISTENs. Resolves once
   * notifications from other instances are delivered; rejects when the first connection fails.
   */
  static async start(opts: ClusterFeedOptions): Promise<ClusterFeed> {
    const f = new ClusterFeed(opts);
    await f.listen(true);
    return f;
  }

  /** Whether the listener is connected and listening now. */
  get connected(): boolean {
    return this.listening;
  }

  /**
   * The statement that publishes a whole group commit, for the writer's commit round trip
   * (before its notes are taken): `created` are the creates of the group's committed jobs.
   */
  commitSql(created: readonly Change[]): string {
    const json = JSON.stringify(created.map((c) => [c.collection, c.id]));
    return `SELECT _svc_cl_publish(${pg.escapeLiteral(this.channel)}, ${pg.escapeLiteral(this.head())}, ${pg.escapeLiteral(json)}::jsonb, ${this.maxListed}, false);\n`;
  }

  /**
   * The step, last in a job, that publishes the job's creates (`creates`, or those its steps
   * name) and what the change triggers noted since the previous publish in the transaction.
   */
  publishStep(creates: ReadonlyArray<{ collection: string; id: string }>): WriteStep {
    const json = JSON.stringify(creates.map((c) => [c.collection, c.id]));
    return { sql: 'SELECT _svc_cl_publish($1, $2, $3::jsonb, $4, true)', params: [this.channel, this.head(), json, this.maxListed] };
  }

  /** Writes one job through `writer` with its publish step appended; the results are the job's own. */
  async write(writer: { write(steps: WriteStep[]): Promise<StepResult[]> }, steps: WriteStep[]): Promise<StepResult[]> {
    const creates: Array<{ collection: string; id: string }> = [];
    for (const s of steps) if (s.creates) creates.push(s.creates);
    const results = await writer.write([...steps, this.publishStep(creates)]);
    return results.slice(0, steps.length);
  }

  /**
   * Handles relay requests of `kind` from other instances: `fn` answers the request's body with a
   * JSON-serializable reply, or undefined when this instance has nothing for it (no reply is sent:
   * the instance that has something answers). See "Relay" in the file comment.
   */
  handle(kind: string, fn: (body: unknown) => Promise<unknown> | unknown): void {
    this.handlers.set(kind, fn);
  }

  /**
   * Asks the other instances a relay request of `kind`; resolves the first reply, or undefined
   * when none came within `timeoutMs` (no instance has what it names, or the listener is down).
   * @throws RangeError when the request does not fit one notification (under 8000 bytes)
   */
  async request(kind: string, body: unknown, timeoutMs = RELAY_TIMEOUT_MS): Promise<unknown> {
    const client = this.client;
    if (!client || !this.listening) return undefined;
    const rid = ++this.relaySeq;
    const payload = JSON.stringify({ q: rid, f: this.instanceId, k: kind, b: body });
    if (Buffer.byteLength(payload) >= NOTIFY_PAYLOAD_LIMIT) throw new RangeError(`a relay request of ${Buffer.byteLength(payload)} bytes does not fit one notification (under ${NOTIFY_PAYLOAD_LIMIT})`);
    return new Promise<unknown>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(rid);
        resolve(undefined);
      }, timeoutMs);
      this.waiting.set(rid, (reply) => {
        clearTimeout(timer);
        this.waiting.delete(rid);
        resolve(reply);
      });
      client.query('SELECT pg_notify($1, $2)', [this.relayChannel, payload]).catch(() => {
        this.waiting.get(rid)?.(undefined);
      });
    });
  }

  /** One relay notification: a request to handle, or the reply to one of ours. */
  private relayed(payload: string): void {
    let m: { q?: number; f?: string; k?: string; b?: unknown; r?: number; t?: string };
    try {
      m = JSON.parse(payload) as typeof m;
    } catch {
      this.opts.onError?.(new Error('cluster relay: cannot decode a notification'));
      return;
    }
    if (typeof m.r === 'number') {
      if (m.t === this.instanceId) this.waiting.get(m.r)?.(m.b);
      return;
    }
    if (typeof m.q !== 'number' || typeof m.f !== 'string' || m.f === this.instanceId || typeof m.k !== 'string') return;
    const fn = this.handlers.get(m.k);
    if (!fn) return;
    const { q, f } = m;
    Promise.resolve()
      .then(() => fn(m.b))
      .then((reply) => {
        const client = this.client;
        if (reply === undefined || !client) return;
        let text = JSON.stringify({ r: q, t: f, b: reply });
        if (Buffer.byteLength(text) >= NOTIFY_PAYLOAD_LIMIT) text = JSON.stringify({ r: q, t: f, b: { status: 503, body: '{"status":503,"code":"overloaded","message":"The reply is too large to relay between instances.","data":{}}' } });
        return client.query('SELECT pg_notify($1, $2)', [this.relayChannel, text]);
      })
      .catch((err: Error) => this.opts.onError?.(new Error(`cluster relay: ${err.message}`)));
  }

  /** Stops listening and closes the listener connection. */
  async close(): Promise<void> {
    this.closed = true;
    for (const done of [...this.waiting.values()]) done(undefined);
    this.listening = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }

  private head(): string {
    return `"i":"${this.instanceId}","s":${++this.seq}`;
  }

  /** Connects, (first time) creates the function, LISTENs; after a reconnect delivers the everything batch. */
  private async listen(first: boolean): Promise<void> {
    const client = new pg.Client(this.config);
    const lost = (err: Error): void => {
      if (this.client !== client) return;
      this.client = null;
      this.listening = false;
      this.partial.clear();
      this.truncatedOf.clear();
      try {
        (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      } catch { /* already gone */ }
      client.end().catch(() => undefined);
      if (this.closed) return;
      this.opts.onError?.(err);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('the cluster feed connection ended')));
    client.on('notification', (msg) => {
      if (this.client !== client) return;
      if (msg.channel === this.channel) this.receive(msg.payload ?? '');
      else if (msg.channel === this.relayChannel) this.relayed(msg.payload ?? '');
    });
    this.client = client;
    try {
      await client.connect();
      if (first) await client.query(PUBLISH_FUNCTION);
      await client.query(`LISTEN ${pg.escapeIdentifier(this.channel)}; LISTEN ${pg.escapeIdentifier(this.relayChannel)}`);
    } catch (err) {
      // a first connection that fails fails start(): no reconnect behind the caller's back
      if (first) this.closed = true;
      if (this.client === client) {
        this.client = null;
        client.end().catch(() => undefined);
      }
      throw err;
    }
    if (this.client !== client) {
      if (first) this.closed = true;
      throw new Error('the cluster feed connection was lost while it started');
    }
    this.listening = true;
    this.backoff = this.opts.reconnectMinMs ?? 100;
    if (!first) {
      this.reconnects++;
      this.deliver([], [...this.opts.collections()]);
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.timer) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.opts.reconnectMaxMs ?? 5000);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.closed) return;
      this.listen(false).catch((err: Error) => {
        this.opts.onError?.(err);
        this.scheduleReconnect();
      });
    }, wait);
    this.timer.unref();
  }

  /** One notification: buffered until its batch's last chunk, then delivered. */
  private receive(payload: string): void {
    let p: Payload;
    try {
      p = JSON.parse(payload) as Payload;
      if (typeof p.i !== 'string' || !Array.isArray(p.c)) throw new Error('not a cluster feed payload');
    } catch (err) {
      this.opts.onError?.(new Error(`cluster feed: cannot decode a notification (${(err as Error).message})`));
      return;
    }
    if (p.i === this.instanceId) return;
    const key = `${p.i}:${p.s}`;
    let changes = this.partial.get(key);
    let truncated = this.truncatedOf.get(key);
    if (!changes) {
      changes = [];
      truncated = new Set();
    }
    for (const [collection, id, op, old] of p.c) {
      if (op === 0 || id === null) truncated!.add(collection);
      else if (op === 3 && typeof old === 'object' && old !== null) changes.push({ collection, id, op: 'delete', old });
      else changes.push({ collection, id, op: OPS[op] ?? 'update' });
    }
    if (!p.e) {
      this.partial.set(key, changes);
      this.truncatedOf.set(key, truncated!);
      return;
    }
    this.partial.delete(key);
    this.truncatedOf.delete(key);
    this.deliver(truncated!.size ? changes.filter((c) => !truncated!.has(c.collection)) : changes, [...truncated!]);
  }

  private deliver(changes: Change[], truncated: string[]): void {
    const batch: ChangeBatch = { commit: ++this.counter.commits, changes, truncated };
    this.delivered++;
    // no job of this instance waits on a remote batch: its delivery (maybe behind a reload) is the feed's
    void this.opts.feed.emit(batch);
  }
}
