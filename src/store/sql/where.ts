/**
 * The AND-joined WHERE builder every record read goes through (rule, filter, expiry, search and
 * keyset clauses), so no clause can widen another, and the expiry clause (`ttl_field`). Both
 * backends spell these clauses alike (identifiers double-quoted); their parameters are
 * {@link SLOT}s, rendered by the builder that completes the statement (src/store/slots.ts).
 */
import type { SqlValue } from '../bind.js';
import type { Collection } from '../../model/schema.js';
import { quoteIdent as q } from './rule-paths.js';
import { SLOT } from '../slots.js';

/** Now in the stored date format (`YYYY-MM-DD HH:MM:SS.sssZ`, UTC: docs/api.md, "Collections"), as date fields store it. */
const nowDate = (): string => new Date().toISOString().replace('T', ' ');

/**
 * A rule's check as the rule book answers it (src/rules/access.ts, RuleCheck): only a `where`
 * check adds a clause (a `deny` is answered before any read; `all` adds nothing).
 */
export type WhereCheck = { kind: 'deny' | 'all' } | { kind: 'where'; sql: string; params: SqlValue[] };

/** `AND`-joined WHERE parts with their parameters. */
export class Where {
  parts: string[] = [];
  params: SqlValue[] = [];
  add(sql: string, params: SqlValue[]): void {
    this.parts.push(`(${sql})`);
    for (const p of params) this.params.push(p);
  }
  addRule(check: WhereCheck): void {
    if (check.kind === 'where') this.add(check.sql, check.params);
  }
  /** The ttl clause: rows whose expiry is set and at or before now are hidden from every read. */
  addTtl(c: Collection): void {
    const ttl = c.options.ttl_field;
    if (ttl) this.add(`r.${q(ttl)} IS NULL OR r.${q(ttl)} > ${SLOT}`, [nowDate()]);
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
