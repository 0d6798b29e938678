/**
 * SQLite statements of the upload store's persistence mode (implements UploadRowStore,
 * src/store/upload-store.ts): `_uploadStore` (version marker and budgets), `_uploadSessions`
 * (metadata) and `_uploadPayloads` (payload pages). The tables are created only when the
 * persistence mode opens a database that has none of them.
 */
import type { WriteStep } from '../write-job.js';
import { UPLOAD_PAGE_BYTES, UPLOAD_STORE_VERSION, type UploadRow, type UploadRowStore, type UploadSchemaState } from '../upload-store.js';
import type { Reader } from './reader.js';

const TABLES = ['_uploadStore', '_uploadSessions', '_uploadPayloads'];
const COLS = ['id', 'principalCollection', 'principalId', 'collectionId', 'recordId', 'fieldId', 'filename', 'mimetype', 'length', 'offset', 'created', 'expires', 'state'] as const;
const COL_LIST = COLS.map((c) => `"${c}"`).join(',');

const DDL = [
  'CREATE TABLE "_uploadStore" ("key" TEXT PRIMARY KEY NOT NULL, "value" TEXT NOT NULL)',
  `CREATE TABLE "_uploadSessions" ("id" TEXT PRIMARY KEY NOT NULL, "principalCollection" TEXT NOT NULL, "principalId" TEXT NOT NULL,
    "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL, "fieldId" TEXT NOT NULL, "filename" TEXT NOT NULL, "mimetype" TEXT NOT NULL,
    "length" INTEGER NOT NULL, "offset" INTEGER NOT NULL, "created" INTEGER NOT NULL, "expires" INTEGER NOT NULL, "state" TEXT NOT NULL)`,
  'CREATE TABLE "_uploadPayloads" ("session" TEXT NOT NULL, "page" INTEGER NOT NULL, "data" BLOB NOT NULL, PRIMARY KEY ("session", "page"))',
];

export class SqliteUploadSql implements UploadRowStore {
  constructor(private reader: Reader) {}

  schemaState(): UploadSchemaState {
    const have = this.reader.all(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${TABLES.map(() => '?').join(',')})`, TABLES).map((r) => String(r[0]));
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
    return this.reader.all('SELECT "page", length("data") FROM "_uploadPayloads" WHERE "session" = ? ORDER BY "page"', [id]).map((r) => [Number(r[0]), Number(r[1])]);
  }

  page(id: string, page: number): Buffer | undefined {
    const r = this.reader.get('SELECT "data" FROM "_uploadPayloads" WHERE "session" = ? AND "page" = ?', [id, page]);
    return r ? (r[0] as Buffer) : undefined;
  }

  orphanPayloads(): string[] {
    return this.reader.all('SELECT DISTINCT "session" FROM "_uploadPayloads" WHERE "session" NOT IN (SELECT "id" FROM "_uploadSessions")', []).map((r) => String(r[0]));
  }

  insertSteps(row: { id: string; principalCollection: string; principalId: string; collectionId: string; recordId: string; fieldId: string; filename: string; mimetype: string; length: number; created: number; expires: number }): WriteStep[] {
    const steps: WriteStep[] = [{
      sql: `INSERT INTO "_uploadSessions" (${COL_LIST}) VALUES (?,?,?,?,?,?,?,?,?,0,?,?,'receiving')`,
      params: [row.id, row.principalCollection, row.principalId, row.collectionId, row.recordId, row.fieldId, row.filename, row.mimetype, row.length, row.created, row.expires],
    }];
    // the payload pre-written as zero bytes, page by page
    for (let p = 0, at = 0; at < row.length; p++, at += UPLOAD_PAGE_BYTES) {
      steps.push({ sql: 'INSERT INTO "_uploadPayloads" ("session", "page", "data") VALUES (?, ?, zeroblob(?))', params: [row.id, p, Math.min(UPLOAD_PAGE_BYTES, row.length - at)] });
    }
    return steps;
  }

  appendSteps(id: string, from: number, to: number, pages: Array<[number, Buffer]>): WriteStep[] {
    const lost = { status: 503, code: 'internal', message: 'The upload session changed while its chunk was stored.' };
    const steps: WriteStep[] = [{ sql: 'UPDATE "_uploadSessions" SET "offset" = ? WHERE "id" = ? AND "state" = \'receiving\' AND "offset" = ?', params: [to, id, from], expect: 'change', fail: lost }];
    for (const [p, data] of pages) {
      steps.push({ sql: 'UPDATE "_uploadPayloads" SET "data" = ? WHERE "session" = ? AND "page" = ? AND length("data") = ?', params: [data, id, p, data.length], expect: 'change', fail: lost });
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
    if (!ids.length) return [];
    const marks = ids.map(() => '?').join(',');
    return [
      { sql: `DELETE FROM "_uploadPayloads" WHERE "session" IN (${marks})`, params: [...ids] },
      { sql: `DELETE FROM "_uploadSessions" WHERE "id" IN (${marks})`, params: [...ids] },
    ];
  }
}
