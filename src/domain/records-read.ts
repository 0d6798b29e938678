/**
 * Record reads: view, list (offset paging, filter, sort, totals), abilities and expand
 * (spec 1-core-api.md, "Records", "List query parameters").
 *
 * Cheap reads run on the main thread; a list page whose plan scans or sorts without an index,
 * and every count, go to the reader pool (Reader.allAuto / allOffThread).
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection, Field } from './types.js';
import type { Principal, RuleCheck } from './access.js';
import type { Store } from './store.js';
import type { SqlValue } from '../db/bind.js';
import { bindParams, compileExpression, compileSort, type CompiledExpr } from '../rules/compiler.js';
import { q } from './collection-sql.js';
import { parseProjection, project, type Projection } from './projection.js';
import { nowDate } from './fields/index.js';

export const DEFAULT_PER_PAGE = 30;
export const MAX_PER_PAGE = 500;
const MAX_EXPAND_DEPTH = 6;

/** Options shared by view and list: the expand tree and the projection. */
export interface ReadShape {
  expand: ExpandTree | null;
  projection: Projection | null;
}

export type ExpandTree = Map<string, ExpandTree>;

/** Parses `expand=a,a.b,c` into a tree (depth ≤ 6; blank segments ignored). */
export function parseExpand(src: string | null): ExpandTree | null {
  if (!src) return null;
  const root: ExpandTree = new Map();
  for (const path of src.split(',').slice(0, 50)) {
    let node = root;
    for (const seg of path.trim().split('.').slice(0, MAX_EXPAND_DEPTH)) {
      if (!seg) break;
      let next = node.get(seg);
      if (!next) node.set(seg, (next = new Map()));
      node = next;
    }
  }
  return root.size ? root : null;
}

export function readShape(qs: URLSearchParams): ReadShape {
  return { expand: parseExpand(qs.get('expand')), projection: parseProjection(qs.get('fields')) };
}

/** `AND`-joined WHERE parts with their parameters. */
class Where {
  parts: string[] = [];
  params: SqlValue[] = [];
  add(sql: string, params: SqlValue[]): void {
    this.parts.push(`(${sql})`);
    for (const p of params) this.params.push(p);
  }
  addRule(check: RuleCheck): void {
    if (check.kind === 'where') this.add(check.sql, check.params);
  }
  sql(): string {
    return this.parts.length ? ` WHERE ${this.parts.join(' AND ')}` : '';
  }
}

const isMulti = (f: Field) => ((f.options.maxSelect as number | undefined) ?? 1) > 1;

export class RecordReader {
  private filterCache = new Map<string, CompiledExpr>();
  private countCache = new Map<string, { gen: number; count: number }>();
  private viewSqlCache = new WeakMap<object, Map<string, string>>();

  constructor(private store: Store) {}

  /** The ttl clause: rows whose expiry is set and at or before now are hidden from every read. */
  private addTtl(where: Where, c: Collection): void {
    const ttl = c.options.ttl_field;
    if (ttl) where.add(`r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?`, [nowDate()]);
  }

  /** One record by id under the view rule (with expand and projection), or 404. */
  async view(c: Collection, id: string, principal: Principal | null, shape: ReadShape): Promise<Record<string, unknown>> {
    const rec = this.viewSync(c, id, principal, { expand: null, projection: null })!;
    const [out] = await this.finish(c, [rec], principal, shape);
    return out;
  }

  /** Applies expand and projection to a set of records of `c`. */
  async finish(c: Collection, recs: Record<string, unknown>[], principal: Principal | null, shape: ReadShape): Promise<Record<string, unknown>[]> {
    if (shape.expand && recs.length) await this.expand(c, recs, shape.expand, principal, 0);
    return shape.projection ? recs.map((r) => project(r, shape.projection!)) : recs;
  }

  /** Synchronous view for the fast path (no expand): returns null when expand is requested. */
  viewSync(c: Collection, id: string, principal: Principal | null, shape: ReadShape): Record<string, unknown> | null {
    if (shape.expand) return null;
    const check = this.store.rules.check(c, 'viewRule', principal, null, 'GET');
    if (check.kind === 'deny') throw ApiError.notFound();
    const codec = this.store.codec(c);
    const ruleSql = check.kind === 'where' ? check.sql : '';
    let perCodec = this.viewSqlCache.get(codec);
    if (!perCodec) this.viewSqlCache.set(codec, (perCodec = new Map()));
    let sql = perCodec.get(ruleSql);
    if (sql === undefined) {
      const ttl = c.options.ttl_field;
      sql = `SELECT ${codec.columns} FROM ${q(c.name)} r WHERE r."id" = ?${ruleSql ? ` AND (${ruleSql})` : ''}${ttl ? ` AND (r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?)` : ''} LIMIT 1`;
      perCodec.set(ruleSql, sql);
    }
    const params: SqlValue[] = [id];
    if (check.kind === 'where') for (const p of check.params) params.push(p);
    if (c.options.ttl_field) params.push(nowDate());
    const row = this.store.reader.get(sql, params);
    if (!row) throw ApiError.notFound();
    const rec = codec.fromRow(row);
    hidePrivate(c, rec, principal);
    return shape.projection ? project(rec, shape.projection) : rec;
  }

  private compileFilter(c: Collection, src: string): CompiledExpr {
    const key = `${c.id}:${this.store.registry.version(c.id)}:${src}`;
    let hit = this.filterCache.get(key);
    if (!hit) {
      hit = compileExpression(src, c, this.store.registry, { mode: 'filter', alias: 'r' });
      if (this.filterCache.size > 2000) this.filterCache.clear();
      this.filterCache.set(key, hit);
    }
    return hit;
  }

  /** An offset page (spec: page, perPage ≤ 500, totals unless skipTotal). Returns the serialized body. */
  async list(c: Collection, principal: Principal | null, qs: URLSearchParams): Promise<string> {
    const check = this.store.rules.check(c, 'listRule', principal, null, 'GET');
    if (check.kind === 'deny') throw ApiError.forbidden('Only superusers can perform this request.');
    const codec = this.store.codec(c);
    const where = new Where();
    where.addRule(check);
    const filter = qs.get('filter');
    if (filter && filter.trim()) {
      const compiled = this.compileFilter(c, filter);
      where.add(compiled.sql, bindParams(compiled, { auth: principal?.record ?? null, data: null, method: 'GET' }));
    }
    this.addTtl(where, c);
    const sortSrc = qs.get('sort');
    const order = sortSrc && sortSrc.trim() ? ` ORDER BY ${compileSort(sortSrc, c, this.store.registry, 'r')}` : '';
    const page = parsePositiveInt(qs.get('page'), 1, 'page');
    let perPage = parsePositiveInt(qs.get('perPage'), DEFAULT_PER_PAGE, 'perPage');
    if (perPage > MAX_PER_PAGE) perPage = MAX_PER_PAGE;
    const skipTotal = parseBool(qs.get('skipTotal'), false);
    const offset = (page - 1) * perPage;
    const from = ` FROM ${q(c.name)} r${where.sql()}`;
    const itemsSql = `SELECT ${codec.columns}${from}${order} LIMIT ? OFFSET ?`;
    const itemsParams = [...where.params, perPage, offset];
    const rowsOrPromise = this.store.reader.allAuto(itemsSql, itemsParams);
    const countPromise = skipTotal ? null : this.count(c, `SELECT COUNT(*)${from}`, where.params);
    const rows = await rowsOrPromise;
    const recs = rows.map((row) => {
      const rec = codec.fromRow(row);
      hidePrivate(c, rec, principal);
      return rec;
    });
    const items = await this.finish(c, recs, principal, readShape(qs));
    if (skipTotal) return codec.stringifyList({ page, perPage, totalItems: -1, totalPages: -1, items });
    const totalItems = await countPromise!;
    return codec.stringifyList({ page, perPage, totalItems, totalPages: Math.ceil(totalItems / perPage), items });
  }

  /** COUNT(*) on the reader pool, cached until the collection's next write. */
  private async count(c: Collection, sql: string, params: SqlValue[]): Promise<number> {
    const key = `${sql}\u0000${params.map(String).join('\u0001')}`;
    const gen = this.store.generation(c.id);
    const hit = this.countCache.get(key);
    if (hit && hit.gen === gen) return hit.count;
    const hasTtl = !!c.options.ttl_field;
    const rows = await this.store.reader.allOffThread(sql, params);
    const count = Number(rows[0]?.[0] ?? 0);
    if (!hasTtl) {
      if (this.countCache.size > 1000) this.countCache.clear();
      this.countCache.set(key, { gen: this.store.generation(c.id) === gen ? gen : -1, count });
    }
    return count;
  }

  /** `{view, update, delete}` for a record the caller can view (404 otherwise). */
  abilities(c: Collection, id: string, principal: Principal | null): Record<string, boolean> {
    const view = this.store.rules.check(c, 'viewRule', principal, null, 'GET');
    if (view.kind === 'deny') throw ApiError.notFound();
    const where = new Where();
    where.add('r."id" = ?', [id]);
    where.addRule(view);
    this.addTtl(where, c);
    const cols: string[] = [];
    const colParams: SqlValue[] = [];
    for (const [name, rule] of [['update', 'updateRule'], ['delete', 'deleteRule']] as const) {
      const check = this.store.rules.check(c, rule, principal, null, name === 'update' ? 'PATCH' : 'DELETE');
      if (check.kind === 'deny') cols.push('0');
      else if (check.kind === 'all') cols.push('1');
      else {
        cols.push(`CASE WHEN (${check.sql}) THEN 1 ELSE 0 END`);
        colParams.push(...check.params);
      }
    }
    const row = this.store.reader.get(`SELECT ${cols.join(', ')} FROM ${q(c.name)} r${where.sql()} LIMIT 1`, [...colParams, ...where.params]);
    if (!row) throw ApiError.notFound();
    return { view: true, update: Number(row[0]) === 1, delete: Number(row[1]) === 1 };
  }

  /** Fills `expand.<field>` on each record, applying the target collection's view rule. */
  private async expand(c: Collection, recs: Record<string, unknown>[], tree: ExpandTree, principal: Principal | null, depth: number): Promise<void> {
    for (const [name, sub] of tree) {
      const field = c.fields.find((f) => f.name === name && f.type === 'relation');
      if (!field) continue;
      const target = this.store.registry.byId(String(field.options.collectionId));
      if (!target) continue;
      const ids = new Set<string>();
      for (const r of recs) {
        const v = r[name];
        if (typeof v === 'string' && v) ids.add(v);
        else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') ids.add(x);
      }
      if (ids.size === 0) continue;
      const found = await this.fetchMany(target, [...ids], principal);
      if (sub.size && depth + 1 < MAX_EXPAND_DEPTH) await this.expand(target, [...found.values()], sub, principal, depth + 1);
      for (const r of recs) {
        const v = r[name];
        let value: unknown;
        if (isMulti(field)) value = Array.isArray(v) ? v.map((x) => found.get(x as string)).filter(Boolean) : [];
        else value = typeof v === 'string' ? found.get(v) : undefined;
        if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
        const exp = (r.expand ??= {}) as Record<string, unknown>;
        exp[name] = value;
      }
    }
  }

  private async fetchMany(c: Collection, ids: string[], principal: Principal | null): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    const check = this.store.rules.check(c, 'viewRule', principal, null, 'GET');
    if (check.kind === 'deny') return out;
    const codec = this.store.codec(c);
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const where = new Where();
      where.add(`r."id" IN (${chunk.map(() => '?').join(',')})`, chunk);
      where.addRule(check);
      this.addTtl(where, c);
      const rows = await this.store.reader.allAuto(`SELECT ${codec.columns} FROM ${q(c.name)} r${where.sql()}`, where.params);
      for (const row of rows) {
        const rec = codec.fromRow(row);
        hidePrivate(c, rec, principal);
        out.set(rec.id as string, rec);
      }
    }
    return out;
  }
}

/** Auth records show `email` only to superusers, the owner, or when emailVisibility is on. */
export function hidePrivate(c: Collection, rec: Record<string, unknown>, principal: Principal | null): void {
  if (c.type !== 'auth' || rec.emailVisibility === true || principal?.superuser) return;
  if (principal && principal.collection.id === c.id && principal.record.id === rec.id) return;
  delete rec.email;
}

function parsePositiveInt(v: string | null, dflt: number, name: string): number {
  if (v === null || v === '') return dflt;
  if (!/^\d{1,9}$/.test(v)) throw ApiError.badRequest(`Invalid ${name}: must be a positive integer.`);
  const n = Number(v);
  return n < 1 ? dflt : n;
}

export function parseBool(v: string | null, dflt: boolean): boolean {
  if (v === null || v === '') return dflt;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw ApiError.badRequest('Invalid boolean query parameter: use true or false.');
}
