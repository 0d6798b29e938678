/**
 * The request-log thread (docs/operations.md, "Request logs"): owns `<dataDir>/logs.db`, a libsql
 * file of its own in WAL mode, never the main database. It renders and inserts the batches the
 * main thread's buffer sends (src/logs/request-logs.ts, one string a batch: workers/logs-wire.ts) and answers the reads of the log routes,
 * so neither the writes nor a filtered scan ever run on the main thread.
 *
 * The table `logs`: `seq` (the insertion order, assigned here), `id` (15 characters: `seq` in
 * base 36 on 9, then 6 random ones, so a look-up by id is a look-up by `seq` and needs no index of
 * its own), `created` (`YYYY-MM-DD HH:MM:SS.sssZ`, indexed: the retention delete and the time
 * filters), `level`, `message`, `data` (a JSON object's text). Reads use `raw(true)`: libsql puts
 * an enumerable `_metadata` on the objects `.get()` returns.
 *
 * workerData: { file: string }
 * Messages in: `Request` below (sent by src/logs/log-store.ts). Messages out: `{ready}`
 * or `{ready: false, message}` once, then `{id, ok, value}` / `{id, ok: false, message}` for each
 * request that has an id (inserts have none: a failed insert answers `{id: 0, …}` once).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import Database from 'libsql';
import { END, MESSAGE, MESSAGE_FIELDS, REQUEST, REQUEST_FIELDS, SEP } from './logs-wire.js';

const port = parentPort!;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS logs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  created TEXT NOT NULL,
  level INTEGER NOT NULL,
  message TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_created ON logs (created);
`;
const COLUMNS = 'id, created, level, message, data';
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

type Request =
  | { op: 'insert'; batch: string }
  | { op: 'list'; id: number; where: string; params: unknown[]; order: string; limit: number; offset: number; count: boolean }
  | { op: 'get'; id: number; entry: string }
  | { op: 'stats'; id: number; where: string; params: unknown[] }
  | { op: 'prune'; id: number; before: number; maxRows: number }
  | { op: 'close'; id: number };

let db: InstanceType<typeof Database>;
/** the handle while it is being opened (closed again when opening fails) */
let opening: InstanceType<typeof Database> | undefined;
/** INSERT statements by their number of rows (ROWS_PER_INSERT, and each batch's remainder) */
const inserts = new Map<number, ReturnType<InstanceType<typeof Database>['prepare']>>();
/**
 * Rows a statement inserts: one call into libsql per 100 entries (600 parameters, far below
 * SQLite's limit) cost about 25 % less CPU time an entry than one `json_each` statement over the
 * whole batch (bench/README.md, "Request logs").
 */
const ROWS_PER_INSERT = 100;
let nextSeq = 1;
try {
  const file = (workerData as { file: string }).file;
  // created empty with mode 0600 first, as the main database is (src/files/data-paths.ts): SQLite
  // gives -wal and -shm the file's mode, and request URLs are no business of other local users
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  db = opening = new Database(file);
  db.exec('PRAGMA journal_mode = WAL');
  // a lost last batch on a power cut is acceptable for logs: no fsync per commit
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec(SCHEMA);
  nextSeq = Number((db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 FROM logs').raw(true).get([]) as unknown[])[0]);
  port.postMessage({ ready: true });
} catch (err) {
  // closed here, and the thread left to end by itself: a libsql handle still open when the main
  // thread terminates this one is finalized after JavaScript stopped, and that aborts the process
  try {
    opening?.close();
  } catch {
    // the handle was never opened, or is gone already
  }
  port.postMessage({ ready: false, message: (err as Error).message });
  port.close();
}

/** `YYYY-MM-DD HH:MM:SS.sssZ` of epoch milliseconds. */
function logDate(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11)}`;
}

/** The level of a request's entry: 0 info below 400, 4 warn for 4xx (499 too), 8 error for 5xx. */
function requestLevel(status: number): number {
  return status >= 500 ? 8 : status >= 400 ? 4 : 0;
}

/** A query string with the values of parameters whose name holds `token` hidden. */
function redactQuery(q: string): string {
  return /token/i.test(q) ? q.replace(/(^|&)([^=&]*token[^=&]*)=[^&]*/gi, '$1$2=***') : q;
}

/** Writes a batch in one transaction, `ROWS_PER_INSERT` rows a statement. */
function insert(batch: string): void {
  const entries = batch.split(END);
  const n = entries.length - 1; // the batch ends with END
  const rnd = randomBytes(n * 6);
  const rows: unknown[][] = [];
  for (let i = 0; i < n; i++) {
    const f = entries[i].split(SEP);
    let row: unknown[];
    if (f[0] === MESSAGE && f.length === MESSAGE_FIELDS) {
      row = [logDate(Number(f[1])), Number(f[2]), f[3], `{"type":"server","scope":${JSON.stringify(f[4])}}`];
    } else if (f[0] === REQUEST && f.length === REQUEST_FIELDS) {
      const [, time, method, path, query, statusText, ms, auth, ip, userAgent] = f;
      const status = Number(statusText);
      const url = query ? `${path}?${redactQuery(query)}` : path;
      const data = `{"type":"request","method":${JSON.stringify(method)},"url":${JSON.stringify(url)},"status":${status},"execTime":${Math.round(Number(ms) * 1000) / 1000},"auth":${JSON.stringify(auth)},"ip":${JSON.stringify(ip)}${userAgent ? `,"userAgent":${JSON.stringify(userAgent)}` : ''}}`;
      row = [logDate(Number(time)), requestLevel(status), `${method} ${url}`, data];
    } else continue; // not written by the buffer: skipped
    const seq = nextSeq + rows.length;
    let id = seq.toString(36).padStart(9, '0');
    for (let j = 0; j < 6; j++) id += ALPHABET[rnd[i * 6 + j] % 36];
    rows.push([seq, id, ...row]);
  }
  if (rows.length === 0) return;
  db.exec('BEGIN');
  try {
    for (let k = 0; k < rows.length; k += ROWS_PER_INSERT) {
      const chunk = rows.slice(k, k + ROWS_PER_INSERT);
      insertOf(chunk.length).run(chunk.flat());
    }
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
  nextSeq += rows.length;
}

/** The INSERT of `n` rows (one VALUES group each), prepared once per size. */
function insertOf(n: number): ReturnType<InstanceType<typeof Database>['prepare']> {
  let st = inserts.get(n);
  if (!st) {
    st = db.prepare(`INSERT INTO logs (seq, id, created, level, message, data) VALUES ${Array(n).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);
    inserts.set(n, st);
  }
  return st;
}

/** A row (`[id, created, level, message, data]`) as the API's JSON object text. */
function entryJson(row: unknown[]): string {
  return `{"id":${JSON.stringify(row[0])},"created":${JSON.stringify(row[1])},"level":${Number(row[2])},"message":${JSON.stringify(row[3])},"data":${row[4] as string}}`;
}

function handle(m: Request): unknown {
  switch (m.op) {
    case 'insert':
      insert(m.batch);
      return undefined;
    case 'list': {
      const rows = db.prepare(`SELECT ${COLUMNS} FROM logs WHERE ${m.where} ORDER BY ${m.order} LIMIT ? OFFSET ?`).raw(true).all([...m.params, m.limit, m.offset]) as unknown[][];
      const total = m.count ? Number((db.prepare(`SELECT COUNT(*) FROM logs WHERE ${m.where}`).raw(true).get(m.params) as unknown[])[0]) : -1;
      return { items: `[${rows.map(entryJson).join(',')}]`, total };
    }
    case 'get': {
      // the id's first 9 characters are its seq in base 36
      const seq = /^[0-9a-z]{15}$/.test(m.entry) ? parseInt(m.entry.slice(0, 9), 36) : -1;
      const row = db.prepare(`SELECT ${COLUMNS} FROM logs WHERE seq = ? AND id = ?`).raw(true).get([seq, m.entry]) as unknown[] | undefined;
      return row ? entryJson(row) : null;
    }
    case 'stats': {
      const rows = db.prepare(`SELECT COUNT(*), substr(created, 1, 13) AS hour FROM logs WHERE ${m.where} GROUP BY hour ORDER BY hour`).raw(true).all(m.params) as unknown[][];
      return rows.map((r) => ({ total: Number(r[0]), date: `${r[1] as string}:00:00.000Z` }));
    }
    case 'prune': {
      let n = Number(db.prepare('DELETE FROM logs WHERE created < ?').run([logDate(m.before)]).changes);
      if (m.maxRows > 0) n += Number(db.prepare('DELETE FROM logs WHERE seq <= (SELECT seq FROM logs ORDER BY seq DESC LIMIT 1 OFFSET ?)').run([m.maxRows]).changes);
      return n;
    }
    case 'close':
      db.close();
      return undefined;
  }
}

port.on('message', (m: Request) => {
  const id = 'id' in m ? m.id : 0;
  try {
    const value = handle(m);
    if (id) port.postMessage({ id, ok: true, value });
    if (m.op === 'close') port.close();
  } catch (err) {
    port.postMessage({ id, ok: false, message: (err as Error).message });
  }
});
