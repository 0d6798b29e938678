/**
 * PostgreSQL statements over the stored names of file fields (implements FileStore,
 * src/store/file-store.ts): the counterpart of src/store/sqlite/file-sql.ts.
 *
 * A single-file field is a `text` column, a multi-file field a `jsonb` array (column-types.ts).
 * PostgreSQL prints jsonb with a space after each comma (`["a.png", "b.png"]`), where SQLite
 * hands back the codec's compact JSON text (`["a.png","b.png"]`): values read from a jsonb
 * column are re-serialised compactly (JSON.stringify of the parsed array, which is what the
 * codec stored), so the domain sees the same values on both backends. The guard compares with
 * `IS NOT DISTINCT FROM` (SQLite's `IS`); a jsonb column's parameter is then typed jsonb, so the
 * stored array and the expected value compare as JSON, whatever their spacing.
 */
import type { Collection } from '../../model/schema.js';
import type { SqlValue } from '../bind.js';
import type { WriteStep } from '../write-job.js';
import type { StepFail } from '../auth-store.js';
import type { FileStore, RowGet } from '../file-store.js';
import type { PgReader } from './reader.js';
import { q } from './collection-sql.js';
import { pgColumnType } from './column-types.js';
import { slotList } from '../slots.js';

/** Which of `fields` (by name) are jsonb columns of `c`. */
function jsonbColumns(c: Collection, fields: readonly string[]): boolean[] {
  return fields.map((name) => {
    const f = c.fields.find((x) => x.name === name);
    return f !== undefined && pgColumnType(f) === 'jsonb';
  });
}

/** A jsonb column's JSON text, compact as the codec wrote it (a value that is no JSON text stays as it is). */
function compact(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.stringify(JSON.parse(v));
  } catch {
    return v;
  }
}

/** `row` with the values at `from + i` compacted where `jsonb[i]`. */
function compactRow(row: unknown[], jsonb: boolean[], from: number): unknown[] {
  if (!jsonb.includes(true)) return row;
  const out = row.slice();
  jsonb.forEach((j, i) => {
    if (j) out[from + i] = compact(out[from + i]);
  });
  return out;
}

export class PgFileSql implements FileStore {
  constructor(private reader: PgReader) {}

  async values(get: RowGet, c: Collection, fields: readonly string[], id: string): Promise<unknown[] | undefined | null> {
    const row = await get(`SELECT ${fields.map(q).join(', ')} FROM ${q(c.name)} WHERE "id" = $1`, [id]);
    return row ? compactRow(row, jsonbColumns(c, fields), 0) : row;
  }

  unchangedGuardStep(c: Collection, id: string, before: ReadonlyMap<string, SqlValue>, fail: StepFail): WriteStep {
    const cols = [...before.keys()];
    const same = cols.length ? cols.map((n, i) => `${q(n)} IS NOT DISTINCT FROM $${i + 2}`).join(' AND ') : 'true';
    return {
      sql: `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM ${q(c.name)} WHERE "id" = $1 AND NOT (${same}))`,
      params: [id, ...cols.map((n) => before.get(n) ?? null)],
      expect: 'row',
      fail,
    };
  }

  async referenced(c: Collection, fields: readonly string[], ids: string[]): Promise<unknown[][]> {
    if (!ids.length) return [];
    const cols = fields.map(q);
    const sql = `SELECT "id"${cols.length ? `, ${cols.join(', ')}` : ''} FROM ${q(c.name)} WHERE "id" IN (${slotList(1, ids.length)})`;
    const jsonb = jsonbColumns(c, fields);
    return (await this.reader.all(sql, ids)).map((r) => compactRow(r, jsonb, 1));
  }
}
