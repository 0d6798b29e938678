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
 * number a `?` after the largest index so far). Run where SQLite prepares a statement, once per
 * statement text. A text without `$` passes at once.
 * @throws Error (a programming error, not bad input) naming the first slot out of order
 */
export function checkSlotOrder(sql: string): void {
  if (sql.indexOf('$') < 0) return;
  let next = 1;
  for (const m of sql.matchAll(NUMBERED)) {
    const n = Number(m[1]);
    if (n === next) next++;
    else if (n > next) throw new Error(`statement slot $${n} first appears before $${next}: ${sql.slice(0, 300)}`);
  }
  if (next > 1 && sql.indexOf('?') >= 0) throw new Error(`statement mixes $n and ? slots: ${sql.slice(0, 300)}`);
}
