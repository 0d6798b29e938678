/**
 * The services over an opened data directory, built in one place for `svc serve` and for the
 * offline commands that write records (`svc import`), so both run the same record writer with
 * the same lifecycle handlers (ARCHITECTURE.md, "Folders": `src/boot/`). The HTTP side (routes,
 * the realtime hub, the listener) stays in src/server.ts.
 *
 * Stages: `buildServices` (reads, writes, auth, collections, mail, settings), then, with an app
 * definition, `attachApp` (its hooks registered with the writer's lifecycle, its sign-in methods,
 * its tenancy resolver).
 */
import type { ServeConfig } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import type { ApiContext } from '../api/context.js';
import type { OpenedData } from '../store/open.js';
import type { AppDefinition } from '../app/definition.js';
import { AppRuntime, type AppHandle } from '../app/runtime.js';
import { RecordReader, listConfigFrom } from '../records/records-read.js';
import { RecordWriter } from '../records/records-write.js';
import { RecordLifecycle } from '../records/lifecycle.js';
import { AuthService } from '../auth/auth-service.js';
import { CollectionsService } from '../collections/collections-service.js';
import { DEFAULT_SLOW_QUERY_MS, SlowQueryLog } from '../ops/slow-queries.js';
import { FeatureService } from '../settings/features.js';
import { MailService, PluginTransport, TestOutbox, addressOf } from '../mail/mail-service.js';
import type { MailTransport } from '../mail/transports.js';
import { DurableMailQueue } from '../mail/mail-queue.js';
import { SenderIdentities } from '../mail/senders.js';
import { createMailTransport } from '../mail/transports.js';

/** Request body limit (bytes); published as limits.maxUploadSize. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** What buildServices answers: the route context and the parts whose lifetime the caller manages. */
export interface Services {
  ctx: ApiContext;
  /** the durable mail queue (its delivery starts with `start()`, a server's job) */
  mailQueue: DurableMailQueue;
  /** the backend the queue delivers to (closed last) */
  mailBackend: MailTransport;
  /** the slow-query log, when SERVICE_SLOW_QUERY_MS is not 0 */
  slowQueries: SlowQueryLog | null;
  /** settings, flags and experiments (also `ctx.features`) */
  features: FeatureService;
}

/**
 * Builds the services over `data` (from openDataDir). `app` supplies the mail backend
 * (`mailer`) and group, the declared flags and experiments; its hooks are attached later
 * (`attachApp`), once its declared collections and migrations have run. Starts nothing: no
 * timer, no delivery, no listener.
 */
export function buildServices(config: ServeConfig, logger: Logger, data: OpenedData, app?: AppDefinition<AppHandle>): Services {
  const { backend, dbPath, secret, store, files } = data;
  const slowMs = config.slowQueryMs ?? DEFAULT_SLOW_QUERY_MS;
  const slowQueries = slowMs > 0 ? new SlowQueryLog({ dataDir: config.dataDir, dbPath, explain: backend === 'sqlite' ? undefined : (q, params) => store.reader.plan(q, params), thresholdMs: slowMs, onError: (err) => logger.warn(`cannot write the slow-query log: ${err instanceof Error ? err.message : String(err)}`) }) : null;
  // the mail backend (the app's mailer, else SMTP / the mail command / the log) behind the durable queue
  const realBackend = app?.mailer ? new PluginTransport(app.mailer) : createMailTransport(config, logger);
  // a development build (dev-tools) wraps it in the test capture outbox (app.mail.outbox)
  const outbox = config.features.has('dev-tools') ? new TestOutbox(realBackend) : null;
  const mailBackend = outbox ?? realBackend;
  const mailQueue = new DurableMailQueue(store, mailBackend, logger);
  const writes = new RecordWriter(store, files, new RecordLifecycle());
  const ctx: ApiContext = {
    store,
    reads: new RecordReader(store, { ...listConfigFrom(config.pagination, { fts: !config.features.has('fts5-off'), vector: config.features.has('vector') }, secret, store), slowQueries }),
    writes,
    auth: new AuthService(store, secret, config, logger, mailQueue.transport('auth')),
    collections: new CollectionsService(store, files),
    logger,
    config,
    maxBodyBytes: MAX_BODY_BYTES,
  };
  const senders = new SenderIdentities(store, mailQueue, secret);
  const suppressed = app?.mail?.check_suppression ? (email: string, account: string) => store.sql.mail.suppressed(email, account) : undefined;
  ctx.mail = new MailService(mailBackend, mailQueue, !!(app?.mail || app?.mailer), {
    suppressed,
    verifiedSender: app?.mail?.require_verified_sender ? (account, from) => senders.verified(account, from) : undefined,
  });
  ctx.mailQueue = mailQueue;
  if (outbox) ctx.outbox = outbox;
  ctx.senders = senders;
  // check_suppression: queued messages to an address suppressed meanwhile are not sent either
  if (suppressed) mailQueue.isSuppressed = (msg, account) => suppressed(addressOf(msg.to), account);
  if (app?.mail) ctx.mailGroup = app.mail;
  // a first OAuth2 sign-in creates its record through the writer, so its record events fire
  ctx.auth.oauth2.signup = (c, body, verified, extra) => writes.createExternal(c, body, verified, extra);
  const features = new FeatureService(store, app?.flags ?? [], app?.experiments ?? []);
  ctx.features = features;
  return { ctx, mailQueue, mailBackend, slowQueries, features };
}

/** Attaches an app definition to built services: its record hooks, auth hooks, sign-in methods and tenancy. */
export function attachApp(ctx: ApiContext, app: AppDefinition<AppHandle>, logger: Logger): AppRuntime {
  ctx.app = new AppRuntime(app, ctx, logger);
  return ctx.app;
}
