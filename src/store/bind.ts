/**
 * Parameter sanitising for libsql.
 *
 * libsql (npm `libsql` 0.5) aborts the whole process when a statement is given a boolean or a
 * plain object as a parameter, throws on a lone `null` argument, and binds every JS number as a
 * REAL. Every statement in this project therefore takes its parameters as one array that went
 * through `bindValue`: booleans become 0/1, undefined becomes null, objects and arrays become
 * JSON text, integral numbers stay numbers (column affinity makes them INTEGER where declared).
 */
export type SqlValue = string | number | bigint | null | Uint8Array;

export function bindValue(v: unknown): SqlValue {
  switch (typeof v) {
    case 'string':
    case 'bigint':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : null;
    case 'boolean':
      return v ? 1 : 0;
    case 'undefined':
      return null;
    case 'object':
      if (v === null) return null;
      if (v instanceof Uint8Array) return v;
      return JSON.stringify(v);
    default:
      return String(v);
  }
}

/** Sanitises a whole parameter list (see bindValue). */
export function bindAll(params: readonly unknown[]): SqlValue[] {
  const out = new Array<SqlValue>(params.length);
  for (let i = 0; i < params.length; i++) out[i] = bindValue(params[i]);
  return out;
}
