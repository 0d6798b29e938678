/**
 * Storage of vector fields (docs/lists.md, "Vectors": embeddings live in `json` fields and are not
 * validated on write).
 *
 * A json field with `options.dimensions` N gets a shadow column `_vec_<fieldId> F32_BLOB(N)` in
 * its record table. Insert and update triggers copy each stored value into it as libsql's float32
 * vector when the value is a well-formed embedding (a JSON array of exactly N numbers that fit a
 * float32), and store NULL otherwise, so a write never fails because of its embedding. A partial
 * index over the rows whose json is set but whose blob is NULL makes "does this collection hold a
 * malformed embedding?" one index probe. With `options.vectorIndex` a DiskANN index
 * (`libsql_vector_idx`, cosine metric) covers the column for `vector_top_k`.
 *
 * Names are derived from collection and field ids, so they survive renames; the `_vec_` prefix
 * is reserved for field names (collection-input.ts).
 */
import { VECTOR_COLUMN_PREFIX, type Collection, type Field } from '../../model/schema.js';
import type { WriteStep } from '../write-job.js';
import { q } from './sql-ident.js';
import { SLOT } from '../slots.js';

/** True for a json field that declares `dimensions` (it has a shadow column). */
export function isVectorField(f: Field): boolean {
  return f.type === 'json' && typeof f.options.dimensions === 'number' && f.options.dimensions > 0;
}

/** The json fields of `c` that declare `dimensions`, in field order. */
export function vectorFields(c: Collection): Field[] {
  return c.fields.filter(isVectorField);
}

/** The shadow column of a vector field (unquoted). */
export function vectorColumn(f: Field): string {
  return `${VECTOR_COLUMN_PREFIX}${f.id}`;
}

/** The DiskANN index name of a vector field (unquoted). */
export function vectorIndexName(c: Collection, f: Field): string {
  return `_vidx_${c.id}_${f.id}`;
}

/** `"_vec_<id>" F32_BLOB(N)` column definitions for CREATE TABLE. */
export function vectorColumnsSql(c: Collection): string[] {
  return vectorFields(c).map((f) => `${q(vectorColumn(f))} F32_BLOB(${f.options.dimensions as number})`);
}

/** Identity of the shadow columns: a table whose signature changes is rebuilt. */
export function vectorSignature(c: Collection): string {
  return vectorFields(c).map((f) => `${f.id}:${f.options.dimensions as number}`).join(',');
}

/** SQL: `src` (a JSON text expression) as a float32 vector when well-formed for `f`, else NULL. */
function toVector(src: string, f: Field): string {
  const n = f.options.dimensions as number;
  const ok = `json_valid(${src}) AND json_type(${src}) = 'array' AND json_array_length(${src}) = ${n}` +
    ` AND NOT EXISTS (SELECT 1 FROM json_each(${src}) WHERE type NOT IN ('integer', 'real') OR abs(value) > 3.4028234e38)`;
  return `CASE WHEN ${src} IS NOT NULL AND ${ok} THEN vector32(${src}) END`;
}

function triggerNames(c: Collection, f: Field): [string, string] {
  return [`_vec_${c.id}_${f.id}_ai`, `_vec_${c.id}_${f.id}_au`];
}

/** Names of the partial indexes over malformed embeddings (one per vector field). */
function malformedIndexName(c: Collection, f: Field): string {
  return `_vbad_${c.id}_${f.id}`;
}

/**
 * Steps that make `c`'s shadow columns live on a table that already has them: the sync
 * triggers, the malformed-row index, a backfill of existing rows when `backfill`, and the
 * DiskANN indexes of fields with `vectorIndex`.
 */
export function vectorCreateSteps(c: Collection, backfill: boolean): WriteStep[] {
  const steps: WriteStep[] = [];
  const tbl = q(c.name);
  for (const f of vectorFields(c)) {
    const col = q(f.name);
    const vec = q(vectorColumn(f));
    const [ai, au] = triggerNames(c, f).map(q);
    const set = (row: string) => `UPDATE ${tbl} SET ${vec} = ${toVector(`${row}.${col}`, f)} WHERE rowid = ${row}.rowid;`;
    steps.push(
      { sql: `CREATE TRIGGER ${ai} AFTER INSERT ON ${tbl} WHEN NEW.${col} IS NOT NULL BEGIN ${set('NEW')} END`, params: [] },
      { sql: `CREATE TRIGGER ${au} AFTER UPDATE OF ${col} ON ${tbl} BEGIN ${set('NEW')} END`, params: [] },
    );
    if (backfill) steps.push({ sql: `UPDATE ${tbl} SET ${vec} = ${toVector(col, f)} WHERE ${col} IS NOT NULL`, params: [] });
    steps.push({ sql: `CREATE INDEX ${q(malformedIndexName(c, f))} ON ${tbl} ("id") WHERE ${col} IS NOT NULL AND ${vec} IS NULL`, params: [] });
    if (f.options.vectorIndex) steps.push(vectorIndexStep(c, f));
  }
  return steps;
}

/** CREATE INDEX for `f`'s DiskANN index (cosine; parameters: bench/README.md, "Vector search"). */
export function vectorIndexStep(c: Collection, f: Field): WriteStep {
  return {
    sql: `CREATE INDEX ${q(vectorIndexName(c, f))} ON ${q(c.name)} (libsql_vector_idx(${q(vectorColumn(f))}, ${VECTOR_INDEX_PARAMS}))`,
    params: [],
  };
}

/**
 * DiskANN settings: cosine metric, libsql's defaults otherwise. Measured on real city positions
 * (3-d unit vectors, clustered): the defaults kept recall@10 near 1; cheaper settings (16
 * neighbours, insert_l 20, search_l 60-200, float8 neighbours) halved the insert cost but their
 * recall varied from one build to the next (bench/README.md, "Vector search", "Vector index
 * settings").
 */
export const VECTOR_INDEX_PARAMS = `'metric=cosine'`;

/** DROP INDEX for `f`'s DiskANN index. */
export function vectorIndexDropStep(c: Collection, f: Field): WriteStep {
  return { sql: `DROP INDEX IF EXISTS ${q(vectorIndexName(c, f))}`, params: [] };
}

/**
 * SQL probing for a malformed stored embedding of `f` in `c` (answers one row when there is
 * one): a non-NULL json value whose shadow blob is NULL. Uses the partial index.
 */
export function malformedProbeSql(c: Collection, f: Field): string {
  return `SELECT "id" FROM ${q(c.name)} WHERE ${q(f.name)} IS NOT NULL AND ${q(vectorColumn(f))} IS NULL LIMIT 1`;
}

/**
 * The distance of a row's embedding to the query (one parameter, a SLOT: the float32 query blob; a
 * select-list item the page statement renders, src/store/slots.ts), over alias
 * `r`: the float32 shadow column of a field with `dimensions`, or the stored JSON converted per
 * row. libsql's distance functions reject NULL, so rows without an embedding get a NULL distance.
 */
export function vectorDistanceSql(field: Field, metric: 'cosine' | 'l2'): string {
  const fn = metric === 'cosine' ? 'vector_distance_cos' : 'vector_distance_l2';
  const shadow = isVectorField(field);
  const stored = shadow ? `r.${q(vectorColumn(field))}` : `r.${q(field.name)}`;
  return `CASE WHEN ${stored} IS NULL THEN NULL ELSE ${fn}(${shadow ? stored : `vector32(${stored})`}, ${SLOT}) END`;
}
