/**
 * The worker of PgReader's sync bridge (src/store/pg/reader.ts). It owns one pg.Client and answers
 * the main thread, which blocks until the answer is there:
 *
 * - the main thread posts a request on the MessagePort it shares with this worker, then waits with
 *   `Atomics.wait` on `flag[0]` (0: no answer yet);
 * - this worker runs the request, posts the answer on the port, then stores 1 in `flag[0]` and
 *   wakes the main thread (`Atomics.notify`), which takes the answer with `receiveMessageOnPort`.
 *
 * Requests are handled one at a time, in order. `query` and `close` are answered; `end` (finish
 * the read snapshot) and `forget` (drop prepared statements) are not: the main thread does not
 * wait for them, and a request posted after them runs after them.
 *
 * Snapshots: a `query` with `snap` runs inside a REPEATABLE READ READ ONLY transaction, begun if
 * none is open (BEGIN and the query are pipelined when the main thread asks for `pipeline` in the
 * client configuration, as PgReader does with snapshots on: one network round trip); `end` commits it. A
 * statement that fails inside it rolls it back (PostgreSQL refuses every later statement of a
 * failed transaction), so the next read starts a new snapshot.
 *
 * Statements with parameters are prepared once per connection (named, at most NAMED_MAX; past
 * that, unnamed). A connection that fails (killed backend, server restart, network) is dropped and
 * the read is tried once more on a new one: reads have no side effects.
 *
 * This module also exports the type parsers both halves of PgReader use (`readTypes`); it starts
 * serving only when it runs as the bridge's worker.
 */
import { isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';

/** Most statements prepared (named) on one bridge connection. */
export const NAMED_MAX = 1000;

/** What the main thread asks. */
export type BridgeRequest =
  | { op: 'query'; sql: string; params: unknown[]; snap: boolean; prepare: boolean; noRetry?: boolean }
  | { op: 'connect' }
  | { op: 'end' }
  | { op: 'forget' }
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

/** The answer to `query`, `connect` or `close`. */
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

/** A prepared statement whose result shape changed under it (DDL in another session). */
const isStalePlan = (err: unknown): boolean =>
  err instanceof pg.DatabaseError && err.code === '0A000' && /cached plan must not change result type/.test(err.message);

const BEGIN_SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

class Bridge {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private lost = false;
  private inTx = false;
  private names = new Map<string, string>();
  private namesMade = 0;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly init: BridgeInit) {
    init.port.on('message', (msg: BridgeRequest) => {
      this.chain = this.chain.then(() => this.handle(msg)).catch((err: unknown) => {
        // not expected (handle answers every request itself): still never leave the main thread waiting
        if (msg.op === 'query' || msg.op === 'connect' || msg.op === 'close') this.reply({ ok: false, error: toBridgeError(err), pid: null });
      });
    });
  }

  private reply(r: BridgeReply): void {
    this.init.port.postMessage(r);
    Atomics.store(this.init.flag, 0, 1);
    Atomics.notify(this.init.flag, 0);
  }

  private get pid(): number | null {
    return this.client && !this.lost ? ((this.client as unknown as { processID: number | null }).processID ?? null) : null;
  }

  private async handle(msg: BridgeRequest): Promise<void> {
    switch (msg.op) {
      case 'query':
        return this.reply(await this.query(msg.sql, msg.params, msg.snap, msg.prepare, !msg.noRetry));
      case 'connect':
        try {
          await this.connection();
          return this.reply({ ok: true, rows: [], blobs: null, pid: this.pid });
        } catch (err) {
          return this.reply({ ok: false, error: toBridgeError(err), pid: null });
        }
      case 'end':
        if (this.inTx && this.client && !this.lost) {
          this.inTx = false;
          await this.client.query('COMMIT').catch(() => this.drop());
        }
        this.inTx = false;
        return;
      case 'forget':
        // pg remembers which names it parsed on a connection: a new connection forgets them all
        this.inTx = false;
        this.drop(true);
        await this.connection().catch(() => undefined);
        return;
      case 'close':
        this.inTx = false;
        if (this.connecting) await this.connecting.catch(() => undefined);
        {
          const c = this.client;
          this.client = null;
          if (c) await c.end().catch(() => undefined);
        }
        this.reply({ ok: true, rows: [], blobs: null, pid: null });
        this.init.port.close();
        return;
    }
  }

  /** The open connection, connecting (again) when there is none or it was lost. */
  private connection(): Promise<pg.Client> {
    if (this.client && !this.lost) return Promise.resolve(this.client);
    if (this.connecting) return this.connecting;
    this.drop();
    const client = new pg.Client({ ...this.init.config, types: readTypes() });
    client.on('error', () => {
      if (this.client === client) this.lost = true;
    });
    client.on('end', () => {
      if (this.client === client) this.lost = true;
    });
    this.connecting = client.connect().then(
      () => {
        this.connecting = null;
        this.client = client;
        this.lost = false;
        this.inTx = false;
        this.names.clear();
        this.namesMade = 0;
        return client;
      },
      (err: unknown) => {
        this.connecting = null;
        client.end().catch(() => undefined);
        throw err;
      },
    );
    return this.connecting;
  }

  /** Forgets the current connection; `graceful` lets it say goodbye, otherwise its socket is cut. */
  private drop(graceful = false): void {
    const c = this.client;
    this.client = null;
    this.lost = false;
    this.inTx = false;
    if (!c) return;
    if (!graceful) {
      try {
        (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      } catch { /* already gone */ }
    }
    c.end().catch(() => undefined);
  }

  private async query(sql: string, params: unknown[], snap: boolean, prepare: boolean, retry = true): Promise<BridgeReply> {
    let client: pg.Client;
    try {
      client = await this.connection();
    } catch (err) {
      return { ok: false, error: toBridgeError(err), pid: null };
    }
    // Uint8Array parameters arrive as plain typed arrays (a Buffer loses its class crossing threads)
    const values = params.map((v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v));
    let name: string | undefined;
    if (prepare && params.length > 0) {
      name = this.names.get(sql);
      if (name === undefined && this.namesMade < NAMED_MAX) {
        name = `svc_r${++this.namesMade}`;
        this.names.set(sql, name);
      }
    }
    const begin = snap && !this.inTx;
    try {
      // pipelined: BEGIN and the read leave in one write; a failed BEGIN fails the read too
      const began = begin ? client.query(BEGIN_SNAPSHOT) : null;
      if (begin) this.inTx = true;
      const read = client.query({ text: sql, values, rowMode: 'array', name });
      const [, got] = (await Promise.all([began, read])) as unknown as [unknown, pg.QueryArrayResult | pg.QueryArrayResult[]];
      // a script of several statements (no parameters) answers one result each: the last one counts
      const r = Array.isArray(got) ? got[got.length - 1] : got;
      return { ok: true, rows: r?.rows ?? [], blobs: r ? blobColumns(r.fields) : null, pid: this.pid, changes: r?.rowCount ?? 0, fields: r?.fields.map((f) => f.name) ?? [] };
    } catch (err) {
      if (isConnectionFailure(err) || this.lost) {
        this.drop();
        if (retry) return this.query(sql, params, snap, prepare, false);
        return { ok: false, error: toBridgeError(err), pid: null };
      }
      if (this.inTx) {
        this.inTx = false;
        await client.query('ROLLBACK').catch(() => this.drop());
      }
      if (retry && isStalePlan(err)) {
        // another session changed a table under a prepared statement: prepare again, once
        this.drop(true);
        return this.query(sql, params, snap, prepare, false);
      }
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
