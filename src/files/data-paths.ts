/** Files inside a data directory. */
import { join } from 'node:path';

/** The libsql database file. */
export function databasePath(dataDir: string): string {
  return join(dataDir, 'data.db');
}
