/**
 * The rule emitter's dialect-neutral half (docs/rules.md, "Filters", "Rules"; docs/api.md, "List records";
 * ARCHITECTURE.md, "A read"): filter and rule ASTs to boolean SQL terms, `sort` parameters to
 * ORDER BY bodies, for src/rules/compiler.ts. Shared by both backends: the walk over AND/OR and
 * its bookkeeping (`@request.auth.*` paths read, semi-join drivers), operands (paths, literals
 * with fixed-point scaling, request macros as parameter slots), the set semantics of paths
 * (`some`: an uncorrelated semi-join or a correlated EXISTS), `null` tests, `in` lists, the view
 * rule every relation hop carries, where each `@collection` join's EXISTS goes (the terms of an
 * AND reading one alias share it; docs/rules.md, "Joining other collections"), and the sort
 * parameter's validation.
 *
 * What differs is the backend's `RuleDialect`: how an operand is represented and how two are
 * compared (SQLite compares its own values directly; PostgreSQL reproduces SQLite's type rules
 * explicitly, src/store/pg/rule-sql.ts), how AND/OR terms are arranged (SQLite keeps them within
 * its parser limits, src/store/sqlite/sql-shape.ts), and how a sort term is spelled.
 */
import { InvalidQuery } from '../errors/store-errors.js';
import { bindValue, type SqlValue } from '../bind.js';
import type { Collection, Field } from '../../model/schema.js';
import { HIDDEN_AUTH_COLUMNS, isPrivateEmail } from '../../model/schema.js';
import { resolveColumn } from './rule-fields.js';
import type { CollectionJoin, CompareExpr, CompareOp, CompileOptions, CompiledExpr, DateMacro, Expr, FilterParser, InExpr, Literal, LiteralUse, MacroOperand, Operand, ParamSlot, SchemaLookup } from '../rule-types.js';
import { likeValue, scaleDecimal } from './rule-values.js';
import { PathResolver, type HopRule, type PathDialect, type ResolvedPath } from './rule-paths.js';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_SORT_FIELDS = 16;

/** SQL text with its parameter slots (`?` from the SQLite emitter, SLOTs from the PostgreSQL one: src/store/slots.ts), in order. */
export interface Sql {
  sql: string;
  params: ParamSlot[];
}

/** A boolean term of one comparison, possibly a driver of the list plan. */
interface Frag extends Sql {
  /** a positive semi-join over this root column (CompiledExpr.drivers) */
  driver?: string;
}

/** A semi-join every matching row satisfies, over the root `column` (CompiledExpr.drivers). */
export interface Driver {
  column: string;
  sql: string;
  params: ParamSlot[];
}

/**
 * What a backend's rule emitter spells its own way. `V` is its operand (what a comparison reads:
 * SQL text, or a value model), `T` a compiled term as its AND/OR arrangement needs it.
 * Every function runs at compile time only.
 */
export interface RuleDialect<V, T extends Sql> {
  /** how paths are resolved (PathDialect) */
  paths: PathDialect;

  /** A resolved path as an operand; `like`: it is the pattern of `~` / `!~`. */
  pathOperand(path: ResolvedPath, like: boolean): V;
  /**
   * A literal's bound value (already LIKE-wrapped or scaled) as an operand; `use`: a client
   * literal of a shape (CompiledExpr.literals index), whose slots literalSlot makes.
   */
  literalOperand(value: SqlValue, use?: number): V;
  /** A request macro's slot as an operand. */
  macroOperand(slot: ParamSlot): V;

  /**
   * The predicate of `a op b`, positive: for `!=` it is "same value" (`a IS b`), for `!~` the
   * LIKE; the caller negates it. NULL where the comparison is unknown.
   */
  predicate(op: CompareOp, a: V, b: V): Sql;
  /** The scalar `a != b` (never NULL) given `same`, the predicate of `!=`. */
  different(a: V, b: V, same: Sql): Sql;
  /** `v IS NOT NULL` as the backend reads the value. */
  notNull(v: V): Sql;
  /** The scalar `v IS NULL` (`isNull`) or `v IS NOT NULL`. */
  nullCheck(v: V, isNull: boolean): Sql;
  /** `v IN (values…)`, the values bound literals (none NULL, at least one), `uses[i]` as literalOperand's `use`. */
  inValues(v: V, values: SqlValue[], uses: ReadonlyArray<number | undefined>): Sql;
  /** `v` is one of the principal's account ids (the `account/ids` slot, a JSON array). */
  inAccounts(v: V, paths: PathResolver): Sql;

  /**
   * The class of a literal's bound value that the SQL this dialect emits for it depends on: two
   * values of one class give the same SQL (only their bound parameters differ), which is what
   * lets a filter compiled for one text of a shape serve another (CompiledExpr.literals).
   */
  literalClass(value: SqlValue): string;

  /** A leaf term (one comparison) as T. */
  leaf(sql: string, params: ParamSlot[]): T;
  /** `(t1 OP t2 …)`, or the one term itself, arranged as the backend needs. */
  join(op: 'AND' | 'OR', terms: T[]): T;
  /**
   * The whole expression's term as SQL.
   * @throws QueryTooComplex when the backend cannot take it (SQLite's parser limits)
   */
  finish(term: T): Sql;

  /** `RANDOM()`-style term. */
  sortRandom(desc: boolean): string;
  /** The insertion-order term for `@rowid` over `alias`. */
  sortRowid(alias: string, desc: boolean): string;
  /**
   * The term of field `name` (resolved to `field`, null for a system column) over `alias`;
   * `privateEmail`: an auth collection's email the caller may not see unless visible.
   */
  sortColumn(alias: string, name: string, field: Field | null, privateEmail: boolean, desc: boolean): string;
}

/**
 * The SQL of an expression and the facts only emission finds (CompiledExpr without `owner`);
 * `parse` parses the view rules of the relation hops (FilterParser).
 * @throws InvalidQuery for invalid filters (see compileExpression)
 */
export function emitRule<V, T extends Sql>(d: RuleDialect<V, T>, ast: Expr, collection: Collection, schema: SchemaLookup, opts: CompileOptions, parse: FilterParser): Omit<CompiledExpr, 'owner'> {
  const guarded = opts.mode === 'filter' && !opts.superuser;
  const paths = new PathResolver(d.paths, collection, schema, opts.mode, opts.alias, guarded, guarded ? hopViewRule(d, schema, parse) : null);
  const compiler = new RuleEmitter(d, paths, opts.mode, readsJoin(ast), opts.literalSlots);
  const out = d.finish(compiler.expr(ast, true));
  const facts = { sql: out.sql, params: out.params, authPaths: [...compiler.authPaths], readsRecord: paths.readsRecord, drivers: compiler.drivers };
  return opts.literalSlots ? { ...facts, literals: compiler.uses } : facts;
}

/**
 * The slot of a literal's bound `value` passed through `map` (a dialect's conversion, if any):
 * fixed, or for a client literal of a shape (`use`, RuleDialect.literalOperand) a `literal` slot
 * that applies `map` to the value bound for each text.
 */
export function literalSlot(value: SqlValue, use: number | undefined, map?: (value: SqlValue) => SqlValue): ParamSlot {
  if (use === undefined) return { kind: 'value', value: map ? map(value) : value };
  return map ? { kind: 'literal', use, map } : { kind: 'literal', use };
}

/**
 * The values of a shape's literal uses (CompiledExpr.literals) for one text's literals `lits` (in
 * token order), made as the emitter made them at compile time (literalValue), or null when one
 * falls in another class (RuleDialect.literalClass) than the compiled one's: the text must then
 * be compiled itself. Checked in the emitter's order, so the first error is the one compiling
 * the text would throw.
 * @throws InvalidQuery for a number too precise for the fixed-point field it is compared with
 */
export function bindLiterals<V, T extends Sql>(d: RuleDialect<V, T>, uses: readonly LiteralUse[], lits: readonly Literal[]): SqlValue[] | null {
  const out = new Array<SqlValue>(uses.length);
  for (let i = 0; i < uses.length; i++) {
    const u = uses[i];
    const value = literalValue(lits[u.n], u.scale, u.like);
    if (d.literalClass(value) !== u.cls) return null;
    out[i] = value;
  }
  return out;
}

/** The view rule of a relation hop's target, compiled over the hop's alias (PathResolver). */
function hopViewRule<V, T extends Sql>(d: RuleDialect<V, T>, schema: SchemaLookup, parse: FilterParser): HopRule {
  return (target, alias) => {
    const src = target.viewRule;
    if (src === null || src.trim() === '') return 'locked';
    if (src.trim() === '@public') return null;
    return emitRule(d, parse(src), target, schema, { mode: 'rule', alias }, parse);
  };
}

/**
 * compileSort's emitter (see src/rules/compiler.ts): validates the parameter and joins the
 * backend's terms with `, `.
 * @throws InvalidQuery `Invalid sort: …` for unknown/hidden/encrypted fields, more than 16 fields,
 *   a parameter over 8192 characters or one of separators only; Error for an invalid alias
 */
export function emitSortWith<V, T extends Sql>(d: RuleDialect<V, T>, src: string, collection: Collection, alias: string, superuser: boolean): string {
  if (!IDENT.test(alias)) throw new Error(`compileSort: invalid alias ${JSON.stringify(alias)}`);
  const fail = (why: string): never => {
    throw new InvalidQuery('sort', `Invalid sort: ${why}.`);
  };
  if (src.length > 8192) fail('the sort parameter is too long');
  const terms: string[] = [];
  for (const raw of src.split(',')) {
    let name = raw.trim();
    if (name === '') continue;
    if (terms.length === MAX_SORT_FIELDS) fail(`at most ${MAX_SORT_FIELDS} sort fields are allowed`);
    let desc = false;
    if (name[0] === '-' || name[0] === '+') {
      desc = name[0] === '-';
      name = name.slice(1).trim();
    }
    if (name === '@random') terms.push(d.sortRandom(desc));
    else if (name === '@rowid') terms.push(d.sortRowid(alias, desc));
    else if (!IDENT.test(name)) fail(`unknown field ${JSON.stringify(name.slice(0, 64))}`);
    else {
      const field = resolveColumn(collection, name, 'filter', name, 'Invalid sort');
      terms.push(d.sortColumn(alias, name, field, !superuser && isPrivateEmail(collection, name), desc));
    }
  }
  // a parameter of separators only (`sort=,`) names no field: malformed, unlike a blank one
  if (terms.length === 0 && src.trim() !== '') fail('no field given');
  return terms.join(', ');
}

/** One operand and the set it ranges over (empty `sources`: a scalar). */
interface Side<V> {
  val: V;
  sources: string[];
  conds: string[];
  condParams: ParamSlot[];
}

const isNullLiteral = (o: Operand): boolean => o.type === 'literal' && o.value === null;
const NO_JOINS: ReadonlySet<string> = new Set();

/** Whether any operand of `e` is an `@collection` join (most expressions have none: RuleEmitter skips the join bookkeeping). */
function readsJoin(e: Expr): boolean {
  if (e.type === 'and' || e.type === 'or') return e.terms.some(readsJoin);
  return (e.left.type === 'field' && e.left.join !== undefined) || (e.type === 'compare' && e.right.type === 'field' && e.right.join !== undefined);
}

/** Compiles one expression (and nothing else: a fresh one per expression). */
class RuleEmitter<V, T extends Sql> {
  /** `@request.auth.*` paths the expression reads (CompiledExpr.authPaths). */
  readonly authPaths = new Set<string>();
  /** The semi-joins every matching row must satisfy (CompiledExpr.drivers). */
  readonly drivers: Driver[] = [];

  constructor(
    private readonly d: RuleDialect<V, T>,
    private readonly paths: PathResolver,
    private readonly mode: CompileOptions['mode'],
    /** the expression reads some `@collection` join (readsJoin) */
    private readonly joins: boolean,
    /** CompileOptions.literalSlots: the client literals' ordinals by position, for a shape */
    private readonly slots?: ReadonlyMap<number, number>,
  ) {}

  /** The client literals' uses, in the order reached (CompiledExpr.literals; with `slots` only). */
  readonly uses: LiteralUse[] = [];

  /**
   * A literal's bound value (literalValue) and, for a client literal of a shape, its use's index
   * (recorded with the value's class: RuleDialect.literalClass).
   * @throws InvalidQuery as literalValue
   */
  private literal(lit: Literal, scale: number | undefined, like: boolean): { value: SqlValue; use?: number } {
    const value = literalValue(lit, scale, like);
    const n = this.slots && (typeof lit.value === 'string' || typeof lit.value === 'number') ? this.slots.get(lit.pos) : undefined;
    if (n === undefined) return { value };
    this.uses.push(scale === undefined ? { n, like, cls: this.d.literalClass(value) } : { n, like, scale, cls: this.d.literalClass(value) });
    return { value, use: this.uses.length - 1 };
  }

  /** The `@collection` joins each (sub-)expression reads, by CollectionJoin.key (keysOf). */
  private readonly joinKeys = new Map<Expr, Map<string, CollectionJoin>>();

  /**
   * `conjunct`: `e` is the whole expression or one of its top-level AND terms; `open`: the
   * `@collection` joins an enclosing EXISTS has opened (joined).
   */
  expr(e: Expr, conjunct = false, open: ReadonlySet<string> = NO_JOINS): T {
    const pending = this.joins ? [...this.keysOf(e).keys()].filter((k) => !open.has(k)) : [];
    if (e.type === 'compare' || e.type === 'in') {
      if (pending.length > 0) return this.joined(pending, this.keysOf(e), open, (inner) => [this.expr(e, false, inner)]);
      const frag = e.type === 'compare' ? this.compare(e) : this.inList(e);
      if (conjunct && frag.driver) this.drivers.push({ column: frag.driver, sql: frag.sql, params: frag.params });
      return this.d.leaf(frag.sql, frag.params);
    }
    // `a || (b || c)` is one OR of three terms: fewer parentheses for the parser.
    const flat: Expr[] = [];
    const collect = (t: Expr): void => {
      if (t.type === e.type) t.terms.forEach(collect);
      else flat.push(t);
    };
    collect(e);
    if (e.type === 'and' && pending.length > 0) {
      const grouped = this.joinGroups(flat, pending);
      if (grouped.length > 0) {
        const inGroup = new Set(grouped.flatMap((g) => g.terms));
        const terms = flat.filter((t) => !inGroup.has(t)).map((t) => this.expr(t, conjunct, open));
        for (const g of grouped) terms.push(this.joined(g.keys, this.keysOf(e), open, (inner) => g.terms.map((t) => this.expr(t, false, inner))));
        return this.d.join('AND', terms);
      }
    }
    return this.d.join(e.type === 'and' ? 'AND' : 'OR', flat.map((t) => this.expr(t, conjunct && e.type === 'and', open)));
  }

  /** The `@collection` joins `e` reads (memoised per node: parsed trees are shared and read-only). */
  private keysOf(e: Expr): Map<string, CollectionJoin> {
    let keys = this.joinKeys.get(e);
    if (keys) return keys;
    keys = new Map();
    if (e.type === 'and' || e.type === 'or') {
      for (const t of e.terms) for (const [k, j] of this.keysOf(t)) keys.set(k, j);
    } else {
      for (const o of e.type === 'in' ? [e.left] : [e.left, e.right]) if (o.type === 'field' && o.join) keys.set(o.join.key, o.join);
    }
    this.joinKeys.set(e, keys);
    return keys;
  }

  /**
   * Where an AND's `@collection` joins are scoped (docs/rules.md, "Joining other collections"):
   * a join read by two or more of the conjuncts `flat` is opened here, around those conjuncts, so
   * one row must satisfy them together; conjuncts sharing such a join form one group (one EXISTS
   * over all of the group's joins). A join read by one conjunct only is left to it (inside an OR,
   * each alternative then has its own EXISTS, which is what "some row" means there).
   */
  private joinGroups(flat: Expr[], pending: string[]): Array<{ keys: string[]; terms: Expr[] }> {
    const here = pending.filter((k) => flat.filter((t) => this.keysOf(t).has(k)).length >= 2);
    const groups: Array<{ keys: string[]; terms: Expr[] }> = [];
    for (const k of here) {
      const terms = flat.filter((t) => this.keysOf(t).has(k));
      // merge every group that shares a conjunct with this join's
      const merged = { keys: [k], terms };
      for (let i = groups.length - 1; i >= 0; i--) {
        if (!groups[i].terms.some((t) => terms.includes(t))) continue;
        merged.keys.push(...groups[i].keys);
        for (const t of groups[i].terms) if (!merged.terms.includes(t)) merged.terms.push(t);
        groups.splice(i, 1);
      }
      groups.push(merged);
    }
    // keep the written order of the conjuncts inside each group
    for (const g of groups) g.terms.sort((a, b) => flat.indexOf(a) - flat.indexOf(b));
    return groups;
  }

  /**
   * `EXISTS (SELECT 1 FROM <joined collections> WHERE <their scope> AND <terms>)`: some row of
   * each join in `keys` (opened here, PathResolver.openJoin) satisfies the terms `build` compiles
   * with those joins open. `joins`: their CollectionJoin by key (keysOf of an expression reading them all).
   */
  private joined(keys: string[], joins: Map<string, CollectionJoin>, open: ReadonlySet<string>, build: (inner: ReadonlySet<string>) => T[]): T {
    const from: string[] = [];
    const conds: string[] = [];
    const condParams: ParamSlot[] = [];
    const inner = new Set(open);
    for (const k of keys) {
      this.paths.openJoin(joins.get(k)!, from, conds, condParams);
      inner.add(k);
    }
    // a compiled term is self-contained (safe to AND): no parentheses of its own, for SQLite's parser budget
    const body = this.d.finish(this.d.join('AND', build(inner)));
    const where = [...conds, body.sql].join(' AND ');
    return this.d.leaf(`EXISTS (SELECT 1 FROM ${from.join(', ')} WHERE ${where})`, [...condParams, ...body.params]);
  }

  private compare(e: CompareExpr): Frag {
    let { left, right } = e;
    // `?op` (any-of): some value satisfies `op`; it differs from `op` only for `!=` and `!~` over a set
    const anyOf = e.op[0] === '?';
    const op = (anyOf ? e.op.slice(1) : e.op) as CompareOp;
    if ((op === '=' || op === '!=') && isNullLiteral(left) && !isNullLiteral(right)) [left, right] = [right, left];
    const pl = left.type === 'field' ? this.paths.resolve(left.path, left.modifier, left.join) : undefined;
    const pr = right.type === 'field' ? this.paths.resolve(right.path, right.modifier, right.join) : undefined;
    const like = op === '~' || op === '!~';
    const L = this.side(left, pl, like ? undefined : pr?.scale, false, pr);
    const R = this.side(right, pr, like ? undefined : pl?.scale, like, pl);
    const sources = [...L.sources, ...R.sources];
    const conds = [...L.conds, ...R.conds];
    const condParams = [...L.condParams, ...R.condParams];

    // one side crosses a single-valued relation and the other is a value: an uncorrelated semi-join
    const head = pl && !pr ? pl.head : pr && !pl ? pr.head : undefined;
    const each = pl?.each || pr?.each;
    if (each && (isNullLiteral(left) || isNullLiteral(right))) throw eachError(e.pos, 'compared with null');
    if (each && anyOf) throw eachError(e.pos, `compared with the any-of operator "${e.op}"`);
    if (isNullLiteral(right) && (op === '=' || op === '!=')) return this.nullTest(L.val, sources, conds, condParams, op === '=', head);
    const pred = this.d.predicate(op, L.val, R.val);
    if (each) return this.every(sources, conds, condParams, this.scalar(op, L.val, R.val, pred));
    if (sources.length > 0 && anyOf && (op === '!=' || op === '!~')) {
      // some value is different / does not match; never a driver (it holds for most rows)
      const some = this.some(head, sources, conds, this.scalar(op, L.val, R.val, pred), false, condParams);
      return { sql: some.sql, params: some.params };
    }
    if (sources.length > 0) return this.some(head, sources, conds, pred, op === '!=' || op === '!~', condParams);
    return this.scalar(op, L.val, R.val, pred);
  }

  /** `a op b` over two scalars, given the predicate of `op` (RuleDialect.predicate): never NULL for `!=` and `!~`. */
  private scalar(op: CompareOp, a: V, b: V, pred: Sql): Sql {
    if (op === '!=') return this.d.different(a, b, pred);
    if (op === '!~') return { sql: `NOT COALESCE(${pred.sql}, ${this.d.paths.falseSql})`, params: pred.params };
    return pred;
  }

  /**
   * `:each` (docs/rules.md, "Modifiers"): the set holds a value and every value satisfies `pred`
   * (a scalar comparison of one value), as correlated EXISTS / NOT EXISTS over the same sources.
   */
  private every(sources: string[], conds: string[], condParams: ParamSlot[], pred: Sql): Frag {
    const from = `FROM ${sources.join(', ')}${conds.length ? ` WHERE ${conds.join(' AND ')}` : ''}`;
    const also = conds.length ? ' AND' : ' WHERE';
    return {
      sql: `(EXISTS (SELECT 1 ${from}) AND NOT EXISTS (SELECT 1 ${from}${also} NOT COALESCE((${pred.sql}), ${this.d.paths.falseSql})))`,
      params: [...condParams, ...condParams, ...pred.params],
    };
  }

  /** `x = null` (isNull) / `x != null` under the set semantics of the compiler. */
  private nullTest(v: V, sources: string[], conds: string[], condParams: ParamSlot[], isNull: boolean, head?: ResolvedPath['head']): Frag {
    if (sources.length === 0) return this.d.nullCheck(v, isNull);
    const any = this.some(head, sources, conds, this.d.notNull(v), isNull, condParams);
    // `x != null` holds for most rows: never a driver
    return { sql: any.sql, params: any.params };
  }

  private inList(e: InExpr): Frag {
    if (e.items.length === 0 && !e.accountIds) return { sql: this.d.paths.falseSql, params: [] };
    const path = e.left.type === 'field' ? this.paths.resolve(e.left.path, e.left.modifier, e.left.join) : undefined;
    const L = this.side(e.left, path, undefined, false);
    if (path?.each && e.items.some((item) => item.value === null)) throw eachError(e.pos, 'with null in the "in" list');
    const within = (pred: Sql): Frag => {
      if (path?.each) return this.every(L.sources, L.conds, L.condParams, pred);
      return L.sources.length > 0 ? this.some(path?.head, L.sources, L.conds, pred, false, L.condParams) : pred;
    };
    // the principal's accounts, bound as one JSON array (empty without a tenancy resolver: never holds)
    if (e.accountIds) return within(this.d.inAccounts(L.val, this.paths));
    const members = e.items.filter((item) => item.value !== null);
    const parts: Frag[] = [];
    if (members.length > 0) {
      const bound = members.map((m) => this.literal(m, path?.scale, false));
      parts.push(within(this.d.inValues(L.val, bound.map((b) => b.value), bound.map((b) => b.use))));
    }
    if (members.length < e.items.length) parts.push(this.nullTest(L.val, L.sources, L.conds, L.condParams, true, path?.head));
    if (parts.length === 1) return parts[0];
    return { sql: `(${parts[0].sql} OR ${parts[1].sql})`, params: [...parts[0].params, ...parts[1].params] };
  }

  /**
   * One operand; `scale` comes from a fixed-point field on the other side, `other` is the other
   * side's path (an `@request.auth.id` compared with record ids is qualified by their collection).
   * @throws InvalidQuery for a hidden `@request.auth.*` column in a client filter
   */
  private side(o: Operand, path: ResolvedPath | undefined, scale: number | undefined, like: boolean, other?: ResolvedPath): Side<V> {
    if (path) return { val: this.d.pathOperand(path, like), sources: path.sources, conds: path.conds, condParams: path.condParams };
    const plain = { sources: [], conds: [], condParams: [] };
    if (o.type === 'literal') {
      const { value, use } = this.literal(o, scale, like);
      return { val: this.d.literalOperand(value, use), ...plain };
    }
    if (o.type !== 'macro') throw new Error('unreachable: unresolved field operand');
    if (o.modifier === 'changed') return { val: this.changed(o), ...plain };
    const opt = { ...(like ? { like: true } : {}), ...(o.modifier ? { mod: o.modifier } : {}) };
    // a count or a yes/no is no decimal of the field's scale
    if (o.modifier === 'isset' || o.modifier === 'length') scale = undefined;
    let slot: ParamSlot;
    if (o.macro === 'auth') {
      const head = o.path.split('.')[0];
      if (this.mode === 'filter' && (HIDDEN_AUTH_COLUMNS as readonly string[]).includes(head)) {
        throw new InvalidQuery('filter', `Invalid filter: @request.auth.${head} is hidden and cannot be used here.`);
      }
      this.authPaths.add(o.path);
      const of = o.path === 'id' && other?.idsOf ? { of: other.idsOf } : {};
      slot = { kind: 'auth', path: o.path, ...opt, ...of, ...(scale === undefined ? {} : { scale }) };
    } else if (o.macro === 'data' || o.macro === 'query' || o.macro === 'headers') slot = { kind: o.macro, path: o.path, ...opt, ...(scale === undefined ? {} : { scale }) };
    else if (o.macro === 'context') slot = { kind: 'context', ...opt };
    else if (o.macro === 'method') slot = { kind: 'method', ...opt };
    else if (o.macro === 'date') slot = { kind: 'date', name: o.path as DateMacro, ...opt, ...(scale === undefined ? {} : { scale }) };
    else slot = { kind: 'account', field: o.macro === 'account.id' ? 'id' : 'role', ...opt };
    return { val: this.d.macroOperand(slot), ...plain };
  }

  /**
   * `@request.body.<field>:changed` (docs/rules.md, "Modifiers"), PocketBase's shorthand for
   * `(@request.body.<field>:isset = true && @request.body.<field> != <field>)`, as a 1/0 value.
   * Only on a field holding one value: svc's `!=` on a multi-valued field compares with each
   * item, which would make any list sent "changed".
   * @throws InvalidQuery when the collection has no such field, or it holds several values
   */
  private changed(o: MacroOperand): V {
    const pos = o.pos;
    if (this.paths.resolve([o.path]).sources.length > 0) {
      throw new InvalidQuery('filter', `Invalid filter: the modifier ":changed" cannot apply to ${JSON.stringify('@request.body.' + o.path)}: it applies to fields holding one value.`);
    }
    const body: MacroOperand = { type: 'macro', macro: 'data', path: o.path, pos };
    const sent = this.compare({ type: 'compare', op: '=', left: { ...body, modifier: 'isset' }, right: { type: 'literal', value: true, raw: '', pos }, pos });
    const differs = this.compare({ type: 'compare', op: '!=', left: body, right: { type: 'field', path: [o.path], pos }, pos });
    const value = `(CASE WHEN ${sent.sql} AND ${differs.sql} THEN 1 ELSE 0 END)`;
    return this.d.pathOperand({ value, valueParams: [...sent.params, ...differs.params], kind: 'count', sources: [], conds: [], condParams: [] }, false);
  }

  /**
   * "Some value of the set-valued path satisfies `pred`" (or, `negated`, none does);
   * `condParams` are the hops' slots, bound before the predicate's. When the path starts with a
   * single-valued relation (`head`), the uncorrelated semi-join `<column> IN (SELECT <id> FROM …
   * WHERE …)`: the planner may then start from either side, reading the related rows first
   * through their own indexes and the matching records through an index on the column, or
   * walking the records (e.g. along a sort index) and probing the subquery's result, which it
   * computes once. Otherwise (a multi-valued first hop, or a predicate that reads the record
   * itself) a correlated EXISTS. Both mean the same: the related row exists, passes every hop's
   * conditions (expiry, view rule) and `pred`. A NULL or empty column matches no related row, so
   * the negated semi-join is `NOT COALESCE(…, false)`.
   */
  private some(head: ResolvedPath['head'], sources: string[], conds: string[], pred: Sql, negated: boolean, condParams: ParamSlot[]): Frag {
    let where = '';
    for (let i = head ? 1 : 0; i < conds.length; i++) where += `${conds[i]} AND `;
    const body = `SELECT ${head ? head.id : '1'} FROM ${sources.join(', ')} WHERE ${where}(${pred.sql})`;
    const params = [...condParams, ...pred.params];
    if (head) {
      const sql = `${head.column} IN (${body})`;
      return negated ? { sql: `NOT COALESCE(${sql}, ${this.d.paths.falseSql})`, params } : { sql, params, driver: head.column };
    }
    return { sql: `${negated ? 'NOT ' : ''}EXISTS (${body})`, params };
  }
}

/** `:each` where it has no meaning. */
function eachError(pos: number, why: string): InvalidQuery {
  return new InvalidQuery('filter', `Invalid filter: a ":each" path cannot be ${why} (position ${pos}).`);
}

/**
 * The bound value of a literal: LIKE-wrapped, fixed-point scaled, or as written.
 * @throws InvalidQuery for a number too precise for the fixed-point field it is compared with
 */
export function literalValue(lit: Literal, scale: number | undefined, like: boolean): SqlValue {
  const v = lit.value;
  if (like) return likeValue(bindValue(v));
  if (scale !== undefined && (typeof v === 'number' || typeof v === 'string')) {
    const scaled = scaleDecimal(typeof v === 'number' ? lit.raw : v, scale);
    if (scaled === undefined) {
      const shown = typeof v === 'number' ? lit.raw : JSON.stringify(v.slice(0, 64));
      throw new InvalidQuery(
        'filter',
        `Invalid filter: ${shown} at position ${lit.pos} is not a decimal with at most ${scale} decimal places, as the fixed-point field it is compared with requires.`,
      );
    }
    return scaled;
  }
  return bindValue(v);
}
