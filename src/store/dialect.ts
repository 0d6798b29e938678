/**
 * What differs between SQL databases that the domain still needs to know (ARCHITECTURE.md,
 * "Folders"). Identifier quoting is not here: no domain module builds statements any more (every
 * statement is spelled in src/store/sqlite/). What remains is telling a database's write failures
 * apart.
 */

import type { ConstraintViolation } from './errors/store-errors.js';

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
   * failure of a step is a GuardFailed of src/store/errors/store-errors.ts, not a WriteFailure).
   */
  writeFailure(err: unknown): WriteFailure | null;
  /**
   * The constraint failure behind `err` as a typed storage error
   * (src/store/errors/store-errors.ts): UniqueViolation for a unique index or primary key,
   * ConstraintViolation for the others (not null, check, foreign key); null when `err` is no
   * constraint failure. A write's caller throws it in place of the backend's error.
   */
  constraintError(err: unknown): ConstraintViolation | null;
}
