/**
 * Totals of list scopes (docs/lists.md): COUNT(*) cached per compiled scope until the next write
 * that can change it (scopeGeneration), and the table sizes the plan compares against.
 */
import type { Collection } from '../../model/schema.js';
import type { ListSql } from '../../store/store.js';
import type { ListRepository } from '../record-repositories.js';
import { isSmall, overBudget, type ListConfig, type Scope } from './plan.js';

/** The counts of list scopes and tables, cached in Caches.counts. */
export class ListCounts {
  /** the backend's list statements (store.sql.list) */
  private readonly L: ListSql;

  constructor(private store: ListRepository, private cfg: ListConfig) {
    this.L = store.sql.list;
  }

  /**
   * COUNT(*) of the scope, cached per (collection, compiled WHERE, bound values) until the
   * collection's next write (any commit when the scope reads other collections); filtered counts
   * on the reader pool within the time budget.
   * @throws ApiError 503 `overloaded` past the budget
   */
  async count(s: Scope): Promise<number> {
    const sql = this.L.countSql(s.from, s.where.sql());
    const params = s.where.params;
    if (s.trace && !s.trace.sql) { s.trace.sql = sql; s.trace.params = params; }
    const key = `${sql}\u0000${params.map(String).join('\u0001')}`;
    const filtered = s.where.parts.length > 0 || s.from.includes(' JOIN ');
    const gen = this.scopeGeneration(s);
    const hit = this.store.caches.counts.get(key, gen);
    if (hit !== undefined) return hit;
    // An unfiltered COUNT(*) is cheap for SQLite (it counts b-tree cells of the smallest index);
    // anything else may walk the table and goes to the reader pool.
    let row: unknown[] | undefined;
    try {
      row = filtered && !isSmall(s) ? await this.store.reader.get(sql, params, { pool: true, budgetMs: this.cfg.timeBudgetMs ?? 0 }) : await this.store.reader.get(sql, params);
    } catch (err) {
      throw overBudget(err) || err;
    }
    const count = Number(row?.[0] ?? 0);
    // kept only when no write landed while it was counted; never for expiring rows
    if (!s.c.options.ttl_field && this.scopeGeneration(s) === gen) this.store.caches.counts.set(key, gen, count);
    return count;
  }

  /**
   * What a result over the scope stays valid for: the collection's write generation (rows added
   * or removed only, when unfiltered), and the commit count when the WHERE reads other
   * collections (relation semi-joins, EXISTS), whose writes the collection's generation misses.
   */
  scopeGeneration(s: Scope): string {
    const filtered = s.where.parts.length > 0 || s.from.includes(' JOIN ');
    const sql = s.where.sql();
    const crosses = filtered && (sql.includes('EXISTS (') || sql.includes(' IN (SELECT '));
    return this.store.caches.generation(s.c.id, filtered) + (crosses ? `:${this.store.writer.commits}` : '');
  }

  /** Rows of a collection's table (an unfiltered COUNT(*), cached until a create or delete). */
  async tableRows(c: Collection): Promise<number> {
    const sql = this.L.countSql(this.L.fromRecords(c.name), '');
    const gen = this.store.caches.generation(c.id, false);
    let n = this.store.caches.counts.get(sql, gen);
    if (n === undefined) {
      n = Number((await this.store.reader.get(sql, []))?.[0] ?? 0);
      // kept only when no create or delete landed during the read
      if (this.store.caches.generation(c.id, false) === gen) this.store.caches.counts.set(sql, gen, n);
    }
    return n;
  }
}
