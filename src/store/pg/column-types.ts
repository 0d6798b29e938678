/**
 * The PostgreSQL column type of each field (docs/api.md, "Collections": the field types). The
 * codecs (src/collections/fields/) produce the same stored values on both backends; this maps them
 * to PostgreSQL types:
 *
 * - text, editor, email, url, date, autodate, and single-valued select / relation / file → `text`
 *   (dates keep SQLite's ISO-like text, `2024-01-02 03:04:05.678Z`, which sorts as it compares);
 * - number → `double precision`; fixed-point numbers → `bigint` holding the same scaled integer;
 * - bool → `smallint` 0/1 (as SQLite's INTEGER, so rules compare `= 1` on both backends);
 * - json and multi-valued select / relation / file → `jsonb` (bound as the codec's JSON text);
 *   an encrypted json field → `text`: its stored form `enc:v1:…` is not JSON.
 *
 * jsonb normalises what it stores: object keys come back sorted (shortest first), duplicate keys
 * collapse, and `\u0000` is refused. Readers select a jsonb column as `col::text` to hand the
 * codecs the JSON text they expect ({@link storedTextSql}).
 */
import { isFixed, isMultiFile, isMultiple, type Field } from '../../model/schema.js';

export type PgColumnType = 'text' | 'double precision' | 'bigint' | 'smallint' | 'jsonb';

/** True when the field stores a JSON array (multi-valued select, relation or file). */
export function isMultiValued(field: Field): boolean {
  return isMultiple(field) || isMultiFile(field);
}

export function pgColumnType(field: Field): PgColumnType {
  switch (field.type) {
    case 'number':
      return isFixed(field) ? 'bigint' : 'double precision';
    case 'bool':
      return 'smallint';
    case 'json':
      return field.options.encrypted ? 'text' : 'jsonb';
    case 'select':
    case 'relation':
    case 'file':
      return isMultiValued(field) ? 'jsonb' : 'text';
    default:
      return 'text';
  }
}

/**
 * A column's type as its definition spells it: text under `COLLATE "C"`, so the column and its
 * indexes order bytewise as SQLite does, and the `COLLATE "C"` every sort and comparison names
 * (rule-sql.ts) is the indexes' own collation (an index under another one cannot serve them).
 */
export function pgColumnDefinitionType(field: Field): string {
  const t = pgColumnType(field);
  return t === 'text' ? TEXT_C : t;
}

/** The text type under bytewise collation, as every text column of a record table is declared. */
export const TEXT_C = 'text COLLATE "C"';

/**
 * SQL turning column expression `expr` of `field` into the value the codecs decode: jsonb as its
 * JSON text (a jsonb string holding an `enc:v1:` ciphertext, left by switching encryption off a
 * json field, as the bare ciphertext so the encryption migration recognises it); others as they are.
 */
export function storedTextSql(field: Field, expr: string): string {
  if (pgColumnType(field) !== 'jsonb') return expr;
  if (field.type !== 'json') return `${expr}::text`;
  return `CASE WHEN jsonb_typeof(${expr}) = 'string' AND (${expr} #>> '{}') LIKE 'enc:v1:%' THEN ${expr} #>> '{}' ELSE ${expr}::text END`;
}

/**
 * The `USING` expression converting column `col` from `prev`'s type to `next`'s in
 * ALTER COLUMN … TYPE, or null when the type does not change. Mirrors what SQLite's table
 * rebuild keeps (it copies stored values as they are, and the codecs read either shape):
 * one → many wraps the value in an array (NULL or '' → `[]`), many → one keeps the last element
 * (the codec's reading of a list in a single field), float → fixed truncates the raw number
 * (the codec reads a REAL in a fixed field the same way), fixed → float keeps the raw integer,
 * json ⇄ encrypted json goes through the JSON text (a ciphertext becomes a JSON string).
 */
export function convertUsingSql(prev: Field, next: Field, col: string): string | null {
  const from = pgColumnType(prev);
  const to = pgColumnType(next);
  if (from === to) return null;
  if (from === 'text' && to === 'jsonb') {
    if (next.type === 'json') return `CASE WHEN ${col} IS NULL THEN NULL WHEN ${col} LIKE 'enc:v1:%' THEN to_jsonb(${col}) ELSE ${col}::jsonb END`;
    return `CASE WHEN ${col} IS NULL OR ${col} = '' THEN '[]'::jsonb ELSE jsonb_build_array(${col}) END`;
  }
  if (from === 'jsonb' && to === 'text') {
    if (next.type === 'json') return `${col}::text`;
    return `CASE jsonb_typeof(${col}) WHEN 'array' THEN ${col} ->> -1 WHEN 'string' THEN ${col} #>> '{}' END`;
  }
  if (from === 'double precision' && to === 'bigint') {
    return `CASE WHEN abs(${col}) < 9.2e18 THEN trunc(${col})::bigint END`;
  }
  return `${col}::${to}`;
}
