/**
 * What differs between SQL databases that the domain still needs to know (ARCHITECTURE.md,
 * "Folders"). Identifier quoting is not here: no domain module builds statements any more (every
 * statement is spelled in src/store/sqlite/). What remains is telling a database's write failures
 * apart.
 */

/** A failed write job as the domain sees it. */
export interface WriteFailure {
  /** the job broke a constraint (unique, not null, check): the data conflicts, not the statement */
  constraint: boolean;
  /** the database's message */
  message: string;
  /** the column the failed constraint is on, when the database names it (a 409's field) */
  column?: string;
}

export interface Dialect {
  /**
   * The database failure behind `err`, or null when `err` is no database write failure (a guard
   * failure of a step is an ApiError, not a WriteFailure).
   */
  writeFailure(err: unknown): WriteFailure | null;
}
