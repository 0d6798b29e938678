/**
 * SQLite DDL of the table session store: the `_sessions` table. Its statements are shared with
 * PostgreSQL: src/store/shared/session-sql.ts (SessionSql, with SESSION_TIE_BREAK.sqlite).
 */

/** `_sessions` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const SESSIONS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_sessions" (
    "id" TEXT PRIMARY KEY NOT NULL, "collectionId" TEXT NOT NULL, "recordId" TEXT NOT NULL,
    "created" TEXT NOT NULL, "last_seen" TEXT NOT NULL, "user_agent" TEXT NOT NULL DEFAULT '', "ip" TEXT NOT NULL DEFAULT '')`,
  `CREATE INDEX IF NOT EXISTS "_sessions_owner" ON "_sessions" ("collectionId", "recordId", "created")`,
];
