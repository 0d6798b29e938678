/**
 * `number` fields (docs/api.md, "Collections"): float mode (default) and exact fixed-point mode.
 *
 * Float: a JSON number (any other JSON type, strings included → `validation_type`),
 * stored as REAL. Fixed (`mode: 'fixed'`, `scale` 1..8): a decimal string or JSON number, stored
 * as the INTEGER value × 10^scale, returned as a string with exactly `scale` decimals (see
 * fixed.ts for its codes). Both modes: `min`/`max` → `validation_min` / `validation_max`; in fixed
 * mode the bounds are decimal strings compared exactly. `required` rejects null, 0 is allowed.
 */
import { isFixed, type Field, type FieldOptions } from '../../model/schema.js';
import type { SqlValue } from '../../store/bind.js';
import {
  type DefinitionErrors, type FieldCodec, emptyValue, fail, fieldError, ok,
} from './common.js';
import { formatFixed, parseFixed, storedToBigInt } from './fixed.js';

function scaleOf(field: Field): number {
  return typeof field.options.scale === 'number' ? field.options.scale : 2;
}

function numberOptions(raw: Record<string, unknown>, out: FieldOptions, errors: DefinitionErrors): void {
  const mode = raw.mode;
  out.mode = null;
  out.scale = null;
  if (mode === 'fixed') {
    out.mode = 'fixed';
    const scale = raw.scale;
    if (typeof scale === 'number' && Number.isInteger(scale) && scale >= 1 && scale <= 8) out.scale = scale;
    else errors.scale ??= fieldError('invalid_scale', 'Must be a whole number from 1 to 8.');
  } else if (mode !== undefined && mode !== null && mode !== '' && mode !== 'float') {
    errors.mode ??= fieldError('value', 'Must be "fixed" or left empty.');
  }

  // bounds as comparable values: scaled BigInt in fixed mode, the number itself otherwise
  const bounds: { min?: bigint | number; max?: bigint | number } = {};
  for (const key of ['min', 'max'] as const) {
    const v = raw[key];
    out[key] = null;
    if (v === undefined || v === null || v === '') continue;
    if (out.mode === 'fixed') {
      if (out.scale === null) continue; // the scale error is reported already
      const parsed = parseFixed(v, out.scale);
      if ('error' in parsed) {
        errors[key] ??= fieldError(key, `Invalid bound: ${parsed.error.message}`);
      } else {
        out[key] = formatFixed(parsed.scaled, out.scale);
        bounds[key] = parsed.scaled;
      }
    } else if (typeof v === 'number' && Number.isFinite(v)) {
      out[key] = v;
      bounds[key] = v;
    } else {
      errors[key] ??= fieldError(key, 'Must be a number.');
    }
  }
  if (bounds.min !== undefined && bounds.max !== undefined && bounds.min > bounds.max) {
    errors.max ??= fieldError('max', `Must be greater than or equal to the minimum (${out.min}).`);
  }
}

/** A fixed-mode bound as a scaled integer (bounds are canonical strings after normalisation). */
function fixedBound(bound: unknown, scale: number): bigint | null {
  if (bound === undefined || bound === null || bound === '') return null;
  const parsed = parseFixed(bound, scale);
  return 'scaled' in parsed ? parsed.scaled : null;
}

export const numberCodec: FieldCodec = {

  encode(field, input) {
    if (input === undefined || input === null) return emptyValue(field);
    const { min, max } = field.options;
    if (isFixed(field)) {
      if (input === '') return emptyValue(field);
      const scale = scaleOf(field);
      const parsed = parseFixed(input, scale);
      if ('error' in parsed) return parsed;
      const lo = fixedBound(min, scale);
      const hi = fixedBound(max, scale);
      if (lo !== null && parsed.scaled < lo) return fail('min', `Must be at least ${formatFixed(lo, scale)}.`);
      if (hi !== null && parsed.scaled > hi) return fail('max', `Must be at most ${formatFixed(hi, scale)}.`);
      return ok(parsed.scaled);
    }
    if (typeof input !== 'number') return fail('type', 'Must be a number.');
    if (!Number.isFinite(input)) return fail('number', 'Must be a finite number.');
    if (typeof min === 'number' && input < min) return fail('min', `Must be at least ${min}.`);
    if (typeof max === 'number' && input > max) return fail('max', `Must be at most ${max}.`);
    return ok(input === 0 ? 0 : input); // no -0
  },

  decode(field, stored: SqlValue) {
    if (stored === null || stored === undefined) return null;
    if (isFixed(field)) {
      const scaled = storedToBigInt(stored);
      return scaled === null ? null : formatFixed(scaled, scaleOf(field));
    }
    if (typeof stored === 'number') return stored;
    if (typeof stored === 'bigint') return Number(stored);
    const n = Number(stored);
    return Number.isFinite(n) ? n : null;
  },

  schema: (field) => ({ type: [isFixed(field) ? 'string' : 'number', 'null'] }),

  options: numberOptions,
};
