/**
 * Multi-row INSERTs for bulk loads (`svc import`): consecutive single-row INSERT steps of one
 * statement text (as record-sql.ts `insert` writes them) become one `INSERT … VALUES (…), (…)`
 * step, so the writer makes one call into the database per few hundred rows instead of one per
 * row (the same multi-row VALUES spelling on both backends).
 * Steps with a guard (`expect`), a failure message or returned rows are never merged.
 */
import type { StepResult, WriteStep } from './write-job.js';

/** Bound parameters per merged statement (SQLite's limit is 32,766; PostgreSQL's 65,535). */
const MAX_PARAMS = 30_000;
const TUPLE = /VALUES \((\?(?:, \?)*)\)$/;

/**
 * The steps with runs of plain single-row INSERTs merged, and a function that expands the
 * merged job's results back to one result per original step.
 */
export function mergeInserts(steps: WriteStep[]): { steps: WriteStep[]; expand: (results: StepResult[]) => StepResult[] } {
  const out: WriteStep[] = [];
  const sizes: number[] = []; // original steps per output step (0: kept as it was)
  let base = ''; // the single-row statement of the run being merged
  let tuple = '';
  let rows = 0;
  let params: WriteStep['params'] = [];
  const close = () => {
    if (rows === 0) return;
    out[out.length - 1].sql = rows === 1 ? base : `${base}${`, (${tuple})`.repeat(rows - 1)}`;
    out[out.length - 1].params = params;
    sizes[sizes.length - 1] = rows;
    rows = 0;
  };
  for (const s of steps) {
    if (rows > 0 && s.sql === base && !s.expect && !s.fail && !s.returnRows && params.length + s.params.length <= MAX_PARAMS) {
      for (const p of s.params) params.push(p);
      rows++;
      continue;
    }
    close();
    const m = !s.expect && !s.fail && !s.returnRows && s.sql.startsWith('INSERT INTO ') ? TUPLE.exec(s.sql) : null;
    if (m) {
      base = s.sql;
      tuple = m[1];
      params = s.params.slice();
      rows = 1;
      out.push({ sql: base, params, creates: s.creates });
      sizes.push(1);
    } else {
      out.push(s);
      sizes.push(0);
    }
  }
  close();
  return {
    steps: out,
    expand: (results) => results.flatMap((r, i) => (sizes[i] === 0 ? [r] : Array.from({ length: sizes[i] }, () => ({ changes: 1 })))),
  };
}
