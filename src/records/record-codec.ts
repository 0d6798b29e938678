/**
 * Per-collection record codec, built once per collection version: the SELECT column list, the
 * row → JSON object mapping, and fast-json-stringify serializers for one record and for a list
 * page. The serializer schema is also the allowlist: hidden columns are never selected and never
 * in the schema, so they cannot reach a response.
 */
import fastJson from 'fast-json-stringify';
import { isFixed, type Collection, type Field } from '../model/schema.js';
import { decodeValue, jsonSchemaFor } from '../collections/fields/index.js';
import type { RecordJsonSql } from '../store/store.js';
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

/**
 * The codec of `c` (Store.codec keeps one per collection version); `json`: the record columns
 * and SQL rendering of the Store's backend (`store.sql.json`: src/store/sqlite/record-json.ts or
 * src/store/pg/record-json.ts).
 */
export function buildCodec(c: Collection, json: RecordJsonSql): RecordCodec {
  const fields = c.fields;
  const cols = json.recordColumns(c);
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
  // an auth record's provider links, shown to its owner and superusers (records-read.ts, withLinks)
  if (c.type === 'auth') properties.externalAuths = { type: 'array', items: { type: 'object', properties: { provider: { type: 'string' }, providerId: { type: 'string' } } } };
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
    jsonSql: json.buildJsonSql(c),
  };
}
