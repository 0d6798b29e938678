/**
 * Value helpers for the rule compiler: LIKE pattern wrapping, exact fixed-point scaling of
 * literals and macro values, and safe lookup of `@request.auth.*` / `@request.data.*` paths.
 */
import type { SqlValue } from '../bind.js';

/**
 * The `~` / `!~` operand rule (docs/rules.md, "Filters"): a value that already contains `%` is used
 * as written (a pattern, with `\` as the LIKE escape character); any other value becomes a literal
 * "contains" match, `%value%`, with `\` and `_` escaped so they match themselves.
 */
export function wrapLike(value: string): string {
  if (value.includes('%')) return value;
  return `%${value.replace(/[\\_]/g, (c) => `\\${c}`)}%`;
}

/** Binds `value` as a LIKE operand; null stays null (matches nothing). */
export function likeValue(value: SqlValue): SqlValue {
  if (value === null) return null;
  return wrapLike(typeof value === 'string' ? value : value instanceof Uint8Array ? Buffer.from(value).toString() : String(value));
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * The scaled integer a fixed-point column stores for the decimal `text` (`"1.5"`, scale 2 →
 * 150n). Returns undefined when `text` is not a plain decimal or has non-zero digits beyond
 * `scale`; a value outside the signed 64-bit range comes back as an (inexact) number, which
 * still compares correctly against any stored value.
 */
export function scaleDecimal(text: string, scale: number): bigint | number | undefined {
  if (text.length > 400) return undefined;
  const m = DECIMAL.exec(text);
  if (!m) return undefined;
  const frac = m[3] ?? '';
  if (/[1-9]/.test(frac.slice(scale))) return undefined;
  const scaled = BigInt(m[2] + frac.slice(0, scale).padEnd(scale, '0')) * (m[1] ? -1n : 1n);
  return scaled < INT64_MIN || scaled > INT64_MAX ? Number(scaled) : scaled;
}

/** Bind-time scaling of a macro value compared with a fixed-point field; unscalable → null. */
export function scaleValue(value: SqlValue, scale: number): SqlValue {
  const ok = typeof value === 'number' || typeof value === 'bigint' || typeof value === 'string';
  return ok ? (scaleDecimal(String(value), scale) ?? null) : null;
}

/**
 * Reads `a.b.c` from a plain object through own properties only (no prototype lookups).
 * Returns undefined when any step is missing or not an object.
 */
export function readPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const seg of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}
