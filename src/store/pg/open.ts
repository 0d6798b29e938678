/**
 * Opening the server-SQL backend (docs/deployment.md): the parts of a Store over PostgreSQL,
 * selected by `SERVICE_DATABASE_URL=postgres://…` (src/store/open.ts). What it sets up, in order:
 *
 * 1. the writer (PgWriter: one connection, group commit, change capture's functions);
 * 2. the system tables (bootstrap.ts, idempotent) and, when the server has pgvector, the vector
 *    extension (a warning when it has not: docs/deployment.md);
 * 3. the cluster's shared secrets (`_secrets`): the token-signing secret, and the field-encryption
 *    key unless SERVICE_ENCRYPTION_KEY gives one; the first instance to start makes them, every
 *    other instance reads the same, so a token signed by one instance verifies on any other and
 *    an encrypted value written by one decrypts on all;
 * 4. the reader (PgReader: promise reads on a connection pool; nothing here blocks the main thread);
 * 5. the collection registry, and change capture on every record table and on `_collections`
 *    (again after every schema change: PgSchemaSql adds the step to each DDL job); a change of
 *    `_collections`, made by this instance or another, reloads the registry;
 * 6. the cluster feed (ClusterFeed): this instance's commits are announced to the others by
 *    LISTEN/NOTIFY inside the committing transaction, the others' are emitted into this
 *    instance's change feed, so caches and realtime see every instance's writes, and settings,
 *    flags, experiment assignments and ended sessions too (their entries under the reserved ids
 *    of src/store/change-feed.ts, STATE_FEED_IDS).
 *
 * The data directory still holds what is per instance: the local file storage (when no object
 * store is configured), the slow-query log, the lock.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../log/logger.js';
import { PgWriter } from './writer.js';
import { PgReader } from './reader.js';
import { SEARCH_FOLDS_SQL, SEARCH_NO_UNACCENT_WARNING, bootstrapSteps, ensureVectorExtension } from './bootstrap.js';
import { pgStores } from './sql-stores.js';
import { ClusterFeed } from './cluster-feed.js';
import { ClusterLock } from './cluster-lock.js';
import type { RateCounter, SchemaRegistry, StoreParts } from '../store.js';
import { ENCRYPTION_KEY_BYTES } from '../../model/secrets.js';
import type { Collection } from '../../model/schema.js';
import { SCHEMA_FEED_ID, changeTables } from './schema-sql.js';
import { INDEX_DEFINITIONS_SQL, UNCOLLATED_TEXT_COLUMNS_SQL, collationUpgradeSteps, indexUpgradeSteps } from './collection-sql.js';
import type { WriteStep } from '../write-job.js';
import { STATE_FEED_IDS } from '../change-feed.js';
import { RATE_LIMITS_DDL } from './rate-limit-sql.js';
import pg from 'pg';

/** The parts of a Store over PostgreSQL with what else the server needs of the database. */
export interface OpenedPostgres {
  /** the reader, the writer and the statement stores (the Store context is built over them) */
  store: StoreParts<PgReader, PgWriter>;
  /** the cluster's token-signing secret (32 bytes) */
  secret: Buffer;
  /** the cluster's field-encryption key (32 bytes), or null when SERVICE_ENCRYPTION_KEY is used */
  encryptionKey: Buffer | null;
  /** cluster-wide single runs (the TTL collector) */
  locks: ClusterLock;
  /** the cluster feed, whose relay reaches state held by another instance (ClusterFeed.request) */
  cluster: ClusterFeed;
  /** Claims the tick of a scheduled job due at `tick` for this instance (OpenedData.claimTick). */
  claimTick(job: string, tick: Date): Promise<boolean>;
  /** Closes the feed, the locks, the writer (after its queued jobs) and the reader. */
  close(): Promise<void>;
}

/** Shared secrets of the cluster: made once (first writer wins), read by every instance. */
const SECRETS_DDL = 'CREATE TABLE IF NOT EXISTS "_secrets" ("name" text PRIMARY KEY, "value" text NOT NULL)';
const PUT_SECRET = 'INSERT INTO "_secrets" ("name", "value") VALUES ($1, $2) ON CONFLICT ("name") DO NOTHING';
const GET_SECRET = 'SELECT "value" FROM "_secrets" WHERE "name" = $1';
/** Claimed ticks of scheduled jobs (epoch ms of the second they fell due); a day of them is kept. */
const JOB_RUNS_DDL = 'CREATE TABLE IF NOT EXISTS "_jobRuns" ("job" text NOT NULL, "tick" bigint NOT NULL, PRIMARY KEY ("job", "tick"))';
const CLAIM_TICK = 'INSERT INTO "_jobRuns" ("job", "tick") VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1';
const FORGET_TICKS = 'DELETE FROM "_jobRuns" WHERE "job" = $1 AND "tick" < $2';
const DAY_MS = 86_400_000;
/** Serializes the bootstrap of instances starting at once (released at commit). */
const BOOTSTRAP_LOCK = `SELECT pg_advisory_xact_lock(hashtext('svc-bootstrap'))`;

async function sharedSecret(writer: PgWriter, name: string, bytes: number): Promise<Buffer> {
  const [, r] = await writer.write([
    { sql: PUT_SECRET, params: [name, randomBytes(bytes).toString('base64')] },
    { sql: GET_SECRET, params: [name], returnRows: true },
  ]);
  const value = Buffer.from(String(r.rows?.[0]?.[0] ?? ''), 'base64');
  if (value.length !== bytes) throw new Error(`the shared secret "${name}" in the PostgreSQL table "_secrets" is not ${bytes} bytes of base64`);
  return value;
}

/**
 * Brings record tables made by an earlier version to the shape whose indexes sorts can walk
 * (docs/operations.md, "Upgrades"): text columns under `COLLATE "C"` and collection indexes
 * `NULLS FIRST` (collection-sql.ts). One write job under the bootstrap lock, logged per
 * collection; nothing to do on a database made by this version.
 */
async function upgradeRecordTables(reader: PgReader, writer: PgWriter, collections: readonly Collection[], logger: Logger): Promise<void> {
  // the system collections' tables are bootstrap.ts's own (not sorted by clients at scale)
  const records = collections.filter((c) => !c.system);
  if (records.length === 0) return;
  const byTable = new Map<string, string[]>();
  const tables = records.map((c) => c.name).join(',');
  for (const [table, column] of await reader.all(UNCOLLATED_TEXT_COLUMNS_SQL, [tables])) {
    byTable.set(String(table), [...(byTable.get(String(table)) ?? []), String(column)]);
  }
  const definitions = new Map<string, string>();
  for (const [name, def] of await reader.all(INDEX_DEFINITIONS_SQL, [tables])) definitions.set(String(name), String(def));
  const steps: WriteStep[] = [];
  for (const c of records) {
    const columns = byTable.get(c.name) ?? [];
    const indexes = indexUpgradeSteps(c, definitions);
    if (columns.length === 0 && indexes.length === 0) continue;
    const recreated = indexes.filter((st) => st.sql.startsWith('DROP INDEX')).length;
    const parts = [
      ...(columns.length ? [`text columns ${columns.join(', ')} under COLLATE "C"`] : []),
      ...(recreated ? [`${recreated} index(es) re-created NULLS FIRST`] : []),
      ...(indexes.length > 2 * recreated ? ['an index on created'] : []),
    ];
    logger.info(`upgrading collection "${c.name}" so its sorts walk its indexes: ${parts.join('; ')}`);
    steps.push(...collationUpgradeSteps(c, columns), ...indexes);
  }
  if (steps.length === 0) return;
  await writer.write([{ sql: BOOTSTRAP_LOCK, params: [] }, ...steps]);
}

/**
 * Opens the PostgreSQL database at `url` (the parts of a Store). `envKey`: SERVICE_ENCRYPTION_KEY
 * when set.
 * `registry`: the collection registry, empty (src/boot/open-data.ts makes it), loaded
 * here with the schema and reloaded on every schema change of any instance. `localLimits`: the
 * in-memory rate counter the shared `_rateLimits` counters fall back on (rate-limit-sql.ts).
 * @throws Error when the server cannot be reached or the bootstrap fails (the message says which)
 */
export async function openPostgres(url: string, logger: Logger, envKey: Buffer | undefined, registry: SchemaRegistry, localLimits: RateCounter): Promise<OpenedPostgres> {
  const writer = await PgWriter.start(url).catch((err: Error) => {
    throw new Error(`cannot open the PostgreSQL database for writing: ${err.message}`, { cause: err });
  });
  const cleanup: Array<() => Promise<void>> = [() => writer.close()];
  const closeAll = async () => {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
  };
  try {
    const admin = new pg.Client({ connectionString: url, application_name: 'svc-bootstrap' });
    await admin.connect();
    let vector = false;
    try {
      const support = await ensureVectorExtension((sql) => admin.query(sql));
      vector = support.available;
      if (support.warning) logger.warn(support.warning);
    } finally {
      await admin.end().catch(() => undefined);
    }
    // instances starting together: CREATE TABLE IF NOT EXISTS is not safe against a concurrent
    // one (a unique violation in pg_type), so the bootstrap runs under a transaction-scoped lock
    await writer.write([{ sql: BOOTSTRAP_LOCK, params: [] }, ...bootstrapSteps({ vector }), { sql: SECRETS_DDL, params: [] }, { sql: JOB_RUNS_DDL, params: [] }, { sql: RATE_LIMITS_DDL, params: [] }]);
    const secret = await sharedSecret(writer, 'token_secret', 32);
    const encryptionKey = envKey ? null : await sharedSecret(writer, 'encryption_key', ENCRYPTION_KEY_BYTES);
    const reader = await PgReader.start(url);
    cleanup.push(() => reader.close());
    if (Number((await reader.get(SEARCH_FOLDS_SQL, []))?.[0] ?? 0) !== 1) logger.warn(SEARCH_NO_UNACCENT_WARNING);
    writer.committed.subscribe(() => reader.endSnapshot());
    const sql = pgStores(reader, { vector }, localLimits);
    registry.load(await sql.schema.loadAll());
    await upgradeRecordTables(reader, writer, registry.all(), logger);
    await writer.syncChangeTriggers(changeTables(registry.all()));
    const cluster = await ClusterFeed.start({
      connection: url,
      feed: writer.changes,
      counter: writer,
      // after a reconnect everything may have changed: records, the schema, settings, assignments, sessions
      collections: () => [...registry.all().map((c) => c.id), SCHEMA_FEED_ID, ...STATE_FEED_IDS],
      onError: (err) => logger.warn(`cluster change feed: ${err.message}`),
    });
    cleanup.push(() => cluster.close());
    writer.commitSql.subscribe((created) => cluster.commitSql(created));
    // a delete's row travels with its notification: other instances' realtime decides on it
    writer.captureAllDeletedRows();
    const locks = new ClusterLock(url);
    cleanup.push(() => locks.close());
    // a schema change (of any instance) reloads the registry before the batch reaches the caches
    // and the realtime hub, which subscribed after this listener: the feed holds the batch (and
    // those after it) from them until the definitions are read (src/store/change-feed.ts)
    const reloadSchema = async (): Promise<void> => {
      registry.load(await sql.schema.loadAll());
      reader.invalidate(); // cached statements and plans (what Store.schemaChanged does)
    };
    const schemaListener = writer.changes.subscribe((batch) => {
      if (batch.truncated.includes(SCHEMA_FEED_ID) || batch.changes.some((c) => c.collection === SCHEMA_FEED_ID)) return reloadSchema();
      return undefined;
    });
    cleanup.push(async () => schemaListener());
    const claimTick = async (job: string, tick: Date): Promise<boolean> => {
      const at = tick.getTime();
      const [r] = await writer.write([
        { sql: CLAIM_TICK, params: [job, at], returnRows: true },
        { sql: FORGET_TICKS, params: [job, at - DAY_MS] },
      ]);
      return (r.rows?.length ?? 0) > 0;
    };
    return { store: { reader, writer, sql }, secret, encryptionKey, locks, cluster, claimTick, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
