/**
 * Field paths of the rule compiler resolved to SQL, for both backends (docs/rules.md, "Filters" and
 * "Rules"; ARCHITECTURE.md, "A read"); name resolution itself is rule-fields.ts. The walk is
 * the same on SQLite and PostgreSQL; what the two spell differently (how a JSON array column
 * becomes a set of rows, how a json path is read, parameter casts, the false literal) is the
 * backend's `PathDialect` (src/store/sqlite/rule-sql.ts, src/store/pg/rule-sql.ts).
 *
 * Only names found in the schema become SQL identifiers, always double-quoted. A path that
 * crosses a relation or ends on a multi-valued field resolves to a *set* of values: extra FROM
 * sources (target tables, the elements of JSON array columns) plus join conditions, which the
 * emitter (rule-sql.ts) turns into "any element matches": an uncorrelated `<column> IN (SELECT …)`
 * semi-join when the first hop is a single-valued relation (`ResolvedPath.head`), a correlated
 * `EXISTS (…)` otherwise. A back-relation segment (`comments_via_post`) is a hop into the records
 * whose relation points back, a set like a multi-valued relation; an `@collection` path starts
 * at the joined row the emitter's EXISTS opened (openJoin) instead of the record.
 *
 * What a path may reveal is bounded here, at every relation hop (back-relations and `@collection`
 * joins included):
 * - the target row's expiry clause (`options.ttl_field`) joins every hop in both modes: expired
 *   rows are hidden from every read, rule evaluation included;
 * - in `filter` mode for a caller who is not a superuser, every hop also carries the target's
 *   view rule, compiled in `rule` mode over the hop's alias and bound for the caller (a locked
 *   rule makes the hop match nothing), so a filter through a relation into rows the caller cannot
 *   view answers exactly as if those rows did not exist;
 * - in the same case an auth collection's `email` reads as NULL unless the row's
 *   `emailVisibility` is on or the row is the caller's own, so a private address is no oracle.
 */
import { InvalidQuery } from '../errors/store-errors.js';
import type { Collection, Field } from '../../model/schema.js';
import type { CollectionJoin, FieldModifier, ParamSlot, PathMode, SchemaLookup } from '../rule-types.js';
import { MAX_RELATION_DEPTH, findBackRelation, isMultiValued, resolveColumn } from './rule-fields.js';

/**
 * What a backend spells its own way when resolving paths. Every function returns SQL text and
 * is called once per path segment at most (compile time; results are cached by the compiler's
 * callers).
 */
export interface PathDialect {
  /**
   * A FROM source yielding the elements of column `col`, which should hold a JSON array, as text
   * rows `<alias>.value`: NULL (and on SQLite '') is empty, a non-array value is one element.
   */
  elements(col: string, alias: string): string;
  /** The value at `segments` (identifiers, at least one) inside the json column `col`. */
  jsonPath(col: string, segments: readonly string[]): string;
  /** A whole json column read as a value (what a filter compares it with). */
  jsonColumn(col: string): string;
  /** A parameter bound to text: `?` (SQLite), or a SLOT typed `::text` where types must be explicit (src/store/slots.ts). */
  textParam: string;
  /** The literal that is false: `0` on SQLite, `false` on PostgreSQL. */
  falseSql: string;
  /** `v` (text) with ASCII letters lower-cased and every other character kept (SQLite's `lower`). */
  lower(v: string): string;
}

/**
 * What a value expression yields, in SQLite's terms (its affinity decides conversions); the
 * PostgreSQL emitter uses it to compare exactly as SQLite would, the SQLite emitter ignores it:
 * - `real`: a floating-point number column (REAL affinity);
 * - `int`: a fixed-point (scaled) number or bool column (INTEGER affinity);
 * - `text`: a text column (TEXT affinity);
 * - `jsoncol`: a whole json column read as text (TEXT affinity in SQLite);
 * - `loose`: text without affinity (an element of a multi-valued field, a guarded email);
 * - `json`: the value at a path inside a json column (no affinity; any JSON type);
 * - `count`: an integer without affinity (an expression: `:length`'s count, `:changed`'s 1/0).
 */
export type ValueKind = 'real' | 'int' | 'text' | 'jsoncol' | 'loose' | 'json' | 'count';

/**
 * Compiles the view rule of a relation hop's target over `alias` (the hop's table), or says it
 * is locked (`'locked'`) or open (`null`). Provided by the emitter, which owns rule compilation.
 */
export type HopRule = (target: Collection, alias: string) => { sql: string; params: ParamSlot[] } | 'locked' | null;

/**
 * A path resolved to SQL: `value` is scalar unless `sources` is non-empty. `?` placeholders may
 * stand in `conds` (bound by `condParams`, in order) and in `value` (bound by `valueParams`).
 */
export interface ResolvedPath {
  value: string;
  valueParams: ParamSlot[];
  /** what `value` yields (ValueKind) */
  kind: ValueKind;
  sources: string[];
  conds: string[];
  condParams: ParamSlot[];
  /**
   * Set when the path's first hop is a single-valued relation of the root record: `conds[0]` is
   * then the join `<id> = <column>` (no parameter), and the set of values can be written as the
   * uncorrelated semi-join `<column> IN (SELECT <id> FROM sources WHERE conds[1..] AND …)`, which
   * the planner may start from either side (rule-sql.ts).
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
  /** The path ends with `:each`: every value of the set must satisfy a comparison, not some. */
  each?: boolean;
}

/** A modifier on a path that cannot take it (docs/rules.md, "Modifiers"). */
function modifierError(modifier: FieldModifier, path: readonly string[], why: string): InvalidQuery {
  return new InvalidQuery('filter', `Invalid filter: the modifier ":${modifier}" cannot apply to ${JSON.stringify(path.join('.'))}: ${why}.`);
}

/** Double-quotes an SQL identifier (the same spelling on both backends). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Walks field paths of one compiled expression, handing out fresh table aliases. */
export class PathResolver {
  private counter = 0;
  /** Whether any path from the record was resolved: the expression reads it (CompiledExpr.readsRecord). */
  readsRecord = false;
  /** The open `@collection` joins by CollectionJoin.key: the joined collection and its alias (openJoin). */
  private readonly joins = new Map<string, { coll: Collection; alias: string }>();
  /**
   * @param dialect  the backend's spelling (PathDialect)
   * @param guarded  true for a client filter of a caller who is not a superuser: hops carry the
   *                 target's view rule (`hopRule`) and private emails read as NULL
   */
  constructor(
    private readonly dialect: PathDialect,
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

  /** A fresh alias for a helper subquery of the emitter (same namespace as the hops). */
  freshAlias(): string {
    return this.fresh();
  }

  /**
   * The value of column `col` of `coll` (aliased `alias`) as a filter may read it: an auth
   * collection's email is NULL to a guarded caller unless visible or the caller's own row
   * (`guarded` then true: the value has no affinity).
   */
  private column(coll: Collection, alias: string, name: string, col: string): { sql: string; params: ParamSlot[]; guarded: boolean } {
    if (!this.guarded || coll.type !== 'auth' || name !== 'email') return { sql: col, params: [], guarded: false };
    const p = this.dialect.textParam;
    return {
      sql: `(CASE WHEN ${alias}."emailVisibility" <> 0 OR (${alias}."id" = ${p} AND ${p} = ${p}) THEN ${col} END)`,
      params: [{ kind: 'auth', path: 'id' }, { kind: 'auth', path: 'collectionId' }, { kind: 'value', value: coll.id }],
      guarded: true,
    };
  }

  /** The expiry clause and (guarded) the view rule a hop into `coll` aliased `alias` carries. */
  private hopScope(coll: Collection, alias: string, conds: string[], condParams: ParamSlot[]): void {
    const ttl = coll.options.ttl_field;
    if (ttl) {
      const col = `${alias}.${quoteIdent(ttl)}`;
      conds.push(`(${col} IS NULL OR ${col} > ${this.dialect.textParam})`);
      condParams.push({ kind: 'now' });
    }
    if (!this.guarded || !this.hopRule) return;
    const rule = this.hopRule(coll, alias);
    if (rule === null) return;
    if (rule === 'locked') conds.push(this.dialect.falseSql);
    else {
      conds.push(`(${rule.sql})`);
      for (const p of rule.params) condParams.push(p);
    }
  }

  /**
   * Opens the join of `@collection.<name>:<alias>` (docs/rules.md, "Joining other collections")
   * for the EXISTS the emitter writes around the terms that read it: adds the table to `from` and
   * its scope (expiry; for a guarded caller the collection's view rule, as a relation hop carries)
   * to `conds`/`condParams`. Paths of this join then read the row through it, until it is opened
   * again.
   * @throws InvalidQuery for an unknown collection
   */
  openJoin(join: CollectionJoin, from: string[], conds: string[], condParams: ParamSlot[]): void {
    const coll = this.schema.byName(join.collection);
    if (!coll) throw new InvalidQuery('filter', `Invalid filter: unknown collection ${JSON.stringify(join.collection)} in ${JSON.stringify('@collection.' + join.collection)}.`);
    const alias = this.fresh();
    from.push(`${quoteIdent(coll.name)} ${alias}`);
    this.hopScope(coll, alias, conds, condParams);
    this.joins.set(join.key, { coll, alias });
  }

  private target(field: Field, shown: string): Collection {
    const id = field.options.collectionId;
    const coll = !id ? undefined : id === this.root.id ? this.root : this.schema.byId(id);
    if (!coll) throw new InvalidQuery('filter', `Invalid filter: cannot resolve the relation ${JSON.stringify(shown)}.`);
    return coll;
  }

  /**
   * Resolves `author.name`, `tags.title`, `meta.a.b`, `comments_via_post.message`, … to SQL, with
   * the last field's `modifier` (docs/rules.md, "Modifiers"); with `join` (opened by openJoin),
   * from the joined row instead of the record.
   * @throws InvalidQuery for unknown/hidden/encrypted fields, unresolvable relations, sub-paths of
   *   fields that have none, chains longer than MAX_RELATION_DEPTH relations, and a modifier on a
   *   field that cannot take it.
   */
  resolve(path: readonly string[], modifier?: FieldModifier, join?: CollectionJoin): ResolvedPath {
    const out = this.resolvePath(path, modifier, join);
    if (modifier === 'lower') {
      out.value = this.dialect.lower(out.value);
      out.kind = 'loose'; // an expression: no affinity
      delete out.scale;
    }
    return out;
  }

  private resolvePath(path: readonly string[], modifier: FieldModifier | undefined, join: CollectionJoin | undefined): ResolvedPath {
    const d = this.dialect;
    const sources: string[] = [];
    const conds: string[] = [];
    const condParams: ParamSlot[] = [];
    let coll = this.root;
    let alias = this.alias;
    let prefix = '';
    if (join) {
      const open = this.joins.get(join.key);
      if (!open) throw new Error(`unreachable: the join ${join.key} is not open`);
      ({ coll, alias } = open);
      prefix = `@collection.${join.collection}.`;
    } else this.readsRecord = true;
    let hops = 0;
    let head: ResolvedPath['head'];
    for (let i = 0; ; i++) {
      const seg = path[i];
      const shown = prefix + path.slice(0, i + 1).join('.');
      const back = seg.includes('_via_') && !coll.fields.some((f) => f.name === seg) ? findBackRelation(this.schema, coll, seg) : undefined;
      if (back) {
        if (++hops > MAX_RELATION_DEPTH) throw tooDeep(path);
        resolveColumn(back.from, back.field.name, this.mode, shown, 'Invalid filter'); // a hidden relation field is refused
        const nextAlias = this.fresh();
        sources.push(`${quoteIdent(back.from.name)} ${nextAlias}`);
        const ref = `${nextAlias}.${quoteIdent(back.field.name)}`;
        if (isMultiValued(back.field)) {
          const each = this.fresh();
          sources.push(d.elements(ref, each));
          conds.push(`${each}.value = ${alias}."id"`);
        } else conds.push(`${ref} = ${alias}."id"`);
        this.hopScope(back.from, nextAlias, conds, condParams);
        coll = back.from;
        alias = nextAlias;
        if (i === path.length - 1) return this.backRelationEnd(path, modifier, coll, alias, { sources, conds, condParams, head });
        continue;
      }
      const field = resolveColumn(coll, seg, this.mode, shown, 'Invalid filter');
      const col = `${alias}.${quoteIdent(seg)}`;
      if (i === path.length - 1) {
        const idsOf = field?.type === 'relation' ? field.options.collectionId : seg === 'id' ? coll.id : undefined;
        const out: ResolvedPath = { value: col, valueParams: [], kind: 'text', sources, conds, condParams };
        if (head) out.head = head;
        if (idsOf) out.idsOf = idsOf;
        const multi = field !== null && isMultiValued(field);
        if ((modifier === 'length' || modifier === 'each') && !multi) {
          throw modifierError(modifier, path, 'it applies to select, relation and file fields holding several values');
        }
        if (modifier === 'lower' && (field?.type === 'number' || field?.type === 'bool' || field?.type === 'json' || (field === null && seg === 'token_epoch'))) {
          throw modifierError(modifier, path, 'it applies to text values');
        }
        if (modifier === 'length') {
          out.value = `(SELECT count(*) FROM ${d.elements(col, this.fresh())})`;
          out.kind = 'count';
          delete out.idsOf;
          return out;
        }
        if (multi) {
          const each = this.fresh();
          sources.push(d.elements(col, each));
          out.value = `${each}.value`;
          out.kind = 'loose';
          if (modifier === 'each') out.each = true;
          return out;
        }
        if (field?.type === 'number') out.kind = field.options.mode === 'fixed' ? 'int' : 'real';
        else if (field?.type === 'bool' || (field === null && seg === 'token_epoch')) out.kind = 'int';
        else if (field?.type === 'json') {
          out.kind = 'jsoncol';
          out.value = d.jsonColumn(col);
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
        if (modifier !== undefined) throw modifierError(modifier, path, modifier === 'lower' ? 'it applies to text values' : 'it applies to select, relation and file fields holding several values');
        // the remaining segments are identifiers ([A-Za-z_][A-Za-z0-9_]*, the grammar's)
        const out: ResolvedPath = { value: d.jsonPath(col, path.slice(i + 1)), valueParams: [], kind: 'json', sources, conds, condParams };
        if (head) out.head = head;
        return out;
      }
      if (field?.type !== 'relation') {
        throw new InvalidQuery('filter', `Invalid filter: field ${JSON.stringify(shown)} has no sub-fields.`);
      }
      if (++hops > MAX_RELATION_DEPTH) throw tooDeep(path);
      const next = this.target(field, shown);
      const nextAlias = this.fresh();
      if (isMultiValued(field)) {
        const each = this.fresh();
        sources.push(d.elements(col, each));
        conds.push(`${nextAlias}."id" = ${each}.value`);
      } else {
        // a joined row's path is read inside the join's EXISTS: no semi-join over the record there
        if (hops === 1 && !join) head = { column: col, id: `${nextAlias}."id"` };
        conds.push(`${nextAlias}."id" = ${col}`);
      }
      sources.push(`${quoteIdent(next.name)} ${nextAlias}`);
      this.hopScope(next, nextAlias, conds, condParams);
      coll = next;
      alias = nextAlias;
    }
  }

  /**
   * A path ending on a back-relation: the related records' ids (a set), their count with
   * `:length`, every one with `:each`.
   */
  private backRelationEnd(path: readonly string[], modifier: FieldModifier | undefined, coll: Collection, alias: string, set: Pick<ResolvedPath, 'sources' | 'conds' | 'condParams' | 'head'>): ResolvedPath {
    if (modifier === 'lower') throw modifierError(modifier, path, 'it applies to text values');
    if (modifier === 'length') {
      // the hops are correlated with the record: their rows counted in one scalar subquery
      const value = `(SELECT count(*) FROM ${set.sources.join(', ')}${set.conds.length ? ` WHERE ${set.conds.join(' AND ')}` : ''})`;
      return { value, valueParams: set.condParams, kind: 'count', sources: [], conds: [], condParams: [] };
    }
    const out: ResolvedPath = { value: `${alias}."id"`, valueParams: [], kind: 'text', sources: set.sources, conds: set.conds, condParams: set.condParams, idsOf: coll.id };
    if (set.head) out.head = set.head;
    if (modifier === 'each') out.each = true;
    return out;
  }
}

/** A path crossing more than MAX_RELATION_DEPTH relations (back-relations included). */
function tooDeep(path: readonly string[]): InvalidQuery {
  return new InvalidQuery('filter', `Invalid filter: the path ${JSON.stringify(path.join('.'))} crosses more than ${MAX_RELATION_DEPTH} relations.`);
}
