/**
 * Opening a database for a server or an offline command, the storage half: the backend is chosen
 * here, once (a PostgreSQL URL or a SQLite file), and the parts handed back are that backend's
 * reader, writer and statement stores (StoreParts). What the features add around them (the Store
 * context, the data directory, the token secret, the field cipher, the full-text check, stored
 * files) is src/boot/open-data.ts's (ARCHITECTURE.md, "Folders").
 */
import type { Logger } from '../log/logger.js';
import type { BackendKind, ClusterRelay } from './backend.js';
import { WriterClient } from './sqlite/writer-client.js';
import { Reader } from './sqlite/reader.js';
import { bootstrapSteps } from './sqlite/bootstrap.js';
import { linkUpgradeSteps } from './sqlite/link-sql.js';
import { createdIndexName, createdIndexSql } from './sqlite/collection-sql.js';
import { bindValue } from './bind.js';
import type { RateCounter, SchemaRegistry, StoreParts } from './store.js';
import { sqliteStores } from './sqlite/sql-stores.js';

/** An open database: its reader, writer and statement stores, and the backend's per-instance parts. */
export interface OpenedStore {
  /** which database the store is on */
  backend: BackendKind;
  /** the reader, the writer and the statement stores (the Store context is built over them) */
  store: StoreParts;
  /**
   * Runs `fn` on one instance of the cluster at a time (PostgreSQL advisory lock: ClusterLock);
   * on SQLite the only instance always runs it. Resolves false when another instance holds it.
   */
  runOnce(name: string, fn: () => Promise<unknown> | unknown): Promise<boolean>;
  /**
   * Whether this instance runs the tick of scheduled job `job` due at `tick` (whole seconds):
   * the first instance to claim it (PostgreSQL: a row of `_jobRuns`); on SQLite always true.
   */
  claimTick(job: string, tick: Date): Promise<boolean>;
  /** Requests to the other instances (PostgreSQL's cluster feed); null on SQLite, where there are none. */
  relay: ClusterRelay | null;
  /** Commits every queued write and closes the writer and the reader. */
  close(): Promise<void>;
}

/**
 * The embedded backend over the SQLite file `dbPath` (created already): the writer thread with the
 * system tables, the reader with `readers` pool threads, the schema loaded into `registry`.
 * `afterStart` runs once the writer has made the file's companions (WAL), before the reader opens.
 * A failed rollback ends the process (the next start recovers to the last commit).
 */
export async function openSqliteStore(dbPath: string, logger: Logger, readers: number, registry: SchemaRegistry, afterStart: () => void): Promise<OpenedStore> {
  // A failed rollback left a write transaction open: nothing can be written any more and what the
  // open transaction held (a durable upload's offset, a record) is neither committed nor undone.
  // End the process; the next start recovers the database to its last commit.
  const onFatal = (reason: string): void => {
    logger.error(`fatal storage failure, exiting: ${reason}`, 'storage');
    process.exit(1);
  };
  const writer = await WriterClient.start(dbPath, { onFatal });
  if (process.env.SVC_TEST_FAIL_ROLLBACK) logger.warn(`SVC_TEST_FAIL_ROLLBACK=${process.env.SVC_TEST_FAIL_ROLLBACK} is set: a test-only fault that makes a write fail fatally (docs/operations.md); never set it in production`, 'storage');
  await writer.write(bootstrapSteps().map((s) => ({ ...s, params: s.params.map(bindValue) })));
  afterStart();
  const reader = new Reader(dbPath, readers);
  writer.committed.subscribe(() => reader.endSnapshot());
  // system tables of a database made by an older version (PostgreSQL's bootstrap does it in its DDL)
  const upgrade = linkUpgradeSteps((table, column) => reader.getSync('SELECT 1 FROM pragma_table_info(?) WHERE "name" = ?', [table, column]) !== undefined);
  if (upgrade.length) await writer.write(upgrade.map((sql) => ({ sql, params: [] })));
  const sql = sqliteStores(reader);
  registry.load(await sql.schema.loadAll());
  // record tables made before every table had its `created` index (docs/operations.md, "Upgrades")
  const unindexed = registry.all().filter((c) => !c.system && reader.getSync('SELECT 1 FROM sqlite_master WHERE "type" = \'index\' AND "name" = ?', [createdIndexName(c)]) === undefined);
  for (const c of unindexed) logger.info(`indexing "created" of collection "${c.name}"`);
  if (unindexed.length) await writer.write(unindexed.map((c) => ({ sql: createdIndexSql(c), params: [] })));
  const close = async () => {
    await writer.close();
    await reader.close();
  };
  return { backend: 'sqlite', store: { reader, writer, sql }, runOnce: async (_name, fn) => (await fn(), true), claimTick: async () => true, relay: null, close };
}

/** The server-SQL backend with the cluster's shared secrets (src/store/pg/open.ts). */
export interface OpenedPostgresStore extends OpenedStore {
  /** the cluster's token-signing secret (32 bytes) */
  secret: Buffer;
  /** the cluster's field-encryption key (32 bytes), or null when `envKey` was given */
  encryptionKey: Buffer | null;
}

/**
 * The server-SQL backend (src/store/pg/open.ts) over the database of `url`; `envKey`: the
 * field-encryption key of SERVICE_ENCRYPTION_KEY, else the cluster's shared one is used;
 * `registry`: the (empty) collection registry, loaded and kept current there;
 * `localLimits`: the in-memory rate counter the cluster's shared counters fall back on.
 * @throws Error when the database cannot be reached or bootstrapped
 */
export async function openPostgresStore(url: string, logger: Logger, envKey: Buffer | undefined, registry: SchemaRegistry, localLimits: RateCounter): Promise<OpenedPostgresStore> {
  const { openPostgres } = await import('./pg/open.js');
  const pg = await openPostgres(url, logger, envKey, registry, localLimits);
  return {
    backend: 'postgres',
    store: pg.store,
    secret: pg.secret,
    encryptionKey: pg.encryptionKey,
    runOnce: async (name, fn) => (await pg.locks.runOnce(name, () => fn())).ran,
    claimTick: pg.claimTick,
    relay: pg.cluster,
    close: pg.close,
  };
}
