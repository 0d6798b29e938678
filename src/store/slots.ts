/**
 * Parameter slots, in each backend's own syntax (ARCHITECTURE.md, "Folders"; docs/deployment.md).
 *
 * - A statement written whole (the shared and PostgreSQL-only stores) numbers its slots `$1`,
 *   `$2`, … PostgreSQL numbers its parameters so; SQLite reads `$1` as a named parameter and
 *   numbers named parameters in the order they first appear, so a statement whose slots first
 *   appear as `$1`, `$2`, … `$n`, in that order, binds the same array of values alike on both
 *   (repeating a slot reuses its value on both). SQLite's executors refuse a statement that
 *   breaks that order (checkSlotOrder).
 * - A fragment whose place in the statement is not known yet (a WHERE clause, a compiled rule, a
 *   keyset term, a record statement's parts) carries {@link SLOT}s, and the builder that
 *   completes the statement renders them ({@link renderSlots}): `?` on SQLite, `$1…$n` on
 *   PostgreSQL.
 */

/**
 * The slot the dialect-neutral builders (src/store/sql/, the record statements) and the
 * PostgreSQL emitters write where a fragment takes a parameter: U+0001, which no statement holds
 * otherwise (identifiers are checked names, values are always bound). Neither database accepts
 * the character, and both executors refuse a statement still holding one (checkRendered), so a
 * slot left unrendered fails loudly.
 */
export const SLOT = '\u0001';

/** SQLite's rendering: each {@link SLOT} becomes `?` (positional; the SQLite dialect's own `?` stay). */
function sqliteSlots(sql: string): string {
  return sql.indexOf(SLOT) < 0 ? sql : sql.replaceAll(SLOT, '?');
}

/** PostgreSQL's rendering: the {@link SLOT}s become `$1`, `$2`, … in order of appearance. */
function postgresSlots(sql: string): string {
  let at = sql.indexOf(SLOT);
  if (at < 0) return sql;
  let out = '';
  let from = 0;
  let n = 0;
  while (at >= 0) {
    out += `${sql.slice(from, at)}$${++n}`;
    from = at + 1;
    at = sql.indexOf(SLOT, from);
  }
  return out + sql.slice(from);
}

/** A completed statement's slots in each backend's syntax, by backend (`sqlite`, `postgres`). */
export const renderSlots: Readonly<Record<'sqlite' | 'postgres', (sql: string) => string>> = { sqlite: sqliteSlots, postgres: postgresSlots };

/** `$from, $from+1, …`: `count` consecutive slots, comma-separated (an `IN (…)` list). */
export function slotList(from: number, count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) out += i ? `,$${from + i}` : `$${from + i}`;
  return out;
}

/**
 * Refuses a statement still holding a {@link SLOT}: its builder did not render it. Run by the
 * executors on a statement text they have not seen (checkSlotOrder on SQLite,
 * src/store/pg/statement-names.ts on PostgreSQL).
 * @throws Error (a programming error, not bad input)
 */
export function checkRendered(sql: string): void {
  if (sql.indexOf(SLOT) >= 0) throw new Error(`statement has a slot its builder did not render: ${sql.slice(0, 300)}`);
}

const NUMBERED = /\$(\d+)/g;

/**
 * Refuses a statement SQLite would bind differently from PostgreSQL: its `$n` slots must first
 * appear as `$1`, `$2`, … in that order, and a statement with them has no `?` slot (SQLite would
 * number a `?` after the largest index so far); and one still holding a {@link SLOT}
 * (checkRendered). Run where SQLite prepares a statement, once per statement text; a text
 * without `$` or SLOT passes at once.
 * @throws Error (a programming error, not bad input) naming the first slot out of order
 */
export function checkSlotOrder(sql: string): void {
  checkRendered(sql);
  if (sql.indexOf('$') < 0) return;
  let next = 1;
  for (const m of sql.matchAll(NUMBERED)) {
    const n = Number(m[1]);
    if (n === next) next++;
    else if (n > next) throw new Error(`statement slot $${n} first appears before $${next}: ${sql.slice(0, 300)}`);
  }
  if (next > 1 && sql.indexOf('?') >= 0) throw new Error(`statement mixes $n and ? slots: ${sql.slice(0, 300)}`);
}
