/**
 * The SQLite emitter of the rule compiler (src/rules/compiler.ts): filter and rule ASTs to
 * boolean SQL terms, `sort` parameters to ORDER BY bodies. Every literal and every `@request.*`
 * value becomes a `?` parameter slot; the only identifiers that reach the SQL are names found in
 * the schema, double-quoted. See the compiler for the semantics of set-valued paths.
 */
import { ApiError } from '../../errors/api-error.js';
import { bindValue } from '../bind.js';
import type { Collection } from '../../collections/types.js';
import { HIDDEN_AUTH_COLUMNS } from '../../collections/types.js';
import { parseFilter, type CompareExpr, type Expr, type InExpr, type Literal, type Operand } from '../../rules/parser.js';
import { resolveColumn, type SchemaLookup } from '../../rules/paths.js';
import { isPrivateEmail, type CompileOptions, type CompiledExpr, type ParamSlot } from '../../rules/compiler.js';
import { likeValue, scaleDecimal } from '../../rules/values.js';
import { PathResolver, quoteIdent, type HopRule, type PathDialect, type ResolvedPath } from '../sql/rule-paths.js';
import { checkShape, joinShaped, leafShape, type Shaped } from './sql-shape.js';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LIKE_ESCAPE = ` ESCAPE '\\'`;
const MAX_SORT_FIELDS = 16;

/** How SQLite spells paths (PathDialect): JSON arrays and json columns are text. */
export const sqlitePathDialect: PathDialect = {
  // NULL/'' are empty, a bare value (not JSON) is one element
  elements: (col, alias) =>
    `json_each(CASE WHEN json_valid(${col}) THEN ${col} WHEN ${col} IS NULL OR ${col} = '' THEN '[]' ELSE json_array(${col}) END) ${alias}`,
  jsonPath: (col, segments) => `json_extract(CASE WHEN json_valid(${col}) THEN ${col} END, '$.${segments.join('.')}')`,
  jsonColumn: (col) => col,
  textParam: '?',
  falseSql: '0',
};

interface Frag {
  sql: string;
  params: ParamSlot[];
  /** a positive semi-join over this root column (CompiledExpr.drivers) */
  driver?: string;
}

/** The SQL of an expression and the facts only emission finds (CompiledExpr without `owner`). */
export function emitExpression(ast: Expr, collection: Collection, schema: SchemaLookup, opts: CompileOptions): Omit<CompiledExpr, 'owner'> {
  const guarded = opts.mode === 'filter' && !opts.superuser;
  const paths = new PathResolver(sqlitePathDialect, collection, schema, opts.mode, opts.alias, guarded, guarded ? hopViewRule(schema) : null);
  const compiler = new ExprCompiler(paths, opts.mode);
  const shaped = checkShape(compiler.expr(ast, true));
  return { sql: shaped.sql, params: shaped.params, authPaths: [...compiler.authPaths], readsRecord: paths.readsRecord, drivers: compiler.drivers };
}

/** The view rule of a relation hop's target, compiled over the hop's alias (PathResolver). */
function hopViewRule(schema: SchemaLookup): HopRule {
  return (target, alias) => {
    const src = target.viewRule;
    if (src === null || src.trim() === '') return 'locked';
    if (src.trim() === '@public') return null;
    return emitExpression(parseFilter(src), target, schema, { mode: 'rule', alias });
  };
}

/** compileSort's SQLite emitter (see src/rules/compiler.ts). */
export function emitSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser = false): string {
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
  // a parameter of separators only (`sort=,`) names no field: malformed, unlike a blank one
  if (terms.length === 0 && src.trim() !== '') fail('no field given');
  return terms.join(', ');
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
  /** The semi-joins every matching row must satisfy (CompiledExpr.drivers). */
  readonly drivers: Driver[] = [];

  constructor(
    private readonly paths: PathResolver,
    private readonly mode: CompileOptions['mode'],
  ) {}

  /** `conjunct`: `e` is the whole expression or one of its top-level AND terms. */
  expr(e: Expr, conjunct = false): Shaped<ParamSlot> {
    if (e.type === 'compare' || e.type === 'in') {
      const frag = e.type === 'compare' ? this.compare(e) : this.inList(e);
      if (conjunct && frag.driver) this.drivers.push({ column: frag.driver, sql: frag.sql, params: frag.params });
      return leafShape(frag.sql, frag.params);
    }
    // `a || (b || c)` is one OR of three terms: fewer parentheses for SQLite to parse.
    const flat: Expr[] = [];
    const collect = (t: Expr): void => {
      if (t.type === e.type) t.terms.forEach(collect);
      else flat.push(t);
    };
    collect(e);
    return joinShaped(e.type === 'and' ? 'AND' : 'OR', flat.map((t) => this.expr(t, conjunct && e.type === 'and')));
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

    // one side crosses a single-valued relation and the other is a value: an uncorrelated semi-join
    const head = pl && !pr ? pl.head : pr && !pl ? pr.head : undefined;
    if (isNullLiteral(right) && (op === '=' || op === '!=')) return this.nullTest(L, sources, conds, condParams, op === '=', head);
    const params = [...L.params, ...R.params];
    const negative = op === '!=' || op === '!~';
    let pred: string;
    if (like) pred = `${L.sql} LIKE ${R.sql}${LIKE_ESCAPE}`;
    else if (op === '!=') pred = `${L.sql} IS ${R.sql}`;
    else pred = `${L.sql} ${op} ${R.sql}`;

    if (sources.length > 0) return some(head, sources, conds, pred, negative, [...condParams, ...params]);
    if (op === '!=') return { sql: `${L.sql} IS NOT ${R.sql}`, params };
    if (op === '!~') return { sql: `NOT COALESCE(${pred}, 0)`, params };
    return { sql: pred, params };
  }

  /** `x = null` (isNull) / `x != null` under the set semantics described at the top. */
  private nullTest(L: Frag, sources: string[], conds: string[], condParams: ParamSlot[], isNull: boolean, head?: ResolvedPath['head']): Frag {
    if (sources.length === 0) return { sql: `${L.sql} ${isNull ? 'IS NULL' : 'IS NOT NULL'}`, params: L.params };
    const any = some(head, sources, conds, `${L.sql} IS NOT NULL`, isNull, [...condParams, ...L.params]);
    // `x != null` holds for most rows: never a driver
    return { sql: any.sql, params: any.params };
  }

  private inList(e: InExpr): Frag {
    if (e.items.length === 0 && !e.accountIds) return { sql: '0', params: [] };
    const path = e.left.type === 'field' ? this.paths.resolve(e.left.path) : undefined;
    const L = this.side(e.left, path, undefined, false);
    if (e.accountIds) {
      // the principal's accounts, bound as one JSON array (empty without a tenancy resolver: never holds)
      const pred = `${L.sql} IN (SELECT value FROM json_each(?))`;
      const params: ParamSlot[] = [...L.params, { kind: 'account', field: 'ids' }];
      return L.sources.length > 0 ? some(path?.head, L.sources, L.conds, pred, false, [...L.condParams, ...params]) : { sql: pred, params };
    }
    const members = e.items.filter((item) => item.value !== null);
    const parts: Frag[] = [];
    if (members.length > 0) {
      const pred = `${L.sql} IN (${members.map(() => '?').join(', ')})`;
      const params = [...L.params, ...members.map((m) => literalSlot(m, path?.scale, false))];
      parts.push(L.sources.length > 0 ? some(path?.head, L.sources, L.conds, pred, false, [...L.condParams, ...params]) : { sql: pred, params });
    }
    if (members.length < e.items.length) parts.push(this.nullTest(L, L.sources, L.conds, L.condParams, true, path?.head));
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

/** A semi-join every matching row satisfies, over the root `column` (CompiledExpr.drivers). */
export interface Driver {
  column: string;
  sql: string;
  params: ParamSlot[];
}

/**
 * "Some value of the set-valued path satisfies `pred`" (or, `negated`, none does); `params` are
 * the conditions' then the predicate's. When the path starts with a single-valued relation
 * (`head`), the uncorrelated semi-join `<column> IN (SELECT <id> FROM … WHERE …)`: SQLite may then
 * start from either side, reading the related rows first through their own indexes and the
 * matching records through an index on the column, or walking the records (e.g. along a sort
 * index) and probing the subquery's result, which it computes once. Otherwise (a multi-valued
 * first hop, or a predicate that reads the record itself) a correlated EXISTS. Both mean the
 * same: the related row exists, passes every hop's conditions (expiry, view rule) and `pred`.
 * A NULL or empty column matches no related row, so the negated semi-join is NOT COALESCE(…, 0).
 */
function some(head: ResolvedPath['head'], sources: string[], conds: string[], pred: string, negated: boolean, params: ParamSlot[]): Frag {
  if (head) {
    const rest = [...conds.slice(1), `(${pred})`].join(' AND ');
    const sql = `${head.column} IN (SELECT ${head.id} FROM ${sources.join(', ')} WHERE ${rest})`;
    return negated ? { sql: `NOT COALESCE(${sql}, 0)`, params } : { sql, params, driver: head.column };
  }
  const sql = exists(sources, conds, pred);
  return { sql: negated ? `NOT ${sql}` : sql, params };
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

/** SQL doing what `wrapLike` (rules/values.ts) does, for a column or expression on the right of `~` / `!~`. */
export function wrapLikeSql(expr: string): string {
  const escaped = `replace(replace(${expr}, '\\', '\\\\'), '_', '\\_')`;
  return `(CASE WHEN instr(${expr}, '%') > 0 THEN ${expr} ELSE '%' || ${escaped} || '%' END)`;
}
