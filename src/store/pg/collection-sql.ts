/**
 * PostgreSQL DDL for collections (docs/deployment.md): record tables, their indexes, relation
 * integrity, the full-text column and the pgvector shadow columns. The PostgreSQL counterpart of
 * src/store/sqlite/collection-sql.ts; every schema change is one write job (one transaction:
 * PostgreSQL DDL is transactional), as `{sql, params}` steps with `?` slots.
 *
 * Storage model (the rule/filter compiler and the record statements rely on it):
 * - one table per collection, named as the collection; columns `"id" text PRIMARY KEY`,
 *   `"created"` and `"updated"` text NOT NULL (SQLite's ISO-like text; every text column is
 *   declared `COLLATE "C"`, bytewise, so sorts can walk its indexes: column-types.ts), `"_rowid" bigint
 *   GENERATED ALWAYS AS IDENTITY` with a unique index (the lists' tiebreak and late
 *   materialisation, where SQLite uses rowid), then one column per field named as the field,
 *   typed by column-types.ts (text; double precision; bigint for fixed-point; smallint 0/1 for
 *   bool; jsonb for json and multi-valued select/relation/file); auth collections add
 *   `"passwordHash"`, `"tokenKey"` and `"token_epoch"` as in SQLite.
 * - `unique` fields: a unique index (`lower("email")` for email fields, SQLite's NOCASE);
 *   collection indexes: `idx_<collectionId>_<name>`, unique or not, over the named columns.
 * - relations: a single-valued relation is a real FOREIGN KEY to the target's `"id"` with ON
 *   DELETE CASCADE (`cascadeDelete`) or SET NULL, DEFERRABLE INITIALLY IMMEDIATE (an import may
 *   `SET CONSTRAINTS ALL DEFERRED`); added to a table that has rows it is NOT VALID, so existing
 *   dangling ids are kept as SQLite keeps them. A multi-valued relation (jsonb array) is kept by
 *   two PL/pgSQL triggers: a constraint trigger on the referencing table refusing ids missing
 *   from the target (SQLSTATE 23503, like a foreign key; the targets are locked FOR KEY SHARE so a
 *   concurrent delete cannot slip between check and commit), and an AFTER DELETE trigger on the
 *   target deleting the referencing rows (`cascadeDelete`) or removing the id from their arrays,
 *   as the SQLite triggers do (`"updated"` is not touched). Relation columns are indexed (btree;
 *   GIN jsonb_path_ops for arrays) so a target's delete finds its referrers without a scan.
 * - full-text: `"_fts" tsvector GENERATED ALWAYS AS (to_tsvector('svc_search', …)) STORED` over
 *   the searchable text/editor fields, with a GIN index; queried with `to_tsquery` of the text
 *   src/records/search.ts lowers a search to, and ranked by `ts_rank` ({@link ftsMatchSql},
 *   {@link ftsRankSql}).
 * - vectors (json fields with `dimensions`), when the `vector` extension is installed:
 *   `"_vec_<fieldId>" vector(N) GENERATED ALWAYS AS ("_svc_jsonb_vector"(col, N)) STORED`
 *   (NULL for a malformed embedding, so a write never fails on one), a partial index over the
 *   malformed rows, and with `vectorIndex` an HNSW cosine index. Without the extension there are
 *   no shadow columns and {@link vectorWarning} says so.
 *
 * Object names derived from collection and field ids survive renames; names longer than
 * PostgreSQL's 63 bytes are shortened with a hash ({@link pgName}). No statement here has a `?`
 * other than the parameter slots (jsonb's `?` operators are avoided on purpose).
 */
import { createHash } from 'node:crypto';
import { VECTOR_COLUMN_PREFIX, type Collection, type Field, type IndexDef } from '../../model/schema.js';
import type { WriteStep } from '../write-job.js';
import { AUTH_SIDE_TABLES } from '../auth-store.js';
import { UnsupportedSchema } from '../errors/store-errors.js';
import { TEXT_C, convertUsingSql, isMultiValued, pgColumnDefinitionType } from './column-types.js';
import { slotList } from '../slots.js';

/** What the server offers the DDL. */
export interface PgDdlOptions {
  /** the `vector` extension (pgvector) is installed: vector fields get shadow columns */
  vector: boolean;
}

const NO_VECTOR: PgDdlOptions = { vector: false };

/** Quotes an identifier (names are validated identifiers already; this is defence). */
export function q(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** PostgreSQL truncates identifiers past 63 bytes: longer derived names keep a prefix and a hash. */
export function pgName(name: string): string {
  if (Buffer.byteLength(name) <= 63) return name;
  return `${name.slice(0, 50)}_${createHash('sha256').update(name).digest('hex').slice(0, 12)}`;
}

/** The tiebreak column (SQLite's rowid). */
export const ROWID_COLUMN = '_rowid';
/** The generated tsvector column of collections with searchable fields. */
export const FTS_COLUMN = '_fts';
/**
 * The text search configuration (bootstrap.ts SEARCH_CONFIG_SQL): a copy of `simple` (no stemming,
 * no stop words, as FTS5's unicode61) whose words pass through `unaccent` first where the
 * extension is available, so that accents fold as FTS5's `remove_diacritics 2` folds them.
 */
export const FTS_CONFIG = 'svc_search';
/** The IMMUTABLE function turning a jsonb embedding into a vector (bootstrap.ts creates it). */
export const VECTOR_FUNCTION = '_svc_jsonb_vector';

/** Column definitions of the hidden auth columns, appended to auth tables. */
export const AUTH_HIDDEN_COLUMNS_SQL = `"passwordHash" text, "tokenKey" text NOT NULL DEFAULT '', "token_epoch" bigint NOT NULL DEFAULT 0`;

/** Names SQLite does not reserve that the PostgreSQL tables use (refused as field names here). */
const PG_RESERVED = [ROWID_COLUMN, FTS_COLUMN];

function checkNames(c: Collection): void {
  for (const f of c.fields) {
    if (PG_RESERVED.includes(f.name.toLowerCase())) {
      throw new UnsupportedSchema(c.name, `The field name "${f.name}" is reserved on the PostgreSQL backend.`);
    }
  }
}

// ---- names -------------------------------------------------------------------------------

/** The SQL index name of a collection index (collection-scoped: index names are schema-wide). */
export function indexSqlName(c: Collection, name: string): string {
  return pgName(`idx_${c.id}_${name}`);
}

/** The unique index of a `unique` field. */
export function uniqueIndexName(c: Collection, f: Field): string {
  return pgName(`_uq_${c.id}_${f.id}`);
}

/** The unique index over `"_rowid"`. */
export function rowidIndexName(c: Collection): string {
  return pgName(`_rowid_${c.id}`);
}

/** The index over a relation column (its referrers are found through it). */
export function relationIndexName(c: Collection, f: Field): string {
  return pgName(`_rel_${c.id}_${f.id}`);
}

/** The FOREIGN KEY constraint of a single-valued relation (constraint names are per table). */
export function foreignKeyName(f: Field): string {
  return pgName(`_fk_${f.id}`);
}

/** The check (on the referencing table) and delete (on the target) trigger functions of a multi-valued relation. */
export function relationFunctionNames(c: Collection, f: Field): { check: string; del: string } {
  return { check: pgName(`_relchk_${c.id}_${f.id}`), del: pgName(`_reldel_${c.id}_${f.id}`) };
}

/** The index every record table has on `created` (createdIndexSql). */
export function createdIndexName(c: Collection): string {
  return pgName(`_created_${c.id}`);
}

/** The GIN index of the tsvector column. */
export function ftsIndexName(c: Collection): string {
  return pgName(`_fts_${c.id}`);
}

/** The shadow column of a vector field (unquoted). */
export function vectorColumn(f: Field): string {
  return `${VECTOR_COLUMN_PREFIX}${f.id}`;
}

/** The HNSW index of a vector field. */
export function vectorIndexName(c: Collection, f: Field): string {
  return pgName(`_vidx_${c.id}_${f.id}`);
}

/** The partial index over rows whose stored embedding is malformed. */
export function malformedIndexName(c: Collection, f: Field): string {
  return pgName(`_vbad_${c.id}_${f.id}`);
}

// ---- columns -----------------------------------------------------------------------------

/** The fields of `c` that feed its tsvector column, in field order. */
export function searchableFields(c: Collection): Field[] {
  return c.fields.filter((f) => f.options.searchable && (f.type === 'text' || f.type === 'editor') && !f.options.encrypted);
}

/** The generation expression of the tsvector column, or null without searchable fields. */
export function ftsExpressionSql(c: Collection): string | null {
  const fields = searchableFields(c);
  if (fields.length === 0) return null;
  const text = fields.map((f) => `coalesce(${q(f.name)}, '')`).join(` || ' ' || `);
  return `to_tsvector('${FTS_CONFIG}'::regconfig, ${text})`;
}

/** The tsvector column definition. */
function ftsColumnSql(c: Collection): string | null {
  const expr = ftsExpressionSql(c);
  return expr ? `${q(FTS_COLUMN)} tsvector GENERATED ALWAYS AS (${expr}) STORED` : null;
}

/**
 * The text columns of record tables not yet under `COLLATE "C"` (tables made before their columns
 * were declared so); params: the table names joined by commas (collection names hold none).
 * Rows: table, column.
 */
export const UNCOLLATED_TEXT_COLUMNS_SQL =
  `SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid ` +
  `WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY(string_to_array($1::text, ',')) AND a.attnum > 0 AND NOT a.attisdropped ` +
  `AND a.atttypid = 'text'::regtype AND a.attcollation <> (SELECT oid FROM pg_collation WHERE collname = 'C' AND collnamespace = 'pg_catalog'::regnamespace) ` +
  `AND a.attname NOT IN ('passwordHash', 'tokenKey') ORDER BY c.relname, a.attnum`;

/**
 * Steps bringing `columns` of `c`'s table under `COLLATE "C"` (docs/operations.md, "Upgrades"):
 * one ALTER TABLE for them all (its indexes are rebuilt; the rows are not rewritten). A column
 * feeding the generated tsvector column cannot change while it does, so when one of them is
 * among `columns` the tsvector column is dropped first and generated again after (its GIN index
 * with it): a rewrite of the table's search data, once.
 */
export function collationUpgradeSteps(c: Collection, columns: string[]): WriteStep[] {
  if (columns.length === 0) return [];
  const tbl = q(c.name);
  const fts = ftsColumnSql(c);
  const feedsFts = fts !== null && searchableFields(c).some((f) => columns.includes(f.name));
  const steps: WriteStep[] = [];
  if (feedsFts) steps.push(step(`ALTER TABLE ${tbl} DROP COLUMN IF EXISTS ${q(FTS_COLUMN)}`));
  steps.push(step(`ALTER TABLE ${tbl} ${columns.map((col) => `ALTER COLUMN ${q(col)} TYPE ${TEXT_C}`).join(', ')}`));
  if (feedsFts) steps.push(step(`ALTER TABLE ${tbl} ADD COLUMN ${fts}`), step(`CREATE INDEX ${q(ftsIndexName(c))} ON ${tbl} USING gin (${q(FTS_COLUMN)})`));
  return steps;
}

/** True for a json field that declares `dimensions` (stored in plain jsonb, not encrypted). */
export function isVectorField(f: Field): boolean {
  return f.type === 'json' && !f.options.encrypted && typeof f.options.dimensions === 'number' && f.options.dimensions > 0;
}

/** The vector fields of `c`, in field order. */
export function vectorFields(c: Collection): Field[] {
  return c.fields.filter(isVectorField);
}

function vectorColumnSql(f: Field): string {
  const n = f.options.dimensions as number;
  return `${q(vectorColumn(f))} vector(${n}) GENERATED ALWAYS AS (${q(VECTOR_FUNCTION)}(${q(f.name)}, ${n})) STORED`;
}

/** Why `c`'s vector fields have no vector storage here, or null when they have (or there are none). */
export function vectorWarning(c: Collection, opts: PgDdlOptions = NO_VECTOR): string | null {
  const fields = vectorFields(c);
  if (opts.vector || fields.length === 0) return null;
  return `collection "${c.name}": the vector fields ${fields.map((f) => `"${f.name}"`).join(', ')} have no vector index: ` +
    'the PostgreSQL server has no pgvector extension (`vector`), so vector queries on them are refused';
}

function baseColumns(c: Collection): string[] {
  return [`"id" ${TEXT_C} PRIMARY KEY`, `"created" ${TEXT_C} NOT NULL`, `"updated" ${TEXT_C} NOT NULL`, `${q(ROWID_COLUMN)} bigint GENERATED ALWAYS AS IDENTITY`];
}

/** Every column definition of `c`'s table. */
export function columnDefinitions(c: Collection, opts: PgDdlOptions = NO_VECTOR): string[] {
  const cols = baseColumns(c);
  for (const f of c.fields) cols.push(`${q(f.name)} ${pgColumnDefinitionType(f)}`);
  if (c.type === 'auth') cols.push(AUTH_HIDDEN_COLUMNS_SQL);
  const fts = ftsColumnSql(c);
  if (fts) cols.push(fts);
  if (opts.vector) for (const f of vectorFields(c)) cols.push(vectorColumnSql(f));
  return cols;
}

/** CREATE TABLE of `c`'s record table. */
export function createTableSql(c: Collection, opts: PgDdlOptions = NO_VECTOR): string {
  return `CREATE TABLE ${q(c.name)} (${columnDefinitions(c, opts).join(', ')})`;
}

// ---- indexes -----------------------------------------------------------------------------

const step = (sql: string): WriteStep => ({ sql, params: [] });

/** The field id a collection index column names (base columns stand for themselves). */
function columnKey(c: Collection, col: string): string {
  const f = c.fields.find((x) => x.name === col);
  return f ? `f:${f.id}` : `b:${col}`;
}

function indexKey(c: Collection, ix: IndexDef): string {
  return `${ix.unique ? 'u' : 'n'}:${ix.fields.map((col) => columnKey(c, col)).join(',')}`;
}

/**
 * A collection index, every column `NULLS FIRST`: read forward it is the order of an ascending
 * sort term (`ASC NULLS FIRST`, SQLite's NULLs lowest), read backward that of a descending one
 * (`DESC NULLS LAST`), so sorts on its columns walk it (rule-sql.ts, sortDir).
 */
export function createIndexSql(c: Collection, ix: IndexDef): string {
  return `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${q(indexSqlName(c, ix.name))} ON ${q(c.name)} (${ix.fields.map((col) => `${q(col)} NULLS FIRST`).join(', ')})`;
}

/**
 * The index every record table has on `created` (docs/lists.md, "Sorting and indexes"): a page
 * sorted by `created` either way walks it (the column is never NULL; its sort terms are a bare
 * ASC / DESC: rule-sql.ts). `updated` gets none by default: every update would move its entry. IF NOT
 * EXISTS, so the start of an older database can run it again (open.ts).
 */
export function createdIndexSql(c: Collection): string {
  return `CREATE INDEX IF NOT EXISTS ${q(createdIndexName(c))} ON ${q(c.name)} ("created")`;
}

/** The definitions of the indexes of the named tables; params: the names joined by commas. Rows: index name, definition. */
export const INDEX_DEFINITIONS_SQL =
  `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY(string_to_array($1::text, ','))`;

/**
 * Steps re-creating `c`'s collection indexes made before they were declared `NULLS FIRST`, and
 * creating its `created` index if it has none (docs/operations.md, "Upgrades"), given every index
 * definition of its table by name.
 */
export function indexUpgradeSteps(c: Collection, definitions: ReadonlyMap<string, string>): WriteStep[] {
  const steps = c.indexes.flatMap((ix) => {
    const name = indexSqlName(c, ix.name);
    const def = definitions.get(name);
    return def === undefined || def.includes('NULLS FIRST') ? [] : [dropIndex(name), step(createIndexSql(c, ix))];
  });
  // tables made before every table had its `created` index
  if (!definitions.has(createdIndexName(c))) steps.push(step(createdIndexSql(c)));
  return steps;
}

function uniqueIndexSql(c: Collection, f: Field): string {
  const col = f.type === 'email' ? `lower(${q(f.name)})` : q(f.name);
  return `CREATE UNIQUE INDEX ${q(uniqueIndexName(c, f))} ON ${q(c.name)} (${col})`;
}

function relationIndexSql(c: Collection, f: Field): string {
  const using = isMultiValued(f) ? ` USING gin (${q(f.name)} jsonb_path_ops)` : ` (${q(f.name)})`;
  return `CREATE INDEX ${q(relationIndexName(c, f))} ON ${q(c.name)}${using}`;
}

function vectorIndexSql(c: Collection, f: Field): string {
  return `CREATE INDEX ${q(vectorIndexName(c, f))} ON ${q(c.name)} USING hnsw (${q(vectorColumn(f))} vector_cosine_ops)`;
}

function malformedIndexSql(c: Collection, f: Field): string {
  return `CREATE INDEX ${q(malformedIndexName(c, f))} ON ${q(c.name)} ("id") WHERE ${q(f.name)} IS NOT NULL AND ${q(vectorColumn(f))} IS NULL`;
}

const dropIndex = (name: string): WriteStep => step(`DROP INDEX IF EXISTS ${q(name)}`);

// ---- relations ---------------------------------------------------------------------------

const isRelation = (f: Field): boolean => f.type === 'relation';

function foreignKeySql(c: Collection, f: Field, target: Collection, notValid: boolean): string {
  const action = f.options.cascadeDelete ? 'CASCADE' : 'SET NULL';
  return `ALTER TABLE ${q(c.name)} ADD CONSTRAINT ${q(foreignKeyName(f))} FOREIGN KEY (${q(f.name)}) REFERENCES ${q(target.name)} ("id") ` +
    `ON DELETE ${action} DEFERRABLE INITIALLY IMMEDIATE${notValid ? ' NOT VALID' : ''}`;
}

/** What a relation field's integrity depends on (a change re-creates its constraint or triggers). */
function relationKey(f: Field): string {
  return `${isMultiValued(f) ? 'm' : 's'}:${String(f.options.collectionId)}:${f.options.cascadeDelete ? 'c' : 'n'}`;
}

/** The multi-valued relation fields whose triggers mention collection `id` (as referrer or target). */
function touchingRelations(all: Collection[], id: string): { c: Collection; f: Field }[] {
  const out: { c: Collection; f: Field }[] = [];
  for (const c of all) {
    for (const f of c.fields) {
      if (isRelation(f) && isMultiValued(f) && (c.id === id || f.options.collectionId === id)) out.push({ c, f });
    }
  }
  return out;
}

function dropRelationTriggerSteps(all: Collection[], id: string): WriteStep[] {
  const steps: WriteStep[] = [];
  for (const { c, f } of touchingRelations(all, id)) {
    const names = relationFunctionNames(c, f);
    // CASCADE drops the trigger with its function, whatever its table is called by now
    steps.push(step(`DROP FUNCTION IF EXISTS ${q(names.check)}() CASCADE`), step(`DROP FUNCTION IF EXISTS ${q(names.del)}() CASCADE`));
  }
  return steps;
}

/** Steps creating both triggers of the multi-valued relation `f` of `c` targeting `target`. */
function relationTriggerSteps(c: Collection, f: Field, target: Collection): WriteStep[] {
  const names = relationFunctionNames(c, f);
  const src = q(c.name);
  const col = q(f.name);
  const tgt = q(target.name);
  const message = `relation field "${f.name}" of "${c.name}" refers to a missing record of "${target.name}"`.replace(/'/g, "''");
  const check = `CREATE FUNCTION ${q(names.check)}() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE wanted integer; present integer;
BEGIN
  IF NEW.${col} IS NULL OR jsonb_typeof(NEW.${col}) <> 'array' OR jsonb_array_length(NEW.${col}) = 0 THEN RETURN NULL; END IF;
  SELECT count(DISTINCT e) INTO wanted FROM jsonb_array_elements_text(NEW.${col}) AS e;
  PERFORM 1 FROM ${tgt} t WHERE t."id" IN (SELECT jsonb_array_elements_text(NEW.${col})) FOR KEY SHARE;
  GET DIAGNOSTICS present = ROW_COUNT;
  IF present < wanted THEN
    RAISE EXCEPTION '${message}' USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $fn$`;
  const has = `${col} @> jsonb_build_array(OLD."id")`;
  const action = f.options.cascadeDelete
    ? `DELETE FROM ${src} WHERE ${has};`
    : `UPDATE ${src} SET ${col} = (SELECT coalesce(jsonb_agg(x.e ORDER BY x.n), '[]'::jsonb) FROM jsonb_array_elements(${col}) WITH ORDINALITY AS x(e, n) WHERE x.e <> to_jsonb(OLD."id")) WHERE ${has};`;
  const del = `CREATE FUNCTION ${q(names.del)}() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  ${action}
  RETURN NULL;
END $fn$`;
  return [
    step(check),
    step(`CREATE CONSTRAINT TRIGGER ${q(names.check)} AFTER INSERT OR UPDATE OF ${col} ON ${src} DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION ${q(names.check)}()`),
    step(del),
    step(`CREATE TRIGGER ${q(names.del)} AFTER DELETE ON ${tgt} FOR EACH ROW EXECUTE FUNCTION ${q(names.del)}()`),
  ];
}

function createRelationTriggerSteps(all: Collection[], id: string): WriteStep[] {
  const byId = new Map(all.map((c) => [c.id, c]));
  const steps: WriteStep[] = [];
  for (const { c, f } of touchingRelations(all, id)) {
    const target = byId.get(String(f.options.collectionId));
    if (target) steps.push(...relationTriggerSteps(c, f, target));
  }
  return steps;
}

// ---- registry ----------------------------------------------------------------------------

function registryRow(c: Collection): (string | number | null)[] {
  return [c.id, c.name, c.type, c.system ? 1 : 0, JSON.stringify(c.fields), JSON.stringify(c.indexes), JSON.stringify(c.options),
    c.listRule, c.viewRule, c.createRule, c.updateRule, c.deleteRule, c.created, c.updated];
}

const REGISTRY_COLUMNS = ['id', 'name', 'type', 'system', 'fields', 'indexes', 'options', 'listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule', 'created', 'updated'];

/** Inserts or replaces a `_collections` row; params: the 14 columns in {@link REGISTRY_COLUMNS} order. */
export const UPSERT_REGISTRY = `INSERT INTO "_collections" (${REGISTRY_COLUMNS.map(q).join(',')}) VALUES (${slotList(1, REGISTRY_COLUMNS.length)}) ` +
  `ON CONFLICT ("id") DO UPDATE SET ${REGISTRY_COLUMNS.slice(1).map((c) => `${q(c)} = EXCLUDED.${q(c)}`).join(', ')}`;

const registryStep = (c: Collection): WriteStep => ({ sql: UPSERT_REGISTRY, params: registryRow(c) });

// ---- create / update / delete ------------------------------------------------------------

/** Steps creating `c`'s indexes on a new table (the `_rowid` one included). */
function tableIndexSteps(c: Collection, opts: PgDdlOptions): WriteStep[] {
  const steps = [step(`CREATE UNIQUE INDEX ${q(rowidIndexName(c))} ON ${q(c.name)} (${q(ROWID_COLUMN)})`), step(createdIndexSql(c))];
  for (const f of c.fields) if (f.options.unique) steps.push(step(uniqueIndexSql(c, f)));
  for (const f of c.fields) if (isRelation(f)) steps.push(step(relationIndexSql(c, f)));
  for (const ix of c.indexes) steps.push(step(createIndexSql(c, ix)));
  if (ftsExpressionSql(c)) steps.push(step(`CREATE INDEX ${q(ftsIndexName(c))} ON ${q(c.name)} USING gin (${q(FTS_COLUMN)})`));
  if (opts.vector) {
    for (const f of vectorFields(c)) {
      steps.push(step(malformedIndexSql(c, f)));
      if (f.options.vectorIndex) steps.push(step(vectorIndexSql(c, f)));
    }
  }
  return steps;
}

/**
 * Steps creating collection `c`: its table and indexes, the foreign keys of its single-valued
 * relations, the triggers of every multi-valued relation from or to it (`after` is the whole
 * schema with `c`; those of `before` are replaced), and its `_collections` row.
 */
export function createSteps(c: Collection, before: Collection[], after: Collection[], opts: PgDdlOptions = NO_VECTOR): WriteStep[] {
  checkNames(c);
  const byId = new Map(after.map((x) => [x.id, x]));
  const steps: WriteStep[] = [...dropRelationTriggerSteps(before, c.id), step(createTableSql(c, opts)), ...tableIndexSteps(c, opts)];
  for (const f of c.fields) {
    if (!isRelation(f) || isMultiValued(f)) continue;
    const target = f.options.collectionId === c.id ? c : byId.get(String(f.options.collectionId));
    if (target) steps.push(step(foreignKeySql(c, f, target, false)));
  }
  steps.push(...createRelationTriggerSteps(after, c.id), registryStep(c));
  return steps;
}

/**
 * Steps migrating `prev` to `next` (same id) in place with ALTER TABLE, keeping the data: the
 * table is renamed, dropped fields' columns dropped, renamed fields' columns renamed (through
 * temporary names, so names may be swapped), columns whose type changes converted
 * (column-types.ts, `convertUsingSql`), new fields added; indexes, foreign keys, the tsvector and
 * vector columns are dropped and re-created only where what they cover changed.
 */
export function updateSteps(prev: Collection, next: Collection, before: Collection[], after: Collection[], opts: PgDdlOptions = NO_VECTOR): WriteStep[] {
  checkNames(next);
  const prevById = new Map(prev.fields.map((f) => [f.id, f]));
  const nextById = new Map(next.fields.map((f) => [f.id, f]));
  const byId = new Map(after.map((x) => [x.id, x]));
  const oldTbl = q(prev.name);
  const tbl = q(next.name);
  const steps: WriteStep[] = [...dropRelationTriggerSteps(before, prev.id)];

  // 1. what goes away or changes shape, dropped while the old names still hold
  const ftsChanged = searchableFields(prev).map((f) => f.id).join() !== searchableFields(next).map((f) => f.id).join();
  if (ftsChanged && ftsExpressionSql(prev)) steps.push(step(`ALTER TABLE ${oldTbl} DROP COLUMN IF EXISTS ${q(FTS_COLUMN)}`));
  const vecKey = (f: Field | undefined) => (f && isVectorField(f) ? String(f.options.dimensions) : '');
  if (opts.vector) {
    for (const f of vectorFields(prev)) {
      const n = nextById.get(f.id);
      if (vecKey(n) !== vecKey(f)) steps.push(step(`ALTER TABLE ${oldTbl} DROP COLUMN IF EXISTS ${q(vectorColumn(f))}`));
      else if (f.options.vectorIndex && !n!.options.vectorIndex) steps.push(dropIndex(vectorIndexName(prev, f)));
    }
  }
  for (const f of prev.fields) {
    const n = nextById.get(f.id);
    if (f.options.unique && !n?.options.unique) steps.push(dropIndex(uniqueIndexName(prev, f)));
    if (isRelation(f) && (!n || relationKey(n) !== relationKey(f))) {
      if (!isMultiValued(f)) steps.push(step(`ALTER TABLE ${oldTbl} DROP CONSTRAINT IF EXISTS ${q(foreignKeyName(f))}`));
      if (!n || isMultiValued(n) !== isMultiValued(f)) steps.push(dropIndex(relationIndexName(prev, f)));
    }
  }
  const nextIndexes = new Map(next.indexes.map((ix) => [ix.name, indexKey(next, ix)]));
  const keptIndexes = new Set<string>();
  for (const ix of prev.indexes) {
    if (nextIndexes.get(ix.name) === indexKey(prev, ix)) keptIndexes.add(ix.name);
    else steps.push(dropIndex(indexSqlName(prev, ix.name)));
  }

  // 2. the table and its columns
  if (prev.name !== next.name) steps.push(step(`ALTER TABLE ${oldTbl} RENAME TO ${tbl}`));
  for (const f of prev.fields) if (!nextById.has(f.id)) steps.push(step(`ALTER TABLE ${tbl} DROP COLUMN ${q(f.name)}`));
  const renamed = next.fields.filter((f) => prevById.has(f.id) && prevById.get(f.id)!.name !== f.name);
  for (const f of renamed) steps.push(step(`ALTER TABLE ${tbl} RENAME COLUMN ${q(prevById.get(f.id)!.name)} TO ${q(`_tmp_${f.id}`)}`));
  for (const f of renamed) steps.push(step(`ALTER TABLE ${tbl} RENAME COLUMN ${q(`_tmp_${f.id}`)} TO ${q(f.name)}`));
  for (const f of next.fields) {
    const p = prevById.get(f.id);
    const using = p ? convertUsingSql(p, f, q(f.name)) : null;
    if (using) steps.push(step(`ALTER TABLE ${tbl} ALTER COLUMN ${q(f.name)} TYPE ${pgColumnDefinitionType(f)} USING ${using}`));
  }
  for (const f of next.fields) if (!prevById.has(f.id)) steps.push(step(`ALTER TABLE ${tbl} ADD COLUMN ${q(f.name)} ${pgColumnDefinitionType(f)}`));

  // 3. what is new or changed shape, on the new names
  const fts = ftsColumnSql(next);
  if (ftsChanged && fts) {
    steps.push(step(`ALTER TABLE ${tbl} ADD COLUMN ${fts}`), step(`CREATE INDEX ${q(ftsIndexName(next))} ON ${tbl} USING gin (${q(FTS_COLUMN)})`));
  }
  if (opts.vector) {
    for (const f of vectorFields(next)) {
      const p = prevById.get(f.id);
      if (vecKey(p) !== vecKey(f)) {
        steps.push(step(`ALTER TABLE ${tbl} ADD COLUMN ${vectorColumnSql(f)}`), step(malformedIndexSql(next, f)));
        if (f.options.vectorIndex) steps.push(step(vectorIndexSql(next, f)));
      } else if (f.options.vectorIndex && !p!.options.vectorIndex) {
        steps.push(step(vectorIndexSql(next, f)));
      }
    }
  }
  for (const f of next.fields) {
    const p = prevById.get(f.id);
    if (f.options.unique && !p?.options.unique) steps.push(step(uniqueIndexSql(next, f)));
    if (!isRelation(f) || (p && relationKey(p) === relationKey(f))) continue;
    if (!p || !isRelation(p) || isMultiValued(p) !== isMultiValued(f)) steps.push(step(relationIndexSql(next, f)));
    const target = f.options.collectionId === next.id ? next : byId.get(String(f.options.collectionId));
    if (!isMultiValued(f) && target) steps.push(step(foreignKeySql(next, f, target, true)));
  }
  for (const ix of next.indexes) if (!keptIndexes.has(ix.name)) steps.push(step(createIndexSql(next, ix)));
  steps.push(...createRelationTriggerSteps(after, next.id), registryStep(next));
  return steps;
}

/** Steps dropping collection `c`: its table (indexes, constraints and triggers on it go with it), relation trigger functions, registry row and auth side rows. */
export function deleteSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[] {
  return [
    ...dropRelationTriggerSteps(before, c.id),
    step(`DROP TABLE IF EXISTS ${q(c.name)}`),
    { sql: `DELETE FROM "_collections" WHERE "id" = $1`, params: [c.id] },
    ...AUTH_SIDE_TABLES.map((t): WriteStep => ({ sql: `DELETE FROM ${q(t)} WHERE "collectionId" = $1`, params: [c.id] })),
    ...createRelationTriggerSteps(after, c.id),
  ];
}

// ---- queries over the schema objects -----------------------------------------------------

/**
 * The full-text match over alias `alias`; one param (`$1`): the tsquery text of a search
 * (src/records/search.ts, lowerTsquery).
 */
export function ftsMatchSql(alias: string): string {
  return `${alias}.${q(FTS_COLUMN)} @@ to_tsquery('${FTS_CONFIG}'::regconfig, $1)`;
}

/** The full-text rank over alias `alias` (higher is better); one param (`$1`): the tsquery text of a search. */
export function ftsRankSql(alias: string): string {
  return `ts_rank(${alias}.${q(FTS_COLUMN)}, to_tsquery('${FTS_CONFIG}'::regconfig, $1))`;
}
