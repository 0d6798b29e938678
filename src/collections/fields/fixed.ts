/**
 * Exact fixed-point decimals for `number` fields with `mode: 'fixed'` (docs/api.md,
 * "Collections": fixed-point values are exact decimal strings on input and output, stored as
 * scaled integers, exact over the whole signed 64-bit range of the scaled integer).
 *
 * `"-12.34"` with scale 2 is stored as the INTEGER -1234 and read back as `"-12.34"`.
 */
import type { FieldError } from '../../errors/api-error.js';
import { fieldError } from './common.js';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** Optional sign, then digits with an optional point (`1.`, `.5`, `+3`, `007.10`). No exponent. */
const DECIMAL_RE = /^([+-]?)(\d*)(?:\.(\d*))?$/;
/** The exponent form `String(number)` uses for very large or very small numbers. */
const EXPONENT_RE = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/;

export type FixedParse = { scaled: bigint } | { error: FieldError };

/** Exact decimal text of a JSON number: its shortest round-trip form, exponent expanded. */
function numberToDecimal(n: number): string {
  const s = String(n);
  const m = EXPONENT_RE.exec(s);
  if (m === null) return s;
  const [, sign, intPart, frac = '', expText] = m;
  const digits = intPart + frac;
  const exp = Number(expText) - frac.length; // value = digits × 10^exp
  if (exp >= 0) return sign + digits + '0'.repeat(exp);
  const pointAt = digits.length + exp;
  return pointAt > 0
    ? `${sign}${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`
    : `${sign}0.${'0'.repeat(-pointAt)}${digits}`;
}

/**
 * Decimal string (or finite JSON number) → integer scaled by 10^scale.
 * Errors: `validation_type` (neither a string nor a number), `validation_number` (not a plain
 * decimal: exponent, spaces),
 * `validation_too_precise` (more than `scale` decimals, even trailing zeros),
 * `validation_overflow` (scaled value outside the signed 64-bit range).
 */
export function parseFixed(input: unknown, scale: number): FixedParse {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return { error: fieldError('number', 'Must be a finite number.') };
    text = numberToDecimal(input);
  } else if (typeof input === 'string') {
    text = input;
  } else {
    return { error: fieldError('type', 'Must be a decimal number written as a string, e.g. "12.34".') };
  }
  const m = DECIMAL_RE.exec(text);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) {
    return { error: fieldError('number', 'Must be a decimal number such as "-12.34" (no exponent).') };
  }
  const [, sign, intPart, frac = ''] = m;
  if (frac.length > scale) {
    return { error: fieldError('too_precise', `Must have at most ${scale} decimal place${scale === 1 ? '' : 's'}.`) };
  }
  const digits = (intPart + frac.padEnd(scale, '0')).replace(/^0+/, '');
  // 19 digits is the int64 width; longer strings cannot fit (and never reach BigInt)
  const magnitude = digits.length > 19 ? INT64_MAX + 2n : BigInt(digits === '' ? '0' : digits);
  const scaled = sign === '-' ? -magnitude : magnitude;
  if (scaled < INT64_MIN || scaled > INT64_MAX) {
    return { error: fieldError('overflow', `Is out of range for a fixed-point number with ${scale} decimals.`) };
  }
  return { scaled: scaled === 0n ? 0n : scaled };
}

/** Scaled integer → decimal string with exactly `scale` decimals (`-1234n`, 2 → `"-12.34"`). */
export function formatFixed(scaled: bigint, scale: number): string {
  const negative = scaled < 0n;
  const abs = (negative ? -scaled : scaled).toString().padStart(scale + 1, '0');
  const cut = abs.length - scale;
  return `${negative ? '-' : ''}${abs.slice(0, cut)}${scale > 0 ? '.' + abs.slice(cut) : ''}`;
}

/**
 * A stored scaled integer as BigInt. libsql hands back a bigint with `safeIntegers(true)` and a
 * number otherwise (exact only up to 2^53); text is tolerated. Null for NULL or garbage.
 */
export function storedToBigInt(stored: unknown): bigint | null {
  if (typeof stored === 'bigint') return stored;
  if (typeof stored === 'number') return Number.isFinite(stored) ? BigInt(Math.trunc(stored)) : null;
  if (typeof stored === 'string' && /^-?\d+$/.test(stored)) return BigInt(stored);
  return null;
}
