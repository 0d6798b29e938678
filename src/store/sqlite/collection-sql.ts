/**
 * DDL for collections: record tables, indexes, the relation triggers that keep relation
 * fields consistent when a target record is deleted (cascadeDelete deletes the referencing
 * record; otherwise the reference is removed), and the full-text index of searchable fields. Every schema change becomes one write job, so it
 * applies in one transaction or not at all.
 */
import type { Collection, Field, IndexDef } from '../../model/schema.js';
import type { WriteStep } from '../write-job.js';
import { columnType } from './column-types.js';
import { AUTH_HIDDEN_COLUMNS_SQL, collectionSideRowsDeleteSteps } from './auth-sql.js';
import { UnsupportedSchema } from '../errors/store-errors.js';
import { q } from './sql-ident.js';
import { searchableFields } from '../full-text.js';
import type { SyncReads } from '../backend.js';
import { vectorColumnsSql, vectorCreateSteps, vectorFields, vectorIndexDropStep, vectorIndexStep, vectorSignature } from './vector-sql.js';

export { q };

const isMulti = (f: Field) => ((f.options.maxSelect as number | undefined) ?? 1) > 1;

function columnsSql(c: Collection): string {
  const cols = ['"id" TEXT PRIMARY KEY NOT NULL', '"created" TEXT NOT NULL', '"updated" TEXT NOT NULL'];
  for (const f of c.fields) cols.push(`${q(f.name)} ${columnType(f)}`);
  cols.push(...vectorColumnsSql(c));
  if (c.type === 'auth') cols.push(AUTH_HIDDEN_COLUMNS_SQL);
  return cols.join(', ');
}

/** The SQL index name of a user index (collection-scoped, so names never collide across tables). */
export function indexSqlName(c: Collection, name: string): string {
  return `idx_${c.id}_${name}`;
}

/**
 * The index every record table has on `created` (docs/lists.md, "Sorting and indexes"): a page
 * sorted by `created` either way, the usual "newest first", walks it instead of sorting every
 * matching row.
 * `updated` gets none by default: every update would move its entry; a collection sorted by it
 * declares the index. Named by the collection id, so renames keep it; IF NOT EXISTS, so the
 * steps that re-create a collection's indexes and the start of an older database can run it again.
 */
export function createdIndexSql(c: Collection): string {
  return `CREATE INDEX IF NOT EXISTS ${q(createdIndexName(c))} ON ${q(c.name)} ("created")`;
}

/** The name of {@link createdIndexSql}'s index. */
export function createdIndexName(c: Collection): string {
  return `_created_${c.id}`;
}

function indexSteps(c: Collection): WriteStep[] {
  const steps: WriteStep[] = [{ sql: createdIndexSql(c), params: [] }];
  for (const f of c.fields) {
    if (!f.options.unique) continue;
    const collate = f.type === 'email' ? ' COLLATE NOCASE' : '';
    steps.push({ sql: `CREATE UNIQUE INDEX ${q(`_uq_${c.id}_${f.id}`)} ON ${q(c.name)} (${q(f.name)}${collate})`, params: [] });
  }
  for (const ix of c.indexes) steps.push({ sql: createIndexSql(c, ix), params: [] });
  return steps;
}

function createIndexSql(c: Collection, ix: IndexDef): string {
  return `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${q(indexSqlName(c, ix.name))} ON ${q(c.name)} (${ix.fields.map(q).join(', ')})`;
}

/** Names of the relation triggers the given schema needs. */
function triggerNames(all: Collection[]): string[] {
  const out: string[] = [];
  for (const c of all) for (const f of c.fields) if (f.type === 'relation') out.push(`_rel_${c.id}_${f.id}`);
  return out;
}

function triggerSteps(all: Collection[]): WriteStep[] {
  const byId = new Map(all.map((c) => [c.id, c]));
  const steps: WriteStep[] = [];
  for (const c of all) {
    for (const f of c.fields) {
      if (f.type !== 'relation') continue;
      const target = byId.get(String(f.options.collectionId));
      if (!target) continue;
      const name = q(`_rel_${c.id}_${f.id}`);
      const tbl = q(c.name);
      const col = q(f.name);
      const has = `EXISTS (SELECT 1 FROM json_each(${tbl}.${col}) WHERE value = OLD."id")`;
      let body: string;
      if (!isMulti(f)) {
        body = f.options.cascadeDelete
          ? `DELETE FROM ${tbl} WHERE ${col} = OLD."id";`
          : `UPDATE ${tbl} SET ${col} = NULL WHERE ${col} = OLD."id";`;
      } else {
        body = f.options.cascadeDelete
          ? `DELETE FROM ${tbl} WHERE ${has};`
          : `UPDATE ${tbl} SET ${col} = (SELECT json_group_array(value) FROM json_each(${tbl}.${col}) WHERE value <> OLD."id") WHERE ${has};`;
      }
      steps.push({ sql: `CREATE TRIGGER ${name} AFTER DELETE ON ${q(target.name)} BEGIN ${body} END`, params: [] });
    }
  }
  return steps;
}

function dropTriggers(all: Collection[]): WriteStep[] {
  return triggerNames(all).map((n) => ({ sql: `DROP TRIGGER IF EXISTS ${q(n)}`, params: [] }));
}

/** The full-text table of a collection (docs/lists.md, "Full-text search": `<col>_fts`). */
export function ftsTableName(c: Collection): string {
  return `${c.name}_fts`;
}

let fullTextEnabled = true;

/** Turns full-text search off (feature `fts5-off`): searchable fields are then refused. */
export function setFullTextEnabled(on: boolean): void {
  fullTextEnabled = on;
}

/**
 * The statements that make `c`'s FTS5 external-content index and keep it in sync: the virtual
 * table over the searchable columns (content = the record table, keyed by rowid; unicode61
 * tokenizer with diacritics folded), and insert/delete/update triggers. Empty without
 * searchable fields.
 */
export function ftsCreateSql(c: Collection): string[] {
  const fields = searchableFields(c);
  if (fields.length === 0) return [];
  const fts = q(ftsTableName(c));
  const tbl = q(c.name);
  const cols = fields.map((f) => q(f.name));
  const vals = (row: string) => fields.map((f) => `${row}.${q(f.name)}`).join(', ');
  const add = `INSERT INTO ${fts} (rowid, ${cols.join(', ')}) VALUES (NEW.rowid, ${vals('NEW')});`;
  const del = `INSERT INTO ${fts} (${fts}, rowid, ${cols.join(', ')}) VALUES ('delete', OLD.rowid, ${vals('OLD')});`;
  const [ai, ad, au] = ftsTriggerNames(c).map(q);
  return [
    `CREATE VIRTUAL TABLE ${fts} USING fts5(${cols.join(', ')}, content='${c.name}', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')`,
    `CREATE TRIGGER ${ai} AFTER INSERT ON ${tbl} BEGIN ${add} END`,
    `CREATE TRIGGER ${ad} AFTER DELETE ON ${tbl} BEGIN ${del} END`,
    `CREATE TRIGGER ${au} AFTER UPDATE OF ${cols.join(', ')} ON ${tbl} BEGIN ${del} ${add} END`,
  ];
}

/** Names of the three sync triggers (by collection id, so they survive renames). */
export function ftsTriggerNames(c: Collection): string[] {
  return ['ai', 'ad', 'au'].map((s) => `_fts_${c.id}_${s}`);
}

/**
 * @throws UnsupportedSchema when `c` has searchable fields and full-text search is off (feature
 * `fts5-off`; both backends' schema stores ask)
 */
export function refuseSearchableWhenOff(c: Collection): void {
  if (!fullTextEnabled && searchableFields(c).length > 0) {
    throw new UnsupportedSchema(c.name, 'Full-text search is disabled on this server (feature fts5-off): fields cannot be searchable.');
  }
}

/** Steps creating the index of `c` (none without searchable fields); `rebuild` indexes existing rows. */
export function ftsCreateSteps(c: Collection, rebuild: boolean): WriteStep[] {
  const sqls = ftsCreateSql(c);
  if (sqls.length) refuseSearchableWhenOff(c);
  const steps = sqls.map((sql) => ({ sql, params: [] }));
  if (rebuild && sqls.length) steps.push({ sql: `INSERT INTO ${q(ftsTableName(c))} (${q(ftsTableName(c))}) VALUES ('rebuild')`, params: [] });
  return steps;
}

/** Steps dropping the index and triggers of `c`, if any. */
export function ftsDropSteps(c: Collection): WriteStep[] {
  return [
    ...ftsTriggerNames(c).map((n) => ({ sql: `DROP TRIGGER IF EXISTS ${q(n)}`, params: [] })),
    { sql: `DROP TABLE IF EXISTS ${q(ftsTableName(c))}`, params: [] },
  ];
}

function registryRow(c: Collection): unknown[] {
  return [c.id, c.name, c.type, c.system ? 1 : 0, JSON.stringify(c.fields), JSON.stringify(c.indexes), JSON.stringify(c.options),
    c.listRule, c.viewRule, c.createRule, c.updateRule, c.deleteRule, c.created, c.updated];
}

const UPSERT_REGISTRY = `INSERT OR REPLACE INTO "_collections" ("id","name","type","system","fields","indexes","options","listRule","viewRule","createRule","updateRule","deleteRule","created","updated") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`;

/** Steps that create a collection's table, indexes and triggers and register it. */
export function createSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[] {
  return [
    ...dropTriggers(before),
    { sql: `CREATE TABLE ${q(c.name)} (${columnsSql(c)})`, params: [] },
    ...indexSteps(c),
    ...ftsCreateSteps(c, false),
    ...vectorCreateSteps(c, false),
    ...triggerSteps(after),
    { sql: UPSERT_REGISTRY, params: registryRow(c) as never },
  ];
}

/**
 * Steps that migrate `prev` to `next` (same id). Field data is kept by field id (renames keep
 * data); dropped fields lose theirs. The table is rebuilt when the columns or the name change;
 * otherwise only indexes that changed are replaced.
 */
export function updateSteps(prev: Collection, next: Collection, before: Collection[], after: Collection[]): WriteStep[] {
  const steps: WriteStep[] = [...dropTriggers(before)];
  const prevById = new Map(prev.fields.map((f) => [f.id, f]));
  const sameColumns =
    prev.name === next.name &&
    prev.fields.length === next.fields.length &&
    next.fields.every((f, i) => prev.fields[i].id === f.id && prev.fields[i].name === f.name && columnType(prev.fields[i]) === columnType(f)) &&
    vectorSignature(prev) === vectorSignature(next);
  // The full-text index is rebuilt when its columns change or the table is rebuilt (new rowids).
  const ftsChanged = !sameColumns || ftsCreateSql(prev).join() !== ftsCreateSql(next).join();
  if (ftsChanged) steps.push(...ftsDropSteps(prev));
  if (sameColumns) {
    for (const f of prev.fields) if (f.options.unique) steps.push({ sql: `DROP INDEX IF EXISTS ${q(`_uq_${prev.id}_${f.id}`)}`, params: [] });
    for (const ix of prev.indexes) steps.push({ sql: `DROP INDEX IF EXISTS ${q(indexSqlName(prev, ix.name))}`, params: [] });
  } else {
    const tmp = q(`_tmp_${next.id}`);
    const keep = next.fields.filter((f) => prevById.has(f.id));
    const base = ['"id"', '"created"', '"updated"'];
    if (next.type === 'auth') base.push('"passwordHash"', '"tokenKey"', '"token_epoch"');
    const dst = [...base, ...keep.map((f) => q(f.name))];
    const src = [...base, ...keep.map((f) => q(prevById.get(f.id)!.name))];
    steps.push(
      { sql: `CREATE TABLE ${tmp} (${columnsSql(next)})`, params: [] },
      { sql: `INSERT INTO ${tmp} (${dst.join(', ')}) SELECT ${src.join(', ')} FROM ${q(prev.name)}`, params: [] },
      { sql: `DROP TABLE ${q(prev.name)}`, params: [] },
      { sql: `ALTER TABLE ${tmp} RENAME TO ${q(next.name)}`, params: [] },
    );
  }
  steps.push(...indexSteps(next), ...(ftsChanged ? ftsCreateSteps(next, true) : []));
  if (!sameColumns) {
    // a rebuilt table has new rowids and no triggers: fill the shadow columns and index them again
    steps.push(...vectorCreateSteps(next, true));
  } else {
    // same shadow columns: only a switched vectorIndex changes anything
    for (const f of vectorFields(next)) {
      const had = prevById.get(f.id)?.options.vectorIndex === true;
      if (f.options.vectorIndex && !had) steps.push(vectorIndexStep(next, f));
      else if (!f.options.vectorIndex && had) steps.push(vectorIndexDropStep(next, f));
    }
  }
  steps.push(...triggerSteps(after), { sql: UPSERT_REGISTRY, params: registryRow(next) as never });
  return steps;
}

/** Steps that drop a collection's table and registry row, and its rows in the auth side tables. */
export function deleteSteps(c: Collection, before: Collection[], after: Collection[]): WriteStep[] {
  return [
    ...dropTriggers(before),
    ...ftsDropSteps(c),
    { sql: `DROP TABLE IF EXISTS ${q(c.name)}`, params: [] },
    { sql: `DELETE FROM "_collections" WHERE "id" = ?`, params: [c.id] },
    ...collectionSideRowsDeleteSteps(c.id),
    ...triggerSteps(after),
  ];
}

/** The join of a collection's full-text index (aliased `f`) to its records (`r`). */
export function ftsJoinSql(c: Collection): string {
  const fts = q(ftsTableName(c));
  return ` JOIN ${fts} f ON f.rowid = r.rowid`;
}

/** The full-text match condition; params: the lowered query. */
export function ftsMatchSql(c: Collection): string {
  return `f.${q(ftsTableName(c))} MATCH ?`;
}

/** Every table and trigger with its SQL (start-up checks of the full-text indexes). */
const SCHEMA_OBJECTS_SQL = `SELECT "name", "sql" FROM sqlite_master WHERE "type" IN ('table', 'trigger')`;

/**
 * The collections among `searchable` whose FTS5 table or triggers are missing or differ from
 * what {@link ftsCreateSql} makes now (read from `sqlite_master` on `reader`), with the steps
 * that drop and rebuild them, existing rows indexed (src/store/full-text.ts, staleIndexes).
 */
export function staleFullTextIndexes(reader: SyncReads, searchable: Collection[]): { stale: Collection[]; steps: WriteStep[] } {
  const master = new Map<string, string>();
  for (const row of reader.allSync(SCHEMA_OBJECTS_SQL, [])) master.set(String(row[0]), String(row[1]));
  const stale = searchable.filter((c) => {
    const names = [ftsTableName(c), ...ftsTriggerNames(c)];
    return ftsCreateSql(c).some((sql, i) => master.get(names[i]) !== sql);
  });
  return { stale, steps: stale.flatMap((c) => [...ftsDropSteps(c), ...ftsCreateSteps(c, true)]) };
}
