/**
 * The slow-query log (read by `svc doctor`, src/ops/doctor.ts; docs/operations.md, "Doctor").
 *
 * A record list (GET /api/collections/:col/records: filters, sorts, full-text search, vector
 * queries) that takes at least `SERVICE_SLOW_QUERY_MS` (default 200; 0 turns the log off) adds
 * one line to `<dataDir>/slow_queries.ndjson`:
 *
 *   {"ts":"2025-01-01T12:00:00.000Z","collection":"posts","shape":"filter: title = ? && views > ? | sort: -created",
 *    "filter":"title = ? && views > ?","sort":"-created","search":false,"vector":false,
 *    "fields":["title","views"],"sort_fields":["created"],"duration_ms":231.4,
 *    "plan":["SCAN r","USE TEMP B-TREE FOR ORDER BY"]}
 *
 * - The shape never holds a value: every string, number and boolean literal of the filter is `?`
 *   (an `in` list is `(?)`), the search text and the query vector are only flagged. The compiled
 *   SQL and its parameters are not written either; the plan lines (`EXPLAIN QUERY PLAN`'s detail
 *   column) name tables, indexes and `?` placeholders only.
 * - The list path only reads the clock twice (records-list.ts); the shape, the plan and the
 *   append happen later on the main thread's check phase (setImmediate), on a query-only
 *   connection opened for the batch and closed after it (the reader's own connections are never
 *   used for EXPLAIN: libsql 0.5.29 leaves a connection that ran EXPLAIN QUERY PLAN reading a
 *   stale snapshot, see src/store/sqlite/reader.ts). On PostgreSQL the reader's `plan` explains
 *   (EXPLAIN (FORMAT JSON) in the same wording) on its connection pool: the batch's lines are
 *   appended once their plans have come back, in the order they were recorded.
 * - At most one line per collection and query shape per minute (and per schema generation, so a
 *   plan changed by a new index is logged at once); at most {@link MAX_PENDING} samples wait.
 * - The file is created 0600, append-only; past {@link SLOW_QUERY_MAX_BYTES} it is renamed to
 *   `slow_queries.ndjson.1` (replacing the previous one) and a new file begins.
 */
import { existsSync, readFileSync } from 'node:fs';
import { open, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'libsql';
import { tokenize, type Token } from '../rules/lexer.js';
import type { SqlValue } from '../store/bind.js';
import { boundedCache } from '../cache/bounded.js';

/** The log's file name inside the data directory. */
export const SLOW_QUERY_FILE = 'slow_queries.ndjson';
/** Size (bytes) past which the log is rotated to `<file>.1`. */
export const SLOW_QUERY_MAX_BYTES = 5 * 1024 * 1024;
/** Default threshold in milliseconds (SERVICE_SLOW_QUERY_MS). */
export const DEFAULT_SLOW_QUERY_MS = 200;
/** A query shape is logged at most once per this many milliseconds. */
export const SHAPE_INTERVAL_MS = 60_000;
/** Samples waiting to be written; more are dropped (the log is a diagnosis aid, not an audit). */
export const MAX_PENDING = 256;
/** Shapes remembered for the once-a-minute rule (the least recently logged go first). */
const MAX_SHAPES = 10_000;

/** The path of the slow-query log of `dataDir`. */
export function slowQueryPath(dataDir: string): string {
  return join(dataDir, SLOW_QUERY_FILE);
}

/** One line of the log (keys are snake_case: the CLI reads it). */
export interface SlowQueryEntry {
  /** ISO 8601 time the query finished */
  ts: string;
  /** collection name */
  collection: string;
  /** the filter, sort, search and vector parts joined by ` | `, e.g. `filter: a = ? | sort: -b` */
  shape: string;
  /** the filter with every literal replaced by `?`, or null without a filter */
  filter: string | null;
  /** the sort (field names and directions), or null without one */
  sort: string | null;
  /** whether a full-text search narrowed the list */
  search: boolean;
  /** whether the list was ordered by a query vector */
  vector: boolean;
  /** the fields the filter names (first segment of each path, macros excluded), in order */
  fields: string[];
  /** the fields the sort names, without direction (`@random` and other macros excluded) */
  sort_fields: string[];
  /** wall time of the list request's query work, in milliseconds (0.1 ms precision) */
  duration_ms: number;
  /** `EXPLAIN QUERY PLAN` detail lines of the page query; empty when none could be had */
  plan: string[];
}

/** What the list path hands over about a slow request (values stay in memory, never in the log). */
export interface SlowQuerySample {
  collection: string;
  /** the client filter text as sent (literal values included: only its shape is written) */
  filter: string | null;
  sort: string | null;
  search: boolean;
  vector: boolean;
  /** the page query as run ('' when none ran, e.g. a search that matched nothing) */
  sql: string;
  params: readonly SqlValue[];
  /** the schema generation the query ran at (a new index makes a new plan worth a line) */
  generation?: number;
}

/**
 * The filter with every literal replaced by `?`: strings, numbers, `true` and `false` (`null`
 * stays: it carries no value); an `in (…)` list of literals becomes `in (?)`. Tokens are joined
 * canonically (`title = ? && (views > ? || draft = ?)`), so filters differing in spacing or
 * values share a shape. Uses the filter lexer (src/rules/lexer.ts); a filter it rejects is
 * scrubbed with {@link scrubLiterals}.
 */
export function filterShape(src: string): string {
  let tokens: Token[];
  try {
    tokens = tokenize(src);
  } catch {
    return scrubLiterals(src);
  }
  let out = '';
  const put = (text: string, glue: boolean) => {
    out += out === '' || glue || out.endsWith('(') ? text : ` ${text}`;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    switch (t.kind) {
      case 'eof':
        break;
      case 'string':
      case 'number':
      case 'true':
      case 'false':
        put('?', false);
        break;
      case 'macro':
        put(`@${t.text}`, false);
        break;
      case 'rparen':
        put(')', true);
        break;
      case 'comma':
        put(',', true);
        break;
      case 'in':
        put('in', false);
        if (tokens[i + 1]?.kind === 'lparen') {
          // a literal list: one `?` whatever its length (the grammar allows literals only here)
          let j = i + 2;
          while (j < tokens.length && tokens[j].kind !== 'rparen' && tokens[j].kind !== 'eof') j++;
          put('(?)', false);
          i = tokens[j]?.kind === 'rparen' ? j : j - 1;
        }
        break;
      default:
        put(t.text, false);
    }
  }
  return out;
}

/**
 * A regex fallback for text the lexer rejects: quoted strings (either quote, backslash escapes,
 * an unterminated one to the end) and numbers not inside identifiers become `?`.
 */
export function scrubLiterals(src: string): string {
  return src
    .replace(/'(?:[^'\\]|\\.)*(?:'|\\?$)|"(?:[^"\\]|\\.)*(?:"|\\?$)/gs, '?')
    .replace(/(?<![\w.@])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])/g, '?')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The fields a filter names: the first segment of each path, once each, in order. */
export function filterFields(src: string): string[] {
  let tokens: Token[];
  try {
    tokens = tokenize(src);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const t of tokens) {
    if (t.kind !== 'path') continue;
    const head = t.text.split('.')[0];
    if (!out.includes(head)) out.push(head);
  }
  return out;
}

const SORT_TERM = /^[+-]?@?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** The sort as written, each term trimmed (a term that is not a field name becomes `?`). */
export function sortShape(src: string): string {
  return src
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((t) => (SORT_TERM.test(t) ? t : '?'))
    .join(',');
}

/** The fields a sort names, without direction; macros such as `@random` are left out. */
export function sortFields(src: string): string[] {
  const out: string[] = [];
  for (const term of sortShape(src).split(',')) {
    const name = term.replace(/^[+-]/, '');
    if (name === '' || name === '?' || name.startsWith('@')) continue;
    const head = name.split('.')[0];
    if (!out.includes(head)) out.push(head);
  }
  return out;
}

/** The log entry of a sample (without its plan): the shape and the fields, never a value. */
export function describeSample(s: SlowQuerySample, ms: number, at: number): SlowQueryEntry {
  const filter = s.filter && s.filter.trim() ? filterShape(s.filter) : null;
  const sort = s.sort && s.sort.trim() ? sortShape(s.sort) : null;
  const parts: string[] = [];
  if (filter !== null) parts.push(`filter: ${filter}`);
  if (sort !== null) parts.push(`sort: ${sort}`);
  if (s.search) parts.push('search: ?');
  if (s.vector) parts.push('vector: ?');
  return {
    ts: new Date(at).toISOString(),
    collection: s.collection,
    shape: parts.join(' | '),
    filter,
    sort,
    search: s.search,
    vector: s.vector,
    fields: filter !== null ? filterFields(s.filter!) : [],
    sort_fields: sort !== null ? sortFields(s.sort!) : [],
    duration_ms: Math.round(ms * 10) / 10,
    plan: [],
  };
}

/** Options of a {@link SlowQueryLog}. */
export interface SlowQueryLogOptions {
  /** the data directory; the log is `<dataDir>/slow_queries.ndjson` */
  dataDir: string;
  /** the database file the plans are asked of (read through a query-only connection); '' with `explain` or for none */
  dbPath: string;
  /**
   * Plans a page query instead of a connection to `dbPath`: on PostgreSQL the reader's `plan`
   * (EXPLAIN (FORMAT JSON) mapped to SQLite's wording, src/store/pg/reader.ts planDetails), so
   * the log and `svc doctor`'s missing-index check read the same on both backends.
   */
  explain?: (sql: string, params: SqlValue[]) => Promise<string[]>;
  /** milliseconds from which a list is logged; must be > 0 (0 means no log: do not create one) */
  thresholdMs: number;
  /** rotation size in bytes (default {@link SLOW_QUERY_MAX_BYTES}) */
  maxBytes?: number;
  /** told of a failure to write the log (the list request never is) */
  onError?: (err: unknown) => void;
}

interface Pending {
  ms: number;
  at: number;
  sample: SlowQuerySample;
}

/**
 * The slow-query log of one server. `record` is called by the list path for a request at or over
 * `thresholdMs`; everything else happens later, off the request's path.
 */
export class SlowQueryLog {
  /** milliseconds from which a list is logged */
  readonly thresholdMs: number;
  readonly path: string;
  private readonly maxBytes: number;
  private pending: Pending[] = [];
  private scheduled = false;
  private lastByShape = boundedCache<string, number>(MAX_SHAPES);
  /** the append chain: every write waits for the one before */
  private chain: Promise<void> = Promise.resolve();
  private size = -1;
  private closed = false;

  /** @throws RangeError when `thresholdMs` is not a positive number */
  constructor(private readonly opts: SlowQueryLogOptions) {
    if (!(opts.thresholdMs > 0)) throw new RangeError('the slow-query threshold must be a positive number of milliseconds');
    this.thresholdMs = opts.thresholdMs;
    this.path = slowQueryPath(opts.dataDir);
    this.maxBytes = opts.maxBytes ?? SLOW_QUERY_MAX_BYTES;
  }

  /**
   * Queues a slow request (`ms` of wall time) for the log; returns at once. Dropped when the
   * queue is full or the log is closed.
   */
  record(ms: number, sample: SlowQuerySample): void {
    if (this.closed || this.pending.length >= MAX_PENDING) return;
    this.pending.push({ ms, at: Date.now(), sample });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }

  /** Resolves once every queued sample is written (or dropped). */
  async flush(): Promise<void> {
    if (this.scheduled) await new Promise<void>((r) => setImmediate(r));
    if (this.pending.length) this.drain();
    await this.chain;
  }

  /** Writes what is queued, then refuses further samples. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  /** Shapes, dedupes, explains and appends the queued samples. */
  private drain(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    const entries: Array<{ entry: SlowQueryEntry; sample: SlowQuerySample }> = [];
    for (const p of batch) {
      const entry = describeSample(p.sample, p.ms, p.at);
      const key = `${entry.collection}\u0000${p.sample.generation ?? ''}\u0000${entry.shape}`;
      const last = this.lastByShape.get(key);
      if (last !== undefined && p.at - last < SHAPE_INTERVAL_MS) continue;
      this.lastByShape.set(key, p.at);
      entries.push({ entry, sample: p.sample });
    }
    if (!entries.length) return;
    const explainer = this.opts.explain;
    if (explainer) {
      // PostgreSQL: the plans are asked of the reader's pool; the lines wait for them on the chain
      this.chain = this.chain
        .then(async () => {
          for (const { entry, sample } of entries) {
            if (sample.sql) entry.plan = await explainer(sample.sql, [...sample.params]).catch(() => []);
          }
          await this.append(linesOf(entries));
        })
        .catch((err) => this.opts.onError?.(err));
      return;
    }
    if (this.opts.dbPath) {
      let planner: InstanceType<typeof Database> | null = null;
      try {
        for (const { entry, sample } of entries) {
          if (!sample.sql) continue;
          try {
            planner ??= openPlanner(this.opts.dbPath);
            entry.plan = explain(planner, sample.sql, sample.params);
          } catch {
            entry.plan = []; // a table dropped meanwhile, a busy database: the line stays useful
          }
        }
      } finally {
        planner?.close();
      }
    }
    const text = linesOf(entries);
    this.chain = this.chain.then(() => this.append(text)).catch((err) => this.opts.onError?.(err));
  }

  private async append(text: string): Promise<void> {
    const bytes = Buffer.byteLength(text);
    if (this.size < 0) this.size = await stat(this.path).then((s) => s.size, () => 0);
    if (this.size > 0 && this.size + bytes > this.maxBytes) {
      await rename(this.path, `${this.path}.1`);
      this.size = 0;
    }
    const fh = await open(this.path, 'a', 0o600);
    try {
      await fh.write(text);
    } finally {
      await fh.close();
    }
    this.size += bytes;
  }
}

/** The log lines of a batch's entries, newline-terminated. */
function linesOf(entries: ReadonlyArray<{ entry: SlowQueryEntry }>): string {
  return `${entries.map((e) => JSON.stringify(e.entry)).join('\n')}\n`;
}

/** A query-only connection for EXPLAIN QUERY PLAN, opened per batch. */
function openPlanner(dbPath: string): InstanceType<typeof Database> {
  const db = new Database(dbPath);
  db.exec('PRAGMA busy_timeout = 200');
  db.exec('PRAGMA query_only = 1');
  return db;
}

/** The detail lines of `EXPLAIN QUERY PLAN <sql>` (the last column of each row). */
function explain(db: InstanceType<typeof Database>, sql: string, params: readonly SqlValue[]): string[] {
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).raw(true).all([...params]) as unknown[][];
  return rows.map((r) => String(r[r.length - 1]));
}

/** What {@link readSlowQueries} found: the entries, oldest first, and the lines it could not read. */
export interface SlowQueryRead {
  entries: SlowQueryEntry[];
  /** lines that were not a JSON object with a collection, a shape and a plan */
  skipped: number;
}

/**
 * Reads the log of `dataDir` (`slow_queries.ndjson.1`, then `slow_queries.ndjson`); missing files
 * read as empty.
 * @throws Error (from node:fs) when a file exists but cannot be read
 */
export function readSlowQueries(dataDir: string): SlowQueryRead {
  const out: SlowQueryRead = { entries: [], skipped: 0 };
  const base = slowQueryPath(dataDir);
  for (const file of [`${base}.1`, base]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        out.skipped++;
        continue;
      }
      const e = v as Partial<SlowQueryEntry> | null;
      if (!e || typeof e !== 'object' || typeof e.collection !== 'string' || typeof e.shape !== 'string' || !Array.isArray(e.plan)) {
        out.skipped++;
        continue;
      }
      out.entries.push({
        ts: String(e.ts ?? ''),
        collection: e.collection,
        shape: e.shape,
        filter: typeof e.filter === 'string' ? e.filter : null,
        sort: typeof e.sort === 'string' ? e.sort : null,
        search: e.search === true,
        vector: e.vector === true,
        fields: Array.isArray(e.fields) ? e.fields.map(String) : [],
        sort_fields: Array.isArray(e.sort_fields) ? e.sort_fields.map(String) : [],
        duration_ms: Number(e.duration_ms) || 0,
        plan: e.plan.map(String),
      });
    }
  }
  return out;
}
