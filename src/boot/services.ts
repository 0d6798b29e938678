/**
 * The composition root of the services over an opened data directory, shared by `svc serve`
 * (src/server.ts) and `svc import` (cli/commands/import.ts), so both run the same record writer
 * with the same lifecycle handlers (ARCHITECTURE.md, "Folders": `src/boot/`). The HTTP side
 * (realtime transports, routes, the listener) stays in src/server.ts.
 *
 * Stages, each built from the previous one's result and nothing assigned into an object after
 * its construction: the data (`openDataDir`, src/store/open.ts), then `buildServices`: mail
 * (backend, durable queue, senders, `app.mail`), records (reader, writer), settings, the app
 * runtime (its record hooks registered with the writer's lifecycle; empty without a definition),
 * then auth, given the app's hooks, tenancy and sign-in methods and the writer's OAuth2 signup,
 * and collections. Starts nothing: no timer, no delivery, no listener.
 */
import type { ServeConfig } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { ApiContext } from '../api/context.js';
import type { OpenedData } from './open-data.js';
import type { Store } from '../context/store.js';
import type { AppDefinition, MailGroup } from '../app/definition.js';
import { AppRuntime, type AppHandle } from '../app/runtime.js';
import { RecordReader, listConfigFrom } from '../records/records-read.js';
import { RecordWriter, type RelationsKnown } from '../records/records-write.js';
import { RecordLifecycle } from '../records/lifecycle.js';
import { AuthService } from '../auth/auth-service.js';
import { authRepositories } from '../context/auth-repositories.js';
import { CollectionsService } from '../collections/collections-service.js';
import { DEFAULT_SLOW_QUERY_MS, SlowQueryLog } from '../ops/slow-queries.js';
import { FeatureService } from '../settings/features.js';
import { MailService, PluginTransport, TestOutbox, addressOf } from '../mail/mail-service.js';
import type { MailTransport } from '../mail/transports.js';
import { DurableMailQueue } from '../mail/mail-queue.js';
import { SenderIdentities } from '../mail/senders.js';
import { createMailTransport } from '../mail/transports.js';
import { recordReadRepository, recordWriteRepository } from './record-repositories.js';
import { appRepository, collectionsRepository, mailRepository, settingsRepository } from './repositories.js';

/** Request body limit (bytes); published as limits.maxUploadSize. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** What buildServices answers: the route context and the parts whose lifetime the caller manages. */
export interface Services {
  ctx: ApiContext;
  /** the durable mail queue (its delivery starts with `start()`, a server's job; also `ctx.mailQueue`) */
  mailQueue: DurableMailQueue;
  /**
   * Closes what the services hold, in order: the auth service's mail tasks (they still enqueue
   * through the writer), the mail queue (deliveries under way finish; queued messages wait for
   * the next start), its backend, the slow-query log. Call before closing the data.
   */
  close(): Promise<void>;
}

/** The mail stage's result: the backend and what is built on it. */
interface MailParts {
  /** what the queue delivers to: the app's mailer or the configured transport, inside the test outbox under dev-tools */
  backend: MailTransport;
  outbox: TestOutbox | null;
  queue: DurableMailQueue;
  senders: SenderIdentities;
  /** `app.mail` */
  service: MailService;
  group: MailGroup | null;
}

/**
 * Builds the services over `data` (from openDataDir) in the stages of the module comment. `app`
 * (null for the standalone server) supplies the mail backend (`mailer`) and group, the declared
 * flags and experiments, its hooks, tenancy and sign-in methods. `relationsKnown`: the record
 * writer's (RelationsKnown: `svc import`, which holds the data directory alone); null for a server.
 * Resolves once the settings mirror has been read.
 * @throws the reader's error when the settings cannot be read
 */
export async function buildServices(config: ServeConfig, logger: Logger, data: OpenedData, app: AppDefinition<AppHandle> | null, relationsKnown: RelationsKnown | null): Promise<Services> {
  const { backend, dbPath, secret, store, files } = data;
  const slowMs = config.slowQueryMs ?? DEFAULT_SLOW_QUERY_MS;
  const slowQueries = slowMs > 0 ? new SlowQueryLog({ dataDir: config.dataDir, dbPath, explain: backend === 'sqlite' ? undefined : (q, params) => store.reader.plan(q, params), thresholdMs: slowMs, onError: (err) => logger.warn(`cannot write the slow-query log: ${err instanceof Error ? err.message : String(err)}`) }) : null;
  const mail = buildMail(config, logger, store, secret, app);
  const writes = new RecordWriter(recordWriteRepository(store), files, new RecordLifecycle(), relationsKnown);
  const reads = new RecordReader(recordReadRepository(store), { ...listConfigFrom(config.pagination, { fts: !config.features.has('fts5-off'), vector: config.features.has('vector') }, secret, store), slowQueries });
  // the settings mirror is read before anything can ask it (a promise read: PostgreSQL's only kind)
  const features = await FeatureService.open(settingsRepository(store), app?.flags ?? [], app?.experiments ?? []);
  const services = { reads, writes, features, mail: mail.service, outbox: mail.outbox };
  const appServices = { ...services, repo: appRepository(store) };
  const runtime = app ? new AppRuntime(app, appServices, logger) : AppRuntime.empty(appServices, logger);
  const auth = new AuthService(authRepositories(store), secret, config, logger, mail.queue.transport('auth'), {
    // a first OAuth2 sign-in creates its record through the writer, so its record events fire
    signup: (c, body, verified, extra) => writes.createExternal(c, body, verified, extra),
    ...runtime.authExtensions(),
  });
  const ctx: ApiContext = {
    ...services,
    store,
    auth,
    collections: new CollectionsService(collectionsRepository(store), files),
    logger,
    config,
    maxBodyBytes: MAX_BODY_BYTES,
    app: runtime,
    mailQueue: mail.queue,
    senders: mail.senders,
    mailGroup: mail.group,
  };
  const close = async () => {
    await auth.close();
    await mail.queue.close();
    mail.backend.close();
    await slowQueries?.close();
  };
  return { ctx, mailQueue: mail.queue, close };
}

/**
 * The mail stage: the backend (the app's mailer, else SMTP / the mail command / the log) behind
 * the durable queue, the sender identities and `app.mail` with the app group's policies.
 */
function buildMail(config: ServeConfig, logger: Logger, store: Store, secret: Buffer, app: AppDefinition<AppHandle> | null): MailParts {
  const realBackend = app?.mailer ? new PluginTransport(app.mailer) : createMailTransport(config, logger);
  // a development build (dev-tools) wraps it in the test capture outbox (app.mail.outbox)
  const outbox = config.features.has('dev-tools') ? new TestOutbox(realBackend) : null;
  const backend = outbox ?? realBackend;
  const repo = mailRepository(store);
  const suppressed = app?.mail?.check_suppression ? (email: string, account: string) => repo.rows.suppressed(email, account) : undefined;
  // check_suppression: queued messages to an address suppressed meanwhile are not sent either
  const queue = new DurableMailQueue(repo, backend, logger, suppressed ? (msg, account) => suppressed(addressOf(msg.to), account) : null);
  const senders = new SenderIdentities(repo, queue, secret);
  const service = new MailService(backend, queue, !!(app?.mail || app?.mailer), {
    suppressed,
    verifiedSender: app?.mail?.require_verified_sender ? (account, from) => senders.verified(account, from) : undefined,
  });
  return { backend, outbox, queue, senders, service, group: app?.mail ?? null };
}
