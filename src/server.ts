/**
 * `svc serve`: opens the data directory's database (writer thread + main-thread reader + reader
 * pool), loads the schema, binds the routes and listens. `stop()` stops accepting, finishes
 * in-flight requests, commits every queued write and closes the database, so no acknowledged
 * write is lost.
 */
import type { ServeConfig } from './config/config.js';
import type { Logger } from './log/logger.js';
import type { Store } from './context/store.js';
import { RULE_NAMES } from './model/schema.js';
import { startTtlCollector } from './records/ttl-gc.js';
import { HttpServer, errorReply, type HttpServerOptions } from './http/server.js';
import { httpEngine, productVersion } from './meta/version-info.js';
import type { Route } from './http/types.js';
import { ApiError } from './errors/api-error.js';
import type { ApiContext } from './api/context.js';
import { probeRoutes } from './api/probes.js';
import { openApiRoutes } from './api/openapi.js';
import { ServiceMetrics, metricsRoutes } from './api/metrics.js';
import { adminRoutes } from './api/admin.js';
import { INSTALL_TOKEN_TTL_MS, installRoutes, newInstallState, type InstallState } from './api/install.js';
import { staticRoutes } from './api/static.js';
import { collectionRoutes } from './api/collections.js';
import { recordRoutes } from './api/records.js';
import { batchRoutes } from './api/batch.js';
import { authRoutes } from './api/auth.js';
import { authSdkRoutes } from './api/auth-sdk.js';
import { fileRoutes } from './api/files.js';
import { FileTokens } from './files/file-tokens.js';
import { Thumbnails } from './files/thumbs.js';
import { authSessionRoutes } from './api/auth-sessions.js';
import { buildRealtime } from './boot/realtime.js';
import { customMethodOptions, type AppHandle } from './app/runtime.js';
import { MAX_BODY_BYTES, buildServices } from './boot/services.js';
import type { AppDefinition } from './app/definition.js';
import { signInMethods } from './auth/method-registry.js';
import { settingsRoutes } from './settings/routes.js';
import { accountRoutes } from './api/account.js';
import { mailRoutes } from './api/mail.js';
import { applyDeclaredCollections } from './app/declared-collections.js';
import { openDataDir } from './boot/open-data.js';
import { uploadRepository } from './boot/repositories.js';
import { appDatabaseUrl, featureNames } from './app/definition.js';
import { loadMigrations } from './app/migrations.js';
import { applyMigrations } from './store/sqlite/migrations-sql.js';
import { uploadRoutes } from './api/uploads.js';
import { UploadStore } from './uploads/upload-store.js';
import { resolveBudgets } from './uploads/budgets.js';
import { openDurableUploads } from './uploads/durable.js';
import { backupRoutes } from './api/backups.js';
import { serverSettingsRoutes } from './api/server-settings.js';
import { BackupFolder, applyPendingRestore, checkCronPattern } from './ops/backup-folder.js';
import { RequestLogs, logsOptions, teeLogger } from './logs/request-logs.js';
import { logRoutes } from './api/logs.js';
import { resolvedCaller } from './auth/client.js';
import type { Req } from './http/types.js';

export { MAX_BODY_BYTES };

export interface RunningServer {
  /** `host:port` actually bound */
  address: string;
  /** the running services (store, change feed, record and auth services), for embedding programs and in-process tests */
  context: ApiContext;
  stop(): Promise<void>;
}


/**
 * Starts the server on `config`; `app` (checked by defineApp) adds an embedding program's hooks,
 * routes, jobs and sign-in methods, and its `features` and `pagination` override the config's.
 */
export async function startServer(config: ServeConfig, logger: Logger, app?: AppDefinition<AppHandle>): Promise<RunningServer> {
  if (app) config = withAppOptions(config, app);
  const engine = httpEngine();
  // a restore asked for over HTTP (POST /api/backups/{key}/restore) is applied before the
  // database opens, under the lock `svc serve` holds (docs/operations.md, "Backups over HTTP")
  if (!config.databaseUrl) await applyPendingRestore(config.dataDir, logger);
  const backupSchedule = backupScheduleFromEnv(process.env);
  const data = await openDataDir(config, logger);
  const { backend, dbPath, secret, store, files, runOnce, claimTick, relay } = data;
  // the request logs (docs/operations.md, "Request logs"): their own file in the data directory,
  // on either backend; the server's warnings and errors go in too (the tee)
  let logsOpts;
  try {
    logsOpts = logsOptions(process.env); // a bad setting stops the start, as every setting does
  } catch (err) {
    await data.close();
    throw err;
  }
  let logs: RequestLogs | null = null;
  try {
    logs = await RequestLogs.open(config.dataDir, logsOpts, logger, requestAuth);
  } catch (err) {
    // the server serves without them rather than not at all
    logger.error(`request logs are off: ${(err as Error).message}`, 'logs');
  }
  if (logs) logger = teeLogger(logger, logs);
  const closeData = async () => {
    await logs?.close();
    await data.close();
  };
  const { reader, registry, sql } = store;
  // stages: the data (above), the services with the app attached, the schema the app declares,
  // realtime, then HTTP
  const services = await buildServices(config, logger, data, app ?? null, null);
  const { ctx, mailQueue } = services;
  const statePath = app?.stateRoute === false ? null : (app?.stateRoute ?? '/api/state');
  // custom sign-in slugs first: a declared collection may turn them on
  for (const m of app?.authMethods ?? []) signInMethods.add(customMethodOptions(m));
  if (app?.collections?.length) {
    try {
      await applyDeclaredCollections(app.collections as unknown as Record<string, unknown>[], ctx.collections, store.registry, logger);
    } catch (err) {
      await closeData();
      throw err;
    }
  }
  if (app?.migrations) {
    // after the declared collections (a migration may fill a field just declared), before serving
    try {
      const onApplied = (id: string, ms: number) => logger.info(`applied migration ${id} in ${Math.round(ms)} ms`, 'migrate');
      const pending = await loadMigrations(app.migrations);
      const applied = backend === 'postgres'
        ? await (await import('./store/pg/migrations-sql.js')).applyMigrationsPg(config.databaseUrl!, pending, onApplied)
        : await applyMigrations(dbPath, pending, onApplied);
      if (applied.length) {
        reader.endSnapshot();
        registry.load(await sql.schema.loadAll()); // a migration may have changed collections
        // and settings or assignments: announced on the change feed, which FeatureService follows
        await store.writer.write(sql.settings.changedAllSteps());
      }
    } catch (err) {
      await closeData();
      throw err;
    }
  }
  warnPublicRules(store, logger);
  // no superuser yet: a one-time install link, logged once listening (docs/admin.md, "First start")
  const install: InstallState = (await store.sql.auth.superuserCount()) === 0 ? newInstallState() : { token: null, expiresAt: 0 };

  // resumable uploads (docs/files.md): routes only with the feature; durable with its own
  let uploads: UploadStore | null = null;
  if (config.features.has('resumable-uploads')) {
    try {
      const budgets = resolveBudgets(process.env, app?.uploads, config.features.has('durable-resumable-uploads'));
      // the persistence mode needs the built-in local storage (docs/files.md, "Resumable uploads")
      if (budgets.durable && files.storage.kind !== 'local') throw new Error(`durable resumable uploads need the built-in local file storage, not ${files.storage.blobs.location}`);
      if (budgets.durable && backend !== 'sqlite') throw new Error('durable resumable uploads need the embedded database (file-backed SQLite), not the server SQL backend');
      const durable = budgets.durable ? await openDurableUploads(uploadRepository(store), dbPath, budgets) : null;
      uploads = new UploadStore(budgets, durable?.persistence ?? null, durable?.restored ?? [], (reason) => logger.error(`uploads stopped until restart: ${reason}`, 'uploads'));
      if (durable?.restored.length) logger.info(`restored ${durable.restored.length} upload session(s)`, 'uploads');
    } catch (err) {
      await closeData();
      throw err;
    }
  }

  const backups = backend === 'sqlite' ? new BackupFolder(config.dataDir, productVersion().svc, logger) : null;
  const fileTokens = new FileTokens(secret);
  const realtime = buildRealtime(ctx, store, relay);
  const metrics = new ServiceMetrics(ctx, realtime.hub);
  const appRoutes = ctx.app.routes(ctx.auth);
  const routes: Route[] = [
    ...probeRoutes(ctx, statePath),
    // the OpenAPI document lists the whole table, read when it is first asked for (docs/api.md, "OpenAPI document")
    ...openApiRoutes(ctx, { public: /^(1|true|yes)$/i.test(process.env.SERVICE_OPENAPI_PUBLIC ?? ''), routes: () => routes }),
    ...metricsRoutes(ctx, metrics),
    ...settingsRoutes(ctx.features, ctx.auth, statePath, app?.featureRoutes),
    ...accountRoutes(ctx),
    ...mailRoutes(ctx),
    ...serverSettingsRoutes(ctx),
    ...(uploads ? uploadRoutes(ctx, uploads, MAX_BODY_BYTES) : []),
    ...realtime.routes,
    ...collectionRoutes(ctx),
    ...recordRoutes(ctx),
    // an app's own POST /api/batch (an app route at a path the server did not own before) keeps it
    ...(appRoutes.some((r) => r.method === 'post' && r.pattern === '/api/batch') ? [] : batchRoutes(ctx)),
    ...authRoutes(ctx),
    ...authSdkRoutes(ctx),
    ...fileRoutes(ctx, { storage: files.storage, tokens: fileTokens, thumbs: new Thumbnails(files.storage) }),
    ...backupRoutes(ctx, { folder: backups, tokens: fileTokens }),
    ...authSessionRoutes(ctx),
    ...installRoutes(ctx, install, { allowRemote: /^(1|true|yes)$/i.test(process.env.SERVICE_INSTALL_ALLOW_REMOTE ?? ''), dataDir: config.dataDir, databaseUrl: config.databaseUrl }),
    ...logRoutes(ctx, logs),
    ...adminRoutes(ctx),
    ...appRoutes,
    {
      method: 'options', pattern: '/*', handler: () => ({
        status: 204, body: '', headers: [
          ['Access-Control-Allow-Methods', 'GET, HEAD, POST, PATCH, PUT, DELETE, OPTIONS'],
          ['Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept-Language, X-CSRF-Token, X-Request-Id, X-Account-Id, Upload-Offset, Upload-Length, Tus-Resumable'],
          ['Access-Control-Max-Age', '86400'],
        ],
      }),
    },
    ...(config.publicDir ? staticRoutes(config.publicDir) : []), // --public: files at /
    { method: 'any', pattern: '/*', handler: () => errorReply(ApiError.notFound()) },
  ];

  const httpOptions: HttpServerOptions = {
    host: config.host,
    port: config.port,
    maxBodyBytes: MAX_BODY_BYTES,
    jsonBodyBytes: config.limits.jsonBodyBytes,
    bodyTimeoutMs: config.limits.bodyTimeoutS * 1000,
    maxInFlight: config.limits.maxConnections,
    maxInflightBodyBytes: config.limits.maxInflightBodyBytes,
    logger,
    routes,
    websockets: [realtime.socket],
    requestObservers: logs ? [metrics.http.observe, logs.observe] : [metrics.http.observe],
    onUnexpected: (err, req) => logger.error(`unhandled error on ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`),
  };
  if (engine.engine === 'node:http') logger.warn(`HTTP engine: node:http (slower than uWebSockets.js): ${engine.reason}`);
  // the node:http adapter (and its `ws` dependency) loads only where uWS does not
  const http = engine.engine === 'uws' ? new HttpServer(httpOptions, engine.uws) : new (await import('./http/node-server.js')).NodeHttpServer(httpOptions);
  let port: number;
  try {
    port = await http.listen();
  } catch (err) {
    await closeData();
    throw err;
  }
  // on PostgreSQL each job's tick runs on the one instance that claims it first
  const stopJobs = ctx.app.startJobs(backend === 'sqlite' ? undefined : claimTick);
  mailQueue.start();
  let stopBackups = async (): Promise<void> => {};
  if (backupSchedule && !backups) logger.warn('SERVICE_BACKUP_CRON is ignored on PostgreSQL: back the database up with pg_dump', 'backups');
  if (backupSchedule && backups) {
    stopBackups = backups.schedule(backupSchedule.cron, backupSchedule.keep);
    logger.info(`scheduled backups: "${backupSchedule.cron}" (SERVICE_BACKUP_CRON), keeping the ${backupSchedule.keep} newest (SERVICE_BACKUP_KEEP)`, 'backups');
  }
  // one collector runs at a time cluster-wide (PostgreSQL: an advisory lock; others skip the round)
  const stopTtl = startTtlCollector(store, logger, Number(process.env.SERVICE_TTL_GC_INTERVAL_MS) || undefined, (c) => files.bulkDeleted(c), (fn) => runOnce('ttl-collector', fn));
  const address = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info(`serving on http://${address} (data directory ${config.dataDir})`);
  // a wildcard bind is reached on loopback from this machine
  const host = config.host === '0.0.0.0' || config.host === '' ? '127.0.0.1' : config.host === '::' ? '[::1]' : address.slice(0, address.lastIndexOf(':'));
  const adminUrl = `http://${host}:${port}/_/`;
  logger.info(`admin UI: ${adminUrl}`);
  if (install.token) {
    logger.info(`no superuser exists yet: open ${adminUrl}install#${install.token} (one use, ${INSTALL_TOKEN_TTL_MS / 60_000} minutes, from this machine) or create one with: npx svc superuser create --email=<email> --password=<password>`);
  }

  let stopping: Promise<void> | null = null;
  return {
    address,
    context: ctx,
    stop() {
      stopping ??= (async () => {
        logger.info('shutting down: finishing in-flight requests');
        stopTtl();
        realtime.close();
        await http.drain();
        await stopJobs(); // running jobs finish (they may still write)
        await stopBackups(); // a scheduled backup being made finishes
        await services.close(); // auth mail, the mail queue and its backend, the slow-query log
        metrics.close();
        await closeData();
        uploads?.close(); // after the last write: the owner file is held until the store closes
        logger.info('stopped; all acknowledged writes are committed');
      })();
      return stopping;
    },
  };
}

/** `config` with an app definition's `features` added, its `pagination` choices applied and its `database` (unless SERVICE_DATABASE_URL is set). */
function withAppOptions(config: ServeConfig, app: AppDefinition<AppHandle>): ServeConfig {
  const features = new Set(config.features);
  for (const f of featureNames(app.features)) features.add(f);
  if (app.uploads?.durable) features.add('durable-resumable-uploads');
  const p = app.pagination ?? {};
  return {
    ...config,
    // SERVICE_DATABASE_URL wins over the definition's database
    databaseUrl: config.databaseUrl ?? appDatabaseUrl(app),
    features,
    pagination: { ...config.pagination, offset: p.offset ?? config.pagination.offset, cursor: p.cursor ?? config.pagination.cursor, cursorToken: p.cursorToken ?? config.pagination.cursorToken },
  };
}

/**
 * The backup schedule of `SERVICE_BACKUP_CRON` (a cron pattern)
 * and `SERVICE_BACKUP_KEEP` (scheduled backups kept, a positive integer, default 3); null
 * without a pattern (docs/operations.md, "Backups over HTTP").
 * @throws Error when the pattern is invalid or SERVICE_BACKUP_KEEP is not a positive integer
 */
function backupScheduleFromEnv(env: NodeJS.ProcessEnv): { cron: string; keep: number } | null {
  const cron = env.SERVICE_BACKUP_CRON?.trim();
  const keepText = env.SERVICE_BACKUP_KEEP?.trim() || '3';
  const keep = Number(keepText);
  if (!/^\d+$/.test(keepText) || !Number.isSafeInteger(keep) || keep < 1) throw new Error(`SERVICE_BACKUP_KEEP must be a positive integer, not "${keepText}"`);
  if (!cron) return null;
  checkCronPattern(cron);
  return { cron, keep };
}

/**
 * A request's caller as the request logs record it, without verifying anything: the auth
 * collection its credential resolved to when the route resolved it, else "token" when it carried
 * a credential the route never looked at (or refused), else "guest" (docs/operations.md,
 * "Request logs").
 */
function requestAuth(req: Req): string {
  const name = resolvedCaller(req);
  if (name !== undefined) return name;
  return req.headers.authorization || req.headers.cookie.includes('svc_auth=') ? 'token' : 'guest';
}

/** Startup warns once per `@public` rule (docs/rules.md: the only way to open an operation). */
function warnPublicRules(store: Store, logger: Logger): void {
  for (const c of store.registry.all()) {
    for (const r of RULE_NAMES) if (c[r]?.trim() === '@public') logger.warn(`collection "${c.name}" ${r} is @public: anyone can perform this operation`);
  }
}
