/**
 * The time budget of a read (src/store/backend.ts, SqlReader: pool reads (`PoolRead`), the `…Balanced` and
 * `…Auto` reads), the same on both backends: the SQLite reader gives up on a pool thread, the
 * PostgreSQL reader cancels the statement on the server; either rejects with this error.
 */

/**
 * A read given up on because it ran past its time budget, queue time included
 * (SqlReader.all with a PoolRead). `budgetMs`: the budget in milliseconds. Callers answer 503.
 */
export class ReadBudgetExceeded extends Error {
  constructor(readonly budgetMs: number) {
    super(`read stopped after its budget of ${budgetMs} ms`);
    this.name = 'ReadBudgetExceeded';
  }
}
