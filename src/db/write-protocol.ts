/**
 * Messages between the main thread and the writer thread (workers/writer.ts).
 *
 * A write job is a list of steps that run inside one savepoint of a group-commit transaction: the
 * job either applies whole or not at all, and it is answered only after the COMMIT that contains
 * it returned (WAL with synchronous=FULL, so the commit is durable).
 */
import type { SqlValue } from './bind.js';

/** One statement of a job. */
export interface WriteStep {
  sql: string;
  params: SqlValue[];
  /**
   * A guard: `row` fails the job when the statement returns no row, `change` when it changed no
   * row. The job is rolled back to its savepoint and answered with `fail` (status, code, message).
   */
  expect?: 'row' | 'change';
  fail?: { status: number; code: string; message: string; data?: Record<string, { code: string; message: string }> };
  /** Return the statement's rows (raw arrays) and column names. */
  returnRows?: boolean;
}

export interface WriteJob {
  id: number;
  steps: WriteStep[];
}

export interface StepResult {
  changes: number;
  columns?: string[];
  rows?: unknown[][];
}

export type WriteOutcome =
  | { id: number; ok: true; results: StepResult[] }
  | { id: number; ok: false; kind: 'guard'; step: number; status: number; code: string; message: string; data?: Record<string, { code: string; message: string }> }
  | { id: number; ok: false; kind: 'sqlite'; step: number; sqliteCode: string; message: string };

/** Sent once by the writer after it opened the database (or failed to). */
export type WriterReady = { ready: true } | { ready: false; message: string };
