/**
 * What route bindings need: the domain services, the logger and the serve configuration. Built
 * whole by src/boot/services.ts (`buildServices`); every member is present, an absent capability
 * being an explicit value (an empty AppRuntime, a null mail group or outbox).
 */
import type { Store } from '../context/store.js';
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

export interface ApiContext {
  store: Store;
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
