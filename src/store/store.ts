/**
 * The app's data context shared by the domain services: the schema registry, the reader, the
 * writer, the storage operations (`sql`), the compiled rules and the per-collection record codecs.
 */
import type { RecordSql } from './record-sql.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { BackendKind, SqlReader, SqlWriter } from './backend.js';
import type { ListSql } from './sql/list-sql.js';
import type { KeysetSql } from './sql/keyset.js';
import type { Collection } from '../model/schema.js';
import { RuleBook } from '../rules/access.js';
import { buildCodec, type RecordCodec } from '../records/record-codec.js';
import { NotFound } from './errors/store-errors.js';
import { Caches } from '../cache/caches.js';
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

export class Store {
  readonly rules: RuleBook;
  /** every data cache, kept coherent by the change feed (src/cache/caches.ts) */
  readonly caches: Caches;
  private codecs = new Map<string, { version: number; codec: RecordCodec }>();

  /** `sql`: the storage operations of the backend `reader` and `writer` belong to (src/store/open.ts). */
  constructor(readonly registry: CollectionRegistry, readonly reader: SqlReader, readonly writer: SqlWriter, readonly sql: StoreSql) {
    this.rules = new RuleBook(registry, sql.kind);
    this.caches = new Caches(writer.changes);
  }

  /** The collection by id or name. @throws NotFound (the API answers 404) when there is none */
  collection(idOrName: string): Collection {
    const c = this.registry.find(idOrName);
    if (!c) throw new NotFound('collection', 'Missing collection context.');
    return c;
  }

  codec(c: Collection): RecordCodec {
    const version = this.registry.version(c.id);
    const hit = this.codecs.get(c.id);
    if (hit && hit.version === version) return hit.codec;
    const codec = buildCodec(c, this.sql.json);
    this.codecs.set(c.id, { version, codec });
    return codec;
  }

  /** After a schema change: drop cached statements and plans. */
  schemaChanged(): void {
    this.reader.invalidate();
  }
}
