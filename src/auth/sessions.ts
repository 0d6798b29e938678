/**
 * Session stores (docs/auth.md, "Sessions, verification, password reset, rate limits"; docs/api.md,
 * "Auth"; default store `epoch`).
 *
 * - `epoch`: a token carries the record's `token_epoch` (claim `ep`); bumping it ends every session.
 * - `table`: additionally one `_sessions` row per session; a token carries its row id (claim
 *   `sid`) and is valid only while the row exists. Rows are checked with a point read on every
 *   authenticated request; `last_seen` is refreshed at most once a minute per session, by a
 *   fire-and-forget write job that never delays the response.
 *
 * A session that ends (revoke, logout everywhere, a password change's "every other session") is
 * announced on the change feed (SESSIONS_FEED_ID, src/store/change-feed.ts) in the job that ends
 * it, so the announcement reaches this process when the job commits and, on PostgreSQL, every
 * other instance in the same transaction (the cluster feed). The ended listeners
 * (`subscribeEnded`: realtime's re-check of the clients signed in as the record) run from that
 * feed, on every instance; nothing about a
 * session is cached here: `check` reads the row on every request, and the token epoch comes with
 * the auth record, whose cached copies the feed drops like any record's.
 */
import type { SessionRepository } from '../context/auth-repositories.js';
import type { Collection } from '../model/schema.js';
import type { WriteStep } from '../store/write-job.js';
import { SESSIONS_FEED_ID, type ChangeBatch } from '../store/change-feed.js';
import { bindValue } from '../store/bind.js';
import { ApiError } from '../errors/api-error.js';
import { newId } from '../records/ids.js';
import { nowDate } from '../collections/fields/index.js';
import { TOKEN_TTL_S } from './tokens.js';
import { boundedCache } from '../cache/bounded.js';

/** A session row as the API returns it. */
export interface SessionView {
  id: string;
  created: string;
  last_seen: string;
  user_agent: string;
  ip: string;
  is_current: boolean;
}

const TOUCH_EVERY_MS = 60_000;
const MAX_UA = 512;

/** The session store a collection uses (`options.auth.session.store`, default `epoch`). */
export function sessionMode(c: Collection): 'epoch' | 'table' {
  return c.options.auth?.session?.store === 'table' ? 'table' : 'epoch';
}

const stamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ');

/** Table-store session rows (this module's header) over a SessionRepository. */
export class SessionStore {
  /** sessions whose last_seen write is in flight or was just written (bounded) */
  private touched = boundedCache<string, number>(10_000);
  /**
   * Told after sessions of a record ended (one revoked, all, or all but one), on every instance,
   * from the change feed: realtime re-checks its clients (subscribeEnded).
   */
  private readonly endedListeners = new Set<(collectionId: string, recordId: string) => void>();
  private readonly unsubscribe: () => void;

  /** `onError`: told when a background `last_seen` refresh fails. Subscribes to `repo.changes` until {@link close}. */
  constructor(private repo: SessionRepository, private onError: (err: unknown) => void = () => {}) {
    this.unsubscribe = repo.changes.subscribe((batch) => this.onBatch(batch));
  }

  /** Stops following the change feed. */
  close(): void {
    this.unsubscribe();
  }

  /**
   * Calls `listener(collectionId, recordId)` each time sessions of a record end, on every
   * instance (from the change feed); answers the function that stops it.
   */
  subscribeEnded(listener: (collectionId: string, recordId: string) => void): () => void {
    this.endedListeners.add(listener);
    return () => void this.endedListeners.delete(listener);
  }

  /** The sessions a committed batch ended (this process's jobs and other instances'): the ended listeners for each record. */
  private onBatch(batch: ChangeBatch): void {
    if (this.endedListeners.size === 0) return;
    for (const ch of batch.changes) {
      if (ch.collection !== SESSIONS_FEED_ID) continue;
      let at: unknown;
      try {
        at = JSON.parse(ch.id);
      } catch {
        continue;
      }
      if (Array.isArray(at) && typeof at[0] === 'string' && typeof at[1] === 'string') {
        for (const listener of this.endedListeners) listener(at[0], at[1]);
      }
    }
  }

  /** Inserts a session row for a new login; drops the owner's rows whose tokens all expired. */
  async create(c: Collection, recordId: string, meta: { userAgent: string; ip: string }): Promise<string> {
    const sid = newId();
    const now = nowDate();
    const cutoff = stamp(Date.now() - TOKEN_TTL_S * 1000);
    await this.write(this.repo.sessions.createSteps(c.id, recordId, cutoff, { id: sid, created: now, user_agent: meta.userAgent.slice(0, MAX_UA), ip: meta.ip.slice(0, 128) }));
    return sid;
  }

  /**
   * True when session `sid` exists and belongs to the record (one point read). Schedules a
   * `last_seen` refresh when the stored one is over a minute old.
   */
  async check(c: Collection, recordId: string, sid: string): Promise<boolean> {
    return this.seen(sid, await this.repo.sessions.lastSeen(c.id, recordId, sid));
  }

  /** Whether a session was found (`lastSeen` defined); schedules a refresh of a stale `last_seen`. */
  private seen(sid: string, lastSeen: string | undefined): boolean {
    if (lastSeen === undefined) return false;
    const at = Date.parse(lastSeen.replace(' ', 'T'));
    if (!(Date.now() - at < TOUCH_EVERY_MS)) this.touch(sid);
    return true;
  }

  /** Refreshes last_seen now (refresh endpoint) or in the background (any request). */
  touch(sid: string): void {
    const t = Date.now();
    const last = this.touched.get(sid);
    if (last !== undefined && t - last < TOUCH_EVERY_MS) return;
    this.touched.set(sid, t);
    this.write([this.repo.sessions.touchStep(sid, nowDate())]).catch(this.onError);
  }

  /** The owner's live sessions, newest first; `is_current` marks `currentSid`. */
  async list(c: Collection, recordId: string, currentSid: string | undefined): Promise<SessionView[]> {
    const cutoff = stamp(Date.now() - TOKEN_TTL_S * 1000);
    return (await this.repo.sessions.list(c.id, recordId, cutoff)).map((r) => ({ ...r, is_current: r.id === currentSid }));
  }

  /** Ends one of the owner's sessions; 404 when unknown or owned by someone else. */
  async revoke(c: Collection, recordId: string, sid: string): Promise<void> {
    await this.write(ended([
      this.repo.sessions.revokeStep(c.id, recordId, sid, { status: 404, code: 'not_found', message: 'The requested resource was not found.' }),
    ], c.id, recordId));
  }

  /** Logout everywhere: bumps the record's token epoch and wipes its session rows, in one job. */
  async endAll(c: Collection, recordId: string): Promise<void> {
    await this.write(ended([
      this.repo.auth.bumpEpochStep(c, recordId),
      ...this.wipeSteps(c, recordId, null),
    ], c.id, recordId)); // the epoch changed: the change feed drops cached copies of the record
  }

  /** Deletes the record's session rows except `keepSid` (after a password change). */
  async endOthers(c: Collection, recordId: string, keepSid: string | null): Promise<void> {
    await this.write(ended(this.wipeSteps(c, recordId, keepSid), c.id, recordId));
  }

  /** Steps deleting a record's session rows (all, or all but `keepSid`), for use inside another job. */
  wipeSteps(c: Collection, recordId: string, keepSid: string | null): WriteStep[] {
    return this.repo.sessions.wipeSteps(c.id, recordId, keepSid);
  }

  private write(steps: WriteStep[]) {
    for (const s of steps) s.params = s.params.map(bindValue);
    return this.repo.write(steps);
  }
}

/**
 * `steps` with the announcement that the record's sessions ended (SESSIONS_FEED_ID) on the last
 * step: reported only when the job commits (a revoke of an unknown session fails and announces
 * nothing).
 */
function ended(steps: WriteStep[], collectionId: string, recordId: string): WriteStep[] {
  const last = steps[steps.length - 1];
  steps[steps.length - 1] = { ...last, creates: { collection: SESSIONS_FEED_ID, id: JSON.stringify([collectionId, recordId]) } };
  return steps;
}

/** 404 unless the collection uses the table store (per-device session routes). */
export function requireTableStore(c: Collection): void {
  if (sessionMode(c) !== 'table') throw ApiError.notFound('Per-device sessions need options.auth.session.store = "table".');
}
