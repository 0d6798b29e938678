/**
 * Two things of PostgreSQL's reading, shared by the main thread and this file's worker:
 *
 * - the type parsers every PostgreSQL read connection uses (`readTypes`), PgReader's pool
 *   (src/store/pg/reader.ts) among them, and what tells a lost connection from a failed statement
 *   (`isConnectionFailure`);
 * - the worker of the app migrations' synchronous connection (src/store/pg/migrations-sql.ts,
 *   MigrationBridge). It owns one pg.Client and answers the main thread, which blocks until the
 *   answer is there: the main thread posts a request on the MessagePort it shares with this
 *   worker, then waits with `Atomics.wait` on `flag[0]` (0: no answer yet); this worker runs the
 *   request, posts the answer on the port, then stores 1 in `flag[0]` and wakes the main thread
 *   (`Atomics.notify`), which takes the answer with `receiveMessageOnPort`. Such a worker runs
 *   only while migrations are applied or listed (before the server listens, or under `svc
 *   migrate`): no serving path ever blocks on it.
 *
 * Requests are handled one at a time, in order, each answered. A statement is never retried on a
 * new connection: a migration's `BEGIN` goes on on the same connection, or fails. This module
 * starts serving only when it runs as the migration bridge's worker.
 */
import { isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';

/** What the main thread asks: one statement (or a script of several, without parameters), the connection, the end. */
export type BridgeRequest =
  | { op: 'query'; sql: string; params: unknown[] }
  | { op: 'connect' }
  | { op: 'close' };

/** A PostgreSQL error (or a connection error) as it crosses the port. */
export interface BridgeError {
  message: string;
  /** SQLSTATE (e.g. 42P01) for a database error; the Node code (ECONNREFUSED) for a socket error */
  code?: string;
  severity?: string;
  detail?: string;
  hint?: string;
  constraint?: string;
  table?: string;
  column?: string;
  /** true when it came from the server (a pg DatabaseError) */
  database: boolean;
}

/** The answer to every request: rows as arrays, `blobs` the indexes of bytea columns, `changes` the rows changed. */
export type BridgeReply =
  | { ok: true; rows: unknown[][]; blobs: number[] | null; pid: number | null; changes?: number; fields?: string[] }
  | { ok: false; error: BridgeError; pid: number | null };

/** What the worker is started with (workerData). */
export interface BridgeInit {
  svcPgBridge: true;
  port: MessagePort;
  /** Int32Array over a SharedArrayBuffer: [0] is 1 once an answer has been posted */
  flag: Int32Array;
  /** pg client configuration (plain data: it crossed a thread) */
  config: pg.ClientConfig;
}

const BOOL_OID = 16;
const BYTEA_OID = 17;
const INT8_OID = 20;
const INT2_OID = 21;
const INT4_OID = 23;
const OID_OID = 26;
const FLOAT4_OID = 700;
const FLOAT8_OID = 701;
const NUMERIC_OID = 1700;

const asText = (v: string): string => v;
const asBigInt = (v: string): bigint => BigInt(v);
const asNumber = (v: string): number => Number(v);
const asBoolInt = (v: string): bigint => (v === 't' ? 1n : 0n);
const byteaParser = pg.types.getTypeParser(BYTEA_OID, 'text') as (v: string) => Buffer;

/**
 * Type parsers for PgReader's connections, in the shapes the SQLite reader hands the domain:
 * integers (int2, int4, int8, oid) as BigInt (libsql with safeIntegers), booleans as 1n / 0n
 * (SQLite has no boolean), float4/float8 and numeric as JS numbers (numeric past 2^53 loses
 * precision, as a REAL would), bytea as Buffer, and everything else (text, json and jsonb, dates
 * and times, arrays, uuid …) as the server's text. Given per client (`types`), never set globally.
 */
export function readTypes(): pg.CustomTypesConfig {
  const getTypeParser = (oid: number, format?: 'text' | 'binary'): ((v: string) => unknown) => {
    if (format === 'binary') return pg.types.getTypeParser(oid, 'binary') as (v: string) => unknown;
    switch (oid) {
      case INT8_OID:
      case INT2_OID:
      case INT4_OID:
      case OID_OID:
        return asBigInt;
      case BOOL_OID:
        return asBoolInt;
      case FLOAT4_OID:
      case FLOAT8_OID:
      case NUMERIC_OID:
        return asNumber;
      case BYTEA_OID:
        return byteaParser;
      default:
        return asText;
    }
  };
  return { getTypeParser: getTypeParser as pg.CustomTypesConfig['getTypeParser'] };
}

/** Indexes of the bytea columns of a result, or null (they cross the port as Uint8Array). */
export function blobColumns(fields: readonly { dataTypeID: number }[]): number[] | null {
  let out: number[] | null = null;
  for (let i = 0; i < fields.length; i++) if (fields[i].dataTypeID === BYTEA_OID) (out ??= []).push(i);
  return out;
}

/** A failure of the connection rather than of a statement: the session is gone or unusable. */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof pg.DatabaseError)) return true;
  if (err.severity === 'FATAL' || err.severity === 'PANIC') return true;
  const code = err.code ?? '';
  return code.startsWith('08') || code.startsWith('57P');
}

/** An error in the form that crosses the port. */
export function toBridgeError(err: unknown): BridgeError {
  const e = err as pg.DatabaseError & { code?: string };
  const out: BridgeError = { message: String(e?.message ?? err), database: err instanceof pg.DatabaseError };
  for (const k of ['code', 'severity', 'detail', 'hint', 'constraint', 'table', 'column'] as const) {
    const v = e?.[k];
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}

/** The worker's half: one connection, one request at a time. */
class Bridge {
  private client: pg.Client | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly init: BridgeInit) {
    init.port.on('message', (msg: BridgeRequest) => {
      this.chain = this.chain.then(() => this.handle(msg)).catch((err: unknown) => {
        // not expected (handle answers every request itself): still never leave the main thread waiting
        this.reply({ ok: false, error: toBridgeError(err), pid: null });
      });
    });
  }

  private reply(r: BridgeReply): void {
    this.init.port.postMessage(r);
    Atomics.store(this.init.flag, 0, 1);
    Atomics.notify(this.init.flag, 0);
  }

  private get pid(): number | null {
    return this.client ? ((this.client as unknown as { processID: number | null }).processID ?? null) : null;
  }

  private async handle(msg: BridgeRequest): Promise<void> {
    switch (msg.op) {
      case 'connect':
        try {
          const client = new pg.Client({ ...this.init.config, types: readTypes() });
          client.on('error', () => undefined); // the next statement fails with it
          await client.connect();
          this.client = client;
          return this.reply({ ok: true, rows: [], blobs: null, pid: this.pid });
        } catch (err) {
          return this.reply({ ok: false, error: toBridgeError(err), pid: null });
        }
      case 'query':
        return this.reply(await this.query(msg.sql, msg.params));
      case 'close': {
        const c = this.client;
        this.client = null;
        if (c) await c.end().catch(() => undefined);
        this.reply({ ok: true, rows: [], blobs: null, pid: null });
        this.init.port.close();
        return;
      }
    }
  }

  private async query(sql: string, params: unknown[]): Promise<BridgeReply> {
    const client = this.client;
    if (!client) return { ok: false, error: { message: 'the migration connection is not open', database: false }, pid: null };
    // Uint8Array parameters arrive as plain typed arrays (a Buffer loses its class crossing threads)
    const values = params.map((v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v));
    try {
      const got = (await client.query({ text: sql, values, rowMode: 'array' })) as unknown as pg.QueryArrayResult | pg.QueryArrayResult[];
      // a script of several statements (no parameters) answers one result each: the last one counts
      const r = Array.isArray(got) ? got[got.length - 1] : got;
      return { ok: true, rows: r?.rows ?? [], blobs: r ? blobColumns(r.fields) : null, pid: this.pid, changes: r?.rowCount ?? 0, fields: r?.fields.map((f) => f.name) ?? [] };
    } catch (err) {
      return { ok: false, error: toBridgeError(err), pid: this.pid };
    }
  }
}

if (!isMainThread && (workerData as BridgeInit | null)?.svcPgBridge === true) {
  const init = workerData as BridgeInit;
  new Bridge(init);
  process.on('uncaughtException', (err) => {
    // never leave the main thread waiting on an answer that will not come
    try {
      init.port.postMessage({ ok: false, error: toBridgeError(err), pid: null } satisfies BridgeReply);
    } finally {
      Atomics.store(init.flag, 0, 1);
      Atomics.notify(init.flag, 0);
    }
  });
}
