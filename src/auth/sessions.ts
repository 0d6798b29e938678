/**
 * Session stores (spec 1-core-api.md, "Session (table session store)", "Auth endpoints";
 * 0-conventions.md: default store `epoch`).
 *
 * - `epoch`: a token carries the record's `token_epoch` (claim `ep`); bumping it ends every session.
 * - `table`: additionally one `_sessions` row per session; a token carries its row id (claim
 *   `sid`) and is valid only while the row exists. Rows are checked with a point read on every
 *   authenticated request; `last_seen` is refreshed at most once a minute per session, by a
 *   fire-and-forget write job that never delays the response.
 */
import type { Store } from '../store/store.js';
import type { Collection } from '../collections/types.js';
import type { WriteStep } from '../store/write-job.js';
import { bindValue } from '../store/bind.js';
import { ApiError } from '../errors/api-error.js';
import { newId } from '../records/ids.js';
import { nowDate } from '../collections/fields/index.js';
import { q } from '../store/sqlite/collection-sql.js';
import { TOKEN_TTL_S } from './tokens.js';

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

/** `_sessions` DDL (appended to the bootstrap steps). */
export const SESSIONS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_sessions" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "created" TEXT NOT NULL, "last_seen" TEXT NOT NULL, "user_agent" TEXT NOT NULL DEFAULT '', "ip" TEXT NOT NULL DEFAULT '')`,
  `CREATE INDEX IF NOT EXISTS "_sessions_owner" ON "_sessions" ("collectionId", "recordId", "created")`,
];

const stamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ');

export class SessionStore {
  /** sessions whose last_seen write is in flight or was just written (bounded) */
  private touched = new Map<string, number>();

  constructor(private store: Store, private onError: (err: unknown) => void = () => {}) {}

  /** Inserts a session row for a new login; drops the owner's rows whose tokens all expired. */
  async create(c: Collection, recordId: string, meta: { userAgent: string; ip: string }): Promise<string> {
    const sid = newId();
    const now = nowDate();
    const cutoff = stamp(Date.now() - TOKEN_TTL_S * 1000);
    await this.write([
      { sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "last_seen" < ?', params: [c.id, recordId, cutoff] },
      {
        sql: 'INSERT INTO "_sessions" ("id","collectionId","recordId","created","last_seen","user_agent","ip") VALUES (?,?,?,?,?,?,?)',
        params: [sid, c.id, recordId, now, now, meta.userAgent.slice(0, MAX_UA), meta.ip.slice(0, 128)],
      },
    ]);
    return sid;
  }

  /**
   * True when session `sid` exists and belongs to the record (one point read). Schedules a
   * `last_seen` refresh when the stored one is over a minute old.
   */
  check(c: Collection, recordId: string, sid: string): boolean {
    const row = this.store.reader.get('SELECT "last_seen" FROM "_sessions" WHERE "id" = ? AND "collectionId" = ? AND "recordId" = ?', [sid, c.id, recordId]);
    if (!row) return false;
    const seen = Date.parse(String(row[0]).replace(' ', 'T'));
    if (!(Date.now() - seen < TOUCH_EVERY_MS)) this.touch(sid);
    return true;
  }

  /** Refreshes last_seen now (refresh endpoint) or in the background (any request). */
  touch(sid: string): void {
    const t = Date.now();
    const last = this.touched.get(sid);
    if (last !== undefined && t - last < TOUCH_EVERY_MS) return;
    if (this.touched.size >= 10_000) this.touched.clear();
    this.touched.set(sid, t);
    this.write([{ sql: 'UPDATE "_sessions" SET "last_seen" = ? WHERE "id" = ?', params: [nowDate(), sid] }]).catch(this.onError);
  }

  /** The owner's live sessions, newest first; `is_current` marks `currentSid`. */
  list(c: Collection, recordId: string, currentSid: string | undefined): SessionView[] {
    const cutoff = stamp(Date.now() - TOKEN_TTL_S * 1000);
    const rows = this.store.reader.all(
      'SELECT "id","created","last_seen","user_agent","ip" FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "last_seen" >= ? ORDER BY "created" DESC, rowid DESC',
      [c.id, recordId, cutoff],
    );
    return rows.map((r) => ({
      id: String(r[0]), created: String(r[1]), last_seen: String(r[2]), user_agent: String(r[3]), ip: String(r[4]), is_current: r[0] === currentSid,
    }));
  }

  /** Ends one of the owner's sessions; 404 when unknown or owned by someone else. */
  async revoke(c: Collection, recordId: string, sid: string): Promise<void> {
    await this.write([{
      sql: 'DELETE FROM "_sessions" WHERE "id" = ? AND "collectionId" = ? AND "recordId" = ?',
      params: [sid, c.id, recordId],
      expect: 'change',
      fail: { status: 404, code: 'not_found', message: 'The requested resource was not found.' },
    }]);
  }

  /** Logout everywhere: bumps the record's token epoch and wipes its session rows, in one job. */
  async endAll(c: Collection, recordId: string): Promise<void> {
    await this.write([
      { sql: `UPDATE ${q(c.name)} SET "token_epoch" = "token_epoch" + 1 WHERE "id" = ?`, params: [recordId] },
      ...SessionStore.wipeSteps(c, recordId, null),
    ]); // the epoch changed: the change feed drops cached copies of the record
  }

  /** Deletes the record's session rows except `keepSid` (after a password change). */
  async endOthers(c: Collection, recordId: string, keepSid: string | null): Promise<void> {
    await this.write(SessionStore.wipeSteps(c, recordId, keepSid));
  }

  /** Steps deleting a record's session rows (all, or all but `keepSid`), for use inside another job. */
  static wipeSteps(c: Collection, recordId: string, keepSid: string | null): WriteStep[] {
    return keepSid
      ? [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "id" != ?', params: [c.id, recordId, keepSid] }]
      : [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ?', params: [c.id, recordId] }];
  }

  private write(steps: WriteStep[]) {
    for (const s of steps) s.params = s.params.map(bindValue);
    return this.store.writer.write(steps);
  }
}

/** 404 unless the collection uses the table store (per-device session routes). */
export function requireTableStore(c: Collection): void {
  if (sessionMode(c) !== 'table') throw ApiError.notFound('Per-device sessions need options.auth.session.store = "table".');
}
