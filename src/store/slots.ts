/**
 * Parameter slots as both backends spell them natively (ARCHITECTURE.md, "Folders"):
 * `$1`, `$2`, … PostgreSQL numbers its parameters so; SQLite reads `$1` as a named parameter and
 * numbers named parameters in the order they first appear, so a statement whose slots first
 * appear as `$1`, `$2`, … `$n`, in that order, binds the same array of values alike on both
 * (repeating a slot reuses its value on both). The SQLite executor refuses a statement that
 * breaks that order (checkSlotOrder, below).
 */

/** `$from, $from+1, …`: `count` consecutive slots, comma-separated (an `IN (…)` list). */
export function slotList(from: number, count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) out += i ? `,$${from + i}` : `$${from + i}`;
  return out;
}

const NUMBERED = /\$(\d+)/g;

/**
 * Refuses a statement SQLite would bind differently from PostgreSQL: its `$n` slots must first
 * appear as `$1`, `$2`, … in that order, and a statement with them has no `?` slot (SQLite would
 * number a `?` after the largest index so far). Refuses too a statement still holding a
 * {@link SLOT} (its builder did not render it). Run where SQLite prepares a statement, once per
 * statement text. A text without `$` passes at once.
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

/**
 * The slot the dialect-neutral builders (src/store/sql/, the record statements) and the
 * PostgreSQL emitters write where a statement fragment takes a parameter, before they know where
 * in the statement the fragment will sit: U+0001, which no statement holds otherwise
 * (identifiers are checked names, values are always bound). The builder that completes a
 * statement renders its slots in its backend's own syntax ({@link renderSlots}); neither database
 * accepts the character, and both executors refuse a statement still holding one
 * ({@link checkSlotOrder}, src/store/pg/reader.ts), so a slot left unrendered fails loudly.
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

/**
 * Refuses a statement still holding a {@link SLOT}: its builder did not render it. Run by the
 * executors on a statement text they have not seen (checkSlotOrder on SQLite,
 * src/store/pg/statement-names.ts on PostgreSQL).
 * @throws Error (a programming error, not bad input)
 */
export function checkRendered(sql: string): void {
  if (sql.indexOf(SLOT) >= 0) throw new Error(`statement has a slot its builder did not render: ${sql.slice(0, 300)}`);
}
