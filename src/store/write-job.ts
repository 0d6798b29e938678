/**
 * Messages between the main thread and the writer thread (workers/writer.ts).
 *
 * A write job is a list of steps that run inside one savepoint of a group-commit transaction: the
 * job either applies whole or not at all, and it is answered only after the COMMIT that contains
 * it returned (WAL with synchronous=FULL, so the commit is durable).
 */
import type { SqlValue } from './bind.js';
import type { StepFail } from './errors/store-errors.js';

/** One statement of a job. */
export interface WriteStep {
  sql: string;
  params: SqlValue[];
  /**
   * A guard: `row` fails the job when the statement returns no row, `change` when it changed no
   * row. The job is rolled back to its savepoint and rejected with GuardFailed carrying `fail`
   * (src/store/errors/store-errors.ts), the answer the API gives (status, code, message, data).
   */
  expect?: 'row' | 'change';
  fail?: StepFail;
  /** Return the statement's rows (raw arrays) and column names. */
  returnRows?: boolean;
  /**
   * The record this step creates (an INSERT of one record). The writer's change triggers note
   * updates and deletes (cascades included) but not inserts, which never cascade: the creating
   * step names its record instead, and the change feed reports it when the job commits. Stays on
   * the main thread, like `fail`.
   */
  creates?: { collection: string; id: string };
}

export interface StepResult {
  changes: number;
  columns?: string[];
  rows?: unknown[][];
}

/*
 * On the wire a batch is one flat array, not an array of job objects: the structured clone of a
 * postMessage costs per object and per property, and a create's two steps as objects measured
 * several times dearer to clone and restore than flat (bench/README.md, "Create"). A step's `fail`
 * never travels: the main thread keeps it with the pending job.
 *
 * Jobs (main → writer), repeated:  jobId, stepCount, then per step: flags, sql, paramCount, ...params
 * Outcomes (writer → main), one array per group, repeated:
 *   jobId, OUT_OK,     then per step: changes, and for a STEP_RETURN_ROWS step also rows, columns
 *   jobId, OUT_GUARD,  failing step index
 *   jobId, OUT_SQLITE, failing step index (-1: the group failed), SQLite error code, message
 * then, once at the end of the group's array, its changes (see workers/writer.ts takeChanges):
 *   flat changes (collectionId, recordId, CHANGE_* op, deleted row as JSON text or null; repeated) or null,
 *   truncated collection ids (too many changes to list) or null
 */

/** Change ops on the wire (the change feed, src/store/change-feed.ts). */
export const CHANGE_CREATE = 1;
export const CHANGE_UPDATE = 2;
export const CHANGE_DELETE = 3;
/** Most records listed in one group's changes; past it the group names the collections only. */
export const MAX_CHANGES_LISTED = 20_000;

/** Step flags on the wire. */
export const STEP_EXPECT_ROW = 1;
export const STEP_EXPECT_CHANGE = 2;
export const STEP_RETURN_ROWS = 4;

/** Outcome kinds on the wire. */
export const OUT_OK = 0;
export const OUT_GUARD = 1;
export const OUT_SQLITE = 2;

/** The wire flags of a step. */
function stepFlags(step: WriteStep): number {
  return (step.expect === 'row' ? STEP_EXPECT_ROW : step.expect === 'change' ? STEP_EXPECT_CHANGE : 0) | (step.returnRows ? STEP_RETURN_ROWS : 0);
}

/** Appends one job to a flat batch (see the wire format above). */
export function encodeJob(out: unknown[], id: number, steps: WriteStep[]): void {
  out.push(id, steps.length);
  for (const step of steps) {
    out.push(stepFlags(step), step.sql, step.params.length);
    for (const p of step.params) out.push(p);
  }
}

/** Sent once by the writer after it opened the database (or failed to). */
export type WriterReady = { ready: true } | { ready: false; message: string };
