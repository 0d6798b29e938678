/**
 * An app definition at work inside a running server (docs/framework.md, "The app
 * handle" and "Hooks"): the `app` handle application code gets, record hooks
 * around the record writes, the auth hooks and the auth-success handler, custom routes, custom
 * sign-in methods and scheduled jobs.
 *
 * Errors from application code: an ApiError with a registered code keeps its status and code; an
 * ApiError with an unregistered code and anything else thrown become 500 `internal` (logged with
 * the route or hook that threw). After-hooks and the auth-success handler run after the commit:
 * their failures are logged and the answer stands.
 */
import { Cron } from 'croner';
import { ApiError, knownApiError } from '../errors/api-error.js';
import type { Collection } from '../model/schema.js';
import type { AuthRecordSource } from '../context/auth-repositories.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { RateCounter } from '../store/store.js';
import type { RecordReader } from '../records/records-read.js';
import type { RecordWriter, StepSink } from '../records/records-write.js';
import type { FeatureService } from '../settings/features.js';
import type { Principal } from '../rules/access.js';
import type { AccountContext } from '../rules/compiler.js';
import type { Logger } from '../log/logger.js';
import type { Route, Req, Reply } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { parseListQuery } from '../records/list-query.js';
import { runWriteBatch } from '../records/records-write.js';
import type { RecordEventHandlers, RecordEventName, RequestRef } from '../records/lifecycle.js';
import { lifetimeOptionErrors, methodEnabled, type AuthMethod, type MethodOptionsCheck, type MethodResult } from '../auth/methods/method.js';
import type { ClientInfo } from '../auth/client.js';
import { loadAuthRecord, type AuthCollaborators, type AuthPrincipal } from '../auth/auth-service.js';
import { RateLimiter, type AuthRateLimits } from '../auth/rate-limit.js';
import { jsonBody, requestId } from '../api/request.js';
import type { MailMessage, MailService, TestOutbox } from '../mail/mail-service.js';
import { renderNamed, renderTemplate, type RenderOptions } from '../mail/templates.js';
import {
  isRegisteredCode,
  type AppDefinition, type AuthEventTag, type AuthHookEvent, type AuthHooks, type AuthRecord, type CustomAuthMethod, type JobDefinition, type RecordHooks,
} from './definition.js';

/** Records of one collection for application code; superuser rights unless made with `asUser`. */
export interface RecordsHandle {
  /** The record, or ApiError 404. */
  get(id: string): Promise<Record<string, unknown>>;
  /** One list page (`filter`, `sort`, `page`, `perPage`, `cursor`, `limit` as the REST API takes them). */
  list(query?: Record<string, string | number>): Promise<{ items: Record<string, unknown>[]; [k: string]: unknown }>;
  /** Creates a record (hooks run); answers the stored record. */
  create(data: Record<string, unknown>): Promise<Record<string, unknown>>;
  update(id: string, data: Record<string, unknown>): Promise<Record<string, unknown>>;
  delete(id: string): Promise<void>;
  /** The same collection under the rules as `auth` (null: anonymous) would see them. */
  asUser(auth: AuthRecord | null): RecordsHandle;
}

/** One write of `app.batch`. */
export type BatchOp =
  | { collection: string; action: 'create'; data: Record<string, unknown> }
  | { collection: string; action: 'update'; id: string; data: Record<string, unknown> }
  | { collection: string; action: 'delete'; id: string };

/** What application code gets as `app` / `ctx.app` / `event.app`. */
export interface AppHandle {
  records(collection: string): RecordsHandle;
  /**
   * Several writes as one transaction: all committed together or none (the first failure, a
   * validation error, a rule, a hook or a constraint, is thrown and nothing is written). Hooks run
   * as for single writes. Answers each write's stored record (null for a delete). As superuser,
   * or under the rules as `options.asUser`. At most 1,000 writes, no files.
   */
  batch(ops: BatchOp[], options?: { asUser?: AuthRecord | null }): Promise<Array<Record<string, unknown> | null>>;
  /** settings (opaque strings by key; `flag:<name>` and `exp:<name>:weights` are overrides) */
  settings: {
    get(key: string): string | undefined;
    set(key: string, value: string): Promise<void>;
    delete(key: string): Promise<void>;
  };
  /** the declared flags and experiments, resolved as `/api/state` resolves them */
  flags: {
    enabled(name: string): boolean;
    variant(experiment: string, subject: string): Promise<string | undefined>;
  };
  /** mail (docs/framework.md, "Mail"); failures are MailError with the documented condition as `code` */
  mail: {
    /**
     * checks and delivers now through the mail backend; `options.account`: the account it is sent
     * for (then `require_verified_sender` needs a verified `from`, and suppressions of that account count)
     */
    send(message: MailMessage, options?: { account?: string }): Promise<void>;
    /** checks now, stores it durably and delivers from the named queue (default `default`); needs the app's `mail` group or `mailer` */
    enqueue(message: MailMessage, options?: { queue?: string; account?: string }): Promise<void>;
    /** the template syntax of docs/framework.md, "Mail" (see renderTemplate) */
    render(template: string, vars?: Record<string, unknown>, options?: RenderOptions): string;
    /** the mail group's named template rendered: `{subject, text?, html?}` to spread into a message; TemplateError UnknownTemplate */
    template(name: string, vars?: Record<string, unknown>): { subject: string; text?: string; html?: string };
    /** the test capture outbox: present only with the `dev-tools` feature */
    outbox?: Pick<TestOutbox, 'enable' | 'reset' | 'count' | 'get' | 'find'>;
  };
  log: { debug(msg: string): void; info(msg: string): void; warn(msg: string): void; error(msg: string): void };
}

const HIDDEN = new Set(['passwordHash', 'tokenKey', 'token_epoch']);

/** An auth record without its hidden columns. */
export function publicAuthRecord(rec: Record<string, unknown> | null | undefined): AuthRecord | null {
  if (!rec) return null;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(rec)) if (!HIDDEN.has(k)) out[k] = rec[k];
  return out as AuthRecord;
}

/**
 * `p`, with a typed storage error (src/store/errors/store-errors.ts) it rejects with turned into
 * the ApiError the API answers (knownApiError): application code catching the failures of
 * `app.records(…)` and `app.batch` sees ApiError, as docs/framework.md ("The app handle") says.
 */
function asApiError<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    throw knownApiError(err) ?? err;
  });
}

/**
 * What AppRuntime reads and writes directly, instead of the whole Store (src/context/store.ts;
 * ARCHITECTURE.md, "Folders"): collections by name or id, the record codecs (a written record
 * rendered for the app), the writer (`app.batch`'s one write job), callers' whole auth records
 * (`asUser`, custom sign-in methods: an AuthRecordSource) and the cluster's shared rate counters.
 * Built by the composition root (appRepository, src/boot/repositories.ts).
 */
export interface AppRepository extends AuthRecordSource {
  registry: Pick<CollectionRegistry, 'find' | 'byId' | 'version'>;
  /** The collection by id or name (Store.collection). @throws NotFound (the API answers 404) when there is none */
  collection(idOrName: string): Collection;
  /** the writer (SqlWriter of src/store/backend.ts), as the sink of `app.batch`'s write job */
  writer: StepSink;
  /** rate-limit counters shared by every instance (StoreSql.sharedLimiter; PostgreSQL); absent: counted in this process's memory */
  sharedLimiter?: RateCounter;
}

/**
 * The services an app runs over, built before it (src/boot/services.ts); the auth service comes
 * after the app, which hands it its hooks, tenancy and sign-in methods (`authExtensions`).
 */
export interface AppServices {
  /** what the runtime reads and writes itself (AppRepository) */
  repo: AppRepository;
  reads: RecordReader;
  writes: RecordWriter;
  features: FeatureService;
  mail: MailService;
  /** the test capture outbox (dev-tools builds only); null otherwise */
  outbox: TestOutbox | null;
}

/** What resolves a request's caller for the app's routes (AuthService.resolve). */
export interface CallerResolver {
  resolve(req: Req): AuthPrincipal | null | Promise<AuthPrincipal | null>;
}

/**
 * An app definition over the services (`AppRuntime.empty` for the standalone server: no hooks,
 * routes, jobs or methods). Constructing it registers the record hooks with the writer's
 * lifecycle; its auth parts go to the auth service's constructor (`authExtensions`).
 */
export class AppRuntime {
  readonly handle: AppHandle;
  private authHooks: AuthHooks<AppHandle>;

  /** The runtime of no app definition (the standalone server, an import without --app). */
  static empty(services: AppServices, logger: Logger): AppRuntime {
    return new AppRuntime({}, services, logger);
  }

  constructor(private def: AppDefinition<AppHandle>, private ctx: AppServices, private logger: Logger) {
    for (const [name, hooks] of Object.entries(def.hooks?.records ?? {})) ctx.writes.lifecycle.register(name, this.recordHandlers(name, hooks));
    this.authHooks = def.hooks?.auth ?? {};
    const log = (level: 'debug' | 'info' | 'warn' | 'error') => (msg: string) => logger[level](String(msg), 'app');
    const features = () => ctx.features;
    this.handle = {
      records: (name) => this.recordsHandle(name, 'superuser'),
      batch: (ops, options) => asApiError(this.batch(ops, options?.asUser === undefined ? 'superuser' : options.asUser)),
      settings: {
        get: (key) => features().get(key)?.value,
        set: async (key, value) => void (await features().put(key, value)),
        delete: (key) => features().delete(key),
      },
      flags: {
        enabled: (name) => features().flag(name),
        variant: (experiment, subject) => features().variant(experiment, subject),
      },
      mail: {
        send: (message, options) => ctx.mail.send(message, options),
        enqueue: (message, options) => ctx.mail.enqueue(message, options),
        render: renderTemplate,
        template: (name, vars) => renderNamed(def.mail ?? {}, name, vars),
        ...(ctx.outbox ? { outbox: ctx.outbox } : {}),
      },
      log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    };
  }

  /**
   * The app's parts of the auth service, for its constructor: the hooks around session issue, the
   * tenancy resolver, the custom sign-in methods (rate-limited by the service's limits).
   */
  authExtensions(): Omit<AuthCollaborators, 'signup'> {
    const def = this.def;
    return {
      hooks: {
        beforeAuthSuccess: this.authHooks.beforeAuthSuccess ? (tag, c, rec, client) => this.runAuthHook('beforeAuthSuccess', this.authHooks.beforeAuthSuccess!, tag, c, rec, true, client) : undefined,
        authSuccess: def.onAuthSuccess ? (tag, c, rec, client) => this.runAuthHook('onAuthSuccess', def.onAuthSuccess!, tag, c, rec, false, client) : undefined,
      },
      tenancy: def.tenancy ? (p, accountId) => this.resolveAccount(p, accountId) : null,
      customMethods: (limits) => (def.authMethods ?? []).map((m) => new CustomMethod(m, this, this.ctx.repo, limits)),
    };
  }

  /** Whether the app has the auth lifecycle hook `name` (the routes skip reading the record for it otherwise). */
  hasAuthHook(name: keyof AuthHooks): boolean {
    return this.authHooks[name] !== undefined;
  }

  /**
   * The caller's account context from the app's tenancy resolver: the active account (X-Account-Id)
   * with its role when the caller belongs to it, and every account it belongs to (`accounts`, or
   * just the active one). Null when it belongs to none of them. A resolver that throws answers
   * 500 (fails closed).
   */
  private async resolveAccount(p: Principal, accountId: string): Promise<AccountContext | null> {
    const t = this.def.tenancy!;
    const ctx = { auth: publicAuthRecord(p.record)!, app: this.handle };
    try {
      const member = accountId !== '' && accountId.length <= 200 ? await t.resolve(ctx, accountId) : null;
      const ids = t.accounts ? (await t.accounts(ctx)).filter((x) => typeof x === 'string') : member ? [accountId] : [];
      if (!member && ids.length === 0) return null;
      return { id: member ? accountId : '', role: member && typeof member.role === 'string' ? member.role : '', ids };
    } catch (err) {
      throw this.appError(err, 'tenancy resolver');
    }
  }

  /** The slugs of the app's custom sign-in methods (collection options may enable them). */
  customMethodSlugs(): string[] {
    return (this.def.authMethods ?? []).map((m) => m.slug);
  }

  /**
   * Runs an auth lifecycle hook by name (beforeRefresh, afterLogout, …) if the app has it;
   * before-hooks throw to abort. `rid`: the request whose id its failure is logged with.
   */
  async authHook(name: keyof AuthHooks, tag: AuthEventTag, c: Collection, record: Record<string, unknown>, rid?: RequestRef): Promise<void> {
    const fn = this.authHooks[name];
    if (fn) await this.runAuthHook(name, fn, tag, c, record, name.startsWith('before'), rid);
  }

  private async runAuthHook(name: string, fn: (e: AuthHookEvent<AppHandle>) => unknown, tag: AuthEventTag, c: Collection, record: Record<string, unknown>, before: boolean, rid?: RequestRef): Promise<void> {
    const rec = publicAuthRecord(record)!;
    try {
      await fn({ method: tag, record: rec, auth: rec, app: this.handle, collection: c.name });
    } catch (err) {
      if (before) throw this.appError(err, `auth hook ${name}`, rid);
      this.logger.error(`auth hook ${name} failed${inRequest(rid)} (the answer stands): ${describe(err)}`, 'app');
    }
  }

  /**
   * An error thrown by application code as the API answers it: a registered ApiError as is,
   * anything else 500 `internal` (logged, with the id of the request `rid` when there is one).
   */
  appError(thrown: unknown, where: string, rid?: RequestRef): ApiError {
    const err = knownApiError(thrown); // a typed storage error as the API answers it
    if (err && isRegisteredCode(err.code)) return err;
    if (err) this.logger.error(`${where}${inRequest(rid)} threw an ApiError with the unregistered code "${err.code}"; answering 500 (register codes in src/errors/codes.ts)`, 'app');
    else this.logger.error(`${where} failed${inRequest(rid)}: ${describe(thrown)}`, 'app');
    return new ApiError(500, 'internal', 'Something went wrong while processing your request.');
  }

  // ----- record hooks -----

  /**
   * The lifecycle handlers of one collection's hooks (src/records/lifecycle.ts): a before hook
   * that throws refuses the write with the API's answer for its error (appError), an after hook's
   * failure is logged and the write stands.
   */
  private recordHandlers(collection: string, hooks: RecordHooks<AppHandle>): RecordEventHandlers {
    const handlers: RecordEventHandlers = {};
    for (const name of Object.keys(hooks) as RecordEventName[]) {
      const fn = hooks[name];
      if (!fn) continue;
      const before = name.startsWith('before');
      handlers[name] = async (e) => {
        try {
          await fn({ record: e.record, auth: publicAuthRecord(e.principal?.record), app: this.handle, collection: e.collection.name });
        } catch (err) {
          if (before) throw this.appError(err, `record hook ${collection}.${name}`, e.request);
          this.logger.error(`record hook ${collection}.${name} failed after the commit${inRequest(e.request)} (the answer stands): ${describe(err)}`, 'app');
        }
      };
    }
    return handlers;
  }

  // ----- batches -----

  private async batch(ops: BatchOp[], actor: AuthRecord | null | 'superuser'): Promise<Array<Record<string, unknown> | null>> {
    if (!Array.isArray(ops) || ops.length === 0 || ops.length > 1000) throw new TypeError('app.batch: give 1 to 1,000 writes');
    const { repo } = this.ctx;
    const principal = await this.actorPrincipal(actor);
    const { settled, failed } = await runWriteBatch(repo.writer, ops.map((op) => async (sink): Promise<Record<string, unknown> | null> => {
      const c = repo.collection(op.collection);
      if (op.action === 'create') return repo.codec(c).visibleFromRow((await this.ctx.writes.create(c, principal, { ...op.data }, null, sink)).row);
      if (op.action === 'update') return repo.codec(c).visibleFromRow((await this.ctx.writes.update(c, op.id, principal, { ...op.data }, null, sink)).row);
      if (op.action === 'delete') {
        await this.ctx.writes.delete(c, op.id, principal, sink);
        return null;
      }
      throw new TypeError(`app.batch: unknown action ${JSON.stringify((op as { action?: unknown }).action)}`);
    }));
    if (failed) throw failed.error;
    return settled.map((x) => (x as PromiseFulfilledResult<Record<string, unknown> | null>).value);
  }

  private async actorPrincipal(actor: AuthRecord | null | 'superuser'): Promise<Principal | null> {
    if (actor === null) return null;
    if (actor === 'superuser') return { superuser: true, collection: this.ctx.repo.registry.find('_superusers')!, record: { id: '' } };
    return this.principalOf(actor);
  }

  // ----- the records handle -----

  private async principalOf(auth: AuthRecord): Promise<Principal> {
    const c = this.ctx.repo.registry.byId(String(auth.collectionId)) ?? this.ctx.repo.registry.find(String(auth.collectionName));
    if (!c || c.type !== 'auth') throw new Error('asUser: not an auth record');
    const record = await loadAuthRecord(this.ctx.repo, c, String(auth.id));
    if (!record) throw ApiError.notFound();
    return { superuser: c.name === '_superusers', collection: c, record };
  }

  /** `actor`: 'superuser' (application code's default), null (anonymous) or an auth record. */
  private recordsHandle(name: string, actor: AuthRecord | null | 'superuser'): RecordsHandle {
    const { repo, reads } = this.ctx;
    const principal = async (): Promise<Principal | null> => {
      if (actor === null) return null;
      if (actor === 'superuser') return { superuser: true, collection: repo.registry.find('_superusers')!, record: { id: '' } };
      return this.principalOf(actor);
    };
    const col = () => repo.collection(name);
    return {
      get: (id) => asApiError((async () => reads.view(col(), id, await principal(), { expand: null, projection: null }))()),
      list: (query = {}) => asApiError((async () => {
        const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
        const body = await reads.list(col(), await principal(), parseListQuery(qs));
        return JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
      })()),
      create: (data) => asApiError((async () => {
        const c = col();
        const out = await this.ctx.writes.create(c, await principal(), { ...data }, null);
        return repo.codec(c).visibleFromRow(out.row);
      })()),
      update: (id, data) => asApiError((async () => {
        const c = col();
        const out = await this.ctx.writes.update(c, id, await principal(), { ...data }, null);
        return repo.codec(c).visibleFromRow(out.row);
      })()),
      delete: (id) => asApiError((async () => this.ctx.writes.delete(col(), id, await principal()))()),
      asUser: (auth) => this.recordsHandle(name, auth),
    };
  }

  // ----- custom routes -----

  /**
   * The app's routes, ahead of the catch-all. A route whose caller resolves at once (no token, or
   * a cached one) and whose handler answers without a promise is answered synchronously: no
   * async frame, which the HTTP layer serves on its fast path.
   */
  routes(auth: CallerResolver): Route[] {
    // shared by the instances of a cluster on PostgreSQL (keys `route:<i>:…`), else this process's
    const limiter = this.ctx.repo.sharedLimiter ?? new RateLimiter();
    return (this.def.routes ?? []).map((r, i) => {
      const names = r.path.split('/').filter((s) => s.startsWith(':')).map((s) => s.slice(1));
      const method = r.method.toLowerCase() === 'delete' ? 'del' : (r.method.toLowerCase() as Route['method']);
      const where = `route ${r.method.toUpperCase()} ${r.path}`;
      const reply = (out: unknown): Reply => {
        if (out === undefined) return noContent();
        let text: string;
        try {
          text = JSON.stringify(out);
        } catch (err) {
          throw this.appError(err, `${where} (its answer is not JSON)`);
        }
        return json(200, text);
      };
      const run = (req: Req, caller: AuthPrincipal | null): Reply | Promise<Reply> => {
        if (r.auth === 'authed' && !caller) throw ApiError.unauthorized();
        if (r.auth === 'superuser') {
          if (!caller) throw ApiError.unauthorized();
          if (!caller.superuser) throw ApiError.forbidden('Only superusers can perform this request.');
        }
        const params: Record<string, string> = {};
        for (let k = 0; k < names.length; k++) params[names[k]] = req.params[k];
        const query: Record<string, string> = {};
        if (req.query !== '') for (const [k, v] of new URLSearchParams(req.query)) if (!(k in query)) query[k] = v;
        const body = req.body && req.body.length ? jsonBody(req) : null;
        let out: unknown;
        try {
          out = r.handler(new RouteCall(params, query, body, publicAuthRecord(caller?.record), caller?.account ?? null, this.handle, req));
        } catch (err) {
          throw this.appError(err, where, req);
        }
        if (out instanceof Promise) return out.then(reply, (err) => { throw this.appError(err, where, req); });
        return reply(out);
      };
      return {
        method,
        pattern: r.path,
        handler: (req: Req): Reply | Promise<Reply> => {
          const serve = (): Reply | Promise<Reply> => {
            const caller = auth.resolve(req);
            return caller instanceof Promise ? caller.then((c) => run(req, c)) : run(req, caller);
          };
          if (!r.rateLimit) return serve();
          // the in-memory counter answers at once; PostgreSQL's shared one on the pool
          const allowed = limiter.hit(`route:${i}:${req.remoteAddress}`, { max: r.rateLimit.max, windowS: r.rateLimit.windowS });
          const decide = (ok: boolean): Reply | Promise<Reply> => {
            if (!ok) throw ApiError.tooManyRequests();
            return serve();
          };
          return allowed instanceof Promise ? allowed.then(decide) : decide(allowed);
        },
      };
    });
  }

  // ----- jobs -----

  /**
   * Starts the scheduled jobs; the returned function stops the schedules and waits for running
   * jobs. `claim`: on several instances (PostgreSQL), whether this instance runs a job's tick (the
   * first to claim the tick, identified by the job's name and the second it fell due, runs it;
   * OpenedData.claimTick); absent: every tick runs here.
   */
  startJobs(claim?: (job: string, tick: Date) => Promise<boolean>): () => Promise<void> {
    const runners = (this.def.jobs ?? []).map((j) => new JobRunner(j, this.handle, this.logger));
    const fire = (r: JobRunner): void => {
      if (!claim) {
        r.tick();
        return;
      }
      const due = new Date(Math.floor(Date.now() / 1000) * 1000);
      claim(r.job.name, due).then(
        (mine) => void (mine && r.tick(due)),
        (err: unknown) => this.logger.error(`job ${r.job.name}: could not claim the tick: ${describe(err)}`, 'jobs'),
      );
    };
    const crons = runners.map((r) => new Cron(r.job.schedule, () => fire(r)));
    return async () => {
      for (const c of crons) c.stop();
      await Promise.allSettled(runners.map((r) => r.idle()));
    };
  }
}

/**
 * One scheduled job: each tick runs the handler unless `poolSize` runs (default 1) are still
 * going, in which case the tick is skipped and logged; failures are logged with the job's name.
 */
export class JobRunner {
  private running = new Set<Promise<void>>();

  constructor(readonly job: JobDefinition<AppHandle>, private app: AppHandle, private logger: Logger) {}

  /** Runs the job now unless the pool is full; answers whether it ran. */
  tick(now = new Date()): boolean {
    const pool = this.job.poolSize ?? 1;
    if (this.running.size >= pool) {
      this.logger.warn(`job ${this.job.name}: skipped a tick, ${this.running.size} run(s) still going (poolSize ${pool})`, 'jobs');
      return false;
    }
    const started = Date.now();
    const run = (async () => {
      try {
        await this.job.handler({ app: this.app, job: this.job.name, scheduledAt: now });
        this.logger.info(`job ${this.job.name} finished in ${Date.now() - started} ms`, 'jobs');
      } catch (err) {
        this.logger.error(`job ${this.job.name} failed: ${describe(err)}`, 'jobs');
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    return true;
  }

  /** Resolves when no run is going. */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }
}

/**
 * A custom method's options check, registered process-wide at start (src/server.ts) so a declared
 * collection may turn it on: only `enabled` and `rate_limit` mean anything to svc; `ttl_s` is
 * checked as for every method (lifetimeOptionErrors).
 */
export function customMethodOptions(def: Pick<CustomAuthMethod<AppHandle>, 'slug'>): MethodOptionsCheck {
  return { slug: def.slug, checkOptions: lifetimeOptionErrors };
}

/** A custom sign-in method as an AuthMethod: the app proves the caller; svc issues the session. */
class CustomMethod implements AuthMethod {
  readonly slug: string;
  readonly checkOptions: MethodOptionsCheck['checkOptions'];
  readonly stores = [] as const;
  readonly events = ['auth-success'] as const;
  readonly initiate?: (c: Collection, body: unknown, client: ClientInfo) => Promise<unknown>;

  constructor(private def: CustomAuthMethod<AppHandle>, private rt: AppRuntime, private records: AuthRecordSource, private limits: AuthRateLimits) {
    this.slug = def.slug;
    this.checkOptions = customMethodOptions(def).checkOptions;
    if (def.initiate) {
      const init = def.initiate;
      this.initiate = async (c, body, client) => {
        await this.limit(c, `auth-${this.slug}-initiate`, client);
        try {
          return await init({ collection: c.name, body, app: rt.handle });
        } catch (err) {
          throw rt.appError(err, `auth method ${this.slug}.initiate`);
        }
      };
    }
  }

  private limit(c: Collection, scope: string, client: ClientInfo): Promise<void> {
    return this.limits.enforce(scope, c, this.limits.clientKeys(client, ''), this.slug);
  }

  enabled(c: Collection): boolean {
    return methodEnabled(c, this.slug);
  }

  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    await this.limit(c, `auth-${this.slug}-complete`, client);
    let out: string | { id: string };
    try {
      out = await this.def.complete({ collection: c.name, body, app: this.rt.handle });
    } catch (err) {
      throw this.rt.appError(err, `auth method ${this.slug}.complete`);
    }
    const id = typeof out === 'string' ? out : out?.id;
    const record = typeof id === 'string' ? await loadAuthRecord(this.records, c, id) : null;
    if (!record) throw this.rt.appError(new Error(`complete answered ${JSON.stringify(id)}, which names no record of "${c.name}"`), `auth method ${this.slug}.complete`);
    return { record };
  }
}

/** A custom route handler's `ctx`: the request id is made only when asked for. */
class RouteCall {
  constructor(
    readonly params: Record<string, string>,
    readonly query: Record<string, string>,
    readonly body: unknown,
    readonly auth: AuthRecord | null,
    readonly account: AccountContext | null,
    readonly app: AppHandle,
    private readonly req: Req,
  ) {}

  get requestId(): string {
    return requestId(this.req);
  }
}

/** The request application code runs in: its id is made only when a failure is logged. */
export type { RequestRef } from '../records/lifecycle.js';

/** ` (request <id>)`, or nothing outside a request. */
function inRequest(req: RequestRef | undefined): string {
  return req ? ` (request ${requestId(req)})` : '';
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
