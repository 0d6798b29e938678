/**
 * Bulk import (docs/operations.md, "Command line" and "Bulk import": `svc import
 * --collection=NAME FILE [--format=csv|json|ndjson]`; exit 3 when rows were skipped; the offline
 * OAuth2 link import of docs/auth.md, "OAuth2 and passkeys").
 *
 * Rows are streamed from the file (CSV through csv-records.ts, which refuses a malformed row and
 * reads on; JSON arrays through stream-json; NDJSON line by line) and each is created exactly as
 * `POST /records` would create it as a superuser: the same validation, ids, relation checks and encryption (RecordWriter). Rows go to
 * the writer in chunks: one chunk is one write job, so the writer commits thousands of rows per
 * transaction, and the next chunk is validated while the writer commits the last one. A row that
 * fails validation is reported with its number; a chunk that fails in the database (a unique
 * value taken) is retried row by row so only the offending rows fail. Relations are checked
 * against the database once per related id (the import holds the data directory alone, so a
 * related record cannot vanish meanwhile); an id not found is left to the write job's guard.
 * With `upsert`, a row whose key names an existing record updates it through the writer's update
 * instead (docs/operations.md, "Bulk import"). The writer runs the record events of the
 * services it belongs to (an `--app`'s hooks).
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import streamArray from 'stream-json/streamers/stream-array.js';
import type { Collection, Field } from '../model/schema.js';
import type { CollectionRegistry } from '../collections/collection-registry.js';
import type { RecordSql } from '../store/record-sql.js';
import type { ExternalAuthRowStore } from '../store/auth-store.js';
import type { SqlValue } from '../store/bind.js';
import type { StepResult, WriteStep } from '../store/write-job.js';
import { WriteBatch, type RecordWriter, type RelationsKnown } from '../records/records-write.js';
import { ApiError, knownApiError } from '../errors/api-error.js';
import type { Principal } from '../rules/access.js';
import { nowDate } from '../collections/fields/index.js';
import { newId } from '../records/ids.js';
import { mergeInserts } from '../store/bulk-insert.js';
import { SLOT } from '../store/slots.js';
import { csvRecords } from './csv-records.js';

export type ImportFormat = 'csv' | 'json' | 'ndjson';

/** One source row: its 1-based number in the file and its value (or why it could not be read). */
export interface SourceRow {
  n: number;
  value?: Record<string, unknown>;
  error?: string;
}

/** A refused row (at most `MAX_REPORTED` are kept). */
export interface RowError {
  row: number;
  message: string;
  data?: Record<string, unknown>;
}

export interface ImportResult {
  /** rows written: created, or updated under `upsert` */
  imported: number;
  /** of `imported`, the rows that updated an existing record (`upsert` only) */
  updated: number;
  skipped: number;
  /** true when `onError: 'stop'` stopped at a refused row */
  stopped: boolean;
  errors: RowError[];
}

export interface ImportOptions {
  onError: 'stop' | 'skip';
  /** rows per write job (default 1,000) */
  chunk?: number;
  /** called after every chunk: rows imported and skipped so far, bytes of the file read */
  onProgress?: (imported: number, skipped: number) => void;
  /**
   * Update instead of create when a row's key names an existing record: `id`, or a unique
   * field (uniqueKey() checks it). The update goes through the writer as `PATCH` would.
   */
  upsert?: { key: string };
  /** the import's related records (importRelationsKnown), learnt before each chunk is validated */
  relations?: ImportRelations;
}

/**
 * Why `key` cannot be an upsert key of `c`, or null when it can: `id`, or a field that is unique
 * (`options.unique`, or a unique index on that field alone) and not encrypted (an encrypted value
 * cannot be looked up).
 */
export function upsertKeyProblem(c: Collection, key: string): string | null {
  if (key === 'id') return null;
  const f = c.fields.find((x) => x.name === key);
  if (!f) return `${c.name} has no field "${key}"`;
  if (f.options.encrypted) return `"${key}" is encrypted: it cannot be looked up`;
  const unique = f.options.unique || (c.indexes ?? []).some((i) => i.unique && i.fields.length === 1 && i.fields[0] === key);
  return unique ? null : `"${key}" is not unique in ${c.name} (mark it unique, or give a unique index on it alone)`;
}

/** Most row errors a result lists (the counts cover all of them). */
export const MAX_REPORTED = 100;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The format a file name suggests (`.csv`, `.json`, `.ndjson` / `.jsonl`), or undefined. */
export function formatOf(file: string): ImportFormat | undefined {
  if (/\.csv$/i.test(file)) return 'csv';
  if (/\.(ndjson|jsonl)$/i.test(file)) return 'ndjson';
  if (/\.json$/i.test(file)) return 'json';
  return undefined;
}

/** A file's rows as objects; `onBytes` reports how far the file has been read (for progress). */
export async function* readRows(file: string, format: ImportFormat, c: Collection | null, onBytes?: (bytes: number) => void): AsyncGenerator<SourceRow> {
  const input = createReadStream(file);
  if (onBytes) input.on('data', () => onBytes(input.bytesRead));
  let n = 0;
  if (format === 'ndjson') {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      n++;
      if (line.trim() === '') continue;
      try {
        const v = JSON.parse(line);
        yield isObject(v) ? { n, value: v } : { n, error: 'a line must be a JSON object' };
      } catch (err) {
        yield { n, error: `not JSON: ${(err as Error).message}` };
      }
    }
    return;
  }
  if (format === 'json') {
    const items = input.pipe((streamArray as unknown as { withParserAsStream(): NodeJS.ReadWriteStream }).withParserAsStream());
    for await (const { value } of items as AsyncIterable<{ value: unknown }>) {
      n++;
      yield isObject(value) ? { n, value } : { n, error: 'an array element must be a JSON object' };
    }
    return;
  }
  const fields = new Map((c?.fields ?? []).map((f) => [f.name, f]));
  let header: string[] | null = null;
  for await (const rec of csvRecords(createInterface({ input, crlfDelay: Infinity }))) {
    if (!header) {
      if (rec.error) throw new Error(`the header row (line ${rec.line}): ${rec.error}`);
      header = rec.cells!;
      continue;
    }
    n++;
    if (rec.error) {
      yield { n, error: `line ${rec.line}: ${rec.error}` };
      continue;
    }
    const value: Record<string, unknown> = {};
    let error: string | undefined;
    rec.cells!.forEach((raw, i) => {
      if (raw === '') return; // an empty cell: the field's default
      const k = header![i];
      const f = fields.get(k);
      try {
        value[k] = f ? fromCsv(f, raw) : raw;
      } catch {
        error = `column "${k}": ${JSON.stringify(raw.slice(0, 50))} is not valid JSON`;
      }
    });
    yield error ? { n, error } : { n, value };
  }
}

/**
 * The keys a row of `c` may carry: `id`, its fields and, for an auth collection, `password` and
 * `passwordConfirm`. Any other key is dropped by the writer, as the API drops it.
 */
export function knownColumns(c: Collection): Set<string> {
  return new Set(['id', ...c.fields.map((f) => f.name), ...(c.type === 'auth' ? ['password', 'passwordConfirm'] : [])]);
}

/**
 * `rows` unchanged, calling `onUnknown(column, row)` once per column no known key of `known`
 * names, at the first row that has it (docs/operations.md, "Bulk import": unknown columns).
 */
export async function* watchColumns(rows: AsyncIterable<SourceRow>, known: Set<string>, onUnknown: (column: string, row: number) => void): AsyncGenerator<SourceRow> {
  const seen = new Set<string>();
  for await (const r of rows) {
    if (r.value) {
      for (const k of Object.keys(r.value)) {
        if (known.has(k) || seen.has(k)) continue;
        seen.add(k);
        onUnknown(k, r.n);
      }
    }
    yield r;
  }
}

/** A CSV cell as the JSON value the API takes for the field. */
function fromCsv(f: Field, raw: string): unknown {
  switch (f.type) {
    case 'number': {
      const x = Number(raw);
      return Number.isNaN(x) ? raw : x; // the field's validation reports a non-number
    }
    case 'bool':
      return /^(true|1|yes)$/i.test(raw) ? true : /^(false|0|no)$/i.test(raw) ? false : raw;
    case 'json':
      return JSON.parse(raw);
    case 'select':
    case 'relation':
    case 'file':
      if ((f.options.maxSelect ?? 1) > 1) return raw.trimStart().startsWith('[') ? JSON.parse(raw) : raw.split(',').map((s) => s.trim()).filter((s) => s);
      return raw;
    default:
      return raw;
  }
}

function describe(err: unknown): { message: string; data?: Record<string, unknown> } {
  const api = knownApiError(err);
  if (api) return Object.keys(api.data).length ? { message: api.message, data: api.data } : { message: api.message };
  return { message: err instanceof Error ? err.message : String(err) };
}

/** Ids of one relation target read in one statement by ImportRelations.learn. */
const LEARN_BATCH = 500;
/** Ids of one target kept as known (past it, the writer guards them inside the write job). */
const KNOWN_MAX = 1_000_000;

/**
 * What the import knows of related records. `known` is the RelationsKnown given to its record
 * writer (src/boot/services.ts): the import holds the data directory alone, so a related record
 * seen once stays (ids kept per target, up to a million each), and its existence guard is left
 * out of the write job. It answers from memory only: `learn` reads beforehand, with promise reads
 * on either backend (no read blocks the main thread), which of the ids a chunk's rows name exist.
 */
export interface ImportRelations {
  known: RelationsKnown;
  /** Reads which ids the relation fields of `rows` (rows of `c`) name exist, for `known`. */
  learn(c: Collection, rows: readonly SourceRow[]): Promise<void>;
}

/**
 * What the bulk import needs of storage: the collection registry's look-ups, the record
 * statements it reads keys and related ids with, the provider-link statements of the OAuth2 link
 * import, the reader's point and list reads, and the writer. Built over the Store by the
 * composition root (src/boot/repositories.ts, `importRepository`); a test may give a small fake.
 */
export interface ImportRepository {
  /** the collection registry (related collections, `_superusers`) */
  registry: Pick<CollectionRegistry, 'byId' | 'find'>;
  /** the record statements of the open database's backend */
  records: Pick<RecordSql, 'selectAll' | 'selectOne' | 'rowById' | 'ident'>;
  /** the provider-link statements (importLinks) */
  externalAuths: Pick<ExternalAuthRowStore, 'recordFor' | 'linkStep'>;
  /** The first row of `sql` (SqlReader.get), or undefined. @throws the reader's error */
  get(sql: string, params: SqlValue[]): Promise<unknown[] | undefined>;
  /** Every row of `sql` (SqlReader.all). @throws the reader's error */
  all(sql: string, params: SqlValue[]): Promise<unknown[][]>;
  /** Commits `steps` as one write job (SqlWriter.write). @throws the writer's error when the job fails */
  write(steps: WriteStep[]): Promise<StepResult[]>;
}

/** The import's ImportRelations over `repo` (built once per import, before its services). */
export function importRelationsKnown(repo: ImportRepository): ImportRelations {
  const seen = new Map<string, Set<string>>();
  const idsOf = (target: Collection): Set<string> => {
    let ids = seen.get(target.id);
    if (!ids) seen.set(target.id, (ids = new Set()));
    return ids;
  };
  const learn = async (c: Collection, rows: readonly SourceRow[]): Promise<void> => {
    for (const f of c.fields) {
      if (f.type !== 'relation') continue;
      const target = repo.registry.byId(String(f.options.collectionId));
      if (!target) continue;
      const ids = idsOf(target);
      const asked = new Set<string>();
      for (const r of rows) {
        const v = r.value?.[f.name];
        for (const id of Array.isArray(v) ? v : [v]) if (typeof id === 'string' && id !== '' && !ids.has(id)) asked.add(id);
      }
      const wanted = [...asked];
      for (let at = 0; at < wanted.length && ids.size < KNOWN_MAX; at += LEARN_BATCH) {
        const part = wanted.slice(at, at + LEARN_BATCH);
        const sql = repo.records.selectAll(target, '"id"', ` WHERE r."id" IN (${part.map(() => SLOT).join(',')})`);
        for (const [id] of await repo.all(sql, part)) if (ids.size < KNOWN_MAX) ids.add(String(id));
      }
    }
  };
  return { known: (target, id) => seen.get(target.id)?.has(id) ?? false, learn };
}

/**
 * Creates every row of `rows` in collection `c` as a superuser would through the API, through
 * `writes` (built with importRelationsKnown's `known`; `options.relations` the same object).
 * @throws Error only for failures that are not a row's (the database closing, I/O)
 */
export async function importRecords(repo: ImportRepository, writes: RecordWriter, c: Collection, rows: AsyncIterable<SourceRow>, options: ImportOptions): Promise<ImportResult> {
  const su: Principal = { superuser: true, collection: repo.registry.find('_superusers')!, record: { id: '' } };
  const size = options.chunk ?? 1000;
  const result: ImportResult = { imported: 0, updated: 0, skipped: 0, stopped: false, errors: [] };
  const refuse = (row: number, err: unknown) => {
    result.skipped++;
    if (result.errors.length < MAX_REPORTED) result.errors.push({ row, ...describe(err) });
  };
  let chunk: SourceRow[] = [];

  const key = options.upsert?.key;
  const keySql = key && key !== 'id' ? repo.records.selectOne(c, '"id"', ` WHERE r.${repo.records.ident(key)} = ${SLOT}`) : repo.records.rowById(c, '"id"');
  /** The id of the record a row's key names, under `upsert`, or undefined. */
  const existing = async (v: Record<string, unknown>): Promise<string | undefined> => {
    const k = key === undefined ? undefined : v[key];
    if ((typeof k !== 'string' && typeof k !== 'number') || k === '') return undefined;
    return (await repo.get(keySql, [k]))?.[0] as string | undefined;
  };
  /** A row's write: an update of the record its key names (under `upsert`), else a create; resolves once committed. */
  const create = async (r: SourceRow, batch?: WriteBatch): Promise<unknown> => {
    if (!r.value) throw new ApiError(400, 'bad_request', r.error!);
    const id = await existing(r.value);
    if (id === undefined) return writes.create(c, su, r.value, null, batch);
    const { id: _, ...body } = r.value;
    return writes.update(c, id, su, body, null, batch).then((out) => {
      result.updated++;
      return out;
    });
  };

  /**
   * Rows each in its own write job (the writer still groups them into few commits). With `stop`
   * they run one after another, so nothing after the first refused row is written. Answers
   * whether to go on.
   */
  const oneByOne = async (part: SourceRow[]): Promise<boolean> => {
    if (options.onError === 'stop') {
      for (const r of part) {
        try {
          await create(r);
          result.imported++;
        } catch (err) {
          refuse(r.n, err);
          result.stopped = true;
          return false;
        }
      }
      return true;
    }
    const outs = await Promise.allSettled(part.map((r) => create(r)));
    outs.forEach((o, i) => (o.status === 'fulfilled' ? result.imported++ : refuse(part[i].n, o.reason)));
    return true;
  };

  /** One chunk as one write job; a failure in the database retries it row by row. Answers whether to go on. */
  const runChunk = async (part: SourceRow[], before: Promise<boolean>): Promise<boolean> => {
    // one write job for the chunk, its single-row INSERTs merged into multi-row ones
    const batch = new WriteBatch({
      write: async (steps) => {
        const merged = mergeInserts(steps);
        return merged.expand(await repo.write(merged.steps));
      },
    });
    await options.relations?.learn(c, part);
    const early = new Set<number>();
    let collecting = true;
    const outcomes = part.map((r, i) => {
      const p = create(r, batch);
      p.catch(() => {
        if (!collecting) return;
        early.add(i); // refused before reaching the batch (validation)
        batch.failedEarly();
      });
      return p;
    });
    await batch.whenAll(part.length);
    collecting = false;
    // validated while the chunk before was committing; its outcome decides whether this one goes on
    if (!(await before)) {
      await batch.commit(new Error('cancelled'));
      await Promise.allSettled(outcomes);
      return false;
    }
    if (early.size && options.onError === 'stop') {
      const cut = Math.min(...early);
      await batch.commit(new Error('cancelled'));
      await Promise.allSettled(outcomes);
      if (!(await oneByOne(part.slice(0, cut)))) return false;
      refuse(part[cut].n, await outcomes[cut].catch((err) => err));
      result.stopped = true;
      return false;
    }
    await batch.commit();
    const outs = await Promise.allSettled(outcomes);
    for (const i of early) refuse(part[i].n, (outs[i] as PromiseRejectedResult).reason);
    const handedIn = part.filter((_, i) => !early.has(i));
    if (outs.some((o, i) => o.status === 'rejected' && !early.has(i))) return oneByOne(handedIn); // the job failed as a whole
    result.imported += handedIn.length;
    return true;
  };

  // at most two chunks at once: one committing, the next being validated
  let last: Promise<boolean> = Promise.resolve(true);
  let older: Promise<boolean> = last;
  let stopped = false;
  const flush = async () => {
    const part = chunk;
    chunk = [];
    const before = last;
    last = runChunk(part, before).then((go) => {
      options.onProgress?.(result.imported, result.skipped);
      return go;
    });
    stopped = !(await older);
    older = before;
  };
  for await (const r of rows) {
    chunk.push(r);
    if (chunk.length >= size) {
      await flush();
      if (stopped) break;
    }
  }
  if (!stopped && chunk.length) await flush();
  await last;
  return result;
}

/** One provider link row of the OAuth2 link import. */
export interface LinkRow {
  record: string;
  provider: string;
  providerId: string;
}

/**
 * The offline OAuth2 link import (docs/auth.md, "OAuth2 and passkeys": an offline import command
 * can write the links for migrations): rows `{record, provider, providerId}` link existing records
 * of the auth collection `c` to provider accounts, as a first OAuth2 sign-in would have.
 */
export async function importLinks(repo: ImportRepository, c: Collection, rows: AsyncIterable<SourceRow>, options: ImportOptions): Promise<ImportResult> {
  const result: ImportResult = { imported: 0, updated: 0, skipped: 0, stopped: false, errors: [] };
  const refuse = (row: number, message: string) => {
    result.skipped++;
    if (result.errors.length < MAX_REPORTED) result.errors.push({ row, message });
  };
  for await (const r of rows) {
    const v = r.value;
    let problem = r.error;
    if (!problem && v) {
      if (typeof v.record !== 'string' || typeof v.provider !== 'string' || typeof v.providerId !== 'string' || !v.record || !v.provider || !v.providerId) problem = 'a link row needs record, provider and providerId (strings)';
      else if (!(await repo.get(repo.records.rowById(c, '"id"'), [v.record]))) problem = `no record "${v.record}" in ${c.name}`;
      else if (await repo.externalAuths.recordFor(c.id, v.provider, v.providerId)) problem = `${v.provider} account ${v.providerId} is already linked`;
    }
    if (problem) {
      refuse(r.n, problem);
      if (options.onError === 'stop') {
        result.stopped = true;
        break;
      }
      continue;
    }
    try {
      // confirmed: the operator vouches for imported links (docs/operations.md, "Bulk import")
      await repo.write([repo.externalAuths.linkStep(newId(), c.id, String(v!.record), String(v!.provider), String(v!.providerId), nowDate(), true)]);
      result.imported++;
    } catch (err) {
      refuse(r.n, describe(err).message);
      if (options.onError === 'stop') {
        result.stopped = true;
        break;
      }
    }
  }
  return result;
}

/** The size of a file in bytes (for the progress ETA). */
export function fileSize(file: string): number {
  return statSync(file).size;
}
