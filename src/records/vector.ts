/**
 * Vector nearest-neighbour ordering (docs/lists.md, "Vectors"; docs/api.md, "List records"
 * `vector`: embeddings live in `json` fields holding arrays of numbers, are not validated on write,
 * and a query validates them).
 *
 * `vector=<field>[:cosine|:l2]:<json array>` orders rows nearest first by libsql's native
 * `vector_distance_cos` / `vector_distance_l2`; the query vector is bound as a float32 blob. Rows
 * without an embedding (NULL distance) come last, then ties by id.
 *
 * Two storage shapes (src/store/sqlite/vector-sql.ts, through src/store/dialects.ts):
 * - a json field with `dimensions` N reads its `F32_BLOB(N)` shadow column. The query must have N
 *   numbers (else 400). A stored value that is not a well-formed embedding has a NULL blob, which
 *   a probe finds through a partial index (`malformedProbe`) so the query answers 400 until it
 *   is fixed. With `vectorIndex`, cosine queries that nothing narrows take their candidates from
 *   the DiskANN index (`vector_top_k`), an approximate search; records-list.ts decides.
 * - a json field without `dimensions` is scanned exactly through `vector32(<stored json>)`;
 *   a stored value libsql cannot read makes SQLite fail the query and `vectorFailure` maps that
 *   to a 400 (docs/lists.md, "Vectors").
 * Both run on the reader pool; rules and filters apply before the distance.
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection, Field } from '../model/schema.js';
import { MAX_VECTOR_DIMENSIONS } from '../collections/fields/json.js';
import type { BackendKind } from '../store/backend.js';
import { backendSql } from '../store/dialects.js';

export interface VectorPlan {
  field: Field;
  metric: 'cosine' | 'l2';
  /** number of dimensions of the query vector */
  dims: number;
  /** distance expression over alias `r` (NULL for rows without an embedding); one `?`: the query blob */
  sql: string;
  blob: Buffer;
  /** the DiskANN index usable for this query (declared on the field, cosine metric), or null */
  index: string | null;
  /** SELECT answering a row when the collection holds a malformed stored embedding, or null (json scan) */
  malformedProbe: string | null;
}

/**
 * Parses a `vector` parameter against `c`; `kind`: the Store's backend, whose spelling of the
 * vector query the plan carries (src/store/dialects.ts; both backends are handed libsql's today).
 * @throws ApiError 400 for an unknown, non-json, hidden or encrypted field, an unknown metric, or a
 *   query that is not a non-empty JSON array of finite (float32-representable) numbers
 */
export function parseVector(src: string, c: Collection, kind: BackendKind = 'sqlite'): VectorPlan {
  const sql = backendSql(kind).vectors;
  const bad = (why: string): never => {
    throw ApiError.badRequest(`Invalid vector: ${why}. Use vector=<field>[:cosine|:l2]:[n1,n2,…].`);
  };
  const colon = src.indexOf(':');
  if (colon <= 0) bad('missing the field name');
  const name = src.slice(0, colon).trim();
  let rest = src.slice(colon + 1).trimStart();
  let metric: 'cosine' | 'l2' = 'cosine';
  const m = /^(cosine|l2):/.exec(rest);
  if (m) {
    metric = m[1] as 'cosine' | 'l2';
    rest = rest.slice(m[0].length);
  } else if (/^[A-Za-z_]\w*:/.test(rest)) bad(`unknown metric "${rest.slice(0, rest.indexOf(':')).slice(0, 32)}" (cosine or l2)`);
  const field = c.fields.find((f) => f.name === name);
  if (!field) bad(`unknown field "${name.slice(0, 64)}"`);
  if (field!.type !== 'json') bad(`"${name}" is not a json field`);
  if (field!.options.hidden || field!.options.encrypted) bad(`"${name}" cannot be used (hidden or encrypted)`);
  let values: unknown;
  try {
    values = JSON.parse(rest);
  } catch {
    bad('the embedding is not valid JSON');
  }
  if (!Array.isArray(values) || values.length === 0) bad('the embedding must be a non-empty array');
  const arr = values as unknown[];
  if (arr.length > MAX_VECTOR_DIMENSIONS) bad(`at most ${MAX_VECTOR_DIMENSIONS} dimensions`);
  const floats = new Float32Array(arr.length);
  arr.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || !Number.isFinite(Math.fround(v))) bad(`element ${i} is not a finite number`);
    floats[i] = v as number;
  });
  const shadow = sql.isVectorField(field!);
  if (shadow && arr.length !== field!.options.dimensions) bad(`the query has ${arr.length} dimensions but "${name}" holds ${field!.options.dimensions}`);
  return {
    field: field!,
    metric,
    dims: arr.length,
    sql: sql.distanceSql(field!, metric),
    blob: Buffer.from(floats.buffer),
    index: shadow && metric === 'cosine' && field!.options.vectorIndex ? sql.indexName(c, field!) : null,
    malformedProbe: shadow ? sql.malformedProbeSql(c, field!) : null,
  };
}

/** The 400 for a collection whose stored embeddings include a malformed one. */
export function malformedStored(plan: VectorPlan): ApiError {
  const n = plan.field.options.dimensions as number;
  return ApiError.badRequest(`A stored "${plan.field.name}" embedding is not an array of ${n} numbers; vector queries on this collection fail until it is fixed.`);
}

/** The 400 for a vector query SQLite rejected (a malformed or differently-sized stored embedding), or null. */
export function vectorFailure(err: unknown, plan: VectorPlan): ApiError | null {
  // errors from the reader pool may arrive as plain objects (structured clone)
  const m = (err as { message?: unknown } | null)?.message;
  const msg = typeof m === 'string' ? m : String(err);
  if (!/vector/i.test(msg)) return null;
  const len = /same length: (\d+) != (\d+)/.exec(msg);
  if (len) {
    const other = Number(len[1]) === plan.dims ? len[2] : len[1];
    return ApiError.badRequest(`Invalid vector: the query has ${plan.dims} dimensions but a stored "${plan.field.name}" embedding has ${other}.`);
  }
  return ApiError.badRequest(`A stored "${plan.field.name}" embedding is not an array of numbers; vector queries on this collection fail until it is fixed (${msg.slice(0, 120)}).`);
}
