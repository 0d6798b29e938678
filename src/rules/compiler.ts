/**
 * Compiles filter expressions and access rules (spec 1-core-api.md, "Filter grammar", "Access
 * rules") and `sort` parameters ("List query parameters") to SQLite.
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
 * The compiled SQL is always a self-contained boolean term (safe to AND with other clauses);
 * AND/OR operands may be reordered and grouped to stay within SQLite's parser limits (sql-shape.ts).
 */
import { ApiError } from '../errors/api-error.js';
import { bindValue, type SqlValue } from '../store/bind.js';
import type { Collection } from '../collections/types.js';
import { parseFilter, type CompareExpr, type Expr, type InExpr, type Literal, type Operand } from './parser.js';
import { PathResolver, quoteIdent, resolveColumn, type HopRule, type ResolvedPath, type SchemaLookup } from './paths.js';
import { HIDDEN_AUTH_COLUMNS } from '../collections/types.js';
import { nowDate } from '../collections/fields/index.js';
import { checkShape, joinShaped, leafShape, type Shaped } from './sql-shape.js';
import { likeValue, readPath, scaleDecimal, scaleValue, wrapLikeSql } from './values.js';

export type { SchemaLookup } from './paths.js';

/** One `?` of a compiled expression: a fixed value, or a request value resolved by bindParams. */
export type ParamSlot =
  | { kind: 'value'; value: SqlValue }
  /** @request.auth.<field>; `of`: an `id` compared with record ids of that collection (see bindParams) */
  | { kind: 'auth'; path: string; like?: boolean; scale?: number; of?: string }
  | { kind: 'data'; path: string; like?: boolean; scale?: number } // @request.data.<field>
  | { kind: 'method'; like?: boolean }
  | { kind: 'account'; field: 'id' | 'role'; like?: boolean }
  /** the current time as a date string (expiry clauses of relation hops) */
  | { kind: 'now' };

/** A boolean SQL term plus its parameter slots, in `?` order, and facts about what it reads. */
export interface CompiledExpr {
  sql: string;
  params: ParamSlot[];
  /** the `@request.auth.*` paths it reads (`id`, `collectionName`, `profile.x`, …) */
  authPaths: string[];
  /** whether it reads the record (any field path): false means it depends on the request alone */
  readsRecord: boolean;
  /**
   * The owner shape: the expression is exactly `<field> = @request.auth.id` (either order) on
   * one of the collection's own fields; `of` is the collection a relation field's ids belong to.
   */
  owner: { field: string; of: string | null } | null;
}

/**
 * `mode: 'filter'` for client input (hidden fields and hidden `@request.auth.*` columns refused),
 * `'rule'` for access rules; `alias` names the record table. `superuser` (filters only): the
 * caller is a superuser, so relation hops skip the targets' view rules and emails are not masked;
 * a filter compiled without it is safe for any caller.
 */
export interface CompileOptions {
  mode: 'filter' | 'rule';
  alias: string;
  superuser?: boolean;
}

/** What `@request.*` macros read: the authenticated record (or null), the request body, the HTTP method. */
export interface RequestContext {
  auth: Record<string, unknown> | null;
  data: Record<string, unknown> | null;
  method: string;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LIKE_ESCAPE = ` ESCAPE '\\'`;
const MAX_SORT_FIELDS = 16;

interface Frag {
  sql: string;
  params: ParamSlot[];
}

/**
 * Parses (cached) and compiles `src` into a boolean SQL term over the record table aliased
 * `opts.alias`, e.g. `r."title" = ?`.
 * @throws ApiError 400 `bad_request` for syntax errors, unknown fields or paths, hidden fields in
 *   `filter` mode, encrypted fields in either mode, fixed-point literals too precise to compare,
 *   and expressions too complex for SQLite's parser.
 */
export function compileExpression(src: string, collection: Collection, schema: SchemaLookup, opts: CompileOptions): CompiledExpr {
  if (!IDENT.test(opts.alias)) throw new Error(`compileExpression: invalid alias ${JSON.stringify(opts.alias)}`);
  const ast = parseFilter(src);
  const guarded = opts.mode === 'filter' && !opts.superuser;
  const paths = new PathResolver(collection, schema, opts.mode, opts.alias, guarded, guarded ? hopViewRule(schema) : null);
  const compiler = new ExprCompiler(paths, opts.mode);
  const shaped = checkShape(compiler.expr(ast));
  return { sql: shaped.sql, params: shaped.params, authPaths: [...compiler.authPaths], readsRecord: paths.readsRecord, owner: ownerShape(ast, collection) };
}

/** CompiledExpr.owner: `<field> = @request.auth.id` or `@request.auth.id = <field>`, else null. */
function ownerShape(ast: Expr, c: Collection): CompiledExpr['owner'] {
  if (ast.type !== 'compare' || ast.op !== '=') return null;
  const isAuthId = (o: Operand) => o.type === 'macro' && o.macro === 'auth' && o.path === 'id';
  const side = isAuthId(ast.right) ? ast.left : isAuthId(ast.left) ? ast.right : null;
  if (side?.type !== 'field' || side.path.length !== 1) return null;
  const field = c.fields.find((f) => f.name === side.path[0]);
  if (!field) return null;
  return { field: field.name, of: field.type === 'relation' ? (field.options.collectionId ?? null) : null };
}

/** The view rule of a relation hop's target, compiled over the hop's alias (PathResolver). */
function hopViewRule(schema: SchemaLookup): HopRule {
  return (target, alias) => {
    const src = target.viewRule;
    if (src === null || src.trim() === '') return 'locked';
    if (src.trim() === '@public') return null;
    return compileExpression(src, target, schema, { mode: 'rule', alias });
  };
}

/**
 * What `@request.auth.id` binds to where it is compared with record ids of a collection the
 * caller does not belong to: a string no record id can equal (ids are `[a-z0-9]`).
 */
const FOREIGN_ID = '#';

/**
 * Resolves every slot of `expr` for one request. `@request.auth.*` is `''` when anonymous and
 * null for a field the auth record lacks, and `@request.auth.id` compared with ids of another
 * collection than the caller's matches none; `@request.data.*` is null when absent;
 * `@request.account.*` is always `''` (no tenancy resolver yet). Objects/arrays bind as JSON text.
 */
export function bindParams(expr: CompiledExpr, ctx: RequestContext): SqlValue[] {
  return expr.params.map((slot) => {
    let value: SqlValue;
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
      case 'method':
        value = ctx.method;
        break;
      case 'account':
        value = '';
        break;
      case 'now':
        return nowDate();
    }
    if (slot.like) return likeValue(value);
    if ((slot.kind === 'auth' || slot.kind === 'data') && slot.scale !== undefined) return scaleValue(value, slot.scale);
    return value;
  });
}

/**
 * Compiles a `sort` parameter (`-created,title`, `+` optional, `-` descending) to an ORDER BY
 * body such as `r."created" DESC, r."title" ASC`. Accepts the collection's own columns (not
 * hidden or encrypted ones), `@random` and `@rowid`; empty segments are ignored. For a caller
 * who is not a superuser (`superuser` false) an auth collection's `email` sorts as NULL where it
 * is private (`emailVisibility` off), so the order reveals nothing of hidden addresses.
 * @throws ApiError 400 `Invalid sort: …` for unknown/hidden/encrypted fields or more than 16 fields.
 */
export function compileSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser = false): string {
  void schema; // sorts are over the collection's own columns; kept for signature symmetry
  if (!IDENT.test(alias)) throw new Error(`compileSort: invalid alias ${JSON.stringify(alias)}`);
  const fail = (why: string): never => {
    throw ApiError.badRequest(`Invalid sort: ${why}.`);
  };
  if (src.length > 8192) fail('the sort parameter is too long');
  const terms: string[] = [];
  for (const raw of src.split(',')) {
    let name = raw.trim();
    if (name === '') continue;
    if (terms.length === MAX_SORT_FIELDS) fail(`at most ${MAX_SORT_FIELDS} sort fields are allowed`);
    let dir = 'ASC';
    if (name[0] === '-' || name[0] === '+') {
      dir = name[0] === '-' ? 'DESC' : 'ASC';
      name = name.slice(1).trim();
    }
    if (name === '@random') terms.push(`RANDOM() ${dir}`);
    else if (name === '@rowid') terms.push(`${alias}.rowid ${dir}`);
    else if (!IDENT.test(name)) fail(`unknown field ${JSON.stringify(name.slice(0, 64))}`);
    else {
      resolveColumn(collection, name, 'filter', name, 'Invalid sort');
      if (!superuser && isPrivateEmail(collection, name)) terms.push(`(CASE WHEN ${alias}."emailVisibility" <> 0 THEN ${alias}."email" END) ${dir}`);
      else terms.push(`${alias}.${quoteIdent(name)} ${dir}`);
    }
  }
  return terms.join(', ');
}

/** Whether column `name` of `c` holds addresses that are private unless `emailVisibility` is on. */
export function isPrivateEmail(c: Collection, name: string): boolean {
  return c.type === 'auth' && name === 'email';
}

interface Side extends Frag {
  sources: string[];
  conds: string[];
  condParams: ParamSlot[];
}

const isNullLiteral = (o: Operand): boolean => o.type === 'literal' && o.value === null;

class ExprCompiler {
  /** `@request.auth.*` paths the expression reads (CompiledExpr.authPaths). */
  readonly authPaths = new Set<string>();

  constructor(
    private readonly paths: PathResolver,
    private readonly mode: CompileOptions['mode'],
  ) {}

  expr(e: Expr): Shaped<ParamSlot> {
    if (e.type === 'compare' || e.type === 'in') {
      const frag = e.type === 'compare' ? this.compare(e) : this.inList(e);
      return leafShape(frag.sql, frag.params);
    }
    // `a || (b || c)` is one OR of three terms: fewer parentheses for SQLite to parse.
    const flat: Expr[] = [];
    const collect = (t: Expr): void => {
      if (t.type === e.type) t.terms.forEach(collect);
      else flat.push(t);
    };
    collect(e);
    return joinShaped(e.type === 'and' ? 'AND' : 'OR', flat.map((t) => this.expr(t)));
  }

  private compare(e: CompareExpr): Frag {
    let { left, right } = e;
    const op = e.op;
    if ((op === '=' || op === '!=') && isNullLiteral(left) && !isNullLiteral(right)) [left, right] = [right, left];
    const pl = left.type === 'field' ? this.paths.resolve(left.path) : undefined;
    const pr = right.type === 'field' ? this.paths.resolve(right.path) : undefined;
    const like = op === '~' || op === '!~';
    const L = this.side(left, pl, like ? undefined : pr?.scale, false, pr);
    const R = this.side(right, pr, like ? undefined : pl?.scale, like, pl);
    const sources = [...L.sources, ...R.sources];
    const conds = [...L.conds, ...R.conds];
    const condParams = [...L.condParams, ...R.condParams];

    if (isNullLiteral(right) && (op === '=' || op === '!=')) return this.nullTest(L, sources, conds, condParams, op === '=');
    const params = [...L.params, ...R.params];
    const negative = op === '!=' || op === '!~';
    let pred: string;
    if (like) pred = `${L.sql} LIKE ${R.sql}${LIKE_ESCAPE}`;
    else if (op === '!=') pred = `${L.sql} IS ${R.sql}`;
    else pred = `${L.sql} ${op} ${R.sql}`;

    if (sources.length > 0) {
      const sql = exists(sources, conds, pred);
      return { sql: negative ? `NOT ${sql}` : sql, params: [...condParams, ...params] };
    }
    if (op === '!=') return { sql: `${L.sql} IS NOT ${R.sql}`, params };
    if (op === '!~') return { sql: `NOT COALESCE(${pred}, 0)`, params };
    return { sql: pred, params };
  }

  /** `x = null` (isNull) / `x != null` under the set semantics described at the top. */
  private nullTest(L: Frag, sources: string[], conds: string[], condParams: ParamSlot[], isNull: boolean): Frag {
    if (sources.length === 0) return { sql: `${L.sql} ${isNull ? 'IS NULL' : 'IS NOT NULL'}`, params: L.params };
    const any = exists(sources, conds, `${L.sql} IS NOT NULL`);
    return { sql: isNull ? `NOT ${any}` : any, params: [...condParams, ...L.params] };
  }

  private inList(e: InExpr): Frag {
    // The account list is always empty until a tenancy resolver exists, so `x in
    // @request.account.ids` can never hold: rules that rely on it fail closed.
    if (e.accountIds || e.items.length === 0) return { sql: '0', params: [] };
    const path = e.left.type === 'field' ? this.paths.resolve(e.left.path) : undefined;
    const L = this.side(e.left, path, undefined, false);
    const members = e.items.filter((item) => item.value !== null);
    const parts: Frag[] = [];
    if (members.length > 0) {
      const pred = `${L.sql} IN (${members.map(() => '?').join(', ')})`;
      const params = [...L.params, ...members.map((m) => literalSlot(m, path?.scale, false))];
      parts.push(L.sources.length > 0 ? { sql: exists(L.sources, L.conds, pred), params: [...L.condParams, ...params] } : { sql: pred, params });
    }
    if (members.length < e.items.length) parts.push(this.nullTest(L, L.sources, L.conds, L.condParams, true));
    if (parts.length === 1) return parts[0];
    return { sql: `(${parts[0].sql} OR ${parts[1].sql})`, params: [...parts[0].params, ...parts[1].params] };
  }

  /**
   * SQL for one operand; `scale` comes from a fixed-point field on the other side, `other` is the
   * other side's path (an `@request.auth.id` compared with record ids is qualified by their collection).
   */
  private side(o: Operand, path: ResolvedPath | undefined, scale: number | undefined, like: boolean, other?: ResolvedPath): Side {
    if (path) {
      const vp = path.valueParams;
      // wrapLikeSql repeats its operand three times
      const params = like && vp.length ? [...vp, ...vp, ...vp] : vp;
      return { sql: like ? wrapLikeSql(path.value) : path.value, params, sources: path.sources, conds: path.conds, condParams: path.condParams };
    }
    const plain = { sources: [], conds: [], condParams: [] };
    if (o.type === 'literal') return { sql: '?', params: [literalSlot(o, scale, like)], ...plain };
    if (o.type !== 'macro') throw new Error('unreachable: unresolved field operand');
    const opt = like ? { like: true } : {};
    let slot: ParamSlot;
    if (o.macro === 'auth') {
      const head = o.path.split('.')[0];
      if (this.mode === 'filter' && (HIDDEN_AUTH_COLUMNS as readonly string[]).includes(head)) {
        throw ApiError.badRequest(`Invalid filter: @request.auth.${head} is hidden and cannot be used here.`);
      }
      this.authPaths.add(o.path);
      const of = o.path === 'id' && other?.idsOf ? { of: other.idsOf } : {};
      slot = { kind: 'auth', path: o.path, ...opt, ...of, ...(scale === undefined ? {} : { scale }) };
    } else if (o.macro === 'data') slot = { kind: 'data', path: o.path, ...opt, ...(scale === undefined ? {} : { scale }) };
    else if (o.macro === 'method') slot = { kind: 'method', ...opt };
    else slot = { kind: 'account', field: o.macro === 'account.id' ? 'id' : 'role', ...opt };
    return { sql: '?', params: [slot], ...plain };
  }
}

function exists(sources: string[], conds: string[], pred: string): string {
  return `EXISTS (SELECT 1 FROM ${sources.join(', ')} WHERE ${[...conds, `(${pred})`].join(' AND ')})`;
}

/** The bound value of a literal: LIKE-wrapped, fixed-point scaled, or as written. */
function literalSlot(lit: Literal, scale: number | undefined, like: boolean): ParamSlot {
  const v = lit.value;
  if (like) return { kind: 'value', value: likeValue(bindValue(v)) };
  if (scale !== undefined && (typeof v === 'number' || typeof v === 'string')) {
    const scaled = scaleDecimal(typeof v === 'number' ? lit.raw : v, scale);
    if (scaled === undefined) {
      const shown = typeof v === 'number' ? lit.raw : JSON.stringify(v.slice(0, 64));
      throw ApiError.badRequest(
        `Invalid filter: ${shown} at position ${lit.pos} is not a decimal with at most ${scale} decimal places, as the fixed-point field it is compared with requires.`,
      );
    }
    return { kind: 'value', value: scaled };
  }
  return { kind: 'value', value: bindValue(v) };
}
