/**
 * Cluster-wide single runs (docs/deployment.md): the TTL collector (src/records/ttl-gc.ts) and each
 * cron job must run on one instance at a time when several `svc serve` processes share one
 * PostgreSQL.
 *
 * Mechanism: PostgreSQL session-level advisory locks (`pg_try_advisory_lock(bigint)`) taken on ONE
 * dedicated connection per ClusterLock (not the pool: a pooled connection would carry the lock
 * back into the pool, and not the writer's: its connection is renewed between groups). A try-lock
 * never waits: an instance that does not get the lock skips this run (the holder is running it).
 * The lock is released with `pg_advisory_unlock` when the work ends, and by PostgreSQL itself when
 * the session ends: a crashed or partitioned instance cannot keep a job from running for longer
 * than it takes the server to notice the session is gone (immediately for a closed socket, TCP
 * keepalive otherwise).
 *
 * Losing the lock. When the lock connection fails (its 'error' or 'end', or a heartbeat query that
 * fails or takes longer than `heartbeatTimeoutMs`), every lease held on it is lost: its
 * `signal` aborts (reason: ClusterLockLostError) and `lost` is set, so the work stops at its next
 * check (pass the signal to whatever accepts one). The heartbeat (`SELECT 1` every
 * `heartbeatMs` while a lease is held) bounds how long a holder whose session the server already
 * ended (another instance may be running the job) goes on believing it holds the lock. It is a
 * bound, not a fence: work under the lock should be idempotent (the TTL collector's deletes are).
 * The next acquire connects again.
 *
 * Names and keys. A name maps to a key of the single-bigint advisory key space: the first 8 bytes
 * of SHA-256(`svc:lock:` + name), as a signed 64-bit integer: the same on every instance, Node
 * version and platform. Two different names collide with probability 2^-64 per pair; a collision
 * only makes the two names exclude each other (one may skip a run while the other runs), never
 * lets one name run twice at once. Other users of the bigint key space in the same database
 * (writer.ts takes `hashtext('svc:change-triggers')`, an int4 widened to bigint, as a
 * transaction lock) collide with the same negligible odds.
 *
 * Session-level advisory locks are re-entrant within a session, so two acquires of one name on
 * one ClusterLock would both succeed in PostgreSQL: the ClusterLock refuses the second locally.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';

/** Why a lease's signal aborted: its connection (and so the lock) was lost. */
export class ClusterLockLostError extends Error {
  readonly lockName: string;
  constructor(name: string, cause?: unknown) {
    super(`the cluster lock "${name}" was lost (its connection failed): another instance may now hold it`, cause === undefined ? undefined : { cause });
    this.name = 'ClusterLockLostError';
    this.lockName = name;
  }
}

/** The advisory lock key of a name: see the file comment. */
export function lockKey(name: string): bigint {
  const h = createHash('sha256').update(`svc:lock:${name}`, 'utf8').digest();
  return h.readBigInt64BE(0);
}

/** A lock held. */
export interface Lease {
  readonly name: string;
  readonly key: bigint;
  /** aborts when the lock is lost (reason: ClusterLockLostError) */
  readonly signal: AbortSignal;
  /** true once the lock is lost */
  readonly lost: boolean;
  /** Releases the lock (no-op once lost or released). */
  release(): Promise<void>;
}

export interface ClusterLockOptions {
  /** How often a held lock's connection is checked, ms (default 5,000). */
  heartbeatMs?: number;
  /** Longest a heartbeat may take before the connection counts as lost, ms (default 5,000). */
  heartbeatTimeoutMs?: number;
  /** TCP keepalive idle time, ms (default 10,000). */
  keepAliveMs?: number;
  /** `application_name` (default `svc-cluster-lock`). */
  applicationName?: string;
}

/** The outcome of {@link ClusterLock.runOnce}. */
export type RunOutcome<T> = { ran: true; value: T } | { ran: false };

interface Held {
  name: string;
  key: bigint;
  controller: AbortController;
  lost: boolean;
  released: boolean;
}

/** Cluster-wide single runs of one instance, on one dedicated connection: see the file comment. */
export class ClusterLock {
  private readonly config: pg.ClientConfig;
  private readonly heartbeatMs: number;
  private readonly heartbeatTimeoutMs: number;
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  /** leases held on the current connection, by name */
  private held = new Map<string, Held>();
  /** names with an acquire in progress (so a second local acquire does not re-enter) */
  private acquiring = new Set<string>();
  private heartbeat: NodeJS.Timeout | null = null;
  private beating = false;
  private closed = false;

  constructor(connection: string | pg.ClientConfig, options: ClusterLockOptions = {}) {
    const base: pg.ClientConfig = typeof connection === 'string' ? { connectionString: connection } : { ...connection };
    this.config = {
      application_name: options.applicationName ?? 'svc-cluster-lock',
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: options.keepAliveMs ?? 10_000,
      ...base,
    };
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 5000;
  }

  /** The server process id of the lock connection, or null when not connected. */
  get backendPid(): number | null {
    return this.client ? ((this.client as unknown as { processID: number | null }).processID ?? null) : null;
  }

  /**
   * Takes the lock `name` when no session of the cluster holds it: the lease, or null when
   * another instance (or this one) holds it. Rejects when PostgreSQL cannot be reached.
   */
  async tryAcquire(name: string): Promise<Lease | null> {
    if (this.closed) throw new Error('the cluster lock is closed');
    if (this.held.has(name) || this.acquiring.has(name)) return null;
    this.acquiring.add(name);
    try {
      const client = await this.connection();
      const key = lockKey(name);
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key.toString()]);
      if (!r.rows[0]?.ok) return null;
      if (this.client !== client) return null; // lost meanwhile: so is the lock
      const h: Held = { name, key, controller: new AbortController(), lost: false, released: false };
      this.held.set(name, h);
      this.startHeartbeat();
      const lease: Lease = {
        name,
        key,
        signal: h.controller.signal,
        get lost() {
          return h.lost;
        },
        release: () => this.release(h, client),
      };
      return lease;
    } finally {
      this.acquiring.delete(name);
    }
  }

  /**
   * Runs `fn` if this instance gets the lock `name`, and releases it after: `{ ran: false }`
   * when another holder has it. `fn` gets the lease's signal: it aborts when the lock is lost, and
   * `fn` should stop then (its outcome is still returned or thrown as is).
   */
  async runOnce<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T): Promise<RunOutcome<T>> {
    const lease = await this.tryAcquire(name);
    if (!lease) return { ran: false };
    try {
      return { ran: true, value: await fn(lease.signal) };
    } finally {
      await lease.release();
    }
  }

  /** Releases every lock (ending the session) and closes the connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    const c = this.client;
    this.client = null;
    for (const h of this.held.values()) h.released = true;
    this.held.clear();
    if (c) await c.end().catch(() => undefined);
  }

  private async release(h: Held, client: pg.Client): Promise<void> {
    if (h.released || h.lost) return;
    h.released = true;
    if (this.held.get(h.name) === h) this.held.delete(h.name);
    if (this.held.size === 0) this.stopHeartbeat();
    if (this.client !== client) return;
    try {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [h.key.toString()]);
    } catch (err) {
      // the connection failed: the session, and the lock with it, is gone
      this.lose(client, err);
    }
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    if (this.connecting) return this.connecting;
    this.connecting = (async () => {
      const client = new pg.Client(this.config);
      client.on('error', (err) => this.lose(client, err));
      client.on('end', () => this.lose(client, new Error('the cluster lock connection ended')));
      try {
        await client.connect();
      } catch (err) {
        client.end().catch(() => undefined);
        throw err;
      }
      if (this.closed) {
        client.end().catch(() => undefined);
        throw new Error('the cluster lock is closed');
      }
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /** The connection `client` is gone: every lease on it is lost. */
  private lose(client: pg.Client, cause: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    this.stopHeartbeat();
    try {
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    } catch { /* already gone */ }
    client.end().catch(() => undefined);
    const held = [...this.held.values()];
    this.held.clear();
    for (const h of held) {
      if (h.released) continue;
      h.lost = true;
      h.controller.abort(new ClusterLockLostError(h.name, cause));
    }
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => void this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async beat(): Promise<void> {
    const client = this.client;
    if (!client || this.beating || this.held.size === 0) return;
    this.beating = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer to the heartbeat within ${this.heartbeatTimeoutMs} ms`)), this.heartbeatTimeoutMs);
        }),
      ]);
    } catch (err) {
      this.lose(client, err);
    } finally {
      clearTimeout(timer);
      this.beating = false;
    }
  }
}
