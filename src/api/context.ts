/**
 * What route bindings need: the domain services, the logger and the serve configuration. Built
 * whole by src/boot/services.ts (`buildServices`); every member is present, an absent capability
 * being an explicit value (an empty AppRuntime, a null mail group or outbox).
 */
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { Collection } from '../model/schema.js';
import type { RuleBook } from '../rules/access.js';
import type { RecordCodec } from '../records/record-codec.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { SqlReader, SqlWriter } from '../store/backend.js';
import type { StoreSql } from '../store/store.js';
import type { RecordReader } from '../records/records-read.js';
import type { RecordWriter } from '../records/records-write.js';
import type { AuthService } from '../auth/auth-service.js';
import type { CollectionsService } from '../collections/collections-service.js';
import type { Logger } from '../log/logger.js';
import type { ServeConfig } from '../config/config.js';
import type { AppRuntime } from '../app/runtime.js';
import type { FeatureService } from '../settings/features.js';

import type { MailService, TestOutbox } from '../mail/mail-service.js';
import type { DurableMailQueue } from '../mail/mail-queue.js';
import type { SenderIdentities } from '../mail/senders.js';
import type { MailGroup } from '../app/definition.js';

/** A cache's look-ups since start that found a valid entry (`hits`) and that did not. */
export interface CacheCounts {
  readonly hits: number;
  readonly misses: number;
}

/**
 * What the routes read and write past the services: schema look-ups and the compiled rules, get
 * by id's record cache and one-row read (src/api/records.ts, the hot path), the writer's counters
 * for the metrics, and the few statements a route runs itself (a batch's upsert probe, an upload's
 * owner check, the provider links, the install check, mail suppressions). Everything else is a
 * service's. The data context (src/context/store.ts) is one; src/boot/services.ts hands it over.
 */
export interface RouteStore {
  readonly registry: CollectionRegistry;
  readonly rules: Pick<RuleBook, 'check' | 'isPublic' | 'ownerColumn'>;
  /** get by id's record cache; the others' hit and miss counts for the metrics */
  readonly caches: { readonly records: RecordCache } & { readonly [K in 'listRows' | 'authRecords' | 'pages' | 'counts' | 'walks']: CacheCounts };
  readonly reader: Pick<SqlReader, 'get' | 'sync' | 'poolStats'>;
  readonly writer: Pick<SqlWriter, 'write' | 'commits' | 'inFlight' | 'groupCommits' | 'commitLatency'>;
  readonly sql: {
    readonly kind: StoreSql['kind'];
    readonly records: Pick<StoreSql['records'], 'rowById' | 'selectOne'>;
    readonly list: Pick<StoreSql['list'], 'ID_EQUALS'>;
    readonly externalAuths: Pick<StoreSql['externalAuths'], 'list'>;
    readonly auth: Pick<StoreSql['auth'], 'superuserCount'>;
    readonly mail: Pick<StoreSql['mail'], 'suppressStep'>;
  };
  /**
   * The collection by id or name.
   * @throws NotFound (src/store/errors/store-errors.ts) when there is none; the pipeline answers 404
   */
  collection(idOrName: string): Collection;
  /** The record codec of `c`'s current schema version. */
  codec(c: Collection): RecordCodec;
}

export interface ApiContext {
  /** the data the routes reach directly (RouteStore) */
  store: RouteStore;
  reads: RecordReader;
  writes: RecordWriter;
  auth: AuthService;
  collections: CollectionsService;
  logger: Logger;
  config: ServeConfig;
  /** bytes; published as limits.maxUploadSize and enforced on request bodies */
  maxBodyBytes: number;
  /** an embedding app's hooks, routes and jobs (`AppRuntime.empty` for the standalone server) */
  app: AppRuntime;
  /** settings, the declared flags and experiments (none declared by the standalone server) */
  features: FeatureService;
  /** mail from application code (`app.mail`) */
  mail: MailService;
  /** the durable mail queue every queued message (auth mail included) goes through */
  mailQueue: DurableMailQueue;
  /** per-account sender identities (the sender routes, require_verified_sender) */
  senders: SenderIdentities;
  /** the test capture outbox (dev-tools builds only); null otherwise */
  outbox: TestOutbox | null;
  /** the app's mail group; null: no mail routes (docs/framework.md, "Mail") */
  mailGroup: MailGroup | null;
}
