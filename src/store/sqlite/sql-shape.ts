/**
 * Keeps compiled filters inside SQLite's parser limits.
 *
 * SQLite rejects a statement whose parse needs more than ~100 parser-stack entries
 * ("parser stack overflow"; every open parenthesis, and more for `x OR (` or a subquery, holds
 * entries) or whose expression tree is deeper than 1000 ("Expression tree is too large"). A
 * filter the grammar accepts (64 nested levels, 1000 terms) could break either limit, which
 * would surface as a 500. So each compiled fragment carries conservative estimates of both, and
 * AND/OR terms are arranged to keep them small:
 * - when the written order would need more than KEEP_ORDER_STACK entries, the term needing the
 *   most stack goes first: inside `(first OP …` only the `(` is pending while `first` parses,
 *   whereas a later term also has `expr OP` pending (ordinary filters keep their written order);
 * - more than CHUNK terms are grouped into parenthesised chunks so a long chain does not become
 *   a 1000-deep left-leaning tree.
 * Results beyond the budgets (chosen with room for callers to wrap the expression in a couple
 * of subqueries) are rejected as 400. AND and OR are commutative here (no side effects, no
 * runtime errors), so reordering never changes which rows match.
 */
import { QueryTooComplex } from '../errors/store-errors.js';

/** Parser-stack entries the compiled expression may use (SQLite has ~92 at the WHERE level). */
export const MAX_SQL_STACK = 64;
/** Expression-tree height the compiled expression may reach (SQLite's limit is 1000). */
export const MAX_SQL_HEIGHT = 700;
const CHUNK = 8;
const KEEP_ORDER_STACK = 32;

export interface Shaped<P> {
  sql: string;
  params: P[];
  /** estimated parser-stack entries needed */
  stack: number;
  /** estimated expression-tree height */
  height: number;
}

/**
 * Conservative estimates for one comparison's SQL, from its parenthesis nesting and the number of
 * AND-joined conditions (calibrated against libsql 3.45; test/unit/rules/rules-hostile.test.ts checks them).
 */
export function leafShape<P>(sql: string, params: P[]): Shaped<P> {
  let depth = 0;
  let maxDepth = 0;
  let opens = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql.charCodeAt(i);
    if (c === 40 /* ( */) {
      opens++;
      if (++depth > maxDepth) maxDepth = depth;
    } else if (c === 41 /* ) */) depth--;
  }
  const ands = sql.split(' AND ').length - 1;
  return { sql, params, stack: 6 * maxDepth + 4, height: 2 * (opens + ands) + 8 };
}

/** `(t1 AND t2 …)` / `(t1 OR t2 …)` with the arrangement described above. */
export function joinShaped<P>(op: 'AND' | 'OR', terms: Shaped<P>[]): Shaped<P> {
  if (terms.length > CHUNK) {
    const chunks: Shaped<P>[] = [];
    for (let i = 0; i < terms.length; i += CHUNK) chunks.push(joinShaped(op, terms.slice(i, i + CHUNK)));
    return joinShaped(op, chunks);
  }
  if (terms.length === 1) return terms[0];
  const written = chain(op, terms);
  return written.stack <= KEEP_ORDER_STACK ? written : chain(op, [...terms].sort((a, b) => b.stack - a.stack));
}

/** `(t1 OP t2 …)` in the given order; SQLite parses it as a left-leaning tree. */
function chain<P>(op: 'AND' | 'OR', terms: Shaped<P>[]): Shaped<P> {
  const k = terms.length;
  let stack = 0;
  let height = 0;
  terms.forEach((t, i) => {
    stack = Math.max(stack, t.stack + (i === 0 ? 1 : 3));
    height = Math.max(height, t.height + k - Math.max(i, 1));
  });
  return { sql: `(${terms.map((t) => t.sql).join(` ${op} `)})`, params: terms.flatMap((t) => t.params), stack, height };
}

/** @throws QueryTooComplex when `shaped` exceeds the budgets. */
export function checkShape<P>(shaped: Shaped<P>): Shaped<P> {
  if (shaped.stack > MAX_SQL_STACK || shaped.height > MAX_SQL_HEIGHT) {
    throw new QueryTooComplex('Invalid filter: the expression is too complex (too deeply nested or too many relation lookups).');
  }
  return shaped;
}
