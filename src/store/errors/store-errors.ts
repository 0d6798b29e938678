/**
 * The errors the storage layer throws (ARCHITECTURE.md, "Folders", src/store/errors/ and src/errors/).
 *
 * Storage says what went wrong in its own terms (a missing collection, a guard that did not hold,
 * a query it cannot express, a unique index that refused a row) and knows nothing of HTTP: no
 * status, no error code of the API. The one place that turns them into the API's errors, with the
 * status, code, message and data the API answers (docs/api.md, "Errors"), is `knownApiError` in
 * src/errors/api-error.ts. This module imports nothing and is a folder of its own, so src/errors/
 * may import it without depending on the rest of storage (which imports the features above it).
 *
 * Every error is built on the main thread: the writer thread (workers/writer.ts) sends a failed
 * job's outcome kind and step index over its port, and its client builds the error from them with
 * the job it kept (src/store/write-job.ts), so no typed error is ever structured-cloned.
 */

/**
 * What a write step answers when its guard does not hold, set by the code that built the step
 * (the domain's decision: storage only carries it back in GuardFailed, it never reads it).
 */
export interface StepFail {
  status: number;
  code: string;
  message: string;
  data?: Record<string, { code: string; message: string }>;
}

/**
 * Base of every typed storage error; `kind` tells them apart where `instanceof` cannot. Built
 * with `message`, human text the API answers as is (unless the kind's mapping says otherwise).
 */
export abstract class StoreError extends Error {
  abstract readonly kind: string;
}

/** A collection (by id or name) or a row that does not exist. */
export class NotFound extends StoreError {
  readonly kind = 'not_found';
  /** @param what what is missing; `message` is human text the API answers as is */
  constructor(readonly what: 'collection' | 'row', message: string) { super(message); }
}

/**
 * A write job's guard did not hold: a step with `expect` returned no row or changed none (a
 * rule check, a row that must exist, a state that must still be current). The job was rolled
 * back. `fail` is the step's own answer (src/store/write-job.ts), absent when it set none (the
 * row was not there: the API answers 404).
 */
export class GuardFailed extends StoreError {
  readonly kind = 'guard_failed';
  /**
   * @param step the index of the step whose guard failed, in the job
   * @param fail the step's answer, when it has one
   */
  constructor(readonly step: number, readonly fail?: StepFail) {
    super(fail?.message ?? `the guard of step ${step} did not hold`);
  }
}

/**
 * A filter or sort that storage cannot turn into SQL: an unknown, hidden or encrypted field, a
 * relation it cannot resolve, a number too precise for its field, a sort not allowed with cursor
 * paging. `message` starts with `Invalid filter: ` or `Invalid sort: `, as the API answers it.
 */
export class InvalidQuery extends StoreError {
  readonly kind = 'invalid_query';
  /** @param part which parameter (or rule) the problem is in; `message` as the API answers it */
  constructor(readonly part: 'filter' | 'sort', message: string) { super(message); }
}

/**
 * A filter within the grammar that is still too big for the database: too deeply nested, or too
 * many relation lookups for SQLite's parser (src/store/sqlite/sql-shape.ts). `new QueryTooComplex(message)`.
 */
export class QueryTooComplex extends StoreError {
  readonly kind = 'query_too_complex';
}

/** A value the backend cannot store as given (PostgreSQL text with U+0000). `new InvalidValue(message)`. */
export class InvalidValue extends StoreError {
  readonly kind = 'invalid_value';
}

/**
 * A collection definition this backend or its features cannot hold (a field name PostgreSQL
 * reserves, searchable fields with full-text search off).
 */
export class UnsupportedSchema extends StoreError {
  readonly kind = 'unsupported_schema';
  /** @param collection the collection's name; `message` as the API answers it */
  constructor(readonly collection: string, message: string) { super(message); }
}

/** The writer takes no more jobs (closed, or its thread ended): the server is shutting down. */
export class WriterClosed extends StoreError {
  readonly kind = 'writer_closed';
  constructor() {
    super('The server is shutting down.');
  }
}

/**
 * A write job broke a constraint of the database (unique, not null, check, foreign key). The job
 * was rolled back. `message` is the database's own text.
 */
export class ConstraintViolation extends StoreError {
  readonly kind: string = 'constraint_violation';
  /**
   * @param table   the table (collection) the constraint is on, when the database names it
   * @param fields  the columns of the constraint the database names (the first one is the field
   *                the API reports), possibly none
   * @param message the database's message
   * @param backendError the backend's own error (WriteError on SQLite, PgWriteError on PostgreSQL)
   */
  constructor(readonly table: string | undefined, readonly fields: readonly string[], message: string, readonly backendError?: unknown) {
    super(message);
  }
}

/** A write job inserted or updated a row to a value a unique index already holds. */
export class UniqueViolation extends ConstraintViolation {
  override readonly kind = 'unique_violation';
  /**
   * @param table   see ConstraintViolation
   * @param fields  see ConstraintViolation
   * @param index   the unique index or constraint, when the database names it
   * @param message the database's message
   * @param backendError the backend's own error
   */
  constructor(table: string | undefined, fields: readonly string[], readonly index: string | undefined, message: string, backendError?: unknown) {
    super(table, fields, message, backendError);
  }
}
