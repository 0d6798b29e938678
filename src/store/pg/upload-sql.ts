/**
 * PostgreSQL statements of the upload store's persistence mode (implements UploadRowStore,
 * src/store/upload-store.ts; issue 24): the counterpart of src/store/sqlite/upload-sql.ts.
 * `_uploadStore` (version marker and budgets), `_uploadSessions` (metadata) and
 * `_uploadPayloads` (payload pages), created only when the persistence mode opens a database
 * that has none of them (they are not part of bootstrap.ts). Same columns, PostgreSQL types:
 * text, bigint for SQLite's INTEGER (lengths, offsets, epoch-ms times; read back as BigInt like
 * SQLite's), bytea for the BLOB pages.
 *
 * Zero pages. SQLite pre-writes a page with `zeroblob(n)`; PostgreSQL has no such function. Here
 * a page is `decode(repeat('00', n), 'hex')`, built on the server: measured on the test
 * server (2 shared cores, loopback, 20 pages of 1 MiB per variant, 3 rounds) it took 16-23 ms a
 * page, against 33 ms for `repeat(E'\\000', n)::bytea` (which also builds a 4 MiB escape text
 * where the hex form builds 2 MiB) and 11-13 ms for sending a zero Buffer as a parameter (1 MiB
 * on the wire per page: cheaper on loopback, costlier against a remote server, so not chosen).
 * pglz compresses the zero pages to almost nothing in TOAST until a chunk rewrites them.
 *
 * Other differences from SQLite: `schemaState` looks the tables up in pg_class (ordinary or
 * partitioned tables of the connection's current schema) instead of sqlite_master; page lengths
 * are `octet_length`; `IN (…)` lists are split at DELETE_BATCH ids per statement (PostgreSQL
 * takes at most 65,535 parameters a statement; one job still holds them all).
 */
import type { WriteStep } from '../write-job.js';
import { UPLOAD_PAGE_BYTES, UPLOAD_STORE_VERSION, type UploadRow, type UploadRowStore, type UploadSchemaState } from '../upload-store.js';
import type { PgReader } from './reader.js';

const TABLES = ['_uploadStore', '_uploadSessions', '_uploadPayloads'];
const COLS = ['id', 'principalCollection', 'principalId', 'collectionId', 'recordId', 'fieldId', 'filename', 'mimetype', 'length', 'offset', 'created', 'expires', 'state'] as const;
const COL_LIST = COLS.map((c) => `"${c}"`).join(',');
/** Most ids in one DELETE statement. */
const DELETE_BATCH = 1000;

const DDL = [
  'CREATE TABLE "_uploadStore" ("key" text PRIMARY KEY, "value" text NOT NULL)',
  `CREATE TABLE "_uploadSessions" ("id" text PRIMARY KEY, "principalCollection" text NOT NULL, "principalId" text NOT NULL,
    "collectionId" text NOT NULL, "recordId" text NOT NULL, "fieldId" text NOT NULL, "filename" text NOT NULL, "mimetype" text NOT NULL,
    "length" bigint NOT NULL, "offset" bigint NOT NULL, "created" bigint NOT NULL, "expires" bigint NOT NULL, "state" text NOT NULL)`,
  'CREATE TABLE "_uploadPayloads" ("session" text NOT NULL, "page" integer NOT NULL, "data" bytea NOT NULL, PRIMARY KEY ("session", "page"))',
];

/** SQL for `n` (the one parameter) zero bytes: SQLite's zeroblob(n), see the module comment. */
export const ZERO_BYTES_SQL = `decode(repeat('00', ?::integer), 'hex')`;

export class PgUploadSql implements UploadRowStore {
  constructor(private reader: PgReader) {}

  schemaState(): UploadSchemaState {
    const have = this.reader.all(
      `SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname IN (${TABLES.map(() => '?').join(',')}) AND c.relkind IN ('r', 'p')
        AND c.relnamespace = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = current_schema()) ORDER BY c.oid`,
      TABLES,
    ).map((r) => String(r[0]));
    if (!have.length) return { kind: 'absent' };
    if (have.length < TABLES.length) return { kind: 'partial', tables: have };
    const settings = new Map<string, string>();
    for (const r of this.reader.all('SELECT "key", "value" FROM "_uploadStore"', [])) settings.set(String(r[0]), String(r[1]));
    return { kind: 'present', settings };
  }

  createSteps(budgetsJson: string): WriteStep[] {
    return [
      ...DDL.map((sql) => ({ sql, params: [] })),
      { sql: 'INSERT INTO "_uploadStore" ("key", "value") VALUES (\'version\', ?), (\'budgets\', ?)', params: [String(UPLOAD_STORE_VERSION), budgetsJson] },
    ];
  }

  budgetsStep(budgetsJson: string): WriteStep {
    return { sql: 'UPDATE "_uploadStore" SET "value" = ? WHERE "key" = \'budgets\'', params: [budgetsJson], expect: 'change', fail: { status: 503, code: 'internal', message: 'The upload store has no budgets row.' } };
  }

  sessions(): UploadRow[] {
    return this.reader.all(`SELECT ${COL_LIST} FROM "_uploadSessions" ORDER BY "created"`, []).map((r) => {
      const out = {} as Record<string, unknown>;
      COLS.forEach((c, i) => (out[c] = r[i]));
      return out as unknown as UploadRow;
    });
  }

  pageSizes(id: string): Array<[number, number]> {
    return this.reader.all('SELECT "page", octet_length("data") FROM "_uploadPayloads" WHERE "session" = ? ORDER BY "page"', [id]).map((r) => [Number(r[0]), Number(r[1])]);
  }

  page(id: string, page: number): Buffer | undefined {
    const r = this.reader.get('SELECT "data" FROM "_uploadPayloads" WHERE "session" = ? AND "page" = ?', [id, page]);
    return r ? (r[0] as Buffer) : undefined;
  }

  orphanPayloads(): string[] {
    return this.reader.all('SELECT DISTINCT "session" FROM "_uploadPayloads" p WHERE NOT EXISTS (SELECT 1 FROM "_uploadSessions" s WHERE s."id" = p."session")', []).map((r) => String(r[0]));
  }

  insertSteps(row: { id: string; principalCollection: string; principalId: string; collectionId: string; recordId: string; fieldId: string; filename: string; mimetype: string; length: number; created: number; expires: number }): WriteStep[] {
    const steps: WriteStep[] = [{
      sql: `INSERT INTO "_uploadSessions" (${COL_LIST}) VALUES (?,?,?,?,?,?,?,?,?,0,?,?,'receiving')`,
      params: [row.id, row.principalCollection, row.principalId, row.collectionId, row.recordId, row.fieldId, row.filename, row.mimetype, row.length, row.created, row.expires],
    }];
    // the payload pre-written as zero bytes, page by page
    for (let p = 0, at = 0; at < row.length; p++, at += UPLOAD_PAGE_BYTES) {
      steps.push({ sql: `INSERT INTO "_uploadPayloads" ("session", "page", "data") VALUES (?, ?, ${ZERO_BYTES_SQL})`, params: [row.id, p, Math.min(UPLOAD_PAGE_BYTES, row.length - at)] });
    }
    return steps;
  }

  appendSteps(id: string, from: number, to: number, pages: Array<[number, Buffer]>): WriteStep[] {
    const lost = { status: 503, code: 'internal', message: 'The upload session changed while its chunk was stored.' };
    const steps: WriteStep[] = [{ sql: 'UPDATE "_uploadSessions" SET "offset" = ? WHERE "id" = ? AND "state" = \'receiving\' AND "offset" = ?', params: [to, id, from], expect: 'change', fail: lost }];
    for (const [p, data] of pages) {
      steps.push({ sql: 'UPDATE "_uploadPayloads" SET "data" = ? WHERE "session" = ? AND "page" = ? AND octet_length("data") = ?', params: [data, id, p, data.length], expect: 'change', fail: lost });
    }
    return steps;
  }

  stateSteps(id: string, fromState: string, state: string, dropPayload: boolean): WriteStep[] {
    const steps: WriteStep[] = [{
      sql: 'UPDATE "_uploadSessions" SET "state" = ? WHERE "id" = ? AND "state" = ?',
      params: [state, id, fromState],
      expect: 'change',
      fail: { status: 503, code: 'internal', message: 'The upload session could not be moved to its next state.' },
    }];
    if (dropPayload) steps.push({ sql: 'DELETE FROM "_uploadPayloads" WHERE "session" = ?', params: [id] });
    return steps;
  }

  deleteSteps(ids: string[]): WriteStep[] {
    const payloads: WriteStep[] = [];
    const sessions: WriteStep[] = [];
    for (let i = 0; i < ids.length; i += DELETE_BATCH) {
      const part = ids.slice(i, i + DELETE_BATCH);
      const marks = part.map(() => '?').join(',');
      payloads.push({ sql: `DELETE FROM "_uploadPayloads" WHERE "session" IN (${marks})`, params: [...part] });
      sessions.push({ sql: `DELETE FROM "_uploadSessions" WHERE "id" IN (${marks})`, params: [...part] });
    }
    return [...payloads, ...sessions];
  }
}
