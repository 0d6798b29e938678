/**
 * The storage operations the domain uses instead of SQL (`StoreSql`, one implementation per
 * backend), the parts an open database hands to the composition root (`StoreParts`), and what
 * storage needs of the collection registry (`SchemaRegistry`). The data context the domain
 * services share, `Store`, is built over these in src/context/store.ts (ARCHITECTURE.md,
 * "Folders").
 */
import type { RecordSql } from './record-sql.js';
import type { BackendKind, SqlReader, SqlWriter } from './backend.js';
import type { ListSql } from './sql/list-sql.js';
import type { KeysetSql } from './sql/keyset.js';
import type { Collection } from '../model/schema.js';
import type { SettingsRowStore } from './settings-store.js';
import type { MailRowStore } from './mail-store.js';
import type { UploadRowStore } from './upload-store.js';
import type { AuthRecordStore, AuthTokenRowStore, ExternalAuthRowStore, MfaRowStore, PasskeyRowStore, SessionRowStore } from './auth-store.js';
import type { FileStore } from './file-store.js';
import type { SchemaStore } from './schema-store.js';
import type { Dialect } from './dialect.js';
import type { FullTextSql } from './full-text.js';

/**
 * The statements of record lists (records-list.ts) and the cursor sort keys and keyset terms:
 * one builder each in src/store/sql/ (list-sql.ts, keyset.ts), given each backend's list dialect.
 */
export type { ListSql, KeysetSql };
/** A record's codec columns and its JSON rendering in SQL (record-json.ts of each backend). */
export interface RecordJsonSql {
  recordColumns(c: Collection): string[];
  buildJsonSql(c: Collection): string | null;
}

/**
 * The named storage operations the domain uses instead of SQL (ARCHITECTURE.md, "Folders"), by
 * area. The SQLite implementations come from `sqliteStores` (src/store/sqlite/sql-stores.ts).
 */
export interface StoreSql {
  /** which backend these statements are for (the rule compiler's dialect) */
  kind: BackendKind;
  /** auth records: hidden columns, identity look-ups, auth-only updates, side-table deletes */
  auth: AuthRecordStore;
  /** `_sessions` rows of the table session store */
  sessions: SessionRowStore;
  /** `_authTokens` rows (verification, reset, magic-link and one-time-code tokens, OAuth2 state, WebAuthn ceremonies) */
  authTokens: AuthTokenRowStore;
  /** `_externalAuths` rows (OAuth2 provider links) */
  externalAuths: ExternalAuthRowStore;
  /** `_passkeys` rows (WebAuthn credentials) */
  passkeys: PasskeyRowStore;
  /** second factors: TOTP, recovery codes, attempts, the account limit */
  mfa: MfaRowStore;
  /** settings and sticky experiment assignments */
  settings: SettingsRowStore;
  /** the durable mail queue, suppressions and sender identities */
  mail: MailRowStore;
  /** the resumable upload store's persistence mode */
  uploads: UploadRowStore;
  /** stored file names of file fields */
  files: FileStore;
  /** collection definitions and their DDL jobs */
  schema: SchemaStore;
  /** what differs between databases (write failures) */
  dialect: Dialect;
  /** the record services' statements */
  records: RecordSql;
  /** record list statements */
  list: ListSql;
  /** cursor sort keys and keyset terms */
  keyset: KeysetSql;
  /** record rendering in SQL */
  json: RecordJsonSql;
  /** the full-text indexes' start-up upkeep (src/store/full-text.ts) */
  fullText: FullTextSql;
  /**
   * Rate-limit counters shared by every instance (PostgreSQL: `_rateLimits`); absent on SQLite,
   * where the one process counts in memory (src/auth/rate-limit.ts, RateLimiter).
   */
  sharedLimiter?: RateCounter;
}

/**
 * Fixed-window rate counters (src/auth/rate-limit.ts, RateLimiter, counts in memory; the
 * PostgreSQL store's PgRateLimiter in `_rateLimits`). `hit` counts one request under `key` and
 * answers false when it exceeds `budget`: at most `max` requests per `windowS` seconds.
 */
export interface RateCounter {
  /** Counts one request under `key`; false (or a promise of false) past `budget` in the current window. */
  hit(key: string, budget: { max: number; windowS: number }): boolean | Promise<boolean>;
}

/**
 * An open database's parts (src/store/open.ts, src/store/pg/open.ts): the backend's reader, its
 * writer and its statement stores, over which src/boot/open-data.ts builds the Store context.
 */
export interface StoreParts<R extends SqlReader = SqlReader, W extends SqlWriter = SqlWriter> {
  reader: R;
  writer: W;
  sql: StoreSql;
}

/**
 * The collection registry as storage uses it (src/collections/collection-registry.ts,
 * CollectionRegistry): the open loads the stored schema into it and, on PostgreSQL, loads it
 * again after every schema change of any instance.
 */
export interface SchemaRegistry {
  /** Replaces the registry's collections with `collections` (SchemaStore.loadAll). */
  load(collections: Collection[]): void;
  /** Every collection of the registry. */
  all(): Collection[];
}
