/**
 * Opening a data directory's database for a server or an offline command (`svc schema apply`,
 * `svc import`): the directory and database file (modes 0700/0600), the token secret, the
 * field-encryption key, the writer thread with the system tables, the reader, the collection
 * registry and the full-text indexes; then the stored files.
 */
import { availableParallelism } from 'node:os';
import { createDatabaseFile, databasePath, ensureDataDir, looseModes } from '../files/data-paths.js';
import type { ServeConfig } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { BackendKind, ClusterRelay } from './backend.js';
import { WriterClient } from './sqlite/writer-client.js';
import { Reader } from './sqlite/reader.js';
import { bootstrapSteps } from './sqlite/bootstrap.js';
import { linkUpgradeSteps } from './sqlite/link-sql.js';
import { createdIndexName, createdIndexSql } from './sqlite/collection-sql.js';
import { bindValue } from './bind.js';
import { CollectionRegistry } from '../collections/collection-registry.js';
import { Store } from './store.js';
import { sqliteStores } from './sqlite/sql-stores.js';
import { prepareFullText } from '../records/search.js';
import { loadTokenSecret } from '../auth/auth-service.js';
import { installFieldCipher, loadEncryptionKey } from '../records/encryption.js';
import { FileStorage, storageRoot } from '../files/files.js';
import { LocalBlobStore, type BlobStore } from '../files/blob-store.js';
import { openS3BlobStore } from '../files/s3-blob-store.js';
import { RecordFiles } from '../files/record-files.js';

/** An open data directory. */
export interface OpenedData {
  /** which database the store is on */
  backend: BackendKind;
  /** the SQLite database file; '' on PostgreSQL */
  dbPath: string;
  /** the persisted token secret */
  secret: Buffer;
  store: Store;
  files: RecordFiles;
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
 * Opens `config.dataDir` (created when missing). `readers`: reader worker threads (a server uses
 * one beside its main thread; an offline command needs one). Warns about loose file modes.
 * @throws Error when the schema cannot be opened (e.g. searchable fields under `fts5-off`)
 */
export async function openDataDir(config: ServeConfig, logger: Logger, readers = Math.max(1, Math.min(2, availableParallelism() - 1))): Promise<OpenedData> {
  ensureDataDir(config.dataDir);
  if (config.databaseUrl) return openPostgresData(config, logger);
  createDatabaseFile(config.dataDir);
  const dbPath = databasePath(config.dataDir);
  const secret = loadTokenSecret(config.dataDir);
  installFieldCipher(loadEncryptionKey(config.dataDir, config.encryptionKey), (m) => logger.warn(m));
  const writer = await WriterClient.start(dbPath);
  // A failed rollback left a write transaction open: nothing can be written any more and what the
  // open transaction held (a durable upload's offset, a record) is neither committed nor undone.
  // End the process; the next start recovers the database to its last commit.
  writer.onFatal = (reason) => {
    logger.error(`fatal storage failure, exiting: ${reason}`, 'storage');
    process.exit(1);
  };
  if (process.env.SVC_TEST_FAIL_ROLLBACK) logger.warn(`SVC_TEST_FAIL_ROLLBACK=${process.env.SVC_TEST_FAIL_ROLLBACK} is set: a test-only fault that makes a write fail fatally (docs/operations.md); never set it in production`, 'storage');
  await writer.write(bootstrapSteps().map((s) => ({ ...s, params: s.params.map(bindValue) })));
  warnLooseModes(config, logger);
  const reader = new Reader(dbPath, readers);
  writer.onCommit = () => reader.endSnapshot();
  // system tables of a database made by an older version (PostgreSQL's bootstrap does it in its DDL)
  const upgrade = linkUpgradeSteps((table, column) => reader.get('SELECT 1 FROM pragma_table_info(?) WHERE "name" = ?', [table, column]) !== undefined);
  if (upgrade.length) await writer.write(upgrade.map((sql) => ({ sql, params: [] })));
  const sql = sqliteStores(reader);
  const registry = new CollectionRegistry();
  registry.load(sql.schema.loadAll());
  // record tables made before every table had its `created` index (docs/operations.md, "Upgrades")
  const unindexed = registry.all().filter((c) => !c.system && reader.get('SELECT 1 FROM sqlite_master WHERE "type" = \'index\' AND "name" = ?', [createdIndexName(c)]) === undefined);
  for (const c of unindexed) logger.info(`indexing "created" of collection "${c.name}"`);
  if (unindexed.length) await writer.write(unindexed.map((c) => ({ sql: createdIndexSql(c), params: [] })));
  const store = new Store(registry, reader, writer, sql);
  const close = async () => {
    await writer.close();
    await reader.close();
  };
  const files = await openFiles(config, logger, store, close);
  return { backend: 'sqlite', dbPath, secret, store, files, runOnce: async (_name, fn) => (await fn(), true), claimTick: async () => true, relay: null, close };
}

/** Warns about parts of the data directory other users may read or write. */
function warnLooseModes(config: ServeConfig, logger: Logger): void {
  const loose = looseModes(config.dataDir);
  if (loose.length) logger.warn(`data directory readable or writable by other users (expected 0700 for folders, 0600 for files): ${loose.join(', ')}`);
}

/**
 * What both backends do once the store is open: the full-text check (fts5-off refuses a schema
 * with searchable fields; otherwise missing indexes are (re)built) and the stored files' blob
 * store. Calls `close` before rethrowing a failure.
 */
async function openFiles(config: ServeConfig, logger: Logger, store: Store, close: () => Promise<void>): Promise<RecordFiles> {
  try {
    for (const name of await prepareFullText(store, !config.features.has('fts5-off'))) logger.info(`built the full-text index of collection "${name}"`);
    const blobs: BlobStore = config.storage ? await openS3BlobStore(config.storage) : new LocalBlobStore(storageRoot(config.dataDir));
    return new RecordFiles(new FileStorage(blobs), store);
  } catch (err) {
    await close();
    throw err;
  }
}

/** The server-SQL backend (src/store/pg/open.ts) with the data directory's per-instance parts. */
async function openPostgresData(config: ServeConfig, logger: Logger): Promise<OpenedData> {
  const { openPostgres } = await import('./pg/open.js');
  const pg = await openPostgres(config.databaseUrl!, logger, config.encryptionKey);
  installFieldCipher(config.encryptionKey ?? pg.encryptionKey!, (m) => logger.warn(m));
  const { store } = pg;
  // the data directory still holds this instance's files (local storage, the lock)
  warnLooseModes(config, logger);
  const files = await openFiles(config, logger, store, pg.close);
  if (!config.storage) logger.warn('PostgreSQL with local file storage: files are stored in this instance\'s data directory only; set SERVICE_STORAGE=s3://… for several instances');
  return {
    backend: 'postgres',
    dbPath: '',
    secret: pg.secret,
    store,
    files,
    runOnce: async (name, fn) => (await pg.locks.runOnce(name, () => fn())).ran,
    claimTick: pg.claimTick,
    relay: pg.cluster,
    close: pg.close,
  };
}
