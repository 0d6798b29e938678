/**
 * SQLite statements over the stored names of file fields (implements FileStore,
 * src/store/file-store.ts).
 */
import type { Collection } from '../../model/schema.js';
import type { SqlValue } from '../bind.js';
import type { WriteStep } from '../write-job.js';
import type { StepFail } from '../auth-store.js';
import type { FileStore, RowGet } from '../file-store.js';
import type { Reader } from './reader.js';
import { q } from './sql-ident.js';

export class SqliteFileSql implements FileStore {
  constructor(private reader: Reader) {}

  values(get: RowGet, c: Collection, fields: readonly string[], id: string): Promise<unknown[] | undefined | null> {
    return get(`SELECT ${fields.map(q).join(', ')} FROM ${q(c.name)} WHERE "id" = ?`, [id]);
  }

  unchangedGuardStep(c: Collection, id: string, before: ReadonlyMap<string, SqlValue>, fail: StepFail): WriteStep {
    const cols = [...before.keys()];
    return {
      sql: `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM ${q(c.name)} WHERE "id" = ? AND NOT (${cols.map((n) => `${q(n)} IS ?`).join(' AND ')}))`,
      params: [id, ...cols.map((n) => before.get(n) ?? null)],
      expect: 'row',
      fail,
    };
  }

  referenced(c: Collection, fields: readonly string[], ids: string[]): Promise<unknown[][]> {
    const cols = fields.map(q);
    const sql = `SELECT "id"${cols.length ? `, ${cols.join(', ')}` : ''} FROM ${q(c.name)} WHERE "id" IN (${ids.map(() => '?').join(',')})`;
    return this.reader.all(sql, ids);
  }
}
