/**
 * PostgreSQL statements of the table session store (implements SessionRowStore,
 * src/store/auth-store.ts; issue 24): the counterpart of src/store/sqlite/session-sql.ts over
 * the `_sessions` table of bootstrap.ts.
 *
 * Timestamps are text in the stored format (`YYYY-MM-DD HH:MM:SS.sssZ`, fixed width), compared
 * and ordered as text as on SQLite. SQLite breaks a tie of `created` in the newest-first list by
 * rowid (insertion order); `_sessions` has no such column on PostgreSQL, so a tie (two logins of
 * one record in the same millisecond) is broken by the session id instead.
 */
import type { WriteStep } from '../write-job.js';
import type { SessionRow, SessionRowStore, StepFail } from '../auth-store.js';
import type { PgReader } from './reader.js';

export class PgSessionSql implements SessionRowStore {
  constructor(private reader: PgReader) {}

  createSteps(collectionId: string, recordId: string, cutoff: string, row: Omit<SessionRow, 'last_seen'>): WriteStep[] {
    return [
      { sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "last_seen" < ?', params: [collectionId, recordId, cutoff] },
      {
        sql: 'INSERT INTO "_sessions" ("id","collectionId","recordId","created","last_seen","user_agent","ip") VALUES (?,?,?,?,?,?,?)',
        params: [row.id, collectionId, recordId, row.created, row.created, row.user_agent, row.ip],
      },
    ];
  }

  lastSeen(collectionId: string, recordId: string, sid: string): string | undefined {
    const row = this.reader.get('SELECT "last_seen" FROM "_sessions" WHERE "id" = ? AND "collectionId" = ? AND "recordId" = ?', [sid, collectionId, recordId]);
    return row ? String(row[0]) : undefined;
  }

  touchStep(sid: string, now: string): WriteStep {
    return { sql: 'UPDATE "_sessions" SET "last_seen" = ? WHERE "id" = ?', params: [now, sid] };
  }

  list(collectionId: string, recordId: string, cutoff: string): SessionRow[] {
    const rows = this.reader.all(
      'SELECT "id","created","last_seen","user_agent","ip" FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "last_seen" >= ? ORDER BY "created" DESC, "id" DESC',
      [collectionId, recordId, cutoff],
    );
    return rows.map((r) => ({ id: String(r[0]), created: String(r[1]), last_seen: String(r[2]), user_agent: String(r[3]), ip: String(r[4]) }));
  }

  revokeStep(collectionId: string, recordId: string, sid: string, fail: StepFail): WriteStep {
    return { sql: 'DELETE FROM "_sessions" WHERE "id" = ? AND "collectionId" = ? AND "recordId" = ?', params: [sid, collectionId, recordId], expect: 'change', fail };
  }

  wipeSteps(collectionId: string, recordId: string, keepSid: string | null): WriteStep[] {
    return keepSid
      ? [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ? AND "id" <> ?', params: [collectionId, recordId, keepSid] }]
      : [{ sql: 'DELETE FROM "_sessions" WHERE "collectionId" = ? AND "recordId" = ?', params: [collectionId, recordId] }];
  }
}
