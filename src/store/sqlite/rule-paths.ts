/**
 * SQLite emission of field paths for the rule compiler (spec 1-core-api.md, "Filter grammar",
 * "Record"); name resolution itself is src/rules/paths.ts.
 *
 * Only names found in the schema become SQL identifiers, always double-quoted. A path that
 * crosses a relation or ends on a multi-valued field resolves to a *set* of values: extra FROM
 * sources (target tables, `json_each` over JSON array columns) plus join conditions, which the
 * emitter (rule-sql.ts) turns into "any element matches": an uncorrelated `<column> IN (SELECT …)`
 * semi-join when the first hop is a single-valued relation (`ResolvedPath.head`), a correlated
 * `EXISTS (…)` otherwise.
 *
 * What a path may reveal is bounded here, at every relation hop (issue 12):
 * - the target row's expiry clause (`options.ttl_field`) joins every hop in both modes: expired
 *   rows are hidden from every read, rule evaluation included;
 * - in `filter` mode for a caller who is not a superuser, every hop also carries the target's
 *   view rule, compiled in `rule` mode over the hop's alias and bound for the caller (a locked
 *   rule makes the hop match nothing), so a filter through a relation into rows the caller cannot
 *   view answers exactly as if those rows did not exist;
 * - in the same case an auth collection's `email` reads as NULL unless the row's
 *   `emailVisibility` is on or the row is the caller's own, so a private address is no oracle.
 */
import { ApiError } from '../../errors/api-error.js';
import type { Collection, Field } from '../../collections/types.js';
import type { ParamSlot } from '../../rules/compiler.js';
import { MAX_RELATION_DEPTH, isMultiValued, resolveColumn, type PathMode, type SchemaLookup } from '../../rules/paths.js';

/**
 * Compiles the view rule of a relation hop's target over `alias` (the hop's table), or says it
 * is locked (`'locked'`) or open (`null`). Provided by the compiler, which owns rule compilation.
 */
export type HopRule = (target: Collection, alias: string) => { sql: string; params: ParamSlot[] } | 'locked' | null;

/**
 * A path resolved to SQL: `value` is scalar unless `sources` is non-empty. `?` placeholders may
 * stand in `conds` (bound by `condParams`, in order) and in `value` (bound by `valueParams`).
 */
export interface ResolvedPath {
  value: string;
  valueParams: ParamSlot[];
  sources: string[];
  conds: string[];
  condParams: ParamSlot[];
  /**
   * Set when the path's first hop is a single-valued relation of the root record: `conds[0]` is
   * then the join `<id> = <column>` (no parameter), and the set of values can be written as the
   * uncorrelated semi-join `<column> IN (SELECT <id> FROM sources WHERE conds[1..] AND …)`, which
   * SQLite may plan from either side (rule-sql.ts).
   */
  head?: { column: string; id: string };
  /**
   * The collection whose record ids the value holds: the target of a relation field, or the
   * collection of an `id` column. `@request.auth.id` compared with such a value matches only a
   * caller of that collection.
   */
  idsOf?: string;
  /** Decimal scale when the path ends on a fixed-point number field (stored scaled). */
  scale?: number;
}

/** Double-quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `json_each` over a column that should hold a JSON array; NULL/'' are empty, a bare value is one element. */
export function jsonEachSource(col: string, alias: string): string {
  return `json_each(CASE WHEN json_valid(${col}) THEN ${col} WHEN ${col} IS NULL OR ${col} = '' THEN '[]' ELSE json_array(${col}) END) ${alias}`;
}

/** Walks field paths of one compiled expression, handing out fresh table aliases. */
export class PathResolver {
  private counter = 0;
  /** Whether any path was resolved: the expression reads the record (CompiledExpr.readsRecord). */
  readsRecord = false;
  /**
   * @param guarded  true for a client filter of a caller who is not a superuser: hops carry the
   *                 target's view rule (`hopRule`) and private emails read as NULL
   */
  constructor(
    private readonly root: Collection,
    private readonly schema: SchemaLookup,
    private readonly mode: PathMode,
    private readonly alias: string,
    private readonly guarded = false,
    private readonly hopRule: HopRule | null = null,
  ) {}

  /** A fresh alias: `<root>_<n>`, so a nested compilation rooted at `r_1` (`r_1_1`, …) never meets `r_11`. */
  private fresh(): string {
    return `${this.alias}_${++this.counter}`;
  }

  /**
   * The value of column `col` of `coll` (aliased `alias`) as a filter may read it: an auth
   * collection's email is NULL to a guarded caller unless visible or the caller's own row.
   */
  private column(coll: Collection, alias: string, name: string, col: string): { sql: string; params: ParamSlot[] } {
    if (!this.guarded || coll.type !== 'auth' || name !== 'email') return { sql: col, params: [] };
    return {
      sql: `(CASE WHEN ${alias}."emailVisibility" <> 0 OR (${alias}."id" = ? AND ? = ?) THEN ${col} END)`,
      params: [{ kind: 'auth', path: 'id' }, { kind: 'auth', path: 'collectionId' }, { kind: 'value', value: coll.id }],
    };
  }

  /** The expiry clause and (guarded) the view rule a hop into `coll` aliased `alias` carries. */
  private hopScope(coll: Collection, alias: string, conds: string[], condParams: ParamSlot[]): void {
    const ttl = coll.options.ttl_field;
    if (ttl) {
      const col = `${alias}.${quoteIdent(ttl)}`;
      conds.push(`(${col} IS NULL OR ${col} > ?)`);
      condParams.push({ kind: 'now' });
    }
    if (!this.guarded || !this.hopRule) return;
    const rule = this.hopRule(coll, alias);
    if (rule === null) return;
    if (rule === 'locked') conds.push('0');
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
   * Resolves `author.name`, `tags.title`, `meta.a.b`, … to SQL.
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
        const out: ResolvedPath = { value: col, valueParams: [], sources, conds, condParams };
        if (head) out.head = head;
        if (idsOf) out.idsOf = idsOf;
        if (field && isMultiValued(field)) {
          const each = this.fresh();
          sources.push(jsonEachSource(col, each));
          out.value = `${each}.value`;
          return out;
        }
        const scale = field?.type === 'number' && field.options.mode === 'fixed' ? field.options.scale : undefined;
        if (typeof scale === 'number' && Number.isInteger(scale) && scale >= 0 && scale <= 18) out.scale = scale;
        const shownCol = this.column(coll, alias, seg, col);
        out.value = shownCol.sql;
        out.valueParams = shownCol.params;
        return out;
      }
      if (field?.type === 'json') {
        const jsonPath = `$.${path.slice(i + 1).join('.')}`; // segments are [A-Za-z_][A-Za-z0-9_]*
        const out: ResolvedPath = { value: `json_extract(CASE WHEN json_valid(${col}) THEN ${col} END, '${jsonPath}')`, valueParams: [], sources, conds, condParams };
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
        sources.push(jsonEachSource(col, each));
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
