/**
 * The PostgreSQL side of the rule emitter (src/rules/compiler.ts; the shared walk is
 * src/store/sql/rule-sql.ts, paths src/store/sql/rule-paths.ts): its `RuleDialect` and
 * `PathDialect`, with the value model below, so the compiler's output has the shapes and the
 * semantics of the SQLite emitter (src/store/sqlite/rule-sql.ts). Parameters are SLOTs, in order
 * (src/store/slots.ts: the builder that completes a statement numbers them `$n`); every slot is
 * cast (`::text`, `::float8`, …) so no parameter type is left for PostgreSQL to infer.
 *
 * Storage model assumed (the PostgreSQL DDL follows it, collection-sql.ts): one table per collection,
 * named as the collection and aliased `r` (the caller's alias) in queries; columns `"id"` text
 * primary key, `"created"` and `"updated"` text (the same ISO-like text as on SQLite), then one
 * column per field named as the field: text, editor, email, url, date, autodate and single-valued
 * select/relation/file as `text`; number as `double precision`, fixed-point number as `bigint`
 * holding the same scaled integer as SQLite's INTEGER; bool as `smallint` 0/1; json and
 * multi-valued select/relation/file as `jsonb` holding the JSON the SQLite column holds as text.
 * Auth collections carry the same hidden columns as on SQLite (`emailVisibility` is a bool field).
 * SQLite compares text bytewise (BINARY): text columns should be declared `COLLATE "C"` (or the
 * database use the C locale) so equality, ranges and sorts agree and stay indexable; range
 * comparisons and sorts here name `COLLATE "C"` explicitly so results agree even when they are not.
 *
 * Semantics are the SQLite emitter's, including SQLite's type rules, reproduced explicitly:
 * - every value is seen as a number part and a text part (at most one non-NULL; NULL is both
 *   NULL). A comparison applies SQLite's affinity rules first (a numeric column converts a
 *   numeric-looking text operand to a number; a text column converts a number operand to text,
 *   REAL numbers as SQLite prints them, `5` → `'5.0'`), then compares numbers with numbers and
 *   text with text (bytewise), and orders every number before every text;
 * - `~` / `!~` are `ILIKE … ESCAPE '\'` under `COLLATE "C"`, which folds ASCII letters only, as
 *   SQLite's LIKE does; a pattern ending in an unpaired `\` matches nothing (SQLite) instead of
 *   raising an error (PostgreSQL);
 * - json paths (`meta.a.b`) read `#>` and dispatch on `jsonb_typeof` (numbers and booleans are
 *   numbers, JSON null is NULL, strings text, objects and arrays their JSON text); multi-valued
 *   fields are sets of `jsonb_array_elements_text` rows.
 * Known differences (values only a hand-built or unusual request produces): a `@request.auth.*`
 * or `@request.data.*` value is numeric text or text here, since a bound parameter reaches
 * PostgreSQL as text (query parameters, headers, the context and date macros are always text,
 * and compare as text, as in SQLite): a numeric
 * string and a number compare alike (SQLite tells them apart), and a number compared with a text
 * column reads `5` rather than `5.0`; JSON objects and arrays read as PostgreSQL's jsonb text
 * (`{"a": 1}`, keys reordered) where SQLite keeps the stored text; REAL values that are not
 * integers are printed by PostgreSQL (shortest exact form) where SQLite prints 15 digits.
 */
import type { SqlValue } from '../bind.js';
import type { Collection } from '../../model/schema.js';
import type { CompareOp, CompileOptions, CompiledExpr, Expr, FilterParser, Literal, LiteralUse, ParamSlot, SchemaLookup } from '../rule-types.js';
import { quoteIdent, type PathDialect, type ValueKind } from '../sql/rule-paths.js';
import { bindLiterals as bindWith, emitRule, emitSortWith, literalSlot, type RuleDialect, type Sql } from '../sql/rule-sql.js';
import { SLOT } from '../slots.js';

const BS = `E'\\\\'`; // one backslash, whatever standard_conforming_strings says
const LIKE_ESCAPE = ` ESCAPE ${BS}`;
/**
 * Text SQLite's numeric affinity turns into a number, bounded so the cast to float8 cannot
 * overflow (at most 200 characters, a two-digit exponent).
 */
const NUMERIC_TEXT = /^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]{1,2})?\s*$/;
const NUMERIC_TEXT_SQL = `'^\\s*[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]{1,2})?\\s*$'`;

/** Concatenates SQL text and fragments, keeping the slots in order. */
function cat(...parts: Array<string | Sql>): Sql {
  let sql = '';
  const params: ParamSlot[] = [];
  for (const p of parts) {
    if (typeof p === 'string') sql += p;
    else {
      sql += p.sql;
      for (const s of p.params) params.push(s);
    }
  }
  return { sql, params };
}

const raw = (sql: string): Sql => ({ sql, params: [] });

/**
 * How PostgreSQL spells paths (PathDialect): multi-valued fields and json are jsonb, read as
 * `jsonb_array_elements_text` rows and with `#>`; text parameters are cast.
 */
export const pgPathDialect: PathDialect = {
  // NULL is empty, a non-array value is one element (SQLite's json_each over a scalar)
  elements: (col, alias) =>
    `jsonb_array_elements_text(CASE WHEN jsonb_typeof(${col}) = 'array' THEN ${col} WHEN ${col} IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(${col}) END) AS ${alias}(value)`,
  // a text-array literal: the segments are identifiers
  jsonPath: (col, segments) => `(${col} #> '{${segments.join(',')}}')`,
  jsonColumn: (col) => `(${col})::text`,
  textParam: `${SLOT}::text`,
  falseSql: 'false',
  // under "C", lower() folds ASCII letters only, as SQLite's
  lower: (v) => `lower((${v}) COLLATE "C")`,
};

/**
 * `ASC NULLS FIRST` / `DESC NULLS LAST`: SQLite's placement of NULLs. A column that is never NULL
 * (`notNull`: id, created, updated, the identity column) gets a bare `ASC` / `DESC`, which orders
 * it alike and is the order of a plain b-tree index (read forward or backward), so the planner
 * can walk the primary key or an index on the column instead of sorting the scan
 * (docs/internals.md, "PostgreSQL").
 */
const sortDir = (desc: boolean, notNull = false): string => (notNull ? (desc ? 'DESC' : 'ASC') : desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST');

/** The base columns, NOT NULL in every collection's table (collection-sql.ts, baseColumns). */
const NOT_NULL_COLUMNS = new Set(['id', 'created', 'updated']);

/** The PostgreSQL rule dialect (RuleDialect): operands are `Val`s compared as SQLite would. */
export const pgRuleDialect: RuleDialect<Val, Sql> = {
  paths: pgPathDialect,
  pathOperand: (path) => ({ from: 'path', kind: path.kind, sql: { sql: path.value, params: path.valueParams } }),
  literalOperand: (value, use) => ({ from: 'lit', value, use }),
  macroOperand: (slot) => ({ from: 'macro', slot }),
  predicate(op, a, b) {
    if (op === '~' || op === '!~') return likePred(a, b);
    if (op === '!=') return sameValue(a, b);
    return compareValues(a, b, op);
  },
  different: (_a, _b, same) => cat('NOT ', same),
  notNull,
  nullCheck: (v, isNull) => (isNull ? cat('NOT ', notNull(v)) : notNull(v)),
  inValues: (v, values, uses) => inValues(v, values.map((value, i): Val => ({ from: 'lit', value, use: uses[i] }))),
  inAccounts(v, paths) {
    const a = paths.freshAlias();
    const elem: Val = { from: 'path', kind: 'loose', sql: raw(`${a}.value`) };
    return cat(`EXISTS (SELECT 1 FROM jsonb_array_elements_text(`, slotSql({ kind: 'account', field: 'ids' }, 'jsonb'), `) AS ${a}(value) WHERE `, compareValues(v, elem, '='), ')');
  },
  literalClass,
  leaf: (sql, params) => ({ sql, params }),
  join(op, terms) {
    if (terms.length === 1) return terms[0];
    const parts: Array<string | Sql> = ['('];
    terms.forEach((t, i) => parts.push(...(i ? [` ${op} `, t] : [t])));
    parts.push(')');
    return cat(...parts);
  },
  finish: (term) => term,
  sortRandom: (desc) => `random() ${desc ? 'DESC' : 'ASC'}`,
  // the identity column (collection-sql.ts): insertion order, as SQLite's rowid, never null
  sortRowid: (alias, desc) => `${alias}."_rowid" ${sortDir(desc, true)}`,
  sortColumn(alias, name, field, privateEmail, desc) {
    const col = `${alias}.${quoteIdent(name)}`;
    const multi = field !== null && (field.type === 'select' || field.type === 'relation' || field.type === 'file') && (field.options.maxSelect ?? 1) > 1;
    let expr: string;
    if (field?.type === 'number' || field?.type === 'bool') expr = col;
    else if (field?.type === 'json' || multi) expr = `(${col})::text COLLATE "C"`;
    else if (privateEmail) expr = `(CASE WHEN ${alias}."emailVisibility" <> 0 THEN ${col} END) COLLATE "C"`;
    else expr = `${col} COLLATE "C"`;
    return `${expr} ${sortDir(desc, field === null && !privateEmail && NOT_NULL_COLUMNS.has(name))}`;
  },
};

/**
 * The SQL of an expression and the facts only emission finds (CompiledExpr without `owner`);
 * `parse`: the grammar's parser, for the view rules of relation hops (FilterParser).
 */
export function emitExpression(ast: Expr, collection: Collection, schema: SchemaLookup, opts: CompileOptions, parse: FilterParser): Omit<CompiledExpr, 'owner'> {
  return emitRule(pgRuleDialect, ast, collection, schema, opts, parse);
}

/** A shape's literal values for one text (src/store/sql/rule-sql.ts, bindLiterals). */
export function bindLiterals(uses: readonly LiteralUse[], lits: readonly Literal[]): SqlValue[] | null {
  return bindWith(pgRuleDialect, uses, lits);
}

/**
 * compileSort's PostgreSQL emitter: `<expr> ASC NULLS FIRST` / `<expr> DESC NULLS LAST` terms
 * (SQLite's NULL placement), text columns under `COLLATE "C"` (SQLite's byte order), jsonb columns
 * by their text. `@rowid` is the identity column `_rowid` (collection-sql.ts), in insertion order
 * as SQLite's rowid (one writer assigns it).
 * @throws InvalidQuery `Invalid sort: …` as the SQLite emitter
 */
export function emitSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser = false): string {
  void schema;
  return emitSortWith(pgRuleDialect, src, collection, alias, superuser);
}

/**
 * An operand before comparison: a resolved path (`kind` from the resolver), a literal (its bound
 * value) or a request macro (one slot, value unknown until bind time).
 */
type Val =
  | { from: 'path'; kind: ValueKind; sql: Sql }
  | { from: 'lit'; value: SqlValue; use?: number }
  | { from: 'macro'; slot: ParamSlot };

/** A value as SQLite compares it: a number part and a text part (null: statically never). */
interface Dual {
  n: Sql | null;
  t: Sql | null;
}

type Affinity = 'numeric' | 'text' | 'none';

function affinity(v: Val): Affinity {
  if (v.from !== 'path') return 'none';
  if (v.kind === 'real' || v.kind === 'int') return 'numeric';
  if (v.kind === 'text' || v.kind === 'jsoncol') return 'text';
  return 'none';
}

// ---- values as SQLite compares them ----

/** A slot cast to a PostgreSQL type. */
function slotSql(slot: ParamSlot, type: 'text' | 'float8' | 'int8' | 'numeric' | 'jsonb'): Sql {
  return { sql: `${SLOT}::${type}`, params: [slot] };
}

/** A literal's slot (literalSlot: fixed, or a shape's client literal), through `map` if given. */
const litSlot = (v: { value: SqlValue; use?: number }, map?: (value: SqlValue) => SqlValue): ParamSlot => literalSlot(v.value, v.use, map);

// The conversions of a literal's value this dialect binds (literalSlot's `map`).
const realText = (v: SqlValue): SqlValue => sqliteRealText(v as number);
const toText = (v: SqlValue): SqlValue => (typeof v === 'string' ? v : Buffer.from(v as Uint8Array).toString());
const toTrimmed = (v: SqlValue): SqlValue => (toText(v) as string).trim();
const toNumber = (v: SqlValue): SqlValue => Number(toText(v));
const toString = (v: SqlValue): SqlValue => String(v);

/**
 * RuleDialect.literalClass: what the SQL below decides from a literal's value. NULL; a bigint
 * (int8); a number, a safe integer (int8 beside a fixed-point column) or not (float8); text,
 * by whether SQLite's numeric affinity would make it a number (isNumericText; then cast int8 or
 * float8 as for a number) and whether it ends in an unpaired `\` (as a LIKE pattern it then
 * matches nothing: likePred).
 */
export function literalClass(v: SqlValue): string {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'bigint';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'int' : 'real';
  const text = toText(v) as string;
  const numeric = isNumericText(text) ? (Number.isSafeInteger(Number(text)) ? 'int-text' : 'real-text') : 'text';
  return `${typeof v === 'string' ? '' : 'bytes-'}${numeric}${danglingEscape(String(v)) ? '-escape' : ''}`;
}

/** Text SQLite's numeric affinity would make a number, as a number (NULL otherwise). */
function numOfText(t: Sql): Sql {
  return cat('(CASE WHEN length(', t, `) <= 200 AND `, t, ` ~ ${NUMERIC_TEXT_SQL} THEN (`, t, ')::float8 END)');
}

/** Text that stays text under numeric affinity (NULL when it would become a number). */
function textNotNum(t: Sql): Sql {
  return cat('(CASE WHEN NOT (length(', t, `) <= 200 AND `, t, ` ~ ${NUMERIC_TEXT_SQL}) THEN `, t, ' END)');
}

const isNumericText = (s: string): boolean => s.length <= 200 && NUMERIC_TEXT.test(s);

/** How SQLite prints a REAL (`%!.15g`): `5` → `5.0`, `1e20` → `1.0e+20`. */
export function sqliteRealText(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return `${Object.is(v, -0) ? '-0' : v}.0`;
  const [mant, expText] = v.toExponential(14).split('e');
  const exp = Number(expText);
  const trim = (s: string): string => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '.0') : `${s}.0`);
  if (exp < -4 || exp >= 15) return `${trim(mant)}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return trim(v.toFixed(Math.max(0, 14 - exp)));
}

/**
 * SQL printing a double precision value as SQLite prints a REAL (`%!.15g`). PostgreSQL's
 * float8-to-numeric conversion rounds to 15 significant digits too, so the numeric `n` only needs
 * SQLite's layout: a `.0` on integral mantissas and an exponent beyond [1e-4, 1e15).
 */
function realTextSql(x: Sql): Sql {
  const n = cat('(', x, ')::numeric');
  const e = cat('floor(log(abs(', n, ')))');
  const withPoint = (t: Sql): Sql => cat('(CASE WHEN strpos(', t, `, '.') > 0 THEN `, t, ' ELSE ', t, ` || '.0' END)`);
  const mant = cat('trim_scale(', n, ' / power(10::numeric, ', e, '))::text');
  const expo = cat(withPoint(mant), ` || 'e' || (CASE WHEN `, e, ` < 0 THEN '-' ELSE '+' END) || lpad(abs(`, e, `)::text, 2, '0')`);
  return cat('(CASE WHEN ', n, ` = 0 THEN '0.0' WHEN abs(`, n, ') >= 1e15 OR abs(', n, ') < 1e-4 THEN ', expo, ' ELSE ', withPoint(cat(n, '::text')), ' END)');
}

/** The json value's number part: numbers, and booleans as 1/0. */
function jsonNum(j: Sql): Sql {
  return cat('(CASE jsonb_typeof(', j, `) WHEN 'number' THEN (`, j, `)::float8 WHEN 'boolean' THEN (CASE WHEN (`, j, `)::boolean THEN 1 ELSE 0 END) END)`);
}

/** The json value's text part: strings, and objects/arrays as JSON text. */
function jsonText(j: Sql): Sql {
  return cat('(CASE jsonb_typeof(', j, `) WHEN 'string' THEN `, j, ` #>> '{}' WHEN 'object' THEN (`, j, `)::text WHEN 'array' THEN (`, j, ')::text END)');
}

/** The json value as text, as SQLite's LIKE and TEXT affinity read it (booleans `1`/`0`). */
function jsonAsText(j: Sql): Sql {
  return cat('(CASE jsonb_typeof(', j, `) WHEN 'boolean' THEN (CASE WHEN (`, j, `)::boolean THEN '1' ELSE '0' END) WHEN 'null' THEN NULL WHEN 'string' THEN `, j, ` #>> '{}' WHEN 'number' THEN `, j, ` #>> '{}' ELSE (`, j, ')::text END)');
}

/**
 * `v` as a Dual once the affinity `applied` (from the other operand) is applied; `peer` is the
 * other operand (its kind picks the cast of a numeric parameter, and says whether a request value
 * compared with an affinity-less value should be read as text).
 */
function dual(v: Val, applied: Affinity, peer: Val): Dual {
  const intPeer = peer.from === 'path' && peer.kind === 'int';
  if (v.from === 'path') {
    const x = v.sql;
    switch (v.kind) {
      case 'real':
      case 'int':
      case 'count':
        return { n: x, t: null };
      case 'text':
      case 'jsoncol':
      case 'loose':
        return applied === 'numeric' ? { n: numOfText(x), t: textNotNum(x) } : { n: null, t: x };
      case 'json':
        if (applied === 'text') return { n: null, t: jsonAsText(x) };
        if (applied === 'numeric') {
          const str = cat('(CASE WHEN jsonb_typeof(', x, `) = 'string' THEN `, x, ` #>> '{}' END)`);
          return { n: cat('COALESCE(', jsonNum(x), ', ', numOfText(str), ')'), t: cat('COALESCE(', textNotNum(str), ', ', jsonText(cat('(CASE WHEN jsonb_typeof(', x, `) <> 'string' THEN `, x, ' END)')), ')') };
        }
        return { n: jsonNum(x), t: jsonText(x) };
    }
  }
  if (v.from === 'lit') {
    const value = v.value;
    if (value === null) return { n: null, t: null };
    if (typeof value === 'bigint') return { n: slotSql(litSlot(v), 'int8'), t: null };
    if (typeof value === 'number') {
      if (applied === 'text') return { n: null, t: slotSql(litSlot(v, realText), 'text') };
      const asInt = intPeer && Number.isSafeInteger(value);
      return { n: slotSql(litSlot(v), asInt ? 'int8' : 'float8'), t: null };
    }
    const text = typeof value === 'string' ? value : Buffer.from(value).toString();
    if (applied === 'numeric' && isNumericText(text)) {
      const num = Number(text);
      const asInt = intPeer && Number.isSafeInteger(num);
      return { n: slotSql(litSlot(v, asInt ? toNumber : toTrimmed), asInt ? 'int8' : 'float8'), t: null };
    }
    return { n: null, t: slotSql(litSlot(v, typeof value === 'string' ? undefined : toText), 'text') };
  }
  const slot = v.slot;
  if ('scale' in slot && slot.scale !== undefined) return { n: slotSql(slot, 'numeric'), t: null };
  const t = slotSql(slot, 'text');
  if (applied === 'text' || ('like' in slot && slot.like)) return { n: null, t };
  // values that are always text (SQLite keeps them text unless a numeric column converts them)
  if (applied === 'none' && alwaysText(slot)) return { n: null, t };
  if (applied === 'none' && peer.from === 'path' && peer.kind === 'loose') return { n: null, t };
  return { n: numOfText(t), t: textNotNum(t) };
}

/** The datetime macros bound as numbers (src/rules/datetime.ts); the others are date text. */
const NUMBER_DATE_MACROS = new Set(['second', 'minute', 'hour', 'weekday', 'day', 'month', 'year']);

/**
 * Whether a request slot always binds text (or NULL): a query parameter, a header, the context,
 * a date macro (not their `:isset` and `:length`, which are numbers). Such a value compares as text where no numeric column converts it, as in SQLite.
 */
function alwaysText(slot: ParamSlot): boolean {
  if ('mod' in slot && (slot.mod === 'isset' || slot.mod === 'length')) return false; // numbers
  return slot.kind === 'query' || slot.kind === 'headers' || slot.kind === 'context' || (slot.kind === 'date' && !NUMBER_DATE_MACROS.has(slot.name));
}

/** Both operands as Duals, SQLite's affinity rules applied. */
function duals(a: Val, b: Val): [Dual, Dual] {
  const fa = affinity(a);
  const fb = affinity(b);
  const toA: Affinity = fb === 'numeric' && fa !== 'numeric' ? 'numeric' : fb === 'text' && fa === 'none' ? 'text' : 'none';
  const toB: Affinity = fa === 'numeric' && fb !== 'numeric' ? 'numeric' : fa === 'text' && fb === 'none' ? 'text' : 'none';
  return [dual(a, toA, b), dual(b, toB, a)];
}

/** `a op b` as SQLite evaluates it (NULL when either is NULL); numbers sort before text. */
function compareValues(a: Val, b: Val, op: Exclude<CompareOp, '!=' | '~' | '!~'>): Sql {
  const [x, y] = duals(a, b);
  const terms: Sql[] = [];
  if (x.n && y.n) terms.push(cat(x.n, ` ${op} `, y.n));
  if (x.t && y.t) terms.push(op === '=' ? cat(x.t, ' = ', y.t) : cat(x.t, ` COLLATE "C" ${op} `, y.t));
  if ((op === '<' || op === '<=') && x.n && y.t) terms.push(cat('(', x.n, ' IS NOT NULL AND ', y.t, ' IS NOT NULL)'));
  if ((op === '>' || op === '>=') && x.t && y.n) terms.push(cat('(', x.t, ' IS NOT NULL AND ', y.n, ' IS NOT NULL)'));
  if (terms.length === 0) return raw('false');
  if (terms.length === 1) return terms[0];
  return cat('(', ...terms.flatMap((t, i) => (i ? [' OR ', t] : [t])), ')');
}

/** SQLite's `a IS b`: equal, or both NULL (never NULL itself). */
function sameValue(a: Val, b: Val): Sql {
  const [x, y] = duals(a, b);
  const part = (p: Sql | null, q: Sql | null): Sql | null => {
    if (p && q) return cat(p, ' IS NOT DISTINCT FROM ', q);
    if (p) return cat(p, ' IS NULL');
    if (q) return cat(q, ' IS NULL');
    return null;
  };
  const terms = [part(x.n, y.n), part(x.t, y.t)].filter((t): t is Sql => t !== null);
  if (terms.length === 0) return raw('true');
  if (terms.length === 1) return cat('(', terms[0], ')');
  return cat('(', terms[0], ' AND ', terms[1], ')');
}

/** `v IS NOT NULL` as SQLite reads the value (a JSON null is NULL). */
function notNull(v: Val): Sql {
  if (v.from === 'lit') return raw(v.value === null ? 'false' : 'true');
  if (v.from === 'macro') return cat(slotSql(v.slot, 'text'), ' IS NOT NULL');
  if (v.kind === 'json') return cat('COALESCE(jsonb_typeof(', v.sql, `), 'null') <> 'null'`);
  return cat(v.sql, ' IS NOT NULL');
}

/** `v IN (items…)` as SQLite evaluates it: one IN list per class when the classes are static. */
function inValues(v: Val, items: Val[]): Sql {
  const pairs = items.map((item) => duals(v, item));
  const left = pairs[0][0];
  const single = (left.n === null) !== (left.t === null);
  const simple = pairs.every(([, d]) => (d.n === null) !== (d.t === null) && (d.n ?? d.t)!.sql.startsWith(`${SLOT}::`));
  if (!single || !simple) {
    const ors = items.map((item) => compareValues(v, item, '='));
    return ors.length === 1 ? ors[0] : cat('(', ...ors.flatMap((t, i) => (i ? [' OR ', t] : [t])), ')');
  }
  const l = (left.n ?? left.t)!;
  const matching = pairs.map(([, d]) => (left.n ? d.n : d.t)).filter((d): d is Sql => d !== null);
  if (matching.length === 0) return raw('false');
  return cat(l, ' IN (', ...matching.flatMap((m, i) => (i ? [', ', m] : [m])), ')');
}

/** `v` as text, as SQLite's LIKE reads it (numbers printed, REALs with `.0`). */
function asText(v: Val): Sql | null {
  if (v.from === 'lit') {
    const value = v.value;
    if (value === null) return null;
    if (typeof value === 'number') return slotSql(litSlot(v, realText), 'text');
    if (typeof value === 'bigint') return slotSql(litSlot(v, toString), 'text');
    return slotSql(litSlot(v, typeof value === 'string' ? undefined : toText), 'text');
  }
  if (v.from === 'macro') return slotSql(v.slot, 'text');
  switch (v.kind) {
    case 'real':
      return realTextSql(v.sql);
    case 'int':
    case 'count':
      return cat('(', v.sql, ')::text');
    case 'json':
      return jsonAsText(v.sql);
    default:
      return v.sql;
  }
}

/** Whether a LIKE pattern ends in an unpaired escape (SQLite: matches nothing; PostgreSQL: error). */
const danglingEscape = (p: string): boolean => (p.length - p.replace(/\\+$/, '').length) % 2 === 1;

/** `a LIKE b ESCAPE '\'` as SQLite evaluates it; a path on the right is wrapped like wrapLike. */
function likePred(a: Val, b: Val): Sql {
  const text = asText(a);
  if (text === null) return raw('NULL::boolean');
  let pattern: Sql;
  if (b.from === 'lit') {
    const p = b.value === null ? null : String(b.value);
    if (p === null || danglingEscape(p)) return raw('NULL::boolean');
    pattern = slotSql(litSlot(b, typeof b.value === 'string' ? undefined : toString), 'text');
  } else {
    let p = asText(b)!;
    if (b.from === 'path') {
      const escaped = cat(`replace(replace(`, p, `, ${BS}, ${BS} || ${BS}), '_', ${BS} || '_')`);
      p = cat(`(CASE WHEN strpos(`, p, `, '%') > 0 THEN `, p, ` ELSE '%' || `, escaped, ` || '%' END)`);
    }
    // an odd run of trailing backslashes: NULL (no match) instead of PostgreSQL's error
    pattern = cat(`(CASE WHEN (length(`, p, `) - length(rtrim(`, p, `, ${BS}))) % 2 = 0 THEN `, p, ' END)');
  }
  return cat('(', text, ') COLLATE "C" ILIKE ', pattern, LIKE_ESCAPE);
}
