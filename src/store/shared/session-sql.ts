/**
 * Statements of the table session store on both backends (implements SessionRowStore,
 * src/store/auth-store.ts): the `_sessions` table and its reads and writes, over the
 * backend-neutral SqlReader (src/store/backend.ts). The table itself is created by each backend's
 * bootstrap: SESSIONS_DDL of src/store/sqlite/session-sql.ts, SYSTEM_DDL of
 * src/store/pg/bootstrap.ts.
 *
 * Timestamps are text in the stored format (`YYYY-MM-DD HH:MM:SS.sssZ`, fixed width), compared
 * and ordered as text on both backends. What the backends spell differently is in
 * {@link SESSION_TIE_BREAK}.
 */
import type { WriteStep } from '../write-job.js';
import type { SessionRow, SessionRowStore, StepFail } from '../auth-store.js';
import type { BackendKind, SqlReader } from '../backend.js';

/**
 * What breaks a tie of `created` in the newest-first list (`ORDER BY "created" DESC, <this>
 * DESC`), per backend. SQLite breaks it by rowid (insertion order); `_sessions` has no such
 * column on PostgreSQL, so a tie (two logins of one record in the same millisecond) is broken by
 * the session id instead.
 */
export const SESSION_TIE_BREAK: Readonly<Record<BackendKind, string>> = { sqlite: 'rowid', postgres: '"id"' };

const LAST_SEEN = 'SELECT "last_seen" FROM "_sessions" WHERE "id" = $1 AND "collectionId" = $2 AND "recordId" = $3';

/**
 * The table session store over one backend's reader; `tieBreak`: that backend's
 * {@link SESSION_TIE_BREAK}.
 */
export class SessionSql implements SessionRowStore {
  constructor(private reader: SqlReader, private tieBreak: string) {}

  createSteps(collectionId: string, recordId: string, cutoff: string, row: Omit<SessionRow, 'last_seen'>): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_sessions" WHERE "collectionId" = $1 AND "recordId" = $2 AND "last_seen" < $3', params: [collectionId, recordId, cutoff] },
      {
        sql: 'INSERT INTO "_sessions" ("id","collectionId","recordId","created","last_seen","user_agent","ip") VALUES ($1,$2,$3,$4,$5,$6,$7)',
        params: [row.id, collectionId, recordId, row.created, row.created, row.user_agent, row.ip],
      },
    ];
  }

  async lastSeen(collectionId: string, recordId: string, sid: string): Promise<string | undefined> {
    const row = await this.reader.get(LAST_SEEN, [sid, collectionId, recordId]);
    return row ? String(row[0]) : undefined;
  }

  touchStep(sid: string, now: string): WriteStep {
    return { sql: 'UPDATE "_sessions" SET "last_seen" = $1 WHERE "id" = $2', params: [now, sid] };
  }

  async list(collectionId: string, recordId: string, cutoff: string): Promise<SessionRow[]> {
    const rows = await this.reader.all(
      `SELECT "id","created","last_seen","user_agent","ip" FROM "_sessions" WHERE "collectionId" = $1 AND "recordId" = $2 AND "last_seen" >= $3 ORDER BY "created" DESC, ${this.tieBreak} DESC`,
      [collectionId, recordId, cutoff],
    );
    return rows.map((r) => ({ id: String(r[0]), created: String(r[1]), last_seen: String(r[2]), user_agent: String(r[3]), ip: String(r[4]) }));
  }

  revokeStep(collectionId: string, recordId: string, sid: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_sessions" WHERE "id" = $1 AND "collectionId" = $2 AND "recordId" = $3', params: [sid, collectionId, recordId], expect: 'change', fail };
  }

  wipeSteps(collectionId: string, recordId: string, keepSid: string | null): WriteStep[] {
    // `<>`: the standard spelling, which both backends take
    return keepSid
      ? [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = $1 AND "recordId" = $2 AND "id" <> $3', params: [collectionId, recordId, keepSid] }]
      : [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = $1 AND "recordId" = $2', params: [collectionId, recordId] }];
  }
}
