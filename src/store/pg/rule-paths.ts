/**
 * PostgreSQL emission of field paths for the rule compiler (the counterpart of
 * src/store/sqlite/rule-paths.ts; name resolution itself is src/rules/paths.ts). The storage model
 * it assumes is described in rule-sql.ts.
 *
 * As on SQLite, only names found in the schema become SQL identifiers, always double-quoted, and a
 * path that crosses a relation or ends on a multi-valued field resolves to a *set* of values: extra
 * FROM sources (target tables, `jsonb_array_elements_text` over jsonb array columns) plus join
 * conditions, which rule-sql.ts turns into an uncorrelated `<column> IN (SELECT …)` semi-join when
 * the first hop is a single-valued relation (`ResolvedPath.head`) and a correlated `EXISTS (…)`
 * otherwise. Every hop carries the target's expiry clause and, for a guarded caller (a client
 * filter of a non-superuser), the target's view rule; a guarded caller reads an auth collection's
 * private `email` as NULL. Those bounds are the SQLite emitter's (issue 12), restated here.
 *
 * PostgreSQL is statically typed where SQLite compares by storage class and column affinity, so a
 * resolved path also says what kind of value it yields (`ValueKind`): rule-sql.ts uses it to
 * compare exactly as SQLite would without ever casting a value PostgreSQL could refuse.
 */
import { ApiError } from '../../errors/api-error.js';
import type { Collection, Field } from '../../collections/types.js';
import type { ParamSlot } from '../../rules/compiler.js';
import { MAX_RELATION_DEPTH, isMultiValued, resolveColumn, type PathMode, type SchemaLookup } from '../../rules/paths.js';

/**
 * What a value expression yields, in SQLite's terms (its affinity decides conversions):
 * - `real`: a `double precision` column (REAL affinity);
 * - `int`: a `bigint` (fixed-point, scaled) or `smallint` (bool) column (INTEGER affinity);
 * - `text`: a text column (TEXT affinity);
 * - `jsoncol`: a whole json column read as text (`col::text`; TEXT affinity in SQLite);
 * - `loose`: text without affinity (an element of a multi-valued field, a guarded email);
 * - `json`: the jsonb value at a path inside a json column (no affinity; any JSON type).
 */
export type ValueKind = 'real' | 'int' | 'text' | 'jsoncol' | 'loose' | 'json';

/** Compiles the view rule of a hop's target over `alias`, or says it is locked / open (null). */
export type HopRule = (target: Collection, alias: string) => { sql: string; params: ParamSlot[] } | 'locked' | null;

/** A path resolved to SQL; see the SQLite ResolvedPath, plus `kind`. */
export interface ResolvedPath {
  value: string;
  valueParams: ParamSlot[];
  kind: ValueKind;
  sources: string[];
  conds: string[];
  condParams: ParamSlot[];
  /** first hop is a single-valued relation: `conds[0]` is the join `<id> = <column>` */
  head?: { column: string; id: string };
  /** the collection whose record ids the value holds */
  idsOf?: string;
  /** decimal scale when the path ends on a fixed-point number field (stored scaled) */
  scale?: number;
}

/** Double-quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * The elements of a jsonb column that should hold an array, as text rows `<alias>.value`: NULL is
 * empty, a non-array value is one element (SQLite's json_each over a scalar).
 */
export function jsonbElementsSource(col: string, alias: string): string {
  return `jsonb_array_elements_text(CASE WHEN jsonb_typeof(${col}) = 'array' THEN ${col} WHEN ${col} IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(${col}) END) AS ${alias}(value)`;
}

/** A path inside a json column as a PostgreSQL text-array literal (segments are identifiers). */
function jsonPathLiteral(segments: readonly string[]): string {
  return `'{${segments.join(',')}}'`;
}

/** Walks field paths of one compiled expression, handing out fresh table aliases. */
export class PathResolver {
  private counter = 0;
  /** whether any path was resolved (CompiledExpr.readsRecord) */
  readsRecord = false;

  constructor(
    private readonly root: Collection,
    private readonly schema: SchemaLookup,
    private readonly mode: PathMode,
    private readonly alias: string,
    private readonly guarded = false,
    private readonly hopRule: HopRule | null = null,
  ) {}

  /** `<root>_<n>`, so a nested compilation rooted at `r_1` (`r_1_1`, …) never meets `r_11`. */
  private fresh(): string {
    return `${this.alias}_${++this.counter}`;
  }

  /** A fresh alias for a helper subquery of the emitter (same namespace as the hops). */
  freshAlias(): string {
    return this.fresh();
  }

  private column(coll: Collection, alias: string, name: string, col: string): { sql: string; params: ParamSlot[]; guarded: boolean } {
    if (!this.guarded || coll.type !== 'auth' || name !== 'email') return { sql: col, params: [], guarded: false };
    return {
      sql: `(CASE WHEN ${alias}."emailVisibility" <> 0 OR (${alias}."id" = ?::text AND ?::text = ?::text) THEN ${col} END)`,
      params: [{ kind: 'auth', path: 'id' }, { kind: 'auth', path: 'collectionId' }, { kind: 'value', value: coll.id }],
      guarded: true,
    };
  }

  private hopScope(coll: Collection, alias: string, conds: string[], condParams: ParamSlot[]): void {
    const ttl = coll.options.ttl_field;
    if (ttl) {
      const col = `${alias}.${quoteIdent(ttl)}`;
      conds.push(`(${col} IS NULL OR ${col} > ?::text)`);
      condParams.push({ kind: 'now' });
    }
    if (!this.guarded || !this.hopRule) return;
    const rule = this.hopRule(coll, alias);
    if (rule === null) return;
    if (rule === 'locked') conds.push('false');
    else {
      conds.push(`(${rule.sql})`);
      for (const p of rule.params) condParams.push(p);
    }
  }

  private target(field: Field, shown: string): Collection {
    const id = field.options.collectionId;
    const coll = !id ? undefined : id === this.root.id ? this.root : this.schema.byId(id);
    if (!coll) throw ApiError.badRequest(`Invalid filter: cannot resolve the relation ${JSON.stringify(shown)}.`);
    return coll;
  }

  /**
   * Resolves `author.name`, `tags.title`, `meta.a.b`, … to SQL; errors are the SQLite resolver's.
   * @throws ApiError 400 for unknown/hidden/encrypted fields, unresolvable relations, sub-paths of
   *   fields that have none, and chains longer than MAX_RELATION_DEPTH relations.
   */
  resolve(path: readonly string[]): ResolvedPath {
    this.readsRecord = true;
    const sources: string[] = [];
    const conds: string[] = [];
    const condParams: ParamSlot[] = [];
    let coll = this.root;
    let alias = this.alias;
    let hops = 0;
    let head: ResolvedPath['head'];
    for (let i = 0; ; i++) {
      const seg = path[i];
      const shown = path.slice(0, i + 1).join('.');
      const field = resolveColumn(coll, seg, this.mode, shown, 'Invalid filter');
      const col = `${alias}.${quoteIdent(seg)}`;
      if (i === path.length - 1) {
        const idsOf = field?.type === 'relation' ? field.options.collectionId : seg === 'id' ? coll.id : undefined;
        const out: ResolvedPath = { value: col, valueParams: [], kind: 'text', sources, conds, condParams };
        if (head) out.head = head;
        if (idsOf) out.idsOf = idsOf;
        if (field && isMultiValued(field)) {
          const each = this.fresh();
          sources.push(jsonbElementsSource(col, each));
          out.value = `${each}.value`;
          out.kind = 'loose';
          return out;
        }
        if (field?.type === 'number') out.kind = field.options.mode === 'fixed' ? 'int' : 'real';
        else if (field?.type === 'bool' || (field === null && seg === 'token_epoch')) out.kind = 'int';
        else if (field?.type === 'json') {
          out.kind = 'jsoncol';
          out.value = `(${col})::text`;
          return out;
        }
        const scale = field?.type === 'number' && field.options.mode === 'fixed' ? field.options.scale : undefined;
        if (typeof scale === 'number' && Number.isInteger(scale) && scale >= 0 && scale <= 18) out.scale = scale;
        const shownCol = this.column(coll, alias, seg, col);
        out.value = shownCol.sql;
        out.valueParams = shownCol.params;
        if (shownCol.guarded) out.kind = 'loose';
        return out;
      }
      if (field?.type === 'json') {
        const out: ResolvedPath = { value: `(${col} #> ${jsonPathLiteral(path.slice(i + 1))})`, valueParams: [], kind: 'json', sources, conds, condParams };
        if (head) out.head = head;
        return out;
      }
      if (field?.type !== 'relation') {
        throw ApiError.badRequest(`Invalid filter: field ${JSON.stringify(shown)} has no sub-fields.`);
      }
      if (++hops > MAX_RELATION_DEPTH) {
        throw ApiError.badRequest(`Invalid filter: the path ${JSON.stringify(path.join('.'))} crosses more than ${MAX_RELATION_DEPTH} relations.`);
      }
      const next = this.target(field, shown);
      const nextAlias = this.fresh();
      if (isMultiValued(field)) {
        const each = this.fresh();
        sources.push(jsonbElementsSource(col, each));
        conds.push(`${nextAlias}."id" = ${each}.value`);
      } else {
        if (hops === 1) head = { column: col, id: `${nextAlias}."id"` };
        conds.push(`${nextAlias}."id" = ${col}`);
      }
      sources.push(`${quoteIdent(next.name)} ${nextAlias}`);
      this.hopScope(next, nextAlias, conds, condParams);
      coll = next;
      alias = nextAlias;
    }
  }
}
