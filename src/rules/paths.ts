/**
 * Resolution of field paths against the schema for the rule compiler (spec 1-core-api.md,
 * "Filter grammar", "Record").
 *
 * Only names found in the schema become SQL identifiers, always double-quoted. A path that
 * crosses a relation or ends on a multi-valued field resolves to a *set* of values: extra FROM
 * sources (target tables, `json_each` over JSON array columns) plus join conditions, which the
 * compiler wraps in `EXISTS (…)` for "any element matches" semantics.
 */
import { ApiError } from '../errors/api-error.js';
import { BASE_COLUMNS, HIDDEN_AUTH_COLUMNS, type Collection, type Field } from '../domain/types.js';

/** Looks collections up by id (relation targets) and by name. */
export interface SchemaLookup {
  byId(id: string): Collection | undefined;
  byName(name: string): Collection | undefined;
}

/** `filter`: client-supplied filter or sort (hidden fields refused); `rule`: operator-authored. */
export type PathMode = 'filter' | 'rule';

/** Most relations a single path may traverse. */
export const MAX_RELATION_DEPTH = 6;

/** A path resolved to SQL: `value` is scalar unless `sources` is non-empty. */
export interface ResolvedPath {
  value: string;
  sources: string[];
  conds: string[];
  /** Decimal scale when the path ends on a fixed-point number field (stored scaled). */
  scale?: number;
}

/** Double-quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Whether a select/relation/file field stores a JSON array (maxSelect > 1). */
export function isMultiValued(field: Field): boolean {
  const multiType = field.type === 'select' || field.type === 'relation' || field.type === 'file';
  return multiType && (field.options.maxSelect ?? 1) > 1;
}

/**
 * Finds the column `name` of `coll`, enforcing the mode's restrictions.
 * Returns the field definition, or null for the built-in/hidden auth columns.
 * @throws ApiError 400 `<label>: unknown field "…".`, or naming a hidden/encrypted field.
 */
export function resolveColumn(coll: Collection, name: string, mode: PathMode, shown: string, label: string): Field | null {
  const fail = (why: string): never => {
    throw ApiError.badRequest(`${label}: ${why}.`);
  };
  const field = coll.fields.find((f) => f.name === name);
  if (field) {
    if (field.options.encrypted) fail(`field ${JSON.stringify(shown)} is encrypted and cannot be used here`);
    if (mode === 'filter' && field.options.hidden) fail(`field ${JSON.stringify(shown)} is hidden and cannot be used here`);
    return field;
  }
  if ((BASE_COLUMNS as readonly string[]).includes(name)) return null;
  if (coll.type === 'auth' && (HIDDEN_AUTH_COLUMNS as readonly string[]).includes(name)) {
    if (mode === 'filter') fail(`field ${JSON.stringify(shown)} is hidden and cannot be used here`);
    return null;
  }
  return fail(`unknown field ${JSON.stringify(shown)}`);
}

/** `json_each` over a column that should hold a JSON array; NULL/'' are empty, a bare value is one element. */
export function jsonEachSource(col: string, alias: string): string {
  return `json_each(CASE WHEN json_valid(${col}) THEN ${col} WHEN ${col} IS NULL OR ${col} = '' THEN '[]' ELSE json_array(${col}) END) ${alias}`;
}

/** Walks field paths of one compiled expression, handing out fresh table aliases. */
export class PathResolver {
  private counter = 0;
  constructor(
    private readonly root: Collection,
    private readonly schema: SchemaLookup,
    private readonly mode: PathMode,
    private readonly alias: string,
  ) {}

  private fresh(): string {
    return `${this.alias}${++this.counter}`;
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
    const sources: string[] = [];
    const conds: string[] = [];
    let coll = this.root;
    let alias = this.alias;
    let hops = 0;
    for (let i = 0; ; i++) {
      const seg = path[i];
      const shown = path.slice(0, i + 1).join('.');
      const field = resolveColumn(coll, seg, this.mode, shown, 'Invalid filter');
      const col = `${alias}.${quoteIdent(seg)}`;
      if (i === path.length - 1) {
        if (field && isMultiValued(field)) {
          const each = this.fresh();
          sources.push(jsonEachSource(col, each));
          return { value: `${each}.value`, sources, conds };
        }
        const scale = field?.type === 'number' && field.options.mode === 'fixed' ? field.options.scale : undefined;
        const valid = typeof scale === 'number' && Number.isInteger(scale) && scale >= 0 && scale <= 18;
        return { value: col, sources, conds, scale: valid ? scale : undefined };
      }
      if (field?.type === 'json') {
        const jsonPath = `$.${path.slice(i + 1).join('.')}`; // segments are [A-Za-z_][A-Za-z0-9_]*
        return { value: `json_extract(CASE WHEN json_valid(${col}) THEN ${col} END, '${jsonPath}')`, sources, conds };
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
        conds.push(`${nextAlias}."id" = ${col}`);
      }
      sources.push(`${quoteIdent(next.name)} ${nextAlias}`);
      coll = next;
      alias = nextAlias;
    }
  }
}
