/**
 * Compiles filter expressions and access rules (docs/rules.md, "Filters", "Rules") and `sort`
 * parameters (docs/api.md, "List records") to SQL: the dialect-neutral side of the compiler (its
 * types, the facts it returns, binding values for a request). The emitter is
 * src/store/sql/rule-sql.ts, with a dialect per backend (src/store/sqlite/rule-sql.ts,
 * src/store/pg/rule-sql.ts).
 *
 * Every literal and every `@request.*` value becomes a `?` parameter; the only identifiers that
 * reach the SQL are names found in the schema, double-quoted. Compilation happens once per
 * (expression, schema); `bindParams` then produces the parameter array for one request.
 *
 * Semantics, for a path P that yields a set of values (it crosses a relation or ends on a
 * multi-valued select/relation/file field) and a scalar path alike:
 * - `=`, `<`, `<=`, `>`, `>=`, `~`, `in`: true when ANY value of P satisfies the comparison;
 * - `!=`, `!~`: true when NO value of P is equal / like (so a NULL or empty P counts as different);
 * - `P = null`: P holds no non-null value; `P != null`: it holds one.
 * `x in (…, null)` means `x in (…) || x = null`. A NULL compared with `=`, `<`, `~`, … is false,
 * so an absent `@request.data.x` never makes `field = @request.data.x` true (fails closed).
 * A back-relation (`comments_via_post.x`) is such a set; an `@collection.<name>:<alias>.<field>`
 * operand reads one row of that collection, shared by the terms of an AND reading the alias,
 * inside an EXISTS (docs/rules.md, "Joining other collections").
 * A path starting with a single-valued relation compiles to an uncorrelated semi-join
 * (`r."country" IN (SELECT "id" FROM "countries" … )`) so the planner can start from either side;
 * other set-valued paths to a correlated EXISTS (store/sql/rule-sql.ts).
 * The compiled SQL is always a self-contained boolean term (safe to AND with other clauses);
 * AND/OR operands may be reordered and grouped to stay within SQLite's parser limits (store/sqlite/sql-shape.ts).
 */
import type { SqlValue } from '../store/bind.js';
import { bindValue } from '../store/bind.js';
import type { Collection } from '../model/schema.js';
import { parseFilter } from './parser.js';
import type { CompiledExpr, CompileOptions, Expr, Operand, ParamSlot, SchemaLookup, SqlDialectName } from '../store/rule-types.js';
import { likeValue, readPath, scaleValue } from '../store/sql/rule-values.js';
import { dateMacroValue } from './datetime.js';
import { nowDate } from '../collections/fields/index.js';
import { knownApiError } from '../errors/api-error.js';
import { ruleEmitter } from './emitters.js';

/** What `@request.*` macros read: the authenticated record (or null), the request body, the HTTP method. */
export interface RequestContext {
  auth: Record<string, unknown> | null;
  data: Record<string, unknown> | null;
  /** the operation's method (`GET` for list and view, `PATCH` for update, …): `@request.method` */
  method: string;
  /** the active account (tenancy): absent without a resolver or an account the principal belongs to */
  account?: AccountContext;
  /** the HTTP request served, for `@request.query.*` and `@request.headers.*` (absent: NULL) */
  request?: RuleRequest | null;
  /** `@request.context` (absent: NULL) */
  context?: RuleContext;
}

/**
 * The HTTP request a rule or filter is evaluated for, as `@request.query.*` and
 * `@request.headers.*` read it (docs/rules.md, "Request macros"); the HTTP layer's request is one.
 * `method`: the HTTP method (which headers were read depends on it, see HEADERS); `query`: the
 * raw query string without `?`; `headers`: the headers the HTTP layer read, by its field names
 * (its RequestHeaders: `userAgent`, `contentType`, …).
 */
export interface RuleRequest {
  readonly method?: string;
  readonly query?: string;
  readonly headers?: object;
}

/**
 * `@request.context`, as PocketBase names the ways a rule is reached: `default` (the record
 * routes, batches and application code), `oauth2` (the create rule of an OAuth2 sign-up),
 * `realtime` (a subscription's event), `protectedFile` (a file download). svc has no other: it
 * checks no rule in its password and OTP logins (docs/rules.md, "Request macros").
 */
export type RuleContext = 'default' | 'oauth2' | 'realtime' | 'protectedFile';

/**
 * The headers `@request.headers.<name>` can read, by PocketBase's name (lower case, `-` written
 * `_`): the HTTP layer's field and whether the header is read on every request (`always`) or only
 * on requests with a body (POST, PATCH, PUT, DELETE), which is what both transports copy
 * (src/http/server.ts, node-server.ts). Any other header, or one not read for the request, is NULL.
 */
const HEADERS: ReadonlyMap<string, { field: string; always: boolean }> = new Map([
  ['authorization', { field: 'authorization', always: true }],
  ['cookie', { field: 'cookie', always: true }],
  ['x_request_id', { field: 'requestId', always: true }],
  ['content_type', { field: 'contentType', always: false }],
  ['user_agent', { field: 'userAgent', always: false }],
  ['origin', { field: 'origin', always: false }],
  ['accept', { field: 'accept', always: false }],
  ['x_forwarded_for', { field: 'forwardedFor', always: false }],
  ['x_real_ip', { field: 'realIp', always: false }],
]);
const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** `@request.headers.<name>` for `req`: the header's text, NULL when absent, empty or not read. */
function headerValue(req: RuleRequest | null | undefined, name: string): SqlValue {
  const h = HEADERS.get(name);
  if (!h || !req?.headers || (!h.always && !BODY_METHODS.has(req.method ?? ''))) return null;
  const v = (req.headers as Record<string, unknown>)[h.field];
  return typeof v === 'string' && v !== '' ? v : null;
}

/**
 * The principal's active account and role, and every account it belongs to (docs/framework.md,
 * "Tenancy").
 */
export interface AccountContext {
  id: string;
  role: string;
  ids: string[];
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses and compiles `src` into a boolean SQL term over the record table aliased `opts.alias`,
 * e.g. `r."title" = ?`, with the facts callers need (CompiledExpr).
 * @throws ApiError 400 `bad_request` for syntax errors, unknown fields or paths, hidden fields in
 *   `filter` mode, encrypted fields in either mode, fixed-point literals too precise to compare,
 *   and expressions too complex for SQLite's parser.
 */
export function compileExpression(src: string, collection: Collection, schema: SchemaLookup, opts: CompileOptions): CompiledExpr {
  if (!IDENT.test(opts.alias)) throw new Error(`compileExpression: invalid alias ${JSON.stringify(opts.alias)}`);
  const ast = guardAccount(parseFilter(src));
  try {
    return { ...ruleEmitter(opts.dialect ?? 'sqlite').emitExpression(ast, collection, schema, opts), owner: ownerShape(ast, collection) };
  } catch (err) {
    throw asApiError(err);
  }
}

/**
 * The emitters' typed errors (InvalidQuery, QueryTooComplex of src/store/errors/store-errors.ts)
 * as the API answers them, through the one mapping (knownApiError), so this module's callers (rule
 * checks, lists, realtime) keep getting the ApiError 400 its functions document; anything else as
 * it is.
 */
function asApiError(err: unknown): unknown {
  return knownApiError(err) ?? err;
}

const isAccountMacro = (o: Operand): boolean => o.type === 'macro' && (o.macro === 'account.id' || o.macro === 'account.role');

/**
 * Makes every comparison that reads `@request.account.id` or `.role` false for a principal
 * without an active account (docs/framework.md, "Tenancy"): the term becomes
 * `<term> && @request.account.id != ''`, the macros binding `''` then. Without the guard
 * `account = @request.account.id` matched rows whose account is empty, and `!=`, `!~` or
 * `@request.account.id != null` held for a stranger. The grammar has no negation above a
 * comparison, so guarding the leaves is enough. Returns `ast` itself when it reads no account
 * macro (parsed trees are cached and shared: never mutated).
 */
function guardAccount(ast: Expr): Expr {
  if (ast.type === 'and' || ast.type === 'or') {
    const terms = ast.terms.map(guardAccount);
    return terms.every((t, i) => t === ast.terms[i]) ? ast : { type: ast.type, terms };
  }
  const reads = ast.type === 'in' ? isAccountMacro(ast.left) : isAccountMacro(ast.left) || isAccountMacro(ast.right);
  if (!reads) return ast;
  const pos = ast.pos;
  const present: Expr = { type: 'compare', op: '!=', left: { type: 'macro', macro: 'account.id', path: '', pos }, right: { type: 'literal', value: '', raw: '', pos }, pos };
  return { type: 'and', terms: [ast, present] };
}

/** CompiledExpr.owner: `<field> = @request.auth.id` or `@request.auth.id = <field>`, else null. */
function ownerShape(ast: Expr, c: Collection): CompiledExpr['owner'] {
  if (ast.type !== 'compare' || ast.op !== '=') return null;
  const isAuthId = (o: Operand) => o.type === 'macro' && o.macro === 'auth' && o.path === 'id' && o.modifier === undefined;
  const side = isAuthId(ast.right) ? ast.left : isAuthId(ast.left) ? ast.right : null;
  if (side?.type !== 'field' || side.path.length !== 1 || side.modifier !== undefined || side.join) return null;
  const field = c.fields.find((f) => f.name === side.path[0]);
  if (!field) return null;
  return { field: field.name, of: field.type === 'relation' ? (field.options.collectionId ?? null) : null };
}

/**
 * What `@request.auth.id` binds to where it is compared with record ids of a collection the
 * caller does not belong to: a string no record id can equal (ids are `[a-z0-9]`).
 */
const FOREIGN_ID = '#';

/**
 * Resolves every slot of `expr` for one request. `@request.auth.*` is `''` when anonymous and
 * null for a field the auth record lacks, and `@request.auth.id` compared with ids of another
 * collection than the caller's matches none; `@request.data.*` (`@request.body.*`) is null when
 * absent; `@request.query.<name>` is the query parameter's first value, `@request.headers.<name>`
 * a header as HEADERS says, `@request.context` the context, each null when absent or unknown;
 * `@request.account.id`/`.role` are `''` and `.ids` empty unless the app's tenancy resolver placed
 * the principal in an account (every comparison with them is then false: guardAccount); the
 * datetime macros read one clock instant per call (UTC; src/rules/datetime.ts). Objects/arrays bind as JSON text.
 */
export function bindParams(expr: CompiledExpr, ctx: RequestContext): SqlValue[] {
  // one instant for every datetime macro of the request; the query string parsed once, if read
  let nowMs: number | undefined;
  let query: URLSearchParams | undefined;
  return expr.params.map((slot) => {
    let value: SqlValue;
    if ('mod' in slot && (slot.mod === 'isset' || slot.mod === 'length')) {
      value = slot.mod === 'isset' ? (isSet(ctx, slot) ? 1 : 0) : itemCount(slot.kind === 'data' && ctx.data !== null ? readPath(ctx.data, slot.path) : undefined);
      return slot.like ? likeValue(value) : value;
    }
    switch (slot.kind) {
      case 'value':
        return slot.value;
      case 'auth':
        if (ctx.auth === null) value = '';
        // One auth identity, one collection: a caller of another collection is no record's id here.
        else if (slot.of !== undefined && ctx.auth.collectionId !== slot.of) value = FOREIGN_ID;
        else value = bindValue(readPath(ctx.auth, slot.path));
        break;
      case 'data':
        value = ctx.data === null ? null : bindValue(readPath(ctx.data, slot.path));
        break;
      case 'query':
        if (ctx.request?.query === undefined) value = null;
        else value = (query ??= new URLSearchParams(ctx.request.query)).get(slot.path);
        break;
      case 'headers':
        value = headerValue(ctx.request, slot.path);
        break;
      case 'context':
        value = ctx.context ?? null;
        break;
      case 'method':
        value = ctx.method;
        break;
      case 'account':
        if (slot.field === 'ids') return JSON.stringify(ctx.account?.ids ?? []);
        // '' without an account; compileExpression makes every comparison with it false (guardAccount)
        value = ctx.account ? ctx.account[slot.field] : '';
        break;
      case 'now':
        return nowDate();
      case 'date':
        value = dateMacroValue(slot.name, (nowMs ??= Date.now()));
        break;
    }
    if ('mod' in slot && slot.mod === 'lower' && typeof value === 'string') value = asciiLower(value);
    if (slot.like) return likeValue(value);
    if ('scale' in slot && slot.scale !== undefined) return scaleValue(value, slot.scale);
    return value;
  });
}

/** `:isset` of a body, query or header slot: the key was sent (a header: read and not empty). */
function isSet(ctx: RequestContext, slot: ParamSlot): boolean {
  if (!('path' in slot)) return false;
  if (slot.kind === 'data') return ctx.data !== null && readPath(ctx.data, slot.path) !== undefined;
  if (slot.kind === 'query') return ctx.request?.query !== undefined && new URLSearchParams(ctx.request.query).has(slot.path);
  return slot.kind === 'headers' && headerValue(ctx.request, slot.path) !== null;
}

/** `:length` of a body value: an array's items; none for null, absent or `''`; one for any other value. */
function itemCount(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  return v === undefined || v === null || v === '' ? 0 : 1;
}

/** ASCII letters lower-cased, every other character kept: what `lower()` does on both backends. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/**
 * Compiles a `sort` parameter (`-created,title`, `+` optional, `-` descending) to an ORDER BY
 * body such as `r."created" DESC, r."title" ASC`. Accepts the collection's own columns (not
 * hidden or encrypted ones), `@random` and `@rowid`; empty segments are ignored. For a caller
 * who is not a superuser (`superuser` false) an auth collection's `email` sorts as NULL where it
 * is private (`emailVisibility` off), so the order reveals nothing of hidden addresses.
 * `dialect`: the SQL emitted (see CompileOptions.dialect); on PostgreSQL `@rowid` is the `_rowid` identity column.
 * @throws ApiError 400 `Invalid sort: …` for unknown/hidden/encrypted fields or more than 16 fields.
 */
export function compileSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser = false, dialect: SqlDialectName = 'sqlite'): string {
  try {
    return ruleEmitter(dialect).emitSort(src, collection, schema, alias, superuser);
  } catch (err) {
    throw asApiError(err);
  }
}
