/**
 * The storage boundary of record files (ARCHITECTURE.md, "Folders"): the reads and guards
 * src/files/ needs over the stored file names of `file` fields (each column holds the field's
 * stored value: a name, a JSON list of names, or null). The SQLite implementation is
 * `SqliteFileSql` (src/store/sqlite/file-sql.ts); a Store hands it out as `store.sql.files`.
 */
import type { Collection } from '../model/schema.js';
import type { SqlValue } from './bind.js';
import type { StepFail } from './auth-store.js';
import type { WriteStep } from './write-job.js';

/** A point read: the first row of a statement, or undefined / null. */
export type RowGet = (sql: string, params: SqlValue[]) => Promise<unknown[] | undefined | null>;

export interface FileStore {
  /**
   * The stored values of columns `fields` (file field names) of record `id` of `c`, in that
   * order, read with `get` (the caller's reader); undefined when the record is absent.
   */
  values(get: RowGet, c: Collection, fields: readonly string[], id: string): Promise<unknown[] | undefined | null>;
  /**
   * A guard step for an update: the job fails with `fail` when record `id` exists and any
   * column of `before` (field name → stored value read earlier) holds another value now.
   */
  unchangedGuardStep(c: Collection, id: string, before: ReadonlyMap<string, SqlValue>, fail: StepFail): WriteStep;
  /**
   * Rows `[id, ...values of fields]` of the records of `c` among `ids` (absent ids give no row),
   * read on the store's reader.
   */
  referenced(c: Collection, fields: readonly string[], ids: string[]): Promise<unknown[][]>;
}
