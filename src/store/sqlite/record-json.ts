/**
 * A record as SQLite selects and renders it: the codec's column list (table aliased `r`) and the
 * `json_object` expression that renders a record's response JSON inside SQLite for list pages
 * (RecordCodec.jsonSql, src/records/record-codec.ts).
 */
import { isFixed, type Collection, type Field } from '../../model/schema.js';
import { q } from './collection-sql.js';

/** `r."id"`, `r."created"`, `r."updated"`, then every field's column, in field order. */
export function recordColumns(c: Collection): string[] {
  return ['r."id"', 'r."created"', 'r."updated"', ...c.fields.map((f) => `r.${q(f.name)}`)];
}

/** Literal SQL text for a validated identifier (collection ids and names, field names). */
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** SQL rendering each field's value as decodeValue + the serializer would (see RecordCodec.jsonSql). */
function fieldJsonSql(f: Field): string | null {
  const col = `r.${q(f.name)}`;
  const multi = ((f.options.maxSelect as number | undefined) ?? 1) > 1;
  switch (f.type) {
    case 'text': case 'editor': case 'email': case 'url': case 'date': case 'autodate':
      return col;
    case 'bool':
      return `json(CASE WHEN ${col} IS NOT NULL AND ${col} <> 0 THEN 'true' ELSE 'false' END)`;
    case 'number':
      if (isFixed(f)) return null;
      // SQLite's JSON prints REALs with 15 significant digits, which loses doubles that need 16 or
      // 17: print the shortest of 15/16/17 digits that reads back as the same double (integral
      // values without ".0", as JSON.stringify prints them). The common cases come first and
      // without function calls (integral values, then doubles whose 15-digit text, the REAL-to-
      // TEXT cast, reads back exactly, which json_object prints itself): measured on the cities'
      // three number columns, less time per row than testing typeof() and printf first
      // (bench/README.md, "Lists over the cities"). Integers of any size and non-numbers (NULL,
      // text) pass through unchanged.
      return `CASE WHEN ${col} = CAST(${col} AS INTEGER) AND ${col} < 9007199254740992 AND ${col} > -9007199254740992 THEN CAST(${col} AS INTEGER)`
        + ` WHEN CAST(CAST(${col} AS TEXT) AS REAL) = ${col} OR typeof(${col}) <> 'real' THEN ${col}`
        + ` WHEN CAST(printf('%!.16g', ${col}) AS REAL) = ${col} THEN json(printf('%!.16g', ${col})) ELSE json(printf('%!.17g', ${col})) END`;
    case 'select': case 'relation': case 'file':
      // as decodeChoice: tolerate values written under the other maxSelect
      return multi
        ? `CASE WHEN ${col} IS NULL OR ${col} = '' THEN json('[]') WHEN substr(${col}, 1, 1) = '[' AND json_valid(${col}) THEN json(${col}) ELSE json_array(${col}) END`
        : `CASE WHEN ${col} = '' THEN NULL WHEN substr(${col}, 1, 1) = '[' AND json_valid(${col}) THEN json_extract(${col}, '$[#-1]') ELSE ${col} END`;
    case 'json':
      return `CASE WHEN ${col} IS NULL THEN NULL WHEN typeof(${col}) IN ('integer', 'real') THEN ${col} WHEN json_valid(${col}) THEN json(${col}) ELSE ${col} END`;
    default:
      return null;
  }
}

/**
 * The `json_object` rendering of a record of `c` (alias `r`), or null when the collection needs
 * JavaScript for it (encrypted or fixed-point fields, auth collections).
 */
export function buildJsonSql(c: Collection): string | null {
  if (c.type === 'auth') return null; // email visibility depends on the caller
  const parts = [`'collectionId', ${lit(c.id)}`, `'collectionName', ${lit(c.name)}`, `'id', r."id"`, `'created', r."created"`, `'updated', r."updated"`];
  for (const f of c.fields) {
    if (f.options.hidden) continue;
    if (f.options.encrypted) return null;
    const expr = fieldJsonSql(f);
    if (expr === null) return null;
    parts.push(`${lit(f.name)}, ${expr}`);
  }
  return `json_object(${parts.join(', ')})`;
}
