/**
 * Access rules (docs/rules.md, "Rules"): null and "" are locked, `@public` opens an operation,
 * anything else is a filter expression compiled once per collection version and bound per request
 * from the request context. Superusers bypass every rule.
 */
import type { Collection, RuleName } from '../model/schema.js';
import type { SqlValue } from '../store/bind.js';
import { bindParams, compileExpression, type AccountContext, type RuleContext, type RuleRequest } from './compiler.js';
import type { CompiledExpr, SchemaLookup, SqlDialectName } from '../store/rule-types.js';
import { boundedCache } from '../cache/bounded.js';

/** The authenticated caller: a record of an auth collection, or a superuser. */
export interface Principal {
  superuser: boolean;
  collection: Collection;
  /** the whole auth record, hidden columns included, plus collectionId and collectionName */
  record: Record<string, unknown>;
  /** the active account (an app's tenancy resolver), for `@request.account.*` */
  account?: AccountContext;
}

/** What a rule means for one request: deny outright, allow everything, or a SQL condition. */
/** `readsRecord` false: the condition depends on the request alone (no field of the record). */
export type RuleCheck = { kind: 'deny' } | { kind: 'all' } | { kind: 'where'; sql: string; params: SqlValue[]; readsRecord: boolean };

export const DENY: RuleCheck = { kind: 'deny' };
export const ALL: RuleCheck = { kind: 'all' };

type Compiled = 'locked' | 'public' | CompiledExpr;

/** An owner rule's column in the codec's row and the collection its ids belong to (null: any). */
export interface OwnerColumn {
  index: number;
  of: string | null;
}

/** Whether the stored owner value `stored` names `principal` (see RuleBook.ownerColumn). */
export function ownerMatches(owner: OwnerColumn, stored: unknown, principal: Principal | null): boolean {
  if (principal === null) return stored === '';
  if (owner.of !== null && principal.collection.id !== owner.of) return false;
  return stored === String(principal.record.id);
}

/** Compiled rules per collection version. */
export class RuleBook {
  private cache = new Map<string, { version: number; rules: Map<RuleName, Compiled> }>();
  /** ownerColumn's answers; `false` stands for null (a cache holds no null) */
  private owners = boundedCache<string, OwnerColumn | false>(1000);

  /** `dialect`: the SQL the rules compile to (CompileOptions.dialect). */
  constructor(private schema: SchemaLookup & { schemaGeneration(): number }, private dialect: SqlDialectName = 'sqlite') {}

  private compiled(c: Collection, rule: RuleName): Compiled {
    // Rules crossing relations read other collections' schema (fields, expiry), so the whole
    // schema's generation keys them.
    const version = this.schema.schemaGeneration();
    let entry = this.cache.get(c.id);
    if (!entry || entry.version !== version) {
      entry = { version, rules: new Map() };
      this.cache.set(c.id, entry);
    }
    let out = entry.rules.get(rule);
    if (out === undefined) {
      const src = c[rule];
      if (src === null || src.trim() === '') out = 'locked';
      else if (src.trim() === '@public') out = 'public';
      else out = compileExpression(src, c, this.schema, { mode: 'rule', alias: 'r', dialect: this.dialect });
      entry.rules.set(rule, out);
    }
    return out;
  }

  /**
   * Resolves `rule` of `c` for a request. `data` is the request body (for @request.data.*),
   * `method` the operation's method (@request.method), `request` the HTTP request served (for
   * @request.query.* and @request.headers.*; none: they read NULL), `context` @request.context.
   */
  check(c: Collection, rule: RuleName, principal: Principal | null, data: Record<string, unknown> | null, method: string, request?: RuleRequest | null, context: RuleContext = 'default'): RuleCheck {
    if (principal?.superuser) return ALL;
    const compiled = this.compiled(c, rule);
    if (compiled === 'locked') return DENY;
    if (compiled === 'public') return ALL;
    const params = bindParams(compiled, { auth: principal ? principal.record : null, data, method, account: principal?.account, request, context });
    return { kind: 'where', sql: compiled.sql, params, readsRecord: compiled.readsRecord };
  }

  /**
   * The owner rule fast path: when `rule` is exactly `<field> = @request.auth.id` (either order)
   * on a single relation or text field, returns that field's column index in the codec's row
   * (3 + field position) and, for a relation, its target collection (`of`). For such a field
   * (TEXT affinity, BINARY collation) SQLite's verdict is exactly `stored === callerId` in
   * JavaScript, with the caller id '' when anonymous and no id at all for a caller of another
   * collection than `of` (see ownerMatches), so a cached record can be checked without a query.
   * Null for any other rule.
   */
  ownerColumn(c: Collection, rule: RuleName): OwnerColumn | null {
    const key = `${c.id}:${this.schema.schemaGeneration()}:${rule}`;
    let v = this.owners.get(key);
    if (v === undefined) {
      v = this.findOwnerColumn(c, rule) ?? false;
      this.owners.set(key, v);
    }
    return v || null;
  }

  private findOwnerColumn(c: Collection, rule: RuleName): OwnerColumn | null {
    const compiled = this.compiled(c, rule);
    if (typeof compiled === 'string' || !compiled.owner) return null;
    const i = c.fields.findIndex((f) => f.name === compiled.owner!.field);
    const f = c.fields[i];
    if (!f || f.options.encrypted) return null;
    const single = ((f.options.maxSelect as number | undefined) ?? 1) <= 1;
    if (!((f.type === 'relation' && single) || f.type === 'text')) return null;
    return { index: 3 + i, of: compiled.owner.of };
  }

  /** True when the rule is `@public` (used for startup warnings and fast paths). */
  isPublic(c: Collection, rule: RuleName): boolean {
    return this.compiled(c, rule) === 'public';
  }
}
