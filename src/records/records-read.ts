/**
 * Record reads: view, list, abilities and expand (docs/api.md, "Records", "List records"). Lists
 * (offset and cursor paging, search, vector) live in records-list.ts.
 *
 * Reads return promises on both backends (src/store/backend.ts, SqlReader). On SQLite cheap reads
 * run on the main thread; a list page whose plan scans or sorts without an index, every count,
 * search and vector query go to the reader pool (Reader.allAuto, or `all` with `{ pool: true }`).
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection, Field } from '../model/schema.js';
import type { Principal } from '../rules/access.js';
import { bindParams, compileExpression, compileSort, type RuleContext, type RuleRequest } from '../rules/compiler.js';
import { findBackRelation } from '../store/sql/rule-fields.js';
import type { CursorStateSource, LinkSource, RecordReadRepository } from './record-repositories.js';
import type { SqlValue } from '../store/bind.js';
import type { WriteStep } from '../store/write-job.js';
import { project, type Projection } from './projection.js';
import { MAX_EXPAND_DEPTH, type ExpandTree } from './expand.js';
import type { ListQuery } from './list-query.js';
import type { RecordCodec } from './record-codec.js';

export { parseExpand, type ExpandTree } from './expand.js';
export { readShape } from './list-query.js';
import { nowDate } from '../collections/fields/index.js';
import { Where, hidePrivate } from './record-scope.js';
import { RecordLister, type ListConfig } from './records-list.js';
import { CursorCodec } from './cursor.js';

export { hidePrivate } from './record-scope.js';
export { DEFAULT_PER_PAGE, MAX_PER_PAGE, parseBool, type ListConfig } from './records-list.js';


/** Options shared by view and list: the expand tree and the projection. */
export interface ReadShape {
  expand: ExpandTree | null;
  projection: Projection | null;
}


/** `rec` under the shape's projection (`fields`), or `rec` itself when there is none; expand is the caller's. */
export function projected(rec: Record<string, unknown>, shape: ReadShape): Record<string, unknown> {
  return shape.projection ? project(rec, shape.projection) : rec;
}

/**
 * Most records a back-relation expand (`expand=comments_via_post`) answers for one record, as
 * PocketBase caps it (docs/api.md, "Expand"): the first ones in insertion order.
 */
export const MAX_BACK_RELATION_EXPAND = 1000;

const isMulti = (f: Field) => ((f.options.maxSelect as number | undefined) ?? 1) > 1;

/** Offset and cursor paging on, full-text search on, vector off, stateless cursor tokens. */
export const DEFAULT_LIST_CONFIG: ListConfig = { offset: true, cursor: true, fts: true, vector: false, tokens: new CursorCodec('stateless', null, 600, null) };

/**
 * The list configuration of a server: paging modes, cursor token kind and the list time budget
 * (ServeConfig.pagination), feature switches, the token secret (signed tokens) and the point
 * read and the writer of the stateful tokens' table (`store`).
 */
export function listConfigFrom(
  p: { offset: boolean; cursor: boolean; cursorToken: 'stateless' | 'signed' | 'stateful'; cursorTtlS: number; listTimeBudgetMs?: number },
  features: { fts: boolean; vector: boolean },
  secret: Buffer,
  store: CursorStateSource,
): ListConfig {
  const states = { get: (sql: string, params: SqlValue[]) => store.reader.get(sql, params), write: (steps: WriteStep[]) => store.writer.write(steps) };
  return { offset: p.offset, cursor: p.cursor, ...features, tokens: new CursorCodec(p.cursorToken, secret, p.cursorTtlS, states), timeBudgetMs: p.listTimeBudgetMs ?? 0 };
}

/**
 * Adds `externalAuths: [{provider, providerId}]` to an auth record viewed by its owner or a
 * superuser (docs/auth.md, "OAuth2 and passkeys"); one indexed read.
 */
export async function withLinks(store: LinkSource, c: Collection, rec: Record<string, unknown>, principal: Principal | null): Promise<void> {
  if (c.type !== 'auth') return;
  if (!principal?.superuser && !(principal && principal.collection.id === c.id && principal.record.id === rec.id)) return;
  rec.externalAuths = (await store.sql.externalAuths.list(c.id, [String(rec.id)])).map((l) => ({ provider: l.provider, providerId: l.providerId }));
}

/** Record views, abilities, expand and lists (this module's header) over a RecordReadRepository. */
export class RecordReader {
  private viewSqlCache = new WeakMap<object, Map<string, string>>();
  private lister: RecordLister;

  /** `store`: what the reads use (RecordReadRepository), handed on to the lister; `listConfig`: paging modes, switches, tokens. */
  constructor(private store: RecordReadRepository, listConfig: ListConfig = DEFAULT_LIST_CONFIG) {
    this.lister = new RecordLister(store, listConfig, (c, recs, principal, shape) => this.finish(c, recs, principal, shape));
  }

  /**
   * One list page as the serialized body, a string or its UTF-8 bytes (records-list.ts);
   * `request`: the HTTP request served, for `@request.query.*` / `.headers.*` (RuleBook.check).
   */
  list(c: Collection, principal: Principal | null, query: ListQuery, request?: RuleRequest): Promise<string | Buffer> {
    return this.lister.list(c, principal, query, request);
  }

  /**
   * One record by id under the view rule (with expand and projection), or 404. `request` and
   * `context`: the view rule's `@request.query.*`, `.headers.*` and `@request.context` (RuleBook.check).
   */
  async view(c: Collection, id: string, principal: Principal | null, shape: ReadShape, request?: RuleRequest, context?: RuleContext): Promise<Record<string, unknown>> {
    // the codec of the statement's columns, even if the schema changes during the read
    const { sql, params, codec } = this.viewQuery(c, id, principal, request, context);
    const row = await this.store.reader.get(sql, params);
    if (!shape.expand) return this.viewed(c, codec, row, principal, shape);
    const [out] = await this.finish(c, [await this.viewed(c, codec, row, principal, { expand: null, projection: null })], principal, shape);
    return out;
  }

  /**
   * Applies expand and projection to a set of records of `c`.
   * @throws ApiError 400 when the expand names a hidden relation field and the caller is not a superuser
   */
  async finish(c: Collection, recs: Record<string, unknown>[], principal: Principal | null, shape: ReadShape): Promise<Record<string, unknown>[]> {
    if (shape.expand && !principal?.superuser) this.checkExpand(c, shape.expand, '', 0);
    if (shape.expand && recs.length) await this.expand(c, recs, shape.expand, principal, 0);
    return shape.projection ? recs.map((r) => projected(r, shape)) : recs;
  }

  /** The view's statement under the caller's view rule. @throws ApiError 404 when the rule denies */
  private viewQuery(c: Collection, id: string, principal: Principal | null, request?: RuleRequest, context?: RuleContext): { sql: string; params: SqlValue[]; codec: RecordCodec } {
    const check = this.store.rules.check(c, 'viewRule', principal, null, 'GET', request, context);
    if (check.kind === 'deny') throw ApiError.notFound();
    const codec = this.store.codec(c);
    const ruleSql = check.kind === 'where' ? check.sql : '';
    let perCodec = this.viewSqlCache.get(codec);
    if (!perCodec) this.viewSqlCache.set(codec, (perCodec = new Map()));
    let sql = perCodec.get(ruleSql);
    if (sql === undefined) {
      const ttl = c.options.ttl_field;
      sql = this.store.sql.records.view(c, codec.columns, ruleSql, ttl);
      perCodec.set(ruleSql, sql);
    }
    const params: SqlValue[] = [id];
    if (check.kind === 'where') for (const p of check.params) params.push(p);
    if (c.options.ttl_field) params.push(nowDate());
    return { sql, params, codec };
  }

  /** The viewed record from its row (404 when none), private fields hidden, links and projection applied. */
  private async viewed(c: Collection, codec: RecordCodec, row: unknown[] | undefined, principal: Principal | null, shape: ReadShape): Promise<Record<string, unknown>> {
    if (!row) throw ApiError.notFound();
    const rec = codec.fromRow(row);
    hidePrivate(c, rec, principal);
    await withLinks(this.store, c, rec, principal);
    return projected(rec, shape);
  }

  /** `{view, update, delete}` for a record the caller can view (404 otherwise). */
  async abilities(c: Collection, id: string, principal: Principal | null, request?: RuleRequest): Promise<Record<string, boolean>> {
    const view = this.store.rules.check(c, 'viewRule', principal, null, 'GET', request);
    if (view.kind === 'deny') throw ApiError.notFound();
    const where = new Where();
    where.add(this.store.sql.list.ID_EQUALS, [id]);
    where.addRule(view);
    where.addTtl(c);
    const cols: string[] = [];
    const colParams: SqlValue[] = [];
    for (const [name, rule] of [['update', 'updateRule'], ['delete', 'deleteRule']] as const) {
      const check = this.store.rules.check(c, rule, principal, null, name === 'update' ? 'PATCH' : 'DELETE', request);
      if (check.kind === 'deny') cols.push('0');
      else if (check.kind === 'all') cols.push('1');
      else {
        cols.push(this.store.sql.records.holds(check.sql));
        colParams.push(...check.params);
      }
    }
    const row = await this.store.reader.get(this.store.sql.records.selectOne(c, cols.join(', '), where.sql()), [...colParams, ...where.params]);
    if (!row) throw ApiError.notFound();
    return { view: true, update: Number(row[0]) === 1, delete: Number(row[1]) === 1 };
  }

  /**
   * Refuses an expand through a hidden relation field at any depth (as a client filter refuses
   * hidden fields); names that are not relation fields are ignored, as expand ignores them.
   */
  private checkExpand(c: Collection, tree: ExpandTree, prefix: string, depth: number): void {
    for (const [name, sub] of tree) {
      const field = c.fields.find((f) => f.name === name && f.type === 'relation');
      if (!field) {
        const back = findBackRelation(this.store.registry, c, name);
        if (back?.field.options.hidden) throw ApiError.badRequest(`Invalid expand: field ${JSON.stringify(prefix + name)} is hidden and cannot be used here.`);
        if (back && sub.size && depth + 1 < MAX_EXPAND_DEPTH) this.checkExpand(back.from, sub, `${prefix}${name}.`, depth + 1);
        continue;
      }
      if (field.options.hidden) throw ApiError.badRequest(`Invalid expand: field ${JSON.stringify(prefix + name)} is hidden and cannot be used here.`);
      const target = this.store.registry.byId(String(field.options.collectionId));
      if (target && sub.size && depth + 1 < MAX_EXPAND_DEPTH) this.checkExpand(target, sub, `${prefix}${name}.`, depth + 1);
    }
  }

  /**
   * Fills `expand.<field>` on each record, applying the target collection's view rule, expiry
   * and visibility (no hidden field, email only where visible to the caller); a back-relation
   * name (`comments_via_post`) is expanded by expandBack.
   */
  private async expand(c: Collection, recs: Record<string, unknown>[], tree: ExpandTree, principal: Principal | null, depth: number): Promise<void> {
    for (const [name, sub] of tree) {
      const field = c.fields.find((f) => f.name === name && f.type === 'relation');
      if (!field) {
        const back = findBackRelation(this.store.registry, c, name);
        if (back) await this.expandBack(recs, name, back.from, back.field, sub, principal, depth);
        continue;
      }
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

  /**
   * `expand.<from>_via_<field>` (docs/api.md, "Expand"): on each record, the list of records of
   * `from` whose relation `field` holds its id, under `from`'s view rule, expiry and visibility,
   * at most MAX_BACK_RELATION_EXPAND in insertion order (one read per record); absent when none.
   * The relation test is the rule compiler's `<field> in <ids>` (rules/compiler.ts), which
   * reads single and multi-valued relations alike on both backends, bound with one id.
   */
  private async expandBack(recs: Record<string, unknown>[], name: string, from: Collection, field: Field, sub: ExpandTree, principal: Principal | null, depth: number): Promise<void> {
    const check = this.store.rules.check(from, 'viewRule', principal, null, 'GET');
    if (check.kind === 'deny') return;
    const codec = this.store.codec(from);
    const holds = compileExpression(`${field.name} in @request.account.ids`, from, this.store.registry, { mode: 'rule', alias: 'r', dialect: this.store.sql.kind });
    const order = compileSort('@rowid', from, this.store.registry, 'r', true, this.store.sql.kind);
    const all = new Map<string, Record<string, unknown>>();
    for (const r of recs) {
      const where = new Where();
      where.add(holds.sql, bindParams(holds, { auth: null, data: null, method: 'GET', account: { id: '', role: '', ids: [String(r.id)] } }));
      where.addRule(check);
      where.addTtl(from);
      const sql = `${this.store.sql.records.selectAll(from, codec.columns, where.sql())} ORDER BY ${order} LIMIT ${MAX_BACK_RELATION_EXPAND}`;
      const rows = await this.store.reader.allAuto(sql, where.params);
      if (rows.length === 0) continue;
      const related = rows.map((row) => {
        const rec = codec.visibleFromRow(row);
        const seen = all.get(rec.id as string);
        if (seen) return seen;
        hidePrivate(from, rec, principal);
        all.set(rec.id as string, rec);
        return rec;
      });
      const exp = (r.expand ??= {}) as Record<string, unknown>;
      exp[name] = related;
    }
    if (all.size && sub.size && depth + 1 < MAX_EXPAND_DEPTH) await this.expand(from, [...all.values()], sub, principal, depth + 1);
  }

  private async fetchMany(c: Collection, ids: string[], principal: Principal | null): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    const check = this.store.rules.check(c, 'viewRule', principal, null, 'GET');
    if (check.kind === 'deny') return out;
    const codec = this.store.codec(c);
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const where = new Where();
      where.add(this.store.sql.list.idIn(chunk.length), chunk);
      where.addRule(check);
      where.addTtl(c);
      const rows = await this.store.reader.allAuto(this.store.sql.records.selectAll(c, codec.columns, where.sql()), where.params);
      for (const row of rows) {
        const rec = codec.visibleFromRow(row);
        hidePrivate(c, rec, principal);
        out.set(rec.id as string, rec);
      }
    }
    return out;
  }
}
