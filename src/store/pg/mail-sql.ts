/**
 * PostgreSQL statements of outbound mail (implements MailRowStore, src/store/mail-store.ts;
 * issue 24): the counterpart of src/store/sqlite/mail-sql.ts over the `_mailQueue`,
 * `_suppressions` and `_senders` tables of src/store/pg/bootstrap.ts.
 *
 * Differences from SQLite:
 * - SQLite's `COLLATE NOCASE` email keys are unique indexes on `lower("email")` here
 *   (`_suppressions_key` on (lower(email), account), `_senders_key` on (account, lower(email))):
 *   look-ups compare `lower("email") = lower(?)` and the upserts name those expressions as their
 *   ON CONFLICT target. NOCASE folds ASCII letters only; `lower()` follows the database's
 *   collation (ASCII only under the C locale, Unicode case mapping under others), so two
 *   addresses differing only in the case of a non-ASCII letter may match here and not on SQLite.
 * - Text sorts (`senders`) use `COLLATE "C"`: SQLite's BINARY order.
 * - Epoch-millisecond times are `bigint` columns: a fractional time (never produced by the queue,
 *   which passes Date.now() and integer delays) is floored, where SQLite would keep a REAL.
 * - An error message holding U+0000 (PostgreSQL text refuses it) is stored with U+FFFD instead.
 */
import type { WriteStep } from '../write-job.js';
import type { MailRowStore, QueuedMail, SenderRow } from '../mail-store.js';
import type { PgReader } from './reader.js';

const SENDER_COLS = '"id","account","email","status","verified_at","token_hash","sent_at"';
const senderOf = (r: unknown[]): SenderRow => ({
  id: String(r[0]), account: String(r[1]), email: String(r[2]), status: r[3] === 'verified' ? 'verified' : 'pending',
  verified_at: r[4] === null ? null : String(r[4]), tokenHash: r[5] === null ? null : String(r[5]), sentAt: Number(r[6]),
});

/** An epoch-ms time for a bigint column. */
const ms = (v: number): number => (Number.isInteger(v) ? v : Math.floor(v));

export class PgMailSql implements MailRowStore {
  constructor(private reader: PgReader) {}

  enqueueStep(id: string, queue: string, message: string, account: string, nowMs: number): WriteStep {
    const now = ms(nowMs);
    return {
      sql: 'INSERT INTO "_mailQueue" ("id","queue","message","account","status","attempts","next_at","created","updated") VALUES (?,?,?,?,\'pending\',0,?,?,?)',
      params: [id, queue, message, account, now, now, now],
    };
  }

  due(nowMs: number, limit: number): QueuedMail[] {
    return this.reader.all('SELECT "id","queue","message","attempts","account" FROM "_mailQueue" WHERE "status" = \'pending\' AND "next_at" <= ? ORDER BY "next_at", "created" LIMIT ?', [ms(nowMs), Math.max(0, Math.floor(limit))])
      .map((r) => ({ id: String(r[0]), queue: String(r[1]), message: String(r[2]), attempts: Number(r[3]), account: String(r[4]) }));
  }

  nextDue(): number | undefined {
    const r = this.reader.get('SELECT min("next_at") FROM "_mailQueue" WHERE "status" = \'pending\'', []);
    return r && r[0] !== null && r[0] !== undefined ? Number(r[0]) : undefined;
  }

  deliveredStep(id: string): WriteStep {
    return { sql: 'DELETE FROM "_mailQueue" WHERE "id" = ?', params: [id] };
  }

  failedStep(id: string, attempts: number, error: string, nextMs: number | null, nowMs: number): WriteStep {
    return {
      sql: 'UPDATE "_mailQueue" SET "attempts" = ?, "last_error" = ?, "status" = ?, "next_at" = ?, "updated" = ? WHERE "id" = ?',
      params: [attempts, error.slice(0, 1000).replace(/\0/g, '\uFFFD'), nextMs === null ? 'failed' : 'pending', ms(nextMs ?? nowMs), ms(nowMs), id],
    };
  }

  counts(): { pending: number; failed: number } {
    const r = this.reader.get('SELECT count(*) FILTER (WHERE "status" = \'pending\'), count(*) FILTER (WHERE "status" = \'failed\') FROM "_mailQueue"', []);
    return { pending: Number(r?.[0] ?? 0), failed: Number(r?.[1] ?? 0) };
  }

  suppressed(email: string, account: string): boolean {
    return !!this.reader.get('SELECT 1 FROM "_suppressions" WHERE lower("email") = lower(?) AND "account" IN (\'\', ?) LIMIT 1', [email, account]);
  }

  suppressStep(email: string, account: string, reason: string, now: string): WriteStep {
    return {
      sql: 'INSERT INTO "_suppressions" ("email","account","reason","created","updated") VALUES (?,?,?,?,?) ON CONFLICT (lower("email"),"account") DO UPDATE SET "reason" = EXCLUDED."reason", "updated" = EXCLUDED."updated"',
      params: [email, account, reason, now, now],
    };
  }

  sender(account: string, email: string): SenderRow | undefined {
    const r = this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = ? AND lower("email") = lower(?)`, [account, email]);
    return r ? senderOf(r) : undefined;
  }

  senderById(id: string): SenderRow | undefined {
    const r = this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "id" = ?`, [id]);
    return r ? senderOf(r) : undefined;
  }

  senders(account: string): SenderRow[] {
    return this.reader.all(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = ? ORDER BY "created" COLLATE "C", "id" COLLATE "C"`, [account]).map(senderOf);
  }

  putSenderStep(row: SenderRow, now: string): WriteStep {
    return {
      sql: `INSERT INTO "_senders" (${SENDER_COLS},"created","updated") VALUES (?,?,?,?,?,?,?,?,?)
        ON CONFLICT ("account", lower("email")) DO UPDATE SET "token_hash" = EXCLUDED."token_hash", "sent_at" = EXCLUDED."sent_at", "updated" = EXCLUDED."updated" WHERE "_senders"."status" = 'pending'`,
      params: [row.id, row.account, row.email, row.status, row.verified_at, row.tokenHash, ms(row.sentAt), now, now],
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
