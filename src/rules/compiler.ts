/**
 * Compiles filter expressions and access rules (docs/rules.md, "Filters", "Rules") and `sort`
 * parameters (docs/api.md, "List records") to SQL: the dialect-neutral side of the compiler (its
 * types, the facts it returns, binding values for a request). The emitter is
 * src/store/sql/rule-sql.ts, with a dialect per backend (src/store/sqlite/rule-sql.ts,
 * src/store/pg/rule-sql.ts).
 *
 * Every literal and every `@request.*` value becomes a `?` parameter; the only identifiers that
 * reach the SQL are names found in the schema, double-quoted. Compilation happens once per
 * (expression, schema), and a client filter's once per shape (compileFilter: its text with the
 * string and number literals left out); `bindParams` then produces the parameter array for one
 * request.
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
import { literalToken, parseFilter } from './parser.js';
import { tokenize, type Token } from './lexer.js';
import { boundedCache, type LRUCache } from '../cache/bounded.js';
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
 * Where compileFilter keeps compiled filters, two bounded caches (src/cache/bounded.ts): `shapes`,
 * the expressions compiled per shape, and `texts`, the texts seen lately with their shape's
 * expression and their own literal values, so a text that repeats is not lexed again.
 */
export interface FilterCache {
  shapes: LRUCache<string, CompiledExpr>;
  texts: LRUCache<string, BoundFilter>;
}

/** A FilterCache of at most `max` shapes and `max` texts (a positive integer; boundedCache). */
export function filterCache(max: number): FilterCache {
  return { shapes: boundedCache(max), texts: boundedCache(max) };
}

/**
 * A client filter compiled for one text: `expr`, compiled for the text's shape (or, rarely, for
 * the text itself: compileFilter), and `literals`, the values its `literal` slots read for this
 * text (bindParams's third argument).
 */
export interface BoundFilter {
  expr: CompiledExpr;
  literals: SqlValue[];
}

/**
 * Compiles a client filter (`opts.mode` `filter`) once per shape: the text's tokens with each
 * string and number literal replaced by its class (the backend's RuleEmitter.literalClass:
 * nothing on SQLite, what PostgreSQL's casts depend on there) are the key in `cache`, after
 * `scope`, which names whatever else the SQL depends on (the caller's kind, the schema
 * generation, the collection). Texts differing only in such literals share one compiled
 * expression whose literal slots are bound per text; `true`, `false` and `null` stay part of the
 * shape (they compile differently). Each text's literals are then made as compiling would make
 * them (LIKE-wrapped, fixed-point scaled: src/store/sql/rule-sql.ts, bindLiterals); one whose
 * value falls in another class than the shape was compiled for (a scaled number beyond 64 bits,
 * on PostgreSQL) has the text compiled itself. A text met lately is answered from
 * `cache.texts` without being lexed.
 * @throws ApiError 400 as compileExpression for the same text, with the same message (a number
 *   beyond the double range, one too precise for its fixed-point field, at its own position)
 */
export function compileFilter(src: string, collection: Collection, schema: SchemaLookup, opts: CompileOptions, cache: FilterCache, scope: string): BoundFilter {
  const textKey = `${scope}\u0000${src}`;
  const known = cache.texts.get(textKey);
  if (known) return known;
  const emitter = ruleEmitter(opts.dialect ?? 'sqlite');
  const lits: Token[] = [];
  const key = `${scope}\u0000${shapeKey(tokenize(src), lits, emitter.literalClass)}`;
  let expr = cache.shapes.get(key);
  if (!expr) {
    expr = compileExpression(src, collection, schema, { ...opts, literalSlots: new Map(lits.map((t, i) => [t.pos, i])) });
    cache.shapes.set(key, expr);
  }
  let values: SqlValue[] | null;
  try {
    // a cached shape parsed: the literals can only fail where compiling this text would
    values = emitter.bindLiterals(expr.literals ?? [], lits.map(literalToken));
  } catch (err) {
    throw asApiError(err);
  }
  const out = values ? { expr, literals: values } : { expr: compileExpression(src, collection, schema, opts), literals: [] };
  cache.texts.set(textKey, out);
  return out;
}

/**
 * The shape of a token list (compileFilter): every token but the string and number literals as
 * written (paths and macros with their modifier and join alias), each literal as its kind and
 * `classOf` its value; the literal tokens are appended to `lits` in order. Tokens are separated
 * by a space, which no token's text holds once literals are left out.
 */
function shapeKey(tokens: readonly Token[], lits: Token[], classOf: (value: SqlValue) => string): string {
  let key = '';
  for (const t of tokens) {
    if (t.kind === 'string' || t.kind === 'number') {
      lits.push(t);
      key += t.kind === 'string' ? ` '${classOf(t.text)}` : ` #${classOf(Number(t.text))}`;
    } else if (t.kind === 'path' || t.kind === 'macro') {
      key += ` ${t.kind === 'macro' ? '@' : ''}${t.text}${t.alias === undefined ? '' : `|${t.alias}`}${t.modifier === undefined ? '' : `:${t.modifier}`}`;
    } else if (t.kind !== 'eof') key += ` ${t.text}`;
  }
  return key;
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
 * `literals`: a client filter's literal values for the text (BoundFilter.literals of compileFilter).
 */
export function bindParams(expr: CompiledExpr, ctx: RequestContext, literals: readonly SqlValue[] = NO_LITERALS): SqlValue[] {
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
      case 'literal': {
        if (slot.use >= literals.length) throw new Error('bindParams: a filter compiled for its shape needs its literal values');
        const v = literals[slot.use];
        return slot.map ? slot.map(v) : v;
      }
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

const NO_LITERALS: readonly SqlValue[] = [];

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
