/**
 * The SQLite side of the rule emitter (src/rules/compiler.ts; the shared walk is
 * src/store/sql/rule-sql.ts, paths src/store/sql/rule-paths.ts): SQLite compares its own values,
 * so an operand is its SQL text and a comparison is written as the filter reads (`a = b`,
 * `a IS b` for `!=` over a set, `a LIKE b ESCAPE '\'`); AND/OR terms are arranged within SQLite's
 * parser limits (sql-shape.ts); JSON array columns are read with `json_each`, json paths with
 * `json_extract`. Every literal and every `@request.*` value is a `?` parameter slot.
 */
import type { Collection } from '../../model/schema.js';
import type { CompileOptions, CompiledExpr, Expr, FilterParser, Literal, LiteralUse, ParamSlot, SchemaLookup } from '../rule-types.js';
import type { SqlValue } from '../bind.js';
import { quoteIdent, type PathDialect } from '../sql/rule-paths.js';
import { bindLiterals as bindWith, emitRule, emitSortWith, literalSlot, type RuleDialect, type Sql } from '../sql/rule-sql.js';
import { checkShape, joinShaped, leafShape, type Shaped } from './sql-shape.js';

const LIKE_ESCAPE = ` ESCAPE '\\'`;

/** How SQLite spells paths (PathDialect): JSON arrays and json columns are text. */
export const sqlitePathDialect: PathDialect = {
  // NULL/'' are empty, a bare value (not JSON) is one element
  elements: (col, alias) =>
    `json_each(CASE WHEN json_valid(${col}) THEN ${col} WHEN ${col} IS NULL OR ${col} = '' THEN '[]' ELSE json_array(${col}) END) ${alias}`,
  jsonPath: (col, segments) => `json_extract(CASE WHEN json_valid(${col}) THEN ${col} END, '$.${segments.join('.')}')`,
  jsonColumn: (col) => col,
  textParam: '?',
  falseSql: '0',
  lower: (v) => `lower(${v})`,
};

const dir = (desc: boolean): string => (desc ? 'DESC' : 'ASC');

/** The SQLite rule dialect (RuleDialect): an operand is its SQL text and slots. */
export const sqliteRuleDialect: RuleDialect<Sql, Shaped<ParamSlot>> = {
  paths: sqlitePathDialect,
  pathOperand(path, like) {
    const vp = path.valueParams;
    // wrapLikeSql repeats its operand three times
    return like ? { sql: wrapLikeSql(path.value), params: vp.length ? [...vp, ...vp, ...vp] : vp } : { sql: path.value, params: vp };
  },
  literalOperand: (value, use) => ({ sql: '?', params: [literalSlot(value, use)] }),
  macroOperand: (slot) => ({ sql: '?', params: [slot] }),
  predicate(op, a, b) {
    const params = [...a.params, ...b.params];
    if (op === '~' || op === '!~') return { sql: `${a.sql} LIKE ${b.sql}${LIKE_ESCAPE}`, params };
    if (op === '!=') return { sql: `${a.sql} IS ${b.sql}`, params };
    return { sql: `${a.sql} ${op} ${b.sql}`, params };
  },
  different: (a, b, same) => ({ sql: `${a.sql} IS NOT ${b.sql}`, params: same.params }),
  notNull: (v) => ({ sql: `${v.sql} IS NOT NULL`, params: v.params }),
  nullCheck: (v, isNull) => ({ sql: `${v.sql} ${isNull ? 'IS NULL' : 'IS NOT NULL'}`, params: v.params }),
  inValues: (v, values, uses) => ({ sql: `${v.sql} IN (${values.map(() => '?').join(', ')})`, params: [...v.params, ...values.map((x, i) => literalSlot(x, uses[i]))] }),
  inAccounts: (v) => ({ sql: `${v.sql} IN (SELECT value FROM json_each(?))`, params: [...v.params, { kind: 'account', field: 'ids' }] }),
  literalClass,
  leaf: leafShape,
  join: joinShaped,
  finish: checkShape,
  sortRandom: (desc) => `RANDOM() ${dir(desc)}`,
  sortRowid: (alias, desc) => `${alias}.rowid ${dir(desc)}`,
  sortColumn: (alias, name, _field, privateEmail, desc) =>
    privateEmail ? `(CASE WHEN ${alias}."emailVisibility" <> 0 THEN ${alias}."email" END) ${dir(desc)}` : `${alias}.${quoteIdent(name)} ${dir(desc)}`,
};

/**
 * The SQL of an expression and the facts only emission finds (CompiledExpr without `owner`);
 * `parse`: the grammar's parser, for the view rules of relation hops (FilterParser).
 */
export function emitExpression(ast: Expr, collection: Collection, schema: SchemaLookup, opts: CompileOptions, parse: FilterParser): Omit<CompiledExpr, 'owner'> {
  return emitRule(sqliteRuleDialect, ast, collection, schema, opts, parse);
}

/** RuleDialect.literalClass: SQLite compares the bound values themselves, so its SQL never depends on a literal's value. */
export function literalClass(value: SqlValue): string {
  void value;
  return '';
}

/** A shape's literal values for one text (src/store/sql/rule-sql.ts, bindLiterals). */
export function bindLiterals(uses: readonly LiteralUse[], lits: readonly Literal[]): SqlValue[] | null {
  return bindWith(sqliteRuleDialect, uses, lits);
}

/** compileSort's SQLite emitter (see src/rules/compiler.ts): `<column> ASC` / `DESC` terms. */
export function emitSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser = false): string {
  void schema; // sorts are over the collection's own columns; kept for signature symmetry
  return emitSortWith(sqliteRuleDialect, src, collection, alias, superuser);
}

/**
 * SQL doing what `wrapLike` (src/store/sql/rule-values.ts) does, for a column or expression on
 * the right of `~` / `!~`.
 */
export function wrapLikeSql(expr: string): string {
  const escaped = `replace(replace(${expr}, '\\', '\\\\'), '_', '\\_')`;
  return `(CASE WHEN instr(${expr}, '%') > 0 THEN ${expr} ELSE '%' || ${escaped} || '%' END)`;
}
