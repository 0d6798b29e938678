/**
 * Statements of the upload store's persistence mode on both backends (implements UploadRowStore,
 * src/store/upload-store.ts; docs/files.md, "Resumable uploads"), over the backend-neutral
 * SqlReader (src/store/backend.ts): `_uploadStore` (version marker and budgets), `_uploadSessions`
 * (metadata) and `_uploadPayloads` (payload pages). The tables are not part of either bootstrap:
 * `createSteps` creates them when the persistence mode opens a database that has none of them, from
 * the backend's DDL handed to {@link UploadSql} (UPLOAD_DDL of src/store/sqlite/upload-sql.ts and
 * of src/store/pg/upload-sql.ts).
 *
 * The server refuses the persistence mode on PostgreSQL (src/server.ts; ARCHITECTURE.md,
 * `src/store/pg/`): its entry here serves `StoreSql.uploads` and the differential tests
 * (test/unit/pg/other-stores.test.ts). Values come back as stored on both backends: integers as
 * BigInt (SQLite INTEGER, PostgreSQL bigint), pages as Buffers. A page's byte length is
 * `length("data")` on both (PostgreSQL's `length(bytea)` is its `octet_length`). What the
 * backends spell differently is in {@link UploadSqlDialect}.
 */
import type { WriteStep } from '../write-job.js';
import { UPLOAD_PAGE_BYTES, UPLOAD_STORE_VERSION, type UploadRow, type UploadRowStore, type UploadSchemaState } from '../upload-store.js';
import type { BackendKind, SqlReader } from '../backend.js';
import { slotList } from '../slots.js';

const TABLES = ['_uploadStore', '_uploadSessions', '_uploadPayloads'];
const TABLE_MARKS = slotList(1, TABLES.length);
const COLS = ['id', 'principalCollection', 'principalId', 'collectionId', 'recordId', 'fieldId', 'filename', 'mimetype', 'length', 'offset', 'created', 'expires', 'state'] as const;
const COL_LIST = COLS.map((c) => `"${c}"`).join(',');

/** What the upload statements spell differently per backend. */
export interface UploadSqlDialect {
  /**
   * The names of the store's tables that exist, given the three names as parameters, in
   * creation order (the order `schemaState` reports a partial store in).
   */
  readonly tablesSql: string;
  /** SQL for `n` (parameter `$slot`) zero bytes: a payload page as pre-written at creation. */
  zeroBytes(slot: number): string;
  /** Most ids in one DELETE statement (all of them in one job either way). */
  readonly deleteBatch: number;
}

/**
 * Each backend's spelling.
 *
 * SQLite: tables from `sqlite_master`; zero pages as `zeroblob(n)`; one DELETE for all ids.
 *
 * PostgreSQL: tables from `pg_class` (ordinary or partitioned tables of the connection's current
 * schema); `IN (…)` lists split at 1000 ids a statement (PostgreSQL takes at most 65,535
 * parameters a statement). PostgreSQL has no `zeroblob`: a page is
 * `decode(repeat('00', n), 'hex')`, built on the server, the fastest of the server-side forms
 * measured (bench/README.md, "Zero pages on PostgreSQL"); sending a zero Buffer as a parameter
 * was faster on loopback but puts the whole page on the wire. pglz compresses the zero pages to
 * almost nothing in TOAST until a chunk rewrites them.
 */
export const UPLOAD_DIALECTS: Readonly<Record<BackendKind, UploadSqlDialect>> = {
  sqlite: {
    tablesSql: `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${TABLE_MARKS})`,
    zeroBytes: (slot) => `zeroblob($${slot})`,
    deleteBatch: Number.POSITIVE_INFINITY,
  },
  postgres: {
    tablesSql: `SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname IN (${TABLE_MARKS}) AND c.relkind IN ('r', 'p')
        AND c.relnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = current_schema()) ORDER BY c.oid`,
    zeroBytes: (slot) => `decode(repeat('00', $${slot}::integer), 'hex')`,
    deleteBatch: 1000,
  },
};

/**
 * The upload store over one backend's reader; `dialect`: that backend's entry of
 * {@link UPLOAD_DIALECTS}; `ddl`: that backend's CREATE TABLE statements of the three tables.
 */
export class UploadSql implements UploadRowStore {
  constructor(private reader: SqlReader, private dialect: UploadSqlDialect, private ddl: readonly string[]) {}

  async schemaState(): Promise<UploadSchemaState> {
    const have = (await this.reader.all(this.dialect.tablesSql, TABLES)).map((r) => String(r[0]));
    if (!have.length) return { kind: 'absent' };
    if (have.length < TABLES.length) return { kind: 'partial', tables: have };
    const settings = new Map<string, string>();
    for (const r of await this.reader.all('SELECT "key", "value" FROM "_uploadStore"', [])) settings.set(String(r[0]), String(r[1]));
    return { kind: 'present', settings };
  }

  createSteps(budgetsJson: string): WriteStep[] {
    return [
      ...this.ddl.map((sql) => ({ sql, params: [] })),
      { sql: 'INSERT INTO "_uploadStore" ("key", "value") VALUES (\'version\', $1), (\'budgets\', $2)', params: [String(UPLOAD_STORE_VERSION), budgetsJson] },
    ];
  }

  budgetsStep(budgetsJson: string): WriteStep {
    return { sql: 'UPDATE "_uploadStore" SET "value" = $1 WHERE "key" = \'budgets\'', params: [budgetsJson], expect: 'change', fail: { status: 503, code: 'internal', message: 'The upload store has no budgets row.' } };
  }

  async sessions(): Promise<UploadRow[]> {
    return (await this.reader.all(`SELECT ${COL_LIST} FROM "_uploadSessions" ORDER BY "created"`, [])).map((r) => {
      const out = {} as Record<string, unknown>;
      COLS.forEach((c, i) => (out[c] = r[i]));
      return out as unknown as UploadRow;
    });
  }

  async pageSizes(id: string): Promise<Array<[number, number]>> {
    return (await this.reader.all('SELECT "page", length("data") FROM "_uploadPayloads" WHERE "session" = $1 ORDER BY "page"', [id])).map((r) => [Number(r[0]), Number(r[1])]);
  }

  async page(id: string, page: number): Promise<Buffer | undefined> {
    const r = await this.reader.get('SELECT "data" FROM "_uploadPayloads" WHERE "session" = $1 AND "page" = $2', [id, page]);
    return r ? (r[0] as Buffer) : undefined;
  }

  async orphanPayloads(): Promise<string[]> {
    return (await this.reader.all('SELECT DISTINCT "session" FROM "_uploadPayloads" p WHERE NOT EXISTS (SELECT 1 FROM "_uploadSessions" s WHERE s."id" = p."session")', [])).map((r) => String(r[0]));
  }

  insertSteps(row: { id: string; principalCollection: string; principalId: string; collectionId: string; recordId: string; fieldId: string; filename: string; mimetype: string; length: number; created: number; expires: number }): WriteStep[] {
    const steps: WriteStep[] = [{
      sql: `INSERT INTO "_uploadSessions" (${COL_LIST}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,0,$10,$11,'receiving')`,
      params: [row.id, row.principalCollection, row.principalId, row.collectionId, row.recordId, row.fieldId, row.filename, row.mimetype, row.length, row.created, row.expires],
    }];
    // the payload pre-written as zero bytes, page by page
    const insertPage = `INSERT INTO "_uploadPayloads" ("session", "page", "data") VALUES ($1, $2, ${this.dialect.zeroBytes(3)})`;
    for (let p = 0, at = 0; at < row.length; p++, at += UPLOAD_PAGE_BYTES) {
      steps.push({ sql: insertPage, params: [row.id, p, Math.min(UPLOAD_PAGE_BYTES, row.length - at)] });
    }
    return steps;
  }

  appendSteps(id: string, from: number, to: number, pages: Array<[number, Buffer]>): WriteStep[] {
    const lost = { status: 503, code: 'internal', message: 'The upload session changed while its chunk was stored.' };
    const steps: WriteStep[] = [{ sql: 'UPDATE "_uploadSessions" SET "offset" = $1 WHERE "id" = $2 AND "state" = \'receiving\' AND "offset" = $3', params: [to, id, from], expect: 'change', fail: lost }];
    for (const [p, data] of pages) {
      steps.push({ sql: 'UPDATE "_uploadPayloads" SET "data" = $1 WHERE "session" = $2 AND "page" = $3 AND length("data") = $4', params: [data, id, p, data.length], expect: 'change', fail: lost });
    }
    return steps;
  }

  stateSteps(id: string, fromState: string, state: string, dropPayload: boolean): WriteStep[] {
    const steps: WriteStep[] = [{
      sql: 'UPDATE "_uploadSessions" SET "state" = $1 WHERE "id" = $2 AND "state" = $3',
      params: [state, id, fromState],
      expect: 'change',
      fail: { status: 503, code: 'internal', message: 'The upload session could not be moved to its next state.' },
    }];
    if (dropPayload) steps.push({ sql: 'DELETE FROM "_uploadPayloads" WHERE "session" = $1', params: [id] });
    return steps;
  }

  deleteSteps(ids: string[]): WriteStep[] {
    // every payload statement before every session statement, as one job
    const payloads: WriteStep[] = [];
    const sessions: WriteStep[] = [];
    for (let i = 0; i < ids.length; i += this.dialect.deleteBatch) {
      const part = ids.slice(i, i + this.dialect.deleteBatch);
      const marks = slotList(1, part.length);
      payloads.push({ sql: `DELETE FROM "_uploadPayloads" WHERE "session" IN (${marks})`, params: [...part] });
      sessions.push({ sql: `DELETE FROM "_uploadSessions" WHERE "id" IN (${marks})`, params: [...part] });
    }
    return [...payloads, ...sessions];
  }
}
