/**
 * The bundled SQLite engine's version, for the version report (src/meta/version-info.ts): libsql
 * ships with the package whichever backend a server runs on, so the report names it on both.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let cached: string | undefined;

/**
 * SQLite version of the bundled libsql (e.g. `3.45.1`), read from an in-memory database on the
 * first call and remembered; `unknown` when libsql cannot be loaded. libsql is loaded only here,
 * so a version report that never asks does not load it. Never throws.
 */
export function sqliteVersion(): string {
  if (cached === undefined) {
    try {
      const Database = require('libsql') as new (file: string) => {
        prepare(sql: string): { get(): unknown };
        close(): void;
      };
      const db = new Database(':memory:');
      try {
        const row = db.prepare('SELECT sqlite_version() AS v').get() as { v?: unknown } | undefined;
        cached = typeof row?.v === 'string' ? row.v : 'unknown';
      } finally {
        db.close();
      }
    } catch {
      cached = 'unknown';
    }
  }
  return cached;
}
