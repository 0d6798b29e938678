/**
 * The backends' rule emitters (src/store/rule-emitters.ts) as the grammar uses them: each given
 * this folder's parser (parseFilter), which the emitters call for the view rule of every relation
 * hop a filter crosses (docs/rules.md, "Filters"). Storage emits SQL from parsed trees and imports
 * no part of the grammar (ARCHITECTURE.md, "Folders").
 */
import type { Collection } from '../model/schema.js';
import type { CompileOptions, CompiledExpr, Expr, SchemaLookup, SqlDialectName } from '../store/rule-types.js';
import { ruleEmitter as backendEmitter, type RuleEmitter as BackendEmitter } from '../store/rule-emitters.js';
import { parseFilter } from './parser.js';

/** A backend's emitter of parsed filters and rules, and of `sort` parameters. */
export interface TreeEmitter {
  /**
   * The SQL of the parsed `ast` over `collection` and the facts only emission finds (CompiledExpr
   * without `owner`; rules/compiler.ts, compileExpression).
   * @throws InvalidQuery, QueryTooComplex (src/store/errors/store-errors.ts) for invalid filters
   */
  emitExpression(ast: Expr, collection: Collection, schema: SchemaLookup, opts: CompileOptions): Omit<CompiledExpr, 'owner'>;
  /** A `sort` parameter as an ORDER BY body (rules/compiler.ts, compileSort). @throws InvalidQuery */
  emitSort(src: string, collection: Collection, schema: SchemaLookup, alias: string, superuser?: boolean): string;
  /** A shape's literal values for one text, or null when they need the text compiled (rules/compiler.ts, compileFilter). */
  bindLiterals: BackendEmitter['bindLiterals'];
  /** The class of a literal's value the emitted SQL depends on (RuleDialect.literalClass of src/store/sql/rule-sql.ts). */
  literalClass: BackendEmitter['literalClass'];
}

/** The emitter of backend `kind` with parseFilter given. */
function withParser(kind: SqlDialectName): TreeEmitter {
  const e = backendEmitter(kind);
  return { emitExpression: (ast, collection, schema, opts) => e.emitExpression(ast, collection, schema, opts, parseFilter), emitSort: e.emitSort, bindLiterals: e.bindLiterals, literalClass: e.literalClass };
}

const EMITTERS: Record<SqlDialectName, TreeEmitter> = { sqlite: withParser('sqlite'), postgres: withParser('postgres') };

/** The emitter of the backend named `kind` (CompileOptions.dialect). */
export function ruleEmitter(kind: SqlDialectName): TreeEmitter {
  return EMITTERS[kind];
}

/**
 * The PostgreSQL emitter's expression function, for a caller holding a parsed tree (the
 * PostgreSQL emitter's differential tests compare it with SQLite's compileExpression).
 */
export const pgEmitExpression = EMITTERS.postgres.emitExpression;
