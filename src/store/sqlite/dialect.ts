/** The SQLite dialect (implements Dialect, src/store/dialect.ts). */
import type { Dialect, WriteFailure } from '../dialect.js';
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
};
