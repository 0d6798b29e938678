/**
 * The resumable upload store (docs/files.md, "Resumable uploads": the upload session state machine,
 * the endpoints' six rules, their errors and limits): sessions in RAM, bound to a principal and a
 * target (collection by stable id, record, file field by id), each holding its whole declared
 * payload in one buffer reserved at creation.
 *
 * - Quotas: `max_sessions` live sessions, `max_sessions_per_principal` per principal, the
 *   address share (budgets.ts addressShare) per client address (terminal sessions keep their slot
 *   until their original expiry, as docs/files.md says; an aborted one gives it back at once),
 *   `max_total_bytes` of retained payloads (a payload is released when its session completes,
 *   fails, is aborted or expires).
 * - Chunks arrive through a body sink: appended bytes are copied once, from the HTTP engine's
 *   buffer straight into the payload; re-sent acknowledged bytes are compared in place.
 * - Expiry is swept lazily on every operation; a commit admitted before expiry may finish after.
 * - With persistence (`UploadPersistence`, the SQLite mode of durable.ts), every acknowledged
 *   change is committed to the database before it is answered; a persistence failure whose
 *   outcome is uncertain stops every upload operation with 503 until the process restarts.
 *
 * The record side of a commit (rules, file checks, hooks, the write job) is the caller's
 * `CommitRun`: the store only runs the state machine around it.
 */
import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors/api-error.js';
import type { BodySink, Reply } from '../http/types.js';
import type { WriteStep } from '../store/write-job.js';
import { addressShare, type UploadBudgets } from './budgets.js';

export type UploadState = 'receiving' | 'committing' | 'completed' | 'failed';
export type UploadDurability = 'process-local' | 'sqlite-restart';

/** Most bytes of identifying metadata one session may own (ids, field, filename, mimetype). */
export const MAX_SESSION_METADATA_BYTES = 2295;

/** The target and file of a new session, resolved and checked by the route. */
export interface NewUpload {
  /** the principal: its auth collection's stable id and its record id */
  principalCollection: string;
  principalId: string;
  /** the target: collection stable id, record id, file field id */
  collectionId: string;
  recordId: string;
  fieldId: string;
  filename: string;
  mimetype: string;
  /** declared bytes */
  length: number;
  /**
   * the client address that created the session (the trusted client IP), counted against
   * addressShare; '' when unknown (sessions restored by the persistence mode), counted against none
   */
  address: string;
}

/** One upload session. Times in epoch milliseconds. */
export interface UploadSession extends NewUpload {
  /** 32 characters from 24 random bytes (base64url) */
  id: string;
  /** bytes acknowledged */
  offset: number;
  createdAt: number;
  expiresAt: number;
  state: UploadState;
  /** the reserved payload (receiving and committing only) */
  payload: Buffer | null;
  /** a chunk is being received */
  busy: boolean;
}

/** The principal of a request: auth collection stable id and record id. */
export interface PrincipalKey {
  collection: string;
  id: string;
}

/**
 * Runs a commit's record mutation for `session` (its payload is the fully buffered file),
 * appending `extraSteps` (the completion receipt) to the mutation's write job.
 */
export type CommitRun = (session: UploadSession, extraSteps: WriteStep[]) => Promise<void>;

/** Where the persistence mode keeps sessions (durable.ts). Each method resolves once committed. */
export interface UploadPersistence {
  insert(s: UploadSession): Promise<void>;
  /** the payload bytes [from, to) of `s` and the offset `to` */
  append(s: UploadSession, from: number, to: number): Promise<void>;
  setState(s: UploadSession, from: UploadState, to: UploadState, dropPayload: boolean): Promise<void>;
  /** the steps committing the completed receipt with the record mutation */
  receiptSteps(s: UploadSession): WriteStep[];
  remove(ids: string[]): Promise<void>;
  close(): void;
}

const BROKEN = () => new ApiError(503, 'internal', 'The upload store stopped after a storage failure whose outcome is uncertain; uploads are unavailable until the server restarts.');
const CONFLICT = (message: string) => new ApiError(409, 'conflict', message);

export class UploadStore {
  private sessions = new Map<string, UploadSession>();
  /** payload bytes retained now */
  private reserved = 0;
  private brokenReason: string | null = null;

  /**
   * `persistence`: the durable mode (null: RAM only); `restored`: its sessions after a restart.
   * `now`: the clock (epoch ms).
   */
  constructor(
    readonly budgets: UploadBudgets,
    private persistence: UploadPersistence | null = null,
    restored: UploadSession[] = [],
    private onBroken: (reason: string) => void = () => {},
    private now: () => number = Date.now,
  ) {
    for (const s of restored) {
      this.sessions.set(s.id, s);
      if (s.payload) this.reserved += s.length;
    }
  }

  get durability(): UploadDurability {
    return this.persistence ? 'sqlite-restart' : 'process-local';
  }

  /** Live sessions and retained payload bytes (for tests and metrics). */
  stats(): { sessions: number; reservedBytes: number } {
    return { sessions: this.sessions.size, reservedBytes: this.reserved };
  }

  /** The session's public fields (create and GET). */
  view(s: UploadSession): { id: string; offset: number; length: number; expiresAt: string; state: UploadState; durability: UploadDurability } {
    return { id: s.id, offset: s.offset, length: s.length, expiresAt: new Date(s.expiresAt).toISOString().replace('T', ' '), state: s.state, durability: this.durability };
  }

  /** Throws 503 once an uncertain persistence operation stopped the store. */
  checkUsable(): void {
    if (this.brokenReason !== null) throw BROKEN();
  }

  /**
   * Opens a session: the quotas, then the payload reservation (and, durable, its rows).
   * @throws ApiError 429 `too_many_requests` past a session quota (per principal, per client
   *   address, in all) or the payload quota; 503 (durable) when the session cannot be stored
   */
  async create(u: NewUpload): Promise<UploadSession> {
    this.checkUsable();
    await this.sweep();
    const b = this.budgets;
    let mine = 0;
    let fromAddress = 0;
    for (const s of this.sessions.values()) {
      if (s.principalCollection === u.principalCollection && s.principalId === u.principalId) mine++;
      if (u.address && s.address === u.address) fromAddress++;
    }
    if (mine >= b.max_sessions_per_principal) throw new ApiError(429, 'too_many_requests', `You have ${mine} upload sessions (the limit is ${b.max_sessions_per_principal}); finish, abort or wait for one to expire.`);
    const share = addressShare(b);
    if (fromAddress >= share) throw new ApiError(429, 'too_many_requests', `Your address holds ${fromAddress} upload sessions (the limit is ${share} per address); finish, abort or wait for one to expire.`);
    if (this.sessions.size >= b.max_sessions) throw new ApiError(429, 'too_many_requests', `The server holds its limit of ${b.max_sessions} upload sessions; retry later.`);
    if (this.reserved + u.length > b.max_total_bytes) throw new ApiError(429, 'too_many_requests', 'The server cannot reserve memory for this upload now; retry later.');
    const createdAt = this.now();
    const s: UploadSession = {
      ...u,
      id: randomBytes(24).toString('base64url'),
      offset: 0,
      createdAt,
      expiresAt: createdAt + b.ttl_seconds * 1000,
      state: 'receiving',
      payload: Buffer.allocUnsafeSlow(u.length),
      busy: false,
    };
    this.sessions.set(s.id, s);
    this.reserved += s.length;
    if (this.persistence) {
      try {
        await this.persistence.insert(s);
      } catch (err) {
        this.drop(s);
        throw this.broken(`storing a new session failed: ${describe(err)}`);
      }
    }
    return s;
  }

  /**
   * The caller's live session.
   * @throws ApiError 404 for an unknown, expired or aborted id, or another principal's session
   */
  async get(id: string, who: PrincipalKey): Promise<UploadSession> {
    this.checkUsable();
    await this.sweep();
    const s = this.sessions.get(id);
    if (!s || s.principalCollection !== who.collection || s.principalId !== who.id) throw ApiError.notFound();
    return s;
  }

  /**
   * The sink of one chunk (PATCH with `Upload-Offset: at`; `declared`: its Content-Length, -1 when
   * unknown). The offset rules are checked before any byte arrives when the length is declared,
   * else as the bytes arrive.
   * @throws ApiError 400 empty or oversized chunk; 404 as `get`; 409 offset conflicts (hole,
   *   partial overlap, past the end, differing bytes) or a session not receiving or busy
   */
  async chunk(id: string, who: PrincipalKey, at: number, declared: number): Promise<BodySink> {
    const s = await this.get(id, who);
    const max = this.budgets.max_chunk_bytes;
    if (declared === 0) throw ApiError.badRequest('The chunk is empty.');
    if (declared > max) throw ApiError.badRequest(`The chunk has ${declared} bytes; the limit is ${max}.`);
    if (s.state !== 'receiving') throw CONFLICT(`The upload is ${s.state}; it takes no more chunks.`);
    if (s.busy) throw CONFLICT('Another chunk of this upload is being received.');
    if (declared > 0 && at + declared > s.length) throw CONFLICT(`The chunk ends at ${at + declared}, past the declared length ${s.length}.`);
    if (at > s.offset) throw CONFLICT(`The chunk starts at ${at}, past the acknowledged offset ${s.offset} (a hole).`);
    if (at < s.offset && declared > 0 && at + declared > s.offset) throw CONFLICT(`The chunk overlaps the acknowledged offset ${s.offset} partly.`);
    const append = at === s.offset;
    const payload = s.payload!;
    s.busy = true;
    let pos = at;
    let count = 0;
    let problem: 'oversized' | 'past-end' | 'differs' | 'overlap' | null = null;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      s.busy = false;
    };
    return {
      write: (chunk) => {
        count += chunk.length;
        if (problem) return;
        if (count > max) problem = 'oversized';
        else if (pos + chunk.length > s.length) problem = 'past-end';
        else if (append) payload.set(chunk, pos);
        else if (pos + chunk.length > s.offset) problem = 'overlap';
        else if (Buffer.compare(payload.subarray(pos, pos + chunk.length), chunk) !== 0) problem = 'differs';
        pos += chunk.length;
      },
      abort: release,
      end: async (): Promise<Reply> => {
        try {
          if (this.sessions.get(id) !== s) throw ApiError.notFound();
          if (count === 0) throw ApiError.badRequest('The chunk is empty.');
          if (problem === 'oversized') throw ApiError.badRequest(`The chunk has more than ${max} bytes.`);
          if (problem === 'past-end') throw CONFLICT(`The chunk goes past the declared length ${s.length}.`);
          if (problem === 'overlap') throw CONFLICT(`The chunk overlaps the acknowledged offset ${s.offset} partly.`);
          if (problem === 'differs') throw CONFLICT('The chunk differs from bytes already acknowledged at its offset.');
          if (s.state !== 'receiving') throw CONFLICT(`The upload is ${s.state}; it takes no more chunks.`);
          if (append) {
            if (this.persistence) {
              try {
                await this.persistence.append(s, at, pos);
              } catch (err) {
                throw this.broken(`storing a chunk failed: ${describe(err)}`);
              }
            }
            s.offset = pos;
          }
          return { status: 204, body: '', headers: [['Upload-Offset', String(s.offset)], ['Tus-Resumable', '1.0.0'], ['Access-Control-Expose-Headers', 'Upload-Offset, Tus-Resumable']] };
        } finally {
          release();
        }
      },
    };
  }

  /**
   * Commits a session through `run` (the record update). A completed session of the same
   * principal is acknowledged again without touching the record.
   * @throws ApiError 404 as `get`; 409 when not every byte is acknowledged, a chunk is in flight,
   *   or the session is committing or failed; whatever `run` throws (the session is then failed)
   */
  async commit(id: string, who: PrincipalKey, run: CommitRun): Promise<void> {
    const s = await this.get(id, who);
    if (s.state === 'completed') return;
    if (s.state !== 'receiving') throw CONFLICT(`The upload is ${s.state}; it cannot be committed.`);
    if (s.busy) throw CONFLICT('A chunk of this upload is being received.');
    if (s.offset !== s.length) throw CONFLICT(`Only ${s.offset} of ${s.length} bytes are acknowledged.`);
    s.state = 'committing';
    if (this.persistence) {
      try {
        await this.persistence.setState(s, 'receiving', 'committing', false);
      } catch (err) {
        this.fail(s);
        throw this.broken(`marking a session committing failed: ${describe(err)}`);
      }
    }
    try {
      await run(s, this.persistence ? this.persistence.receiptSteps(s) : []);
    } catch (err) {
      this.fail(s);
      if (this.persistence) {
        try {
          await this.persistence.setState(s, 'committing', 'failed', true);
        } catch (e) {
          throw this.broken(`marking a session failed: ${describe(e)}`);
        }
      }
      throw err;
    }
    s.state = 'completed';
    this.release(s);
  }

  /**
   * Aborts a receiving session: removed, its payload released; later operations get 404.
   * @throws ApiError 404 as `get`; 409 for a committing, completed or failed session
   */
  async abort(id: string, who: PrincipalKey): Promise<void> {
    const s = await this.get(id, who);
    if (s.state !== 'receiving') throw CONFLICT(`The upload is ${s.state}; only a receiving upload can be aborted.`);
    this.drop(s);
    if (this.persistence) {
      try {
        await this.persistence.remove([s.id]);
      } catch (err) {
        throw this.broken(`removing an aborted session failed: ${describe(err)}`);
      }
    }
  }

  /** Drops expired sessions (a committing one finishes first). */
  async sweep(): Promise<void> {
    const now = this.now();
    const gone: string[] = [];
    for (const s of this.sessions.values()) {
      if (s.expiresAt > now || s.state === 'committing') continue;
      this.drop(s);
      gone.push(s.id);
    }
    if (gone.length && this.persistence) {
      try {
        await this.persistence.remove(gone);
      } catch (err) {
        throw this.broken(`removing expired sessions failed: ${describe(err)}`);
      }
    }
  }

  /** Releases every payload (shutdown) and the persistence mode's owner file. */
  close(): void {
    for (const s of this.sessions.values()) s.payload = null;
    this.sessions.clear();
    this.reserved = 0;
    this.persistence?.close();
  }

  private fail(s: UploadSession): void {
    s.state = 'failed';
    this.release(s);
  }

  private release(s: UploadSession): void {
    if (s.payload) {
      s.payload = null;
      this.reserved -= s.length;
    }
  }

  private drop(s: UploadSession): void {
    this.release(s);
    this.sessions.delete(s.id);
  }

  private broken(reason: string): ApiError {
    if (this.brokenReason === null) {
      this.brokenReason = reason;
      this.onBroken(reason);
    }
    return BROKEN();
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
