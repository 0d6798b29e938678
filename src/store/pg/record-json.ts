/**
 * A record as PostgreSQL selects and renders it (docs/deployment.md): the codec's column list
 * (table aliased `r`) and the SQL expression rendering a record's response JSON inside PostgreSQL
 * for list pages (RecordCodec.jsonSql, src/records/record-codec.ts), the counterpart of
 * src/store/sqlite/record-json.ts over the storage model of collection-sql.ts.
 *
 * The rendering is the exact text the JavaScript codec produces (`stringify(fromRow(row))`), byte
 * for byte, so pages rendered here and in JavaScript, and on either backend, are interchangeable
 * (page and row caches keep bytes). It is spelled as text concatenation, not `json_build_object`:
 * json_build_object keeps the keys in order (jsonb would sort them) but separates them with
 * `" : "` and `", "`, which the codec never writes. Every value goes through `to_json(…)::text`
 * (PostgreSQL escapes strings as JSON.stringify does: `\"`, `\\`, `\b \f \n \r \t`, other control
 * characters as lower-case `\u00XX`, everything else raw), or through the number formatter below.
 *
 * Numbers: `float8` text is PostgreSQL's shortest exact form (PostgreSQL 12+ with the default
 * `extra_float_digits` = 1; a session that lowers it gets 15-digit text), the digits JavaScript
 * prints too; only the layout differs: PostgreSQL switches to an exponent from 1e15 and below 1e-4
 * (`1e+15`, `1.5e-07`), JavaScript from 1e21 and below 1e-6 (`1e+21`, `1.5e-7`), and never pads
 * the exponent. {@link jsNumberSql} re-lays the text out. `-0`, NaN and ±Infinity print as
 * JSON.stringify prints them (`0`, `null`).
 */
import { isFixed, type Collection, type Field } from '../../model/schema.js';
import { q } from './collection-sql.js';
import { isMultiValued, storedTextSql } from './column-types.js';

/** `r."id"`, `r."created"`, `r."updated"`, then every field's column as the codecs read it (jsonb as its JSON text). */
export function recordColumns(c: Collection): string[] {
  return ['r."id"', 'r."created"', 'r."updated"', ...c.fields.map((f) => storedTextSql(f, `r.${q(f.name)}`))];
}

/** An SQL string literal of `s`. */
const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * SQL printing float8 expression `x` as JSON.stringify prints the double (`null` for NaN and
 * ±Infinity; NULL for NULL). The common magnitudes, [1e-4, 1e15), are PostgreSQL's text as it
 * is; [1e-6, 1e21) goes through numeric, which prints the shortest digits without an exponent;
 * beyond, the exponent loses its zero padding. From 2^54 up see {@link boundaryDigitsSql}.
 */
export function jsNumberSql(x: string): string {
  const plain = `(CASE WHEN abs(${x}) >= 1e-6 AND abs(${x}) < 1e21 THEN ${x}::text::numeric::text`
    + ` ELSE regexp_replace(${x}::text, 'e([+-])0*([0-9])', 'e\\1\\2') END)`;
  return `(CASE WHEN ${x} = 0 THEN '0' WHEN ${x} IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8) THEN 'null'`
    + ` WHEN abs(${x}) >= 1e-4 AND abs(${x}) < 1e15 THEN ${x}::text`
    + ` WHEN abs(${x}) >= 18014398509481984 THEN COALESCE(${boundaryDigitsSql(x)}, ${plain})`
    + ` ELSE ${plain} END)`;
}

/** JavaScript's text of a positive integral numeric `v`: its digits below 1e21, else `d.ddde+E`. */
function jsIntegerSql(v: string): string {
  const t = `rtrim(${v}::text, '0')`;
  return `(CASE WHEN ${v} < 1e21 THEN ${v}::text ELSE left(${t}, 1) || (CASE WHEN length(${t}) > 1 THEN '.' || substr(${t}, 2) ELSE '' END)`
    + ` || 'e+' || (length(${v}::text) - 1) END)`;
}

/**
 * PostgreSQL's shortest digits (Ryu) exclude the two ends of the interval of decimals that read
 * back as the double; JavaScript includes them when the double's significand is even (a decimal
 * exactly halfway reads back as the even neighbour), so where an end is a shorter decimal it
 * prints that: 1e23 (not 9.999999999999999e+22), -3.7e22. An end can only be shorter than the
 * double's own digits when it is an integer with trailing zeros, that is from 2^54 up (ulp ≥ 4).
 * SQL of JavaScript's text for such `x`, or NULL when PostgreSQL's digits are JavaScript's: the
 * ends computed exactly from the bits (`float8send`), as numerics.
 */
function boundaryDigitsSql(x: string): string {
  const bits = `('x' || encode(float8send(${x}), 'hex'))::bit(64)::bigint`;
  const sign = `(CASE WHEN ${x} < 0 THEN '-' ELSE '' END)`;
  const shorter = (v: string) => `length(rtrim(${v}::text, '0')) < b.n`;
  return `(SELECT CASE WHEN b.m % 2 <> 0 THEN NULL WHEN ${shorter('b.hi')} THEN ${sign} || ${jsIntegerSql('b.hi')}`
    + ` WHEN ${shorter('b.lo')} THEN ${sign} || ${jsIntegerSql('b.lo')} END FROM (SELECT a.m, a.n,`
    + ` trunc((2 * a.m + 1) * power(2::numeric, a.e - 1)) AS hi,`
    + ` trunc(CASE WHEN a.m = 4503599627370496 THEN (4 * a.m - 1) * power(2::numeric, a.e - 2) ELSE (2 * a.m - 1) * power(2::numeric, a.e - 1) END) AS lo`
    + ` FROM (SELECT (${bits} & 4503599627370495) | 4503599627370496 AS m, ((${bits} >> 52) & 2047) - 1075 AS e,`
    + ` length(regexp_replace(split_part(${x}::text, 'e', 1), '[^0-9]', '', 'g')) AS n) a) b)`;
}

/**
 * SQL printing a JSON number token of jsonb text (numeric text, never an exponent) as JavaScript
 * reprints it after JSON.parse: the nearest double, or null past the double range.
 */
function jsonNumberTokenSql(t: string): string {
  return `(CASE WHEN abs(${t}::numeric) >= 1.7976931348623158e308 THEN 'null' WHEN abs(${t}::numeric) < 2.4703282292062328e-324 THEN '0'`
    + ` ELSE ${jsNumberSql(`${t}::float8`)} END)`;
}

/**
 * SQL printing jsonb expression `j` as JSON.stringify prints JSON.parse of its text: jsonb text
 * (`{"a": 1, "b": [1, 2]}`, keys in jsonb's order, which the codec reads too) without the blanks
 * after `:` and `,`, and its numbers as JavaScript prints them. The text is cut into string
 * tokens (kept as they are: jsonb escapes as JSON.stringify does), number tokens and the rest
 * (structure, true/false/null and blanks, whose blanks go).
 */
function compactJsonbSql(j: string): string {
  const tok = 't.m[1]';
  return `(SELECT string_agg(CASE WHEN left(${tok}, 1) = '"' THEN ${tok} WHEN ${tok} ~ '^-?[0-9]' THEN ${jsonNumberTokenSql(tok)} ELSE replace(${tok}, ' ', '') END, '' ORDER BY t.n)`
    + ` FROM regexp_matches(${j}::text, '("(?:[^"\\\\]|\\\\.)*"|-?[0-9][0-9.eE+-]*|[^"0-9-]+)', 'g') WITH ORDINALITY AS t(m, n))`;
}

/**
 * A JSON array of strings as a single-valued choice column may hold one (written under another
 * maxSelect): JSON.parse reads it, and so can `::json` without error (no `\u` escapes, which may
 * name a NUL or a lone surrogate PostgreSQL refuses). Anything else starting with `[` is read as
 * a plain value, as the codec reads text JSON.parse refuses.
 */
const STRING_ARRAY = `'^\\[[ \\t\\n\\r]*("([^"\\\\\\x01-\\x1f]|\\\\["\\\\/bfnrt])*"[ \\t\\n\\r]*(,[ \\t\\n\\r]*"([^"\\\\\\x01-\\x1f]|\\\\["\\\\/bfnrt])*"[ \\t\\n\\r]*)*)?\\][ \\t\\n\\r]*$'`;

/** `COALESCE(<json text of value>, 'null')`. */
const orNull = (sql: string): string => `COALESCE(${sql}, 'null')`;

/** SQL of each field's JSON text as decodeValue + the serializer write it; null: JavaScript renders it. */
function fieldJsonSql(f: Field): string | null {
  const col = `r.${q(f.name)}`;
  switch (f.type) {
    case 'text': case 'editor': case 'email': case 'url': case 'date': case 'autodate':
      return orNull(`to_json(${col})::text`);
    case 'bool':
      return `(CASE WHEN ${col} IS NOT NULL AND ${col} <> 0 THEN 'true' ELSE 'false' END)`;
    case 'number':
      return isFixed(f) ? null : orNull(jsNumberSql(col));
    case 'select': case 'relation': case 'file':
      if (isMultiValued(f)) {
        // as decodeChoice: the array's strings; a NULL is []; any other JSON value is one item, its JSON text
        return `(CASE WHEN ${col} IS NULL THEN '[]' WHEN jsonb_typeof(${col}) = 'array'`
          + ` THEN array_to_json(ARRAY(SELECT e.v #>> '{}' FROM jsonb_array_elements(${col}) WITH ORDINALITY AS e(v, n) WHERE jsonb_typeof(e.v) = 'string' ORDER BY e.n))::text`
          + ` ELSE json_build_array(${col}::text)::text END)`;
      }
      return `(CASE WHEN ${col} IS NULL OR ${col} = '' THEN 'null' WHEN left(${col}, 1) = '[' AND ${col} ~ ${STRING_ARRAY}`
        + ` THEN ${orNull(`to_json(${col}::json ->> -1)::text`)} ELSE to_json(${col})::text END)`;
    case 'json':
      return orNull(compactJsonbSql(col));
    default:
      return null;
  }
}

/**
 * The rendering of a record of `c` (alias `r`) as an SQL text expression, or null when the
 * collection needs JavaScript for it (encrypted or fixed-point fields, auth collections), as on
 * SQLite.
 */
export function buildJsonSql(c: Collection): string | null {
  if (c.type === 'auth') return null; // email visibility depends on the caller
  const parts: string[] = [lit(`{"collectionId":${JSON.stringify(c.id)},"collectionName":${JSON.stringify(c.name)},"id":`), 'to_json(r."id")::text',
    lit(',"created":'), 'to_json(r."created")::text', lit(',"updated":'), 'to_json(r."updated")::text'];
  for (const f of c.fields) {
    if (f.options.hidden) continue;
    if (f.options.encrypted) return null;
    const expr = fieldJsonSql(f);
    if (expr === null) return null;
    parts.push(lit(`,${JSON.stringify(f.name)}:`), expr);
  }
  parts.push(`'}'`);
  return `(${parts.join(' || ')})`;
}
