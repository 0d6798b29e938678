/** The SQLite dialect (implements Dialect, src/store/dialect.ts). */
import type { Dialect, WriteFailure } from '../dialect.js';
import { ConstraintViolation, UniqueViolation } from '../errors/store-errors.js';
import { WriteError } from './writer-client.js';

export const sqliteDialect: Dialect = {
  /** A WriteError of the writer thread; `constraint` for the SQLITE_CONSTRAINT family of result codes. */
  writeFailure(err: unknown): WriteFailure | null {
    if (!(err instanceof WriteError)) return null;
    const constraint = err.sqliteCode.startsWith('SQLITE_CONSTRAINT');
    // "UNIQUE constraint failed: posts.slug"
    const m = constraint ? /constraint failed: \S+?\.(\w+)/.exec(err.message) : null;
    return { constraint, message: err.message, column: m?.[1] };
  },
  /**
   * SQLITE_CONSTRAINT_UNIQUE and _PRIMARYKEY are unique violations. The table and columns come from
   * the message, `UNIQUE constraint failed: posts.a, posts.b`; an expression index is named,
   * `UNIQUE constraint failed: index 'name'`.
   */
  constraintError(err: unknown): ConstraintViolation | null {
    const f = sqliteDialect.writeFailure(err);
    if (!f?.constraint) return null;
    const code = (err as WriteError).sqliteCode;
    const named = [...f.message.slice(f.message.indexOf('failed: ') + 8).matchAll(/(\w+)\.(\w+)/g)];
    const table = named[0]?.[1];
    const fields = f.column ? named.map((n) => n[2]) : [];
    if (code !== 'SQLITE_CONSTRAINT_UNIQUE' && code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') return new ConstraintViolation(table, fields, f.message, err);
    return new UniqueViolation(table, fields, /failed: index '([^']+)'/.exec(f.message)?.[1], f.message, err);
  },
};
