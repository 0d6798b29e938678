/**
 * The app definition (docs/framework.md): the shapes an embedding program writes, and `defineApp`,
 * which checks a definition synchronously and completely (every problem in one
 * AppDefinitionError) before any port opens.
 *
 * Keys: `features`, `pagination`, `collections`, `migrations`, `hooks` (records and auth),
 * `onAuthSuccess`, `routes`, `jobs`, `authMethods` (custom sign-in methods, an extension), `flags`,
 * `experiments`, `stateRoute`, `featureRoutes`, `mail`, `mailer` and `tenancy`.
 */
import { Cron } from 'croner';
import { KNOWN_FEATURES, type FeatureName } from '../config/config.js';
import { lookupCode } from '../errors/codes.js';
import type { SignInTag } from '../auth/methods/method.js';
import { migrationProblems, type MigrationsOption } from './migrations.js';
import type { Mailer } from '../mail/mail-service.js';
import { templateProblems, type TemplateSet } from '../mail/templates.js';
import { budgetProblems, type UploadBudgets } from '../uploads/budgets.js';

/** An auth record as application code sees it (no password hash or token key). */
export type AuthRecord = Record<string, unknown> & { id: string; collectionId: string; collectionName: string };

/** What `event.method` of an auth event says (docs/framework.md, "Hooks": login hook tags). */
export type AuthMethodTag = SignInTag;

/** A record hook's event; a before-hook may change `record` (the data to write) or throw to abort. */
export interface RecordHookEvent<A = AppHandleLike> {
  /** create/update before: the data to write (change it in place); after: the stored record; delete: the record */
  record: Record<string, unknown>;
  /** the caller's record, or null (anonymous or application code) */
  auth: AuthRecord | null;
  app: A;
  /** the collection's name */
  collection: string;
}

export type RecordHook<A = AppHandleLike> = (event: RecordHookEvent<A>) => void | Promise<void>;

/** The hooks of one collection. */
export interface RecordHooks<A = AppHandleLike> {
  beforeCreate?: RecordHook<A>;
  afterCreate?: RecordHook<A>;
  beforeUpdate?: RecordHook<A>;
  afterUpdate?: RecordHook<A>;
  beforeDelete?: RecordHook<A>;
  afterDelete?: RecordHook<A>;
}

/** What a lifecycle hook's `event.method` says: the sign-in's tag, or the action (`logout`, `password_change`). */
export type AuthEventTag = AuthMethodTag | 'logout' | 'password_change';

/** An auth hook's event. */
export interface AuthHookEvent<A = AppHandleLike> {
  /** the sign-in's tag (auth-success hooks; `refresh` for refresh hooks), else the action */
  method: AuthEventTag;
  /** the signed-in record */
  record: AuthRecord;
  auth: AuthRecord | null;
  app: A;
  collection: string;
}

export type AuthHook<A = AppHandleLike> = (event: AuthHookEvent<A>) => void | Promise<void>;

/** The auth lifecycle hooks (docs/framework.md, "Hooks"); a before-hook that throws aborts before any session change. */
export interface AuthHooks<A = AppHandleLike> {
  beforeRefresh?: AuthHook<A>;
  afterRefresh?: AuthHook<A>;
  beforeLogout?: AuthHook<A>;
  afterLogout?: AuthHook<A>;
  /** fires on password sign-in (method `password`) and refresh (method `refresh`) */
  beforeAuthSuccess?: AuthHook<A>;
  beforePasswordChange?: AuthHook<A>;
  afterPasswordChange?: AuthHook<A>;
}

/** A custom route's context. */
export interface RouteContext<A = AppHandleLike> {
  /** `:param` segments, decoded */
  params: Record<string, string>;
  /** the query string, first value per key */
  query: Record<string, string>;
  /** the parsed JSON body (null without one) */
  body: unknown;
  /** the caller's record, or null */
  auth: AuthRecord | null;
  /** the caller's active account (tenancy): `{id, role, ids}`, or null */
  account: { id: string; role: string; ids: string[] } | null;
  app: A;
  /**
   * the request's id: the caller's (or proxy's) X-Request-Id when well formed, else one made for
   * it; failures of application code during the request are logged with it
   */
  readonly requestId: string;
}

export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A custom route: the handler returns the JSON body (status 200) or throws an ApiError. */
export interface RouteDefinition<A = AppHandleLike> {
  method: RouteMethod | Lowercase<RouteMethod>;
  /** `/api/...` with `:param` segments */
  path: `/${string}`;
  /** `public` (default), `authed` (any signed-in record, else 401) or `superuser` (else 401/403) */
  auth?: 'public' | 'authed' | 'superuser';
  /** per client address: at most `max` requests per `windowS` seconds, else 429 */
  rateLimit?: { max: number; windowS: number };
  handler: (ctx: RouteContext<A>) => unknown;
}

/** A scheduled job's context. */
export interface JobContext<A = AppHandleLike> {
  app: A;
  /** the job's name */
  job: string;
  /** when the schedule fired */
  scheduledAt: Date;
}

/** A scheduled job: five-field cron `schedule`; at most `poolSize` runs at once (default 1), extra ticks are skipped. */
export interface JobDefinition<A = AppHandleLike> {
  name: string;
  schedule: string;
  poolSize?: number;
  handler: (ctx: JobContext<A>) => unknown;
}

/** A custom sign-in method's context. */
export interface AuthMethodContext<A = AppHandleLike> {
  /** the auth collection's name */
  collection: string;
  body: unknown;
  app: A;
}

/**
 * A custom sign-in method under `options.auth.methods.<slug>` (on with `enabled: true`):
 * `complete` proves who the caller is and answers the record's id; svc issues the session
 * (require_verified, two-factor policy, the auth-success handler with method `custom`).
 */
export interface CustomAuthMethod<A = AppHandleLike> {
  /** lowercase letters, digits and `_`; not a built-in slug */
  slug: string;
  /** the first step (optional): its answer is the route's JSON (undefined: 204) */
  initiate?: (ctx: AuthMethodContext<A>) => unknown;
  /** answers the signed-in record's id (or the record); throw an ApiError to refuse */
  complete: (ctx: AuthMethodContext<A>) => string | { id: string } | Promise<string | { id: string }>;
}

/** A declared collection: the REST API's collection JSON. */
export interface CollectionDefinition {
  name: string;
  type?: 'base' | 'auth';
  fields?: Record<string, unknown>[];
  indexes?: unknown[];
  listRule?: string | null;
  viewRule?: string | null;
  createRule?: string | null;
  updateRule?: string | null;
  deleteRule?: string | null;
  options?: Record<string, unknown>;
}

/** Pagination of list endpoints (docs/configuration.md, "Lists"). */
export interface PaginationOptions {
  offset?: boolean;
  cursor?: boolean;
  cursorToken?: 'stateless' | 'signed' | 'stateful';
}

/** The structural minimum of the `app` handle the events carry (see AppHandle in runtime.ts). */
export interface AppHandleLike {
  records(collection: string): unknown;
  log: { info(msg: string): void; warn(msg: string): void; error(msg: string): void };
}

/**
 * Build options as an object (docs/configuration.md, "Server"): `vector: true`, `fts5: false`,
 * `resumableUploads: true`, `devTools: true`.
 */
export interface FeatureOptions {
  vector?: boolean;
  fts5?: boolean;
  /** `{ durable: true }` adds the persistence mode (`durable-resumable-uploads`) */
  resumableUploads?: boolean | { durable?: boolean };
  devTools?: boolean;
}

/** The app's mail group (docs/framework.md, "Mail"): present turns on queued delivery and `/api/mail/config`. */
export interface MailGroup {
  require_verified_sender?: boolean;
  check_suppression?: boolean;
  webhook_secret?: string;
  /** named templates `{subject, text?, html?}` (an extension), checked by defineApp; `app.mail.template(name, vars)` */
  templates?: Record<string, { subject: string; text?: string; html?: string }>;
  /** partials the templates include with `{{> name }}` */
  partials?: Record<string, string>;
  /** an HTML layout for every template's HTML body (`{{{ body }}}`) */
  layout?: string;
}

/** An embedding program's definition of its backend. */
export interface AppDefinition<A = AppHandleLike> {
  /**
   * The server-SQL backend (PostgreSQL; docs/deployment.md): a `postgres://` or `postgresql://`
   * URL, often `process.env.DATABASE_URL`. Left out, undefined or '': the embedded database of the
   * data directory. SERVICE_DATABASE_URL, when set, wins (a deployment overrides the code). Used by
   * `app.start()`, `svc serve --app` and every command given `--app` (migrate, schema, import,
   * doctor).
   */
  database?: string;
  /** build options: an object (`{ vector: true, fts5: false }`) or the names `--features` takes */
  features?: FeatureOptions | FeatureName[];
  /**
   * Migrations: `[{id, up(tx)}]` in run order, or a directory (path or file: URL) of
   * `NNNN_name.sql` / `NNNN_name.js` files; pending ones run before the port opens and under
   * `svc migrate`, each in one transaction with the row recording it.
   */
  migrations?: MigrationsOption;
  /**
   * Declared collections (the REST API's collection JSON; a relation field may name its target by
   * `options.collection`): created at start when missing, updated when they differ, never a change
   * that drops data (src/app/declared-collections.ts).
   */
  collections?: CollectionDefinition[];
  pagination?: PaginationOptions;
  hooks?: { records?: Record<string, RecordHooks<A>>; auth?: AuthHooks<A> };
  /** fired after every successful sign-in and refresh (errors are logged; the session stands) */
  onAuthSuccess?: AuthHook<A>;
  routes?: RouteDefinition<A>[];
  jobs?: JobDefinition<A>[];
  authMethods?: CustomAuthMethod<A>[];
  /** declared feature flags: `/api/features`, `/api/state`, overrides in settings `flag:<name>` */
  flags?: { name: string; default: boolean; description?: string }[];
  /** declared experiments: a subject is bucketed over the variants' weights; `sticky` keeps its first variant */
  experiments?: { name: string; variants: { name: string; weight: number }[]; sticky?: boolean; description?: string }[];
  /** where the public state route mounts (default `/api/state`), or false for none */
  stateRoute?: `/${string}` | false;
  /** the mount prefix of the feature registry route (default `/api`: `GET /api/features`) */
  featureRoutes?: `/${string}`;
  /** the mail group: queued delivery (`app.mail.enqueue`) and `GET /api/mail/config` */
  mail?: MailGroup;
  /** the mail backend for every message, auth mail included (default: SERVICE_SMTP_* / the log) */
  mailer?: Mailer;
  /**
   * The upload budgets (docs/files.md, "Resumable uploads"); needs the `resumableUploads`
   * feature. `durable: true` turns on the persistence mode.
   */
  uploads?: Partial<UploadBudgets>;
  /**
   * Accounts (tenancy): `resolve` says whether the signed-in caller belongs to the account named
   * by the X-Account-Id header and with what role (null: not a member); `accounts` lists every
   * account the caller belongs to. They feed `@request.account.id`, `.role` and `.ids` in rules.
   */
  tenancy?: {
    resolve: (ctx: TenancyContext<A>, accountId: string) => { role: string } | null | Promise<{ role: string } | null>;
    accounts?: (ctx: TenancyContext<A>) => string[] | Promise<string[]>;
  };
}

/** What a tenancy resolver gets: the signed-in caller and the app. */
export interface TenancyContext<A = AppHandleLike> {
  auth: AuthRecord;
  app: A;
}

/** Thrown by defineApp: every problem of a definition, one per line. */
export class AppDefinitionError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid app definition:\n${problems.map((p) => `- ${p}`).join('\n')}`);
    this.name = 'AppDefinitionError';
    this.problems = problems;
  }
}

const KNOWN_KEYS = ['database', 'features', 'pagination', 'collections', 'migrations', 'hooks', 'onAuthSuccess', 'routes', 'jobs', 'authMethods', 'flags', 'experiments', 'stateRoute', 'featureRoutes', 'mail', 'mailer', 'tenancy', 'uploads'];
/** The feature object's keys and the `--features` names they stand for (true, or false for fts5). */
const FEATURE_KEYS: Record<string, { on: boolean; name: FeatureName }> = {
  vector: { on: true, name: 'vector' },
  fts5: { on: false, name: 'fts5-off' },
  resumableUploads: { on: true, name: 'resumable-uploads' },
  devTools: { on: true, name: 'dev-tools' },
};

const DATABASE_URL = /^postgres(ql)?:\/\/./;

/**
 * The PostgreSQL URL a definition selects (its `database`, trimmed), or undefined for the
 * embedded database. SERVICE_DATABASE_URL is the caller's to prefer.
 */
export function appDatabaseUrl(app: { database?: string } | undefined): string | undefined {
  const url = app?.database?.trim();
  return url ? url : undefined;
}

/** The `--features` names a definition's `features` turns on. */
export function featureNames(features: FeatureOptions | FeatureName[] | undefined): FeatureName[] {
  if (!features) return [];
  if (Array.isArray(features)) return features;
  const out: FeatureName[] = [];
  for (const [k, v] of Object.entries(features)) if (FEATURE_KEYS[k] && v === FEATURE_KEYS[k].on) out.push(FEATURE_KEYS[k].name);
  const up = features.resumableUploads;
  if (isObject(up)) out.push('resumable-uploads', ...(up.durable === true ? ['durable-resumable-uploads' as const] : []));
  return out;
}
const RECORD_HOOKS = ['beforeCreate', 'afterCreate', 'beforeUpdate', 'afterUpdate', 'beforeDelete', 'afterDelete'];
const AUTH_HOOKS = ['beforeRefresh', 'afterRefresh', 'beforeLogout', 'afterLogout', 'beforeAuthSuccess', 'beforePasswordChange', 'afterPasswordChange'];
const ROUTE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const BUILT_IN_METHODS = ['password', 'magic_link', 'otp', 'oauth2', 'webauthn'];
/** Paths the server owns: a custom route may not shadow them. */
const RESERVED_PREFIXES = ['/api/collections', '/api/realtime', '/api/files', '/api/health', '/api/meta', '/api/settings', '/api/features', '/api/state', '/api/account', '/api/mail', '/api/senders', '/api/uploads', '/_/'];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFn = (v: unknown): v is (...a: unknown[]) => unknown => typeof v === 'function';

/** True for a five-field cron expression croner accepts. */
export function isCronExpression(s: unknown): s is string {
  if (typeof s !== 'string' || s.trim().split(/\s+/).length !== 5) return false;
  try {
    new Cron(s, { paused: true }).stop();
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a definition and answers it unchanged (frozen).
 * @throws AppDefinitionError listing every problem
 */
export function defineApp<A = AppHandleLike>(definition: AppDefinition<A>): Readonly<AppDefinition<A>> {
  const problems: string[] = [];
  const p = (m: string) => problems.push(m);
  if (!isObject(definition)) throw new AppDefinitionError(['the definition must be an object']);
  for (const k of Object.keys(definition)) {
    if (!KNOWN_KEYS.includes(k)) p(`${k}: unknown key (known: ${KNOWN_KEYS.join(', ')})`);
  }
  const d = definition as Record<string, unknown>;

  if (d.database !== undefined && d.database !== '' && (typeof d.database !== 'string' || !DATABASE_URL.test(d.database.trim()))) {
    p('database: must be a postgres:// or postgresql:// URL (or left out for the embedded database)');
  }
  if (d.features !== undefined) {
    if (Array.isArray(d.features)) {
      for (const f of d.features) if (!KNOWN_FEATURES.includes(f as FeatureName)) p(`features: unknown feature ${JSON.stringify(f)} (known: ${KNOWN_FEATURES.join(', ')})`);
    } else if (isObject(d.features)) {
      for (const [k, v] of Object.entries(d.features)) {
        if (!FEATURE_KEYS[k]) p(`features.${k}: unknown feature (known: ${Object.keys(FEATURE_KEYS).join(', ')})`);
        else if (k === 'resumableUploads' && isObject(v)) {
          for (const [uk, uv] of Object.entries(v)) {
            if (uk !== 'durable') p(`features.resumableUploads.${uk}: unknown key (known: durable)`);
            else if (typeof uv !== 'boolean') p('features.resumableUploads.durable: must be a boolean');
          }
        } else if (typeof v !== 'boolean') p(`features.${k}: must be a boolean`);
      }
    } else p('features: must be an object ({ vector: true, … }) or an array of feature names');
  }
  if (d.migrations !== undefined) for (const m of migrationProblems(d.migrations)) p(m);
  if (Array.isArray(d.features) && d.features.includes('durable-resumable-uploads') && !d.features.includes('resumable-uploads')) p('features: durable-resumable-uploads needs resumable-uploads');
  if (d.uploads !== undefined) {
    if (!isObject(d.uploads)) p('uploads: must be an object (the upload budgets: max_sessions, max_sessions_per_principal, max_sessions_per_address, max_upload_bytes, max_total_bytes, max_chunk_bytes, ttl_seconds, durable)');
    else {
      if (!featureNames(d.features as FeatureOptions | FeatureName[] | undefined).includes('resumable-uploads')) p('uploads: the upload budgets need the resumableUploads feature (features: { resumableUploads: true })');
      for (const m of budgetProblems(d.uploads)) p(m);
    }
  }
  if (d.mail !== undefined) {
    if (!isObject(d.mail)) p('mail: must be an object (the mail group: require_verified_sender, check_suppression, webhook_secret)');
    else {
      for (const [k, v] of Object.entries(d.mail)) {
        if (k === 'require_verified_sender' || k === 'check_suppression') {
          if (typeof v !== 'boolean') p(`mail.${k}: must be a boolean`);
        } else if (k === 'templates' || k === 'partials' || k === 'layout') {
          // checked together below
        } else if (k === 'webhook_secret') {
          if (typeof v !== 'string' || v.length < 16) p('mail.webhook_secret: must be a string of at least 16 characters');
        } else p(`mail.${k}: unknown key (require_verified_sender, check_suppression, webhook_secret, templates, partials, layout)`);
      }
      for (const m of templateProblems(d.mail as TemplateSet)) p(m);
    }
  }
  if (d.mailer !== undefined && (!isObject(d.mailer) || !isFn(d.mailer.send) || (d.mailer.close !== undefined && !isFn(d.mailer.close)))) {
    p('mailer: must be a mail backend: an object with send(message) (and optionally close())');
  }
  if (d.featureRoutes !== undefined) {
    const fr = d.featureRoutes;
    if (typeof fr !== 'string' || !/^\/[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(fr) || fr.length > 100) p('featureRoutes: must be a path prefix such as /api/admin (plain segments, no trailing slash)');
    else if (fr.startsWith('/_/') || fr === '/_' || ['/api/collections', '/api/realtime', '/api/files', '/api/settings'].some((r) => fr === r || fr.startsWith(`${r}/`))) p(`featureRoutes: ${fr} is under a path the server owns`);
  }
  if (d.pagination !== undefined) {
    const pg = d.pagination;
    if (!isObject(pg)) p('pagination: must be an object');
    else {
      for (const k of Object.keys(pg)) if (!['offset', 'cursor', 'cursorToken'].includes(k)) p(`pagination.${k}: unknown key`);
      for (const k of ['offset', 'cursor']) if (pg[k] !== undefined && typeof pg[k] !== 'boolean') p(`pagination.${k}: must be a boolean`);
      if (pg.cursorToken !== undefined && !['stateless', 'signed', 'stateful'].includes(pg.cursorToken as string)) p('pagination.cursorToken: must be stateless, signed or stateful');
      if (pg.offset === false && pg.cursor === false) p('pagination: offset and cursor cannot both be off');
    }
  }
  if (d.collections !== undefined) {
    if (!Array.isArray(d.collections)) p('collections: must be an array of collections (the REST API JSON)');
    else {
      const names = new Set<string>();
      d.collections.forEach((c, i) => {
        const at = `collections[${i}]`;
        if (!isObject(c)) return void p(`${at}: must be an object`);
        if (typeof c.name === 'string' && c.name.startsWith('_')) p(`${at}.name: system collections cannot be declared`);
        else if (typeof c.name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,62}$/.test(c.name)) p(`${at}.name: must be a collection name (a letter, then letters, digits or "_")`);
        else if (names.has(c.name.toLowerCase())) p(`${at}.name: "${c.name}" is declared twice`);
        else names.add(c.name.toLowerCase());
        if (c.type !== undefined && c.type !== 'base' && c.type !== 'auth') p(`${at}.type: must be base or auth`);
        if (c.fields !== undefined && (!Array.isArray(c.fields) || !c.fields.every(isObject))) p(`${at}.fields: must be an array of field objects`);
        for (const r of ['listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule']) if (c[r] !== undefined && c[r] !== null && typeof c[r] !== 'string') p(`${at}.${r}: must be a string or null`);
      });
    }
  }
  if (d.hooks !== undefined) {
    if (!isObject(d.hooks)) p('hooks: must be an object');
    else {
      for (const k of Object.keys(d.hooks)) if (k !== 'records' && k !== 'auth') p(`hooks.${k}: unknown key (records, auth)`);
      const rec = d.hooks.records;
      if (rec !== undefined) {
        if (!isObject(rec)) p('hooks.records: must be an object keyed by collection name');
        else for (const [col, hooks] of Object.entries(rec)) {
          if (!isObject(hooks)) { p(`hooks.records.${col}: must be an object`); continue; }
          for (const [name, fn] of Object.entries(hooks)) {
            if (!RECORD_HOOKS.includes(name)) p(`hooks.records.${col}.${name}: unknown hook (${RECORD_HOOKS.join(', ')})`);
            else if (!isFn(fn)) p(`hooks.records.${col}.${name}: must be a function`);
          }
        }
      }
      const auth = d.hooks.auth;
      if (auth !== undefined) {
        if (!isObject(auth)) p('hooks.auth: must be an object');
        else for (const [name, fn] of Object.entries(auth)) {
          if (!AUTH_HOOKS.includes(name)) p(`hooks.auth.${name}: unknown hook (${AUTH_HOOKS.join(', ')})`);
          else if (!isFn(fn)) p(`hooks.auth.${name}: must be a function`);
        }
      }
    }
  }
  if (d.onAuthSuccess !== undefined && !isFn(d.onAuthSuccess)) p('onAuthSuccess: must be a function');

  if (d.routes !== undefined) {
    if (!Array.isArray(d.routes)) p('routes: must be an array');
    else {
      const seen = new Set<string>();
      d.routes.forEach((r, i) => {
        const at = `routes[${i}]`;
        if (!isObject(r)) return void p(`${at}: must be an object`);
        for (const k of Object.keys(r)) if (!['method', 'path', 'auth', 'handler', 'rateLimit'].includes(k)) p(`${at}.${k}: unknown key`);
        const method = typeof r.method === 'string' ? r.method.toUpperCase() : '';
        if (!ROUTE_METHODS.includes(method)) p(`${at}.method: must be one of ${ROUTE_METHODS.join(', ')}`);
        const bad = routePathProblem(r.path);
        if (bad) p(`${at}.path: ${bad}`);
        if (r.auth !== undefined && !['public', 'authed', 'superuser'].includes(r.auth as string)) p(`${at}.auth: must be public, authed or superuser`);
        if (!isFn(r.handler)) p(`${at}.handler: must be a function`);
        if (r.rateLimit !== undefined) {
          const rl = r.rateLimit;
          if (!isObject(rl) || !Number.isInteger(rl.max) || (rl.max as number) < 1 || !Number.isInteger(rl.windowS) || (rl.windowS as number) < 1) p(`${at}.rateLimit: must be {max, windowS} with positive integers`);
        }
        if (!bad && method) {
          const key = `${method} ${String(r.path).replace(/:[^/]+/g, ':')}`;
          if (seen.has(key)) p(`${at}: ${method} ${String(r.path)} is defined twice`);
          seen.add(key);
        }
      });
    }
  }

  if (d.jobs !== undefined) {
    if (!Array.isArray(d.jobs)) p('jobs: must be an array');
    else {
      const names = new Set<string>();
      d.jobs.forEach((j, i) => {
        const at = `jobs[${i}]`;
        if (!isObject(j)) return void p(`${at}: must be an object`);
        for (const k of Object.keys(j)) if (!['name', 'schedule', 'handler', 'poolSize'].includes(k)) p(`${at}.${k}: unknown key`);
        if (typeof j.name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(j.name)) p(`${at}.name: must be 1 to 64 letters, digits, ".", "_" or "-"`);
        else if (names.has(j.name)) p(`${at}.name: the job name ${JSON.stringify(j.name)} is used twice`);
        else names.add(j.name);
        if (!isCronExpression(j.schedule)) p(`${at}.schedule: ${JSON.stringify(j.schedule)} is not a five-field cron expression (minute hour day-of-month month day-of-week)`);
        if (j.poolSize !== undefined && (!Number.isInteger(j.poolSize) || (j.poolSize as number) < 1 || (j.poolSize as number) > 64)) p(`${at}.poolSize: must be an integer from 1 to 64`);
        if (!isFn(j.handler)) p(`${at}.handler: must be a function`);
      });
    }
  }

  if (d.authMethods !== undefined) {
    if (!Array.isArray(d.authMethods)) p('authMethods: must be an array');
    else {
      const slugs = new Set<string>();
      d.authMethods.forEach((m, i) => {
        const at = `authMethods[${i}]`;
        if (!isObject(m)) return void p(`${at}: must be an object`);
        for (const k of Object.keys(m)) if (!['slug', 'initiate', 'complete'].includes(k)) p(`${at}.${k}: unknown key`);
        if (typeof m.slug !== 'string' || !/^[a-z][a-z0-9_]{0,39}$/.test(m.slug)) p(`${at}.slug: must be 1 to 40 lowercase letters, digits or "_", starting with a letter`);
        else if (BUILT_IN_METHODS.includes(m.slug)) p(`${at}.slug: "${m.slug}" is a built-in method`);
        else if (slugs.has(m.slug)) p(`${at}.slug: "${m.slug}" is used twice`);
        else slugs.add(m.slug);
        if (!isFn(m.complete)) p(`${at}.complete: must be a function`);
        if (m.initiate !== undefined && !isFn(m.initiate)) p(`${at}.initiate: must be a function`);
      });
    }
  }

  if (d.tenancy !== undefined) {
    const t = d.tenancy;
    if (!isObject(t)) p('tenancy: must be an object {resolve, accounts?}');
    else {
      for (const k of Object.keys(t)) if (k !== 'resolve' && k !== 'accounts') p(`tenancy.${k}: unknown key (resolve, accounts)`);
      if (!isFn(t.resolve)) p('tenancy.resolve: must be a function (ctx, accountId) → {role} | null');
      if (t.accounts !== undefined && !isFn(t.accounts)) p('tenancy.accounts: must be a function (ctx) → account ids');
    }
  }
  const FEATURE_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
  if (d.flags !== undefined) {
    if (!Array.isArray(d.flags)) p('flags: must be an array');
    else {
      const names = new Set<string>();
      d.flags.forEach((f, i) => {
        const at = `flags[${i}]`;
        if (!isObject(f)) return void p(`${at}: must be an object`);
        for (const k of Object.keys(f)) if (!['name', 'default', 'description'].includes(k)) p(`${at}.${k}: unknown key`);
        if (typeof f.name !== 'string' || !FEATURE_NAME.test(f.name)) p(`${at}.name: must be 1 to 64 lowercase letters, digits, ".", "_" or "-"`);
        else if (names.has(f.name)) p(`${at}.name: the flag ${JSON.stringify(f.name)} is declared twice`);
        else names.add(f.name);
        if (typeof f.default !== 'boolean') p(`${at}.default: must be a boolean`);
        if (f.description !== undefined && typeof f.description !== 'string') p(`${at}.description: must be a string`);
      });
    }
  }
  if (d.experiments !== undefined) {
    if (!Array.isArray(d.experiments)) p('experiments: must be an array');
    else {
      const names = new Set<string>();
      d.experiments.forEach((e, i) => {
        const at = `experiments[${i}]`;
        if (!isObject(e)) return void p(`${at}: must be an object`);
        for (const k of Object.keys(e)) if (!['name', 'variants', 'sticky', 'description'].includes(k)) p(`${at}.${k}: unknown key`);
        if (typeof e.name !== 'string' || !FEATURE_NAME.test(e.name)) p(`${at}.name: must be 1 to 64 lowercase letters, digits, ".", "_" or "-"`);
        else if (names.has(e.name)) p(`${at}.name: the experiment ${JSON.stringify(e.name)} is declared twice`);
        else names.add(e.name);
        const v = e.variants;
        if (!Array.isArray(v) || v.length < 1 || v.length > 100) p(`${at}.variants: must be an array of 1 to 100 {name, weight}`);
        else {
          const vn = new Set<string>();
          let total = 0;
          v.forEach((x, k) => {
            if (!isObject(x) || typeof x.name !== 'string' || x.name === '' || x.name.length > 64) return void p(`${at}.variants[${k}].name: must be a non-empty string of at most 64 characters`);
            if (vn.has(x.name)) p(`${at}.variants[${k}].name: ${JSON.stringify(x.name)} appears twice`);
            vn.add(x.name);
            if (!Number.isInteger(x.weight) || (x.weight as number) < 0 || (x.weight as number) > 1_000_000) p(`${at}.variants[${k}].weight: must be an integer from 0 to 1000000`);
            else total += x.weight as number;
          });
          if (total === 0) p(`${at}.variants: the weights must add up to more than 0`);
        }
        if (e.sticky !== undefined && typeof e.sticky !== 'boolean') p(`${at}.sticky: must be a boolean`);
        if (e.description !== undefined && typeof e.description !== 'string') p(`${at}.description: must be a string`);
      });
    }
  }
  if (d.stateRoute !== undefined && d.stateRoute !== false) {
    const bad = d.stateRoute === '/api/state' ? null : routePathProblem(d.stateRoute);
    if (bad) p(`stateRoute: ${bad} (or false to turn the route off)`);
    else if (String(d.stateRoute).includes(':')) p('stateRoute: must be a fixed path, without parameters');
  }

  if (problems.length) throw new AppDefinitionError(problems);
  return Object.freeze({ ...definition });
}

/** Why a custom route path is refused, or null. */
function routePathProblem(path: unknown): string | null {
  if (typeof path !== 'string') return 'must be a string';
  if (!path.startsWith('/api/')) return 'must start with /api/';
  if (path.length > 200) return 'must be at most 200 characters';
  if (/[?#\s\\]/.test(path) || path.includes('//') || (path.endsWith('/') && path !== '/')) return 'must be a plain path: no query, fragment, space, backslash, empty segment or trailing slash';
  for (const seg of path.split('/').slice(1)) {
    if (seg.startsWith(':') ? !/^:[A-Za-z_][A-Za-z0-9_]*$/.test(seg) : !/^[A-Za-z0-9._~!$&'()*+,;=@-]+$/.test(seg)) return `bad segment ${JSON.stringify(seg)} (":name" parameters or plain URL characters)`;
  }
  const names = path.split('/').filter((s) => s.startsWith(':'));
  if (new Set(names).size !== names.length) return 'a parameter name appears twice';
  if (RESERVED_PREFIXES.some((r) => path === r || path.startsWith(r.endsWith('/') ? r : `${r}/`))) return `${path} is under a path the server owns (${RESERVED_PREFIXES.join(', ')})`;
  return null;
}

/** True when `code` may be sent by application code (a registered error code). */
export function isRegisteredCode(code: string): boolean {
  return lookupCode(code) !== undefined;
}
