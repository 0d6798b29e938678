/**
 * Per-collection record codec, built once per collection version: the SELECT column list, the
 * row → JSON object mapping, and fast-json-stringify serializers for one record and for a list
 * page. The serializer schema is also the allowlist: hidden columns are never selected and never
 * in the schema, so they cannot reach a response.
 */
import fastJson from 'fast-json-stringify';
import type { Collection, Field } from '../collections/types.js';
import { decodeValue, jsonSchemaFor } from '../collections/fields/index.js';
import { q } from '../store/sqlite/collection-sql.js';
import { decryptStored } from './encryption.js';

export interface RecordCodec {
  collection: Collection;
  /** `r."id", r."created", …` for SELECT lists aliased as r */
  columns: string;
  /** number of selected columns */
  width: number;
  fromRow(row: unknown[]): Record<string, unknown>;
  /**
   * The record as a response shows it, for records serialized outside this codec (expanded
   * records under another record's `expand`): `fromRow` without the hidden fields.
   */
  visibleFromRow(row: unknown[]): Record<string, unknown>;
  stringify(record: Record<string, unknown>): string;
  stringifyList(page: ListPage): string;
  /**
   * A SQL expression (record table aliased `r`) that renders the record's response JSON inside
   * SQLite, byte-compatible in meaning with `stringify(fromRow(row))`; null when the collection
   * needs JavaScript for it (encrypted or fixed-point fields, auth collections). Used by list
   * pages: one string per row crosses the libsql binding instead of one value per column.
   */
  jsonSql: string | null;
}

export interface ListPage {
  page: number;
  perPage: number;
  totalItems?: number;
  totalPages?: number;
  items: Record<string, unknown>[];
  nextCursor?: string | null;
  prevCursor?: string | null;
  hasNext?: boolean;
  hasPrev?: boolean;
}

const isFixed = (f: Field) => f.type === 'number' && f.options.mode === 'fixed';

export function buildCodec(c: Collection): RecordCodec {
  const fields = c.fields;
  const cols = ['r."id"', 'r."created"', 'r."updated"', ...fields.map((f) => `r.${q(f.name)}`)];
  const properties: Record<string, unknown> = {
    collectionId: { type: 'string' },
    collectionName: { type: 'string' },
    id: { type: 'string' },
    created: { type: 'string' },
    updated: { type: 'string' },
  };
  // Fields marked hidden are never serialized: the serializer schema is the allowlist.
  for (const f of fields) if (!f.options.hidden) properties[f.name] = jsonSchemaFor(f);
  properties.expand = { type: 'object', additionalProperties: true };
  const recordSchema = { type: 'object', properties };
  const listSchema = {
    type: 'object',
    properties: {
      page: { type: 'integer' },
      perPage: { type: 'integer' },
      totalItems: { type: 'integer' },
      totalPages: { type: 'integer' },
      nextCursor: { type: ['string', 'null'] },
      prevCursor: { type: ['string', 'null'] },
      hasNext: { type: 'boolean' },
      hasPrev: { type: 'boolean' },
      items: { type: 'array', items: recordSchema },
    },
  };
  const stringify = fastJson(recordSchema as never) as (o: unknown) => string;
  const stringifyList = fastJson(listSchema as never) as (o: unknown) => string;
  const fixed = fields.map(isFixed);
  const encrypted = fields.map((f) => f.options.encrypted === true);
  const cid = c.id;
  const cname = c.name;
  const hiddenNames = fields.filter((f) => f.options.hidden).map((f) => f.name);

  return {
    collection: c,
    columns: cols.join(', '),
    width: cols.length,
    fromRow(row) {
      const out: Record<string, unknown> = { collectionId: cid, collectionName: cname, id: row[0], created: row[1], updated: row[2] };
      for (let i = 0; i < fields.length; i++) {
        let v = row[i + 3];
        if (encrypted[i]) v = decryptStored(cid, fields[i].id, String(row[0]), v); // ciphertext at rest
        if (typeof v === 'bigint' && !fixed[i]) v = Number(v);
        out[fields[i].name] = decodeValue(fields[i], v as never);
      }
      return out;
    },
    visibleFromRow(row) {
      const out = this.fromRow(row);
      for (const name of hiddenNames) delete out[name];
      return out;
    },
    stringify,
    stringifyList,
    jsonSql: buildJsonSql(c),
  };
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
      // SQLite's JSON prints REALs with 15 significant digits, which loses doubles that need 16
      // or 17: print the shortest of 15/16/17 digits that reads back as the same double (integral
      // values without ".0", as JSON.stringify prints them).
      return `CASE WHEN typeof(${col}) <> 'real' THEN ${col} WHEN ${col} = CAST(${col} AS INTEGER) AND abs(${col}) < 9007199254740992 THEN CAST(${col} AS INTEGER)`
        + ` WHEN CAST(printf('%!.15g', ${col}) AS REAL) = ${col} THEN json(printf('%!.15g', ${col}))`
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

function buildJsonSql(c: Collection): string | null {
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
