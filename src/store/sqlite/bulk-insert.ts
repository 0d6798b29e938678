/**
 * Multi-row INSERTs for bulk loads (`svc import`): consecutive single-row INSERT steps of one
 * statement text (as record-sql.ts `insert` writes them) become one `INSERT … VALUES (…), (…)`
 * step, so the writer makes one call into SQLite per few hundred rows instead of one per row.
 * Steps with a guard (`expect`), a failure message or returned rows are never merged.
 */
import type { StepResult, WriteStep } from '../write-job.js';

/** Bound parameters per merged statement (SQLite's limit is 32,766). */
const MAX_PARAMS = 30_000;
const TUPLE = /VALUES \((\?(?:, \?)*)\)$/;

/**
 * The steps with runs of plain single-row INSERTs merged, and a function that expands the
 * merged job's results back to one result per original step.
 */
export function mergeInserts(steps: WriteStep[]): { steps: WriteStep[]; expand: (results: StepResult[]) => StepResult[] } {
  const out: WriteStep[] = [];
  const sizes: number[] = []; // original steps per output step
  for (const s of steps) {
    const last = out[out.length - 1];
    const plain = !s.expect && !s.fail && !s.returnRows && s.sql.startsWith('INSERT INTO ');
    const tuple = plain ? TUPLE.exec(s.sql) : null;
    if (tuple && last && sizes[sizes.length - 1] > 0 && last.sql.startsWith(s.sql) && last.params.length + s.params.length <= MAX_PARAMS) {
      last.sql += `, (${tuple[1]})`;
      last.params.push(...s.params);
      sizes[sizes.length - 1]++;
      continue;
    }
    out.push(tuple ? { sql: s.sql, params: [...s.params], creates: s.creates } : s);
    sizes.push(tuple ? 1 : 0);
  }
  return {
    steps: out,
    expand: (results) => results.flatMap((r, i) => (sizes[i] === 0 ? [r] : Array.from({ length: sizes[i] }, () => ({ changes: 1 })))),
  };
}
