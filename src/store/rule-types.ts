/**
 * The types the rule compiler (src/rules/) and the SQL emitters of storage (src/store/sql/,
 * src/store/sqlite/rule-sql.ts, src/store/pg/rule-sql.ts) share, so storage reads them without
 * importing the compiler: the parsed filter tree (docs/rules.md, "Filters"; parsed by
 * src/rules/parser.ts) and the parser's type, the schema look-up and path mode
 * (src/store/sql/rule-fields.ts), and a compiled expression with its parameter slots and options
 * (src/rules/compiler.ts). Types only.
 */
import type { Collection } from '../model/schema.js';
import type { SqlValue } from './bind.js';

// ---- the parsed filter tree (src/rules/parser.ts) -------------------------------------------

export type CompareOp = '=' | '!=' | '>' | '>=' | '<' | '<=' | '~' | '!~';
/**
 * PocketBase's any-of operators (docs/rules.md, "Any-of operators"): `?op` holds when some value
 * of the set satisfies `op` (for `?!=`, `?!~`: some value is different / does not match).
 */
export type AnyOfOp = `?${CompareOp}`;

export interface Literal {
  type: 'literal';
  value: string | number | boolean | null;
  /** Source text of a number literal (kept for exact fixed-point scaling); '' otherwise. */
  raw: string;
  pos: number;
}
/**
 * A field path's modifier (docs/rules.md, "Modifiers"): `lower` (lower-cased ASCII), `length`
 * (the number of items of a select/relation/file field), `each` (every item must match).
 */
export type FieldModifier = 'lower' | 'length' | 'each';
/**
 * A request macro's modifier: `lower`; `isset` (the key was sent); `length` (items of a body
 * value); `changed` (a body value was sent and differs from the record's field of that name).
 */
export type MacroModifier = 'lower' | 'isset' | 'length' | 'changed';

export interface FieldOperand {
  type: 'field';
  /**
   * Dot-separated segments, e.g. ['author', 'name'], from the record (or, with `join`, from a row
   * of the joined collection). A segment `<collection>_via_<field>` is a back-relation.
   */
  path: string[];
  modifier?: FieldModifier;
  /** `@collection.<name>[:<alias>].<path>`: the path starts at a row of that collection (CollectionJoin). */
  join?: CollectionJoin;
  pos: number;
}
/**
 * The joined collection of a `@collection.<name>:<alias>.<field>` operand (docs/rules.md,
 * "Joining other collections"): `collection` as written, `alias` the alias (the name when
 * none is written). Operands with the same `key` (the lower-cased name and the alias) read the
 * same row.
 */
export interface CollectionJoin {
  collection: string;
  alias: string;
  key: string;
}
export interface MacroOperand {
  type: 'macro';
  /**
   * `data`: `@request.data.*` or its PocketBase name `@request.body.*`; `query`, `headers`:
   * `@request.query.*`, `@request.headers.*`; `context`: `@request.context`; `date`: a datetime
   * macro (`@now`, `@todayStart`, …: src/rules/datetime.ts), its name in `path`.
   */
  macro: 'auth' | 'data' | 'query' | 'headers' | 'context' | 'method' | 'account.id' | 'account.role' | 'date';
  /**
   * Dotted path after `@request.auth.` / `.data.` / `.body.` / `.query.`, the header name after
   * `@request.headers.`, the datetime macro's name; '' for the other macros.
   */
  path: string;
  modifier?: MacroModifier;
  pos: number;
}
export type Operand = Literal | FieldOperand | MacroOperand;

export interface CompareExpr {
  type: 'compare';
  op: CompareOp | AnyOfOp;
  left: Operand;
  right: Operand;
  pos: number;
}
export interface InExpr {
  type: 'in';
  left: Operand;
  /** Literal members; empty when `accountIds` is set. */
  items: Literal[];
  /** True for `x in @request.account.ids`. */
  accountIds: boolean;
  pos: number;
}
/** Two or more sub-expressions joined by `&&` (chains are flattened). */
export interface AndExpr {
  type: 'and';
  terms: Expr[];
}
/** Two or more sub-expressions joined by `||` (chains are flattened). */
export interface OrExpr {
  type: 'or';
  terms: Expr[];
}
export type LogicalExpr = AndExpr | OrExpr;
export type Expr = CompareExpr | InExpr | LogicalExpr;

/**
 * The filter grammar's parser (src/rules/parser.ts, parseFilter), given to the rule emitters for
 * the view rule of each relation hop a filter crosses: storage emits parsed trees and imports no
 * part of the grammar. Throws what the parser throws (an ApiError 400 for a malformed source).
 */
export type FilterParser = (src: string) => Expr;

/** A datetime macro's name without `@` (values: src/rules/datetime.ts; docs/rules.md, "Datetime macros"). */
export type DateMacro =
  | 'now' | 'second' | 'minute' | 'hour' | 'weekday' | 'day' | 'month' | 'year'
  | 'yesterday' | 'tomorrow' | 'todayStart' | 'todayEnd' | 'monthStart' | 'monthEnd' | 'yearStart' | 'yearEnd';

// ---- schema look-up (src/store/sql/rule-fields.ts) ------------------------------------------

/** Looks collections up by id (relation targets) and by name. */
export interface SchemaLookup {
  byId(id: string): Collection | undefined;
  byName(name: string): Collection | undefined;
}

/** `filter`: client-supplied filter or sort (hidden fields refused); `rule`: operator-authored. */
export type PathMode = 'filter' | 'rule';

// ---- compiled expressions (src/rules/compiler.ts) -------------------------------------------

/** One parameter of a compiled expression: a fixed value, or a request value resolved by bindParams. */
export type ParamSlot =
  | { kind: 'value'; value: SqlValue }
  /** @request.auth.<field>; `of`: an `id` compared with record ids of that collection (see bindParams) */
  | { kind: 'auth'; path: string; like?: boolean; scale?: number; of?: string; mod?: SlotModifier }
  | { kind: 'data'; path: string; like?: boolean; scale?: number; mod?: SlotModifier } // @request.data.<field>
  /** @request.query.<name> (`query`) or @request.headers.<name> (`headers`): see bindParams */
  | { kind: 'query' | 'headers'; path: string; like?: boolean; scale?: number; mod?: SlotModifier }
  /** @request.context: what the request is (`default`, `realtime`, `protectedFile`) */
  | { kind: 'context'; like?: boolean; mod?: SlotModifier }
  | { kind: 'method'; like?: boolean; mod?: SlotModifier }
  /** @request.account.id / .role, or `ids` (a JSON array of the principal's account ids, for `in`) */
  | { kind: 'account'; field: 'id' | 'role' | 'ids'; like?: boolean }
  /** the current time as a date string (expiry clauses of relation hops) */
  | { kind: 'now' }
  /** a datetime macro (`@now`, `@year`, …; src/rules/datetime.ts), UTC at bind time */
  | { kind: 'date'; name: DateMacro; like?: boolean; scale?: number }
  /**
   * a client literal of a filter compiled for its shape (CompileOptions.literalSlots): the value
   * of CompiledExpr.literals[use] for the request's text, then `map` (a dialect's conversion of
   * it, e.g. a number printed as SQLite prints a REAL) when there is one
   */
  | { kind: 'literal'; use: number; map?: (value: SqlValue) => SqlValue };

/**
 * One use of a client literal by a filter compiled for its shape (docs/rules.md, "Filters";
 * src/rules/compiler.ts, compileFilter), in the order the emitter reached it: `n` is the literal's
 * ordinal among the string and number tokens of the text, `like`/`scale` how its value was made
 * (src/store/sql/rule-sql.ts, literalValue: LIKE-wrapped, fixed-point scaled at `scale` decimal
 * places), `cls` the dialect's class of that value (RuleDialect.literalClass), on which the
 * emitted SQL depends: another text of the shape reuses the compiled SQL only when each use's
 * value has the same class.
 */
export interface LiteralUse {
  n: number;
  like: boolean;
  scale?: number;
  cls: string;
}

/** A request macro's modifier applied when binding (`:changed` compiles to SQL instead). */
export type SlotModifier = Exclude<MacroModifier, 'changed'>;

/** A boolean SQL term plus its parameter slots, in order, and facts about what it reads. */
export interface CompiledExpr {
  sql: string;
  params: ParamSlot[];
  /** the `@request.auth.*` paths it reads (`id`, `collectionName`, `profile.x`, …) */
  authPaths: string[];
  /** whether it reads the record (any field path): false means it depends on the request alone */
  readsRecord: boolean;
  /**
   * The relation semi-joins every matching row satisfies (top-level AND terms such as
   * `country.code = 'TV'`, compiled as `r."country" IN (SELECT …)`), each a self-contained term
   * over `column` with its own slots: a list may count one alone to choose which side drives
   * its plan (src/records/list/plan.ts).
   */
  drivers: Array<{ column: string; sql: string; params: ParamSlot[] }>;
  /**
   * The owner shape: the expression is exactly `<field> = @request.auth.id` (either order) on
   * one of the collection's own fields; `of` is the collection a relation field's ids belong to.
   */
  owner: { field: string; of: string | null } | null;
  /**
   * Compiled for a shape (CompileOptions.literalSlots): the uses of the client's literals, which
   * the `literal` slots read by index once bound for a text (src/rules/compiler.ts, compileFilter).
   */
  literals?: LiteralUse[];
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
  /**
   * The SQL emitted: SQLite's (the default) or PostgreSQL's (src/store/pg/rule-sql.ts, same
   * semantics and the same CompiledExpr shape).
   */
  dialect?: SqlDialectName;
  /**
   * Compile for the shape of a client filter (src/rules/compiler.ts, compileFilter): the string
   * and number literal at each source position (1-based, the token's) by its ordinal; each becomes
   * a `literal` slot recorded in CompiledExpr.literals instead of a fixed value. Literals of
   * other expressions (a relation target's view rule) stay fixed.
   */
  literalSlots?: ReadonlyMap<number, number>;
}

/** The SQL dialects the compiler emits. */
export type SqlDialectName = 'sqlite' | 'postgres';
