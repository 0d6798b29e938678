/**
 * The AND-joined WHERE builder every record read goes through (rule, filter, expiry, search and
 * keyset clauses), so no clause can widen another, and the expiry clause (`ttl_field`).
 */
import type { SqlValue } from '../bind.js';
import type { Collection } from '../../model/schema.js';
import type { RuleCheck } from '../../rules/access.js';
import { q } from './collection-sql.js';
import { nowDate } from '../../collections/fields/index.js';

/** `AND`-joined WHERE parts with their parameters. */
export class Where {
  parts: string[] = [];
  params: SqlValue[] = [];
  add(sql: string, params: SqlValue[]): void {
    this.parts.push(`(${sql})`);
    for (const p of params) this.params.push(p);
  }
  addRule(check: RuleCheck): void {
    if (check.kind === 'where') this.add(check.sql, check.params);
  }
  /** The ttl clause: rows whose expiry is set and at or before now are hidden from every read. */
  addTtl(c: Collection): void {
    const ttl = c.options.ttl_field;
    if (ttl) this.add(`r.${q(ttl)} IS NULL OR r.${q(ttl)} > ?`, [nowDate()]);
  }
  /** A copy, to extend without touching this one. */
  clone(): Where {
    const w = new Where();
    w.parts = [...this.parts];
    w.params = [...this.params];
    return w;
  }
  sql(): string {
    return this.parts.length ? ` WHERE ${this.parts.join(' AND ')}` : '';
  }
}
