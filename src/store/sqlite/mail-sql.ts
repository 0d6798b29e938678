/**
 * SQLite statements of outbound mail (implements MailRowStore, src/store/mail-store.ts):
 * `_mailQueue` (the durable queue: a row from enqueue until delivery; failed ones stay with their
 * last error), `_suppressions` (hard bounces and complaints) and `_senders` (per-account sender
 * identities).
 */
import type { WriteStep } from '../write-job.js';
import type { MailRowStore, QueuedMail, SenderRow } from '../mail-store.js';
import type { Reader } from './reader.js';

export const MAIL_DDL = [
  `CREATE TABLE IF NOT EXISTS "_mailQueue" ("id" TEXT PRIMARY KEY NOT NULL, "queue" TEXT NOT NULL, "message" TEXT NOT NULL, "account" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL DEFAULT 'pending', "attempts" INTEGER NOT NULL DEFAULT 0, "next_at" INTEGER NOT NULL, "last_error" TEXT, "created" INTEGER NOT NULL, "updated" INTEGER NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS "_mailQueue_due" ON "_mailQueue" ("status", "next_at")`,
  `CREATE TABLE IF NOT EXISTS "_suppressions" ("email" TEXT NOT NULL COLLATE NOCASE, "account" TEXT NOT NULL DEFAULT '', "reason" TEXT NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL, PRIMARY KEY ("email", "account"))`,
  `CREATE TABLE IF NOT EXISTS "_senders" ("id" TEXT PRIMARY KEY NOT NULL, "account" TEXT NOT NULL, "email" TEXT NOT NULL COLLATE NOCASE, "status" TEXT NOT NULL,
    "verified_at" TEXT, "token_hash" TEXT, "sent_at" INTEGER NOT NULL, "created" TEXT NOT NULL, "updated" TEXT NOT NULL, UNIQUE ("account", "email"))`,
];

const SENDER_COLS = '"id","account","email","status","verified_at","token_hash","sent_at"';
const senderOf = (r: unknown[]): SenderRow => ({
  id: String(r[0]), account: String(r[1]), email: String(r[2]), status: r[3] === 'verified' ? 'verified' : 'pending',
  verified_at: r[4] === null ? null : String(r[4]), tokenHash: r[5] === null ? null : String(r[5]), sentAt: Number(r[6]),
});

export class SqliteMailSql implements MailRowStore {
  constructor(private reader: Reader) {}

  enqueueStep(id: string, queue: string, message: string, account: string, nowMs: number): WriteStep {
    return {
      sql: 'INSERT INTO "_mailQueue" ("id","queue","message","account","status","attempts","next_at","created","updated") VALUES (?,?,?,?,\'pending\',0,?,?,?)',
      params: [id, queue, message, account, nowMs, nowMs, nowMs],
    };
  }

  due(nowMs: number, limit: number): QueuedMail[] {
    return this.reader.all('SELECT "id","queue","message","attempts","account" FROM "_mailQueue" WHERE "status" = \'pending\' AND "next_at" <= ? ORDER BY "next_at", "created" LIMIT ?', [nowMs, limit])
      .map((r) => ({ id: String(r[0]), queue: String(r[1]), message: String(r[2]), attempts: Number(r[3]), account: String(r[4]) }));
  }

  nextDue(): number | undefined {
    const r = this.reader.get('SELECT min("next_at") FROM "_mailQueue" WHERE "status" = \'pending\'', []);
    return r && r[0] !== null ? Number(r[0]) : undefined;
  }

  deliveredStep(id: string): WriteStep {
    return { sql: 'DELETE FROM "_mailQueue" WHERE "id" = ?', params: [id] };
  }

  failedStep(id: string, attempts: number, error: string, nextMs: number | null, nowMs: number): WriteStep {
    return {
      sql: 'UPDATE "_mailQueue" SET "attempts" = ?, "last_error" = ?, "status" = ?, "next_at" = ?, "updated" = ? WHERE "id" = ?',
      params: [attempts, error.slice(0, 1000), nextMs === null ? 'failed' : 'pending', nextMs ?? nowMs, nowMs, id],
    };
  }

  counts(): { pending: number; failed: number } {
    const r = this.reader.get('SELECT count(*) FILTER (WHERE "status" = \'pending\'), count(*) FILTER (WHERE "status" = \'failed\') FROM "_mailQueue"', []);
    return { pending: Number(r?.[0] ?? 0), failed: Number(r?.[1] ?? 0) };
  }

  suppressed(email: string, account: string): boolean {
    return !!this.reader.get('SELECT 1 FROM "_suppressions" WHERE "email" = ? AND "account" IN (\'\', ?) LIMIT 1', [email, account]);
  }

  suppressStep(email: string, account: string, reason: string, now: string): WriteStep {
    return {
      sql: 'INSERT INTO "_suppressions" ("email","account","reason","created","updated") VALUES (?,?,?,?,?) ON CONFLICT ("email","account") DO UPDATE SET "reason" = excluded."reason", "updated" = excluded."updated"',
      params: [email, account, reason, now, now],
    };
  }

  sender(account: string, email: string): SenderRow | undefined {
    const r = this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = ? AND "email" = ?`, [account, email]);
    return r ? senderOf(r) : undefined;
  }

  senderById(id: string): SenderRow | undefined {
    const r = this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "id" = ?`, [id]);
    return r ? senderOf(r) : undefined;
  }

  senders(account: string): SenderRow[] {
    return this.reader.all(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = ? ORDER BY "created", "id"`, [account]).map(senderOf);
  }

  putSenderStep(row: SenderRow, now: string): WriteStep {
    return {
      sql: `INSERT INTO "_senders" (${SENDER_COLS},"created","updated") VALUES (?,?,?,?,?,?,?,?,?)
        ON CONFLICT ("account","email") DO UPDATE SET "token_hash" = excluded."token_hash", "sent_at" = excluded."sent_at", "updated" = excluded."updated" WHERE "_senders"."status" = 'pending'`,
      params: [row.id, row.account, row.email, row.status, row.verified_at, row.tokenHash, row.sentAt, now, now],
    };
  }

  verifySenderStep(id: string, tokenHash: string, now: string, fail: NonNullable<WriteStep['fail']>): WriteStep {
    return {
      sql: 'UPDATE "_senders" SET "status" = \'verified\', "verified_at" = ?, "token_hash" = NULL, "updated" = ? WHERE "id" = ? AND "status" = \'pending\' AND "token_hash" = ?',
      params: [now, now, id, tokenHash],
      expect: 'change',
      fail,
    };
  }
}
