/**
 * The storage boundary of the resumable upload store's persistence mode (docs/files.md, "Resumable
 * uploads"); implemented for both backends by src/store/shared/upload-sql.ts.
 *
 * Three tables: the store's settings (`version` = 2 and the budgets it was last opened with), one
 * metadata row per session, and the payload as fixed-size pages (`UPLOAD_PAGE_BYTES`), each a
 * BLOB pre-written as zero bytes at creation and rewritten whole when a chunk touches it.
 */
import type { WriteStep } from './write-job.js';

/** Bytes per payload page (the last page of a payload is shorter). */
export const UPLOAD_PAGE_BYTES = 1024 * 1024;

/** The store format this code reads and writes. */
export const UPLOAD_STORE_VERSION = 2;

/** A session's metadata row as stored (see UploadSession in src/uploads/upload-store.ts). */
export interface UploadRow {
  id: unknown;
  principalCollection: unknown;
  principalId: unknown;
  collectionId: unknown;
  recordId: unknown;
  fieldId: unknown;
  filename: unknown;
  mimetype: unknown;
  length: unknown;
  offset: unknown;
  created: unknown;
  expires: unknown;
  state: unknown;
}

/** What a database holds of the upload store. */
export type UploadSchemaState =
  | { kind: 'absent' }
  | { kind: 'partial'; tables: string[] }
  | { kind: 'present'; settings: Map<string, string> };

export interface UploadRowStore {
  /** Which of the store's tables exist, and its settings when all do. */
  schemaState(): Promise<UploadSchemaState>;
  /** The steps creating a fresh store (tables, version marker, budgets). */
  createSteps(budgetsJson: string): WriteStep[];
  /** Replaces the stored budgets. */
  budgetsStep(budgetsJson: string): WriteStep;
  /** Every session row (values as stored, for validation). */
  sessions(): Promise<UploadRow[]>;
  /** Page numbers and byte lengths of a session's payload, in page order. */
  pageSizes(id: string): Promise<Array<[number, number]>>;
  /** One payload page's bytes, or undefined. */
  page(id: string, page: number): Promise<Buffer | undefined>;
  /** Sessions that have payload rows but no metadata row. */
  orphanPayloads(): Promise<string[]>;
  /** Inserts a session (state receiving, offset 0) and its zero-filled pages. */
  insertSteps(row: { id: string; principalCollection: string; principalId: string; collectionId: string; recordId: string; fieldId: string; filename: string; mimetype: string; length: number; created: number; expires: number }): WriteStep[];
  /** Rewrites pages and moves the acknowledged offset from `from` to `to` (guarded: state receiving, offset `from`). */
  appendSteps(id: string, from: number, to: number, pages: Array<[number, Buffer]>): WriteStep[];
  /** Moves a session to `state` from `fromState` (guarded); `dropPayload` deletes its pages too. */
  stateSteps(id: string, fromState: string, state: string, dropPayload: boolean): WriteStep[];
  /** Deletes sessions and their pages (abort, expiry, invalid leftovers). */
  deleteSteps(ids: string[]): WriteStep[];
}
