/**
 * The request-log store (docs/operations.md, "Request logs"): a SQLite file of its own,
 * `<dataDir>/logs.db`, opened with libsql in WAL mode on the main thread, never the main
 * database, so log writes never queue behind record writes on the writer thread (on PostgreSQL
 * each instance keeps its own file in its own data directory).
 *
 * One table, `logs`: `seq` (insertion order, the tie-break of every sort), `id` (15 characters,
 * `[a-z0-9]`), `created` (`YYYY-MM-DD HH:MM:SS.sssZ`, UTC), `level` (an integer: -4 debug, 0 info,
 * 4 warn, 8 error, as PocketBase numbers them), `message`, and `data` (a JSON object as text).
 * Statements are prepared once and read with `raw(true)` (libsql puts an enumerable `_metadata`
 * on the objects `.get()` returns; positional rows carry none).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'libsql';
import { logFilterSql, logSortSql } from './log-query.js';

/** The store's file name inside the data directory. */
export const LOGS_FILE = 'logs.db';

/** One entry as written: its time in epoch milliseconds, level, message and data (a JSON object's text). */
export interface LogEntryInput {
  time: number;
  level: number;
  message: string;
  data: string;
}

/** A page of entries as the list route answers it (PocketBase's list shape); `items` is JSON text. */
export interface LogPage {
  page: number;
  perPage: number;
  /** -1 when the total was skipped (`skipTotal`) */
  totalItems: number;
  totalPages: number;
  /** the entries' JSON objects joined into an array's text */
  items: string;
}

/** The list request: 1-based page, page size, the filter and sort as sent, and whether to count. */
export interface LogListQuery {
  page: number;
  perPage: number;
  filter: string | null;
  sort: string | null;
  skipTotal: boolean;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS logs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  created TEXT NOT NULL,
  level INTEGER NOT NULL,
  message TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_created ON logs (created);
`;

const COLUMNS = 'id, created, level, message, data';
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `YYYY-MM-DD HH:MM:SS.sssZ` (PocketBase's date text) of epoch milliseconds. */
export function logDate(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11)}`;
}

/** `n` fresh ids of 15 characters from one random read. */
function newIds(n: number): string[] {
  const bytes = randomBytes(n * 15);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let id = '';
    for (let j = 0; j < 15; j++) id += ID_ALPHABET[bytes[i * 15 + j] % 36];
    out.push(id);
  }
  return out;
}

/** An entry's row (`[id, created, level, message, data]`) as the API's JSON object text. */
function entryJson(row: unknown[]): string {
  return `{"id":${JSON.stringify(row[0])},"created":${JSON.stringify(row[1])},"level":${Number(row[2])},"message":${JSON.stringify(row[3])},"data":${row[4] as string}}`;
}

/** The logs table of one `logs.db` (see the module comment). Synchronous; main thread only. */
export class LogStore {
  private readonly db: InstanceType<typeof Database>;
  private readonly insertStmt;
  private readonly byIdStmt;
  private readonly pruneOldStmt;
  private readonly pruneCapStmt;

  /** Opens (creating when absent) `<dataDir>/logs.db`. @throws when the file cannot be opened */
  constructor(dataDir: string) {
    this.db = new Database(join(dataDir, LOGS_FILE));
    this.db.exec('PRAGMA journal_mode = WAL');
    // a lost last batch on a power cut is acceptable for logs; no fsync per commit
    this.db.exec('PRAGMA synchronous = NORMAL');
    this.db.exec('PRAGMA busy_timeout = 1000');
    this.db.exec(SCHEMA);
    this.insertStmt = this.db.prepare('INSERT INTO logs (id, created, level, message, data) VALUES (?, ?, ?, ?, ?)');
    this.byIdStmt = this.db.prepare(`SELECT ${COLUMNS} FROM logs WHERE id = ?`).raw(true);
    this.pruneOldStmt = this.db.prepare('DELETE FROM logs WHERE created < ?');
    this.pruneCapStmt = this.db.prepare('DELETE FROM logs WHERE seq <= (SELECT seq FROM logs ORDER BY seq DESC LIMIT 1 OFFSET ?)');
  }

  /** Writes `entries` in one transaction. */
  insert(entries: readonly LogEntryInput[]): void {
    if (entries.length === 0) return;
    const ids = newIds(entries.length);
    this.db.exec('BEGIN');
    try {
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i];
        this.insertStmt.run([ids[i], logDate(e.time), e.level, e.message, e.data]);
      }
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /**
   * One page of entries.
   * @throws ApiError 400 for a filter or sort the log fields refuse (log-query.ts)
   */
  list(q: LogListQuery): LogPage {
    const where = logFilterSql(q.filter);
    const order = logSortSql(q.sort);
    const rows = this.db.prepare(`SELECT ${COLUMNS} FROM logs WHERE ${where.sql} ORDER BY ${order} LIMIT ? OFFSET ?`).raw(true)
      .all([...where.params, q.perPage, (q.page - 1) * q.perPage]) as unknown[][];
    let totalItems = -1;
    let totalPages = -1;
    if (!q.skipTotal) {
      totalItems = Number((this.db.prepare(`SELECT COUNT(*) FROM logs WHERE ${where.sql}`).raw(true).get(where.params) as unknown[])[0]);
      totalPages = Math.ceil(totalItems / q.perPage);
    }
    return { page: q.page, perPage: q.perPage, totalItems, totalPages, items: `[${rows.map(entryJson).join(',')}]` };
  }

  /** One entry's JSON object text, or null when there is none with `id`. */
  get(id: string): string | null {
    const row = this.byIdStmt.get([id]) as unknown[] | undefined;
    return row ? entryJson(row) : null;
  }

  /**
   * Entries per hour, oldest first: `[{total, date}]`, `date` the hour's start
   * (`YYYY-MM-DD HH:00:00.000Z`).
   * @throws ApiError 400 for a filter the log fields refuse
   */
  stats(filter: string | null): Array<{ total: number; date: string }> {
    const where = logFilterSql(filter);
    const rows = this.db.prepare(`SELECT COUNT(*), substr(created, 1, 13) AS hour FROM logs WHERE ${where.sql} GROUP BY hour ORDER BY hour`).raw(true)
      .all(where.params) as unknown[][];
    return rows.map((r) => ({ total: Number(r[0]), date: `${r[1] as string}:00:00.000Z` }));
  }

  /**
   * Deletes the entries older than `before` (epoch ms) and, past `maxRows`, the oldest ones.
   * @returns how many rows went
   */
  prune(before: number, maxRows: number): number {
    let n = Number(this.pruneOldStmt.run([logDate(before)]).changes);
    if (maxRows > 0) n += Number(this.pruneCapStmt.run([maxRows]).changes);
    return n;
  }

  close(): void {
    this.db.close();
  }
}
