/**
 * The narrow repositories the feature services take instead of the whole `Store` (ARCHITECTURE.md,
 * "Folders": `src/boot/`): each function hands out only the statements and capabilities one
 * feature uses, so its dependencies show in its constructor's type and a test can give it a small
 * fake. Each is built over the Store of the open database (src/context/store.ts); the types are
 * declared beside the features that take them.
 */
import type { Store } from '../context/store.js';
import type { AppRepository } from '../app/runtime.js';
import type { CollectionsRepository } from '../collections/collections-service.js';
import type { FileRepository } from '../files/record-files.js';
import type { MailRepository } from '../mail/mail-queue.js';
import type { ImportRepository } from '../ops/import.js';
import type { RealtimeRepository } from '../realtime/hub.js';
import type { SettingsRepository } from '../settings/features.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import type { UploadRepository } from '../uploads/durable.js';
import { migrateEncryption } from '../records/encryption-migration.js';

/** The writer's `write` of `store`, bound to it (each repository commits through the one writer). */
function writeThrough(store: Store): (steps: WriteStep[]) => Promise<StepResult[]> {
  return (steps) => store.writer.write(steps);
}

/** The mail queue's and the sender identities' repository: `store.sql.mail` and the writer. */
export function mailRepository(store: Store): MailRepository {
  return { rows: store.sql.mail, write: writeThrough(store) };
}

/** FeatureService's repository: `store.sql.settings`, the writer and its change feed, the reader's snapshot end. */
export function settingsRepository(store: Store): SettingsRepository {
  return { rows: store.sql.settings, write: writeThrough(store), changes: store.writer.changes, endSnapshot: () => store.reader.endSnapshot() };
}

/** The upload persistence mode's repository: `store.sql.uploads`, the writer, the reader's point read and snapshot end. */
export function uploadRepository(store: Store): UploadRepository {
  return { rows: store.sql.uploads, write: writeThrough(store), get: (sql, params) => store.reader.get(sql, params), endSnapshot: () => store.reader.endSnapshot() };
}

/** RecordFiles' repository: `store.sql.files` and the collection registry. */
export function fileRepository(store: Store): FileRepository {
  return { rows: store.sql.files, registry: store.registry };
}

/** The bulk import's repository (`svc import`): the registry, `store.sql.records` and `.externalAuths`, the reader's reads, the writer. */
export function importRepository(store: Store): ImportRepository {
  return {
    registry: store.registry,
    records: store.sql.records,
    externalAuths: store.sql.externalAuths,
    get: (sql, params) => store.reader.get(sql, params),
    all: (sql, params) => store.reader.all(sql, params),
    write: writeThrough(store),
  };
}

/** The realtime hub's repository: the registry, the rule book, the record codecs, the reader, `store.sql.records`, `.list` and `.kind`, the writer (its capture of deleted rows) and its change feed. */
export function realtimeRepository(store: Store): RealtimeRepository {
  return {
    registry: store.registry,
    rules: store.rules,
    codec: (c) => store.codec(c),
    reader: store.reader,
    records: store.sql.records,
    list: store.sql.list,
    kind: store.sql.kind,
    writer: store.writer,
    changes: store.writer.changes,
  };
}

/** CollectionsService's repository: the registry, `store.sql.schema` and `.dialect`, the writer, the schema-change reset, and migrateEncryption bound to `store`. */
export function collectionsRepository(store: Store): CollectionsRepository {
  return {
    registry: store.registry,
    collection: (idOrName) => store.collection(idOrName),
    schema: store.sql.schema,
    dialect: store.sql.dialect,
    write: writeThrough(store),
    schemaChanged: () => store.schemaChanged(),
    migrateEncryption: (prev, next) => migrateEncryption(store, prev, next),
  };
}

/** AppRuntime's repository: the registry, the collection look-up, the record codecs, the writer, `store.sql.auth` (whole auth records) and `.sharedLimiter`. */
export function appRepository(store: Store): AppRepository {
  return {
    registry: store.registry,
    collection: (idOrName) => store.collection(idOrName),
    codec: (c) => store.codec(c),
    writer: store.writer,
    auth: store.sql.auth,
    sharedLimiter: store.sql.sharedLimiter,
  };
}
