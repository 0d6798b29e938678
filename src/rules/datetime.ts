/**
 * The datetime macros of the filter grammar (docs/rules.md, "Datetime macros"): `@now`,
 * `@yesterday`, `@todayStart`, … as date text, `@second` … `@year` as numbers, all in UTC and
 * computed from one instant per request (bindParams). Dates are the text svc stores,
 * `YYYY-MM-DD HH:MM:SS.sssZ`, so they compare with date fields as text, bytewise.
 */

import type { DateMacro } from '../store/rule-types.js';

/** The names after `@` the grammar accepts as datetime macros. */
export const DATE_MACROS: readonly DateMacro[] = [
  'now', 'second', 'minute', 'hour', 'weekday', 'day', 'month', 'year',
  'yesterday', 'tomorrow', 'todayStart', 'todayEnd', 'monthStart', 'monthEnd', 'yearStart', 'yearEnd',
];

const NAMES: ReadonlySet<string> = new Set<string>(DATE_MACROS);

/** Whether `name` (the text after `@`) is a datetime macro. */
export function isDateMacro(name: string): name is DateMacro {
  return NAMES.has(name);
}

const DAY_MS = 86_400_000;

/** Milliseconds since the epoch as stored date text (`2026-11-28 00:05:52.123Z`). */
function dateText(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ');
}

/**
 * The value of datetime macro `name` at the instant `nowMs` (milliseconds since the epoch), UTC:
 * date text for the date macros (`@todayEnd` is `23:59:59.999`, the last stored millisecond of
 * the day), an integer for the parts (`@weekday` 0 = Sunday … 6, `@month` 1 … 12, `@day` 1 … 31).
 */
export function dateMacroValue(name: DateMacro, nowMs: number): string | number {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  switch (name) {
    case 'now':
      return dateText(nowMs);
    case 'second':
      return d.getUTCSeconds();
    case 'minute':
      return d.getUTCMinutes();
    case 'hour':
      return d.getUTCHours();
    case 'weekday':
      return d.getUTCDay();
    case 'day':
      return day;
    case 'month':
      return m + 1;
    case 'year':
      return y;
    case 'yesterday':
      return dateText(nowMs - DAY_MS);
    case 'tomorrow':
      return dateText(nowMs + DAY_MS);
    case 'todayStart':
      return dateText(Date.UTC(y, m, day));
    case 'todayEnd':
      return dateText(Date.UTC(y, m, day + 1) - 1);
    case 'monthStart':
      return dateText(Date.UTC(y, m, 1));
    case 'monthEnd':
      return dateText(Date.UTC(y, m + 1, 1) - 1);
    case 'yearStart':
      return dateText(Date.UTC(y, 0, 1));
    case 'yearEnd':
      return dateText(Date.UTC(y + 1, 0, 1) - 1);
  }
}
