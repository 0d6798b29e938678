/**
 * The PostgreSQL dialect (implements Dialect, src/store/dialect.ts; docs/deployment.md).
 *
 * A write failure is a PgWriteError of the writer (src/store/pg/writer.ts) or a raw `pg`
 * DatabaseError of any other statement. Constraint failures are SQLSTATE class 23
 * (integrity_constraint_violation): 23505 unique, 23502 not null, 23514 check, 23503 foreign key,
 * and the rarer 23001 restrict and 23P01 exclusion. Every other SQLSTATE is a database failure that
 * is no conflict of data (syntax, undefined column, statement timeout). A lost connection
 * (PgConnectionError), a guard's ApiError and any other error are no write failure: null. A
 * constraint failure is what the API answers 409 `conflict` (docs/api.md, "Errors").
 */
import pg from 'pg';
import type { Dialect, WriteFailure } from '../dialect.js';
import { ConstraintViolation, UniqueViolation } from '../errors/store-errors.js';
import { PgWriteError } from './writer.js';

/** SQLSTATE class 23: the write broke a constraint. */
export function isConstraintState(sqlState: string): boolean {
  return sqlState.startsWith('23');
}

/**
 * The column of a failed constraint: the error's column field (not null), else the first column
 * of a unique violation's detail, `Key (slug)=(x) already exists.` or `Key (lower(email))=…`.
 */
function constraintColumn(column: string | undefined, detail: string | undefined): string | undefined {
  if (column) return column;
  const m = detail ? /^Key \((?:lower\()?"?(\w+)/.exec(detail) : null;
  return m?.[1];
}

export const pgDialect: Dialect = {
  writeFailure(err: unknown): WriteFailure | null {
    if (err instanceof PgWriteError) return { constraint: isConstraintState(err.sqlState), message: err.message, column: constraintColumn(err.column, err.detail) };
    if (err instanceof pg.DatabaseError && typeof err.code === 'string') return { constraint: isConstraintState(err.code), message: err.message, column: constraintColumn(err.column, err.detail) };
    return null;
  },
  /**
   * SQLSTATE 23505 is a unique violation, its constraint the index. The fields are the failure's
   * column first, then the others of the detail's key, `Key (a, lower(b))=(…) already exists.`
   */
  constraintError(err: unknown): ConstraintViolation | null {
    const f = pgDialect.writeFailure(err);
    if (!f?.constraint) return null;
    const e = err as { code?: string; sqlState?: string; detail?: string; table?: string; constraint?: string };
    const key = e.detail ? /^Key \((.*?)\)=/.exec(e.detail)?.[1] : undefined;
    const named = key ? [...key.matchAll(/(?:^|,\s*)(?:lower\()?"?(\w+)/g)].map((n) => n[1]) : [];
    const fields = f.column ? [f.column, ...named.filter((n) => n !== f.column)] : named;
    if ((e.sqlState ?? e.code) !== '23505') return new ConstraintViolation(e.table, fields, f.message, err);
    return new UniqueViolation(e.table, fields, e.constraint, f.message, err);
  },
};
