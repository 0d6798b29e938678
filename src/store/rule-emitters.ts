/**
 * Each backend's rule emitter by the backend's name (the rule compiler's CompileOptions.dialect,
 * which callers take from their Store's StoreSql.kind): src/store/sql/rule-sql.ts given the
 * backend's RuleDialect (src/store/sqlite/rule-sql.ts, src/store/pg/rule-sql.ts). The rule
 * compiler reaches it through src/rules/emitters.ts, which gives the expression emitter the
 * grammar's parser, instead of importing the backend folders (ARCHITECTURE.md, "Folders").
 */
import type { BackendKind } from './backend.js';
import * as sqliteRules from './sqlite/rule-sql.js';
import * as pgRules from './pg/rule-sql.js';

/** A backend's rule emitter. */
export interface RuleEmitter {
  /** A parsed filter or rule as a boolean SQL term with its facts (rules/compiler.ts, compileExpression). */
  emitExpression: typeof sqliteRules.emitExpression;
  /** A `sort` parameter as an ORDER BY body (rules/compiler.ts, compileSort). */
  emitSort: typeof sqliteRules.emitSort;
  /** A shape's literal values for one text, or null when they need the text compiled (rules/compiler.ts, compileFilter). */
  bindLiterals: typeof sqliteRules.bindLiterals;
  /** The class of a literal's value the emitted SQL depends on (RuleDialect.literalClass of src/store/sql/rule-sql.ts). */
  literalClass: typeof sqliteRules.literalClass;
}

/** The rule emitter of the backend named `kind`. */
export function ruleEmitter(kind: BackendKind): RuleEmitter {
  return kind === 'postgres' ? pgRules : sqliteRules;
}
