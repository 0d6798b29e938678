/**
 * Opening a data directory's database for a server or an offline command (`svc schema apply`,
 * `svc import`): the directory and database file (modes 0700/0600), the token secret, the
 * field-encryption key, then the database through src/store/open.ts (the writer thread with the
 * system tables, the reader, the collection registry), the Store context over it, the full-text
 * indexes and the stored files.
 * The composition of storage with the features it serves (ARCHITECTURE.md, "Folders": storage
 * imports no feature).
 */
import { availableParallelism } from 'node:os';
import { createDatabaseFile, databasePath, ensureDataDir, looseModes } from '../files/data-paths.js';
import type { ServeConfig } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import { openPostgresStore, openSqliteStore, type OpenedStore } from '../store/open.js';
import { CollectionRegistry } from '../collections/collection-registry.js';
import { Store } from '../context/store.js';
import { prepareFullText } from '../records/search.js';
import { loadTokenSecret } from '../auth/auth-service.js';
import { RateLimiter } from '../auth/rate-limit.js';
import { installFieldCipher, loadEncryptionKey } from '../records/encryption.js';
import { FileStorage, storageRoot } from '../files/files.js';
import { LocalBlobStore, type BlobStore } from '../files/blob-store.js';
import { openS3BlobStore } from '../files/s3-blob-store.js';
import { RecordFiles } from '../files/record-files.js';
import { fileRepository } from './repositories.js';

/** An open data directory: the open database (OpenedStore) with the directory's parts. */
export interface OpenedData extends OpenedStore {
  /** the data context over the open database's parts (src/context/store.ts) */
  store: Store;
  /** the SQLite database file; '' on PostgreSQL */
  dbPath: string;
  /** the persisted token secret */
  secret: Buffer;
  files: RecordFiles;
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
  // the loose-modes check runs once the writer has made the database's companion files
  const registry = new CollectionRegistry();
  const db = await openSqliteStore(dbPath, logger, readers, registry, () => warnLooseModes(config, logger));
  const store = new Store(registry, db.store.reader, db.store.writer, db.store.sql);
  const files = await openFiles(config, logger, store, db.close);
  return { ...db, store, dbPath, secret, files };
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
    return new RecordFiles(new FileStorage(blobs), fileRepository(store));
  } catch (err) {
    await close();
    throw err;
  }
}

/** The server-SQL backend with the data directory's per-instance parts. */
async function openPostgresData(config: ServeConfig, logger: Logger): Promise<OpenedData> {
  const registry = new CollectionRegistry();
  const pg = await openPostgresStore(config.databaseUrl!, logger, config.encryptionKey, registry, new RateLimiter());
  const store = new Store(registry, pg.store.reader, pg.store.writer, pg.store.sql);
  installFieldCipher(config.encryptionKey ?? pg.encryptionKey!, (m) => logger.warn(m));
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
    runOnce: pg.runOnce,
    claimTick: pg.claimTick,
    relay: pg.relay,
    close: pg.close,
  };
}
