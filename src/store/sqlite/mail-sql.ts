/**
 * SQLite DDL of outbound mail: `_mailQueue` (the durable queue: a row from enqueue until delivery;
 * failed ones stay with their last error), `_suppressions` (hard bounces and complaints) and
 * `_senders` (per-account sender identities). Their statements are shared with PostgreSQL:
 * src/store/shared/mail-sql.ts (MailSql, with MAIL_DIALECTS.sqlite).
 */

/** `_mailQueue`, `_suppressions` and `_senders` DDL (part of the bootstrap steps, src/store/sqlite/bootstrap.ts). */
export const MAIL_DDL = [
  `CREATE TABLE IF NOT EXISTS "_mailQueue" ("id" TEXT PRIMARY KEY NOT NULL, "queue" TEXT NOT NULL, "message" TEXT NOT NULL, "account" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL DEFAULT 'pending', "attempts" INTEGER NOT NULL DEFAULT 0, "next_at" INTEGER NOT NULL, "last_error" TEXT, "created" INTEGER NOT NULL, "updated" INTEGER NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mailQueue_due" ON "_mailQueue" ("status", "next_at")`,
  `CREATE TABLE IF NOT EXISTS "_suppressions" ("email" TEXT NOT NULL COLLATE NOCASE, "account" TEXT NOT NULL DEFAULT '', "reason" TEXT NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL, PRIMARY KEY ("email", "account"))`,
  `CREATE TABLE IF NOT EXISTS "_senders" ("id" TEXT PRIMARY KEY NOT NULL, "account" TEXT NOT NULL, "email" TEXT NOT NULL COLLATE NOCASE, "status" TEXT NOT NULL,
    "verified_at" TEXT, "token_hash" TEXT, "sent_at" INTEGER NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL, UNIQUE ("account", "email"))`,
];
