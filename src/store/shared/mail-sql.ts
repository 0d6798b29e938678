/**
 * Statements of outbound mail on both backends (implements MailRowStore, src/store/mail-store.ts;
 * docs/mail.md, "Delivery"), over the backend-neutral SqlReader (src/store/backend.ts):
 * `_mailQueue` (the durable queue: a row from enqueue until delivery; failed ones stay with their
 * last error), `_suppressions` (hard bounces and complaints) and `_senders` (per-account sender
 * identities). The tables themselves are created by each backend's bootstrap: MAIL_DDL of
 * src/store/sqlite/mail-sql.ts, SYSTEM_DDL of src/store/pg/bootstrap.ts.
 *
 * What the backends do differently is in {@link MailSqlDialect}:
 * - SQLite's `COLLATE NOCASE` email keys are unique indexes on `lower("email")` on PostgreSQL
 *   (`_suppressions_key` on (lower(email), account), `_senders_key` on (account, lower(email))):
 *   look-ups there compare `lower("email") = lower(?)` and the upserts name those expressions as
 *   their ON CONFLICT target. NOCASE folds ASCII letters only; `lower()` follows the database's
 *   collation (ASCII only under the C locale, Unicode case mapping under others), so two
 *   addresses differing only in the case of a non-ASCII letter may match on PostgreSQL and not on
 *   SQLite.
 * - Text sorts (`senders`) use `COLLATE "C"` on PostgreSQL: SQLite's BINARY order.
 * - Epoch-millisecond times are `bigint` columns on PostgreSQL: a fractional time (never produced
 *   by the queue, which passes Date.now() and integer delays) is floored, where SQLite would keep
 *   a REAL.
 * - An error message holding U+0000 (PostgreSQL text refuses it) is stored with U+FFFD instead on
 *   PostgreSQL.
 */
import type { WriteStep } from '../write-job.js';
import type { MailRowStore, QueuedMail, SenderRow } from '../mail-store.js';
import type { BackendKind, SqlReader } from '../backend.js';

/** What the mail statements spell (and bind) differently per backend. */
export interface MailSqlDialect {
  /** An epoch-ms time as bound to its column (PostgreSQL's bigint: floored). */
  ms(v: number): number;
  /** The LIMIT of `due` as bound (PostgreSQL: a whole count, at least 0). */
  limit(n: number): number;
  /** A delivery error's text as stored (after its cut to 1000 characters). */
  errorText(message: string): string;
  /** `email` equal to parameter `$n`, case-insensitively (SQLite: the columns are NOCASE). */
  emailMatch(n: number): string;
  /** The ON CONFLICT target of `_suppressions` (its case-insensitive key). */
  readonly suppressionKey: string;
  /** The ON CONFLICT target of `_senders` (its case-insensitive key). */
  readonly senderKey: string;
  /** The ORDER BY of `senders` (byte order of the text). */
  readonly sendersOrder: string;
}

const same = <T>(v: T): T => v;

/** An epoch-ms time for a bigint column. */
const ms = (v: number): number => (Number.isInteger(v) ? v : Math.floor(v));

/**
 * Each backend's spelling. SQLite: values bound as given, NOCASE columns, BINARY order.
 * PostgreSQL: bigint times, `lower("email")` keys, `COLLATE "C"` order.
 */
export const MAIL_DIALECTS: Readonly<Record<BackendKind, MailSqlDialect>> = {
  sqlite: {
    ms: same,
    limit: same,
    errorText: same,
    emailMatch: (n) => `"email" = $${n}`,
    suppressionKey: '"email","account"',
    senderKey: '"account","email"',
    sendersOrder: '"created", "id"',
  },
  postgres: {
    ms,
    limit: (n) => Math.max(0, Math.floor(n)),
    errorText: (message) => message.replace(/\0/g, '\uFFFD'),
    emailMatch: (n) => `lower("email") = lower($${n})`,
    suppressionKey: 'lower("email"),"account"',
    senderKey: '"account", lower("email")',
    sendersOrder: '"created" COLLATE "C", "id" COLLATE "C"',
  },
};

const SENDER_COLS = '"id","account","email","status","verified_at","token_hash","sent_at"';
const senderOf = (r: unknown[]): SenderRow => ({
  id: String(r[0]), account: String(r[1]), email: String(r[2]), status: r[3] === 'verified' ? 'verified' : 'pending',
  verified_at: r[4] === null ? null : String(r[4]), tokenHash: r[5] === null ? null : String(r[5]), sentAt: Number(r[6]),
});

/**
 * The mail store over one backend's reader; `dialect`: that backend's entry of
 * {@link MAIL_DIALECTS}.
 */
export class MailSql implements MailRowStore {
  constructor(private reader: SqlReader, private dialect: MailSqlDialect) {}

  enqueueStep(id: string, queue: string, message: string, account: string, nowMs: number): WriteStep {
    const now = this.dialect.ms(nowMs);
    return {
      sql: 'INSERT INTO "_mailQueue" ("id","queue","message","account","status","attempts","next_at","created","updated") VALUES ($1,$2,$3,$4,\'pending\',0,$5,$6,$7)',
      params: [id, queue, message, account, now, now, now],
    };
  }

  async due(nowMs: number, limit: number): Promise<QueuedMail[]> {
    return (await this.reader.all('SELECT "id","queue","message","attempts","account" FROM "_mailQueue" WHERE "status" = \'pending\' AND "next_at" <= $1 ORDER BY "next_at", "created" LIMIT $2', [this.dialect.ms(nowMs), this.dialect.limit(limit)]))
      .map((r) => ({ id: String(r[0]), queue: String(r[1]), message: String(r[2]), attempts: Number(r[3]), account: String(r[4]) }));
  }

  async nextDue(): Promise<number | undefined> {
    const r = await this.reader.get('SELECT min("next_at") FROM "_mailQueue" WHERE "status" = \'pending\'', []);
    return r && r[0] !== null && r[0] !== undefined ? Number(r[0]) : undefined;
  }

  deliveredStep(id: string): WriteStep {
    return { sql: 'DELETE FROM "_mailQueue" WHERE "id" = $1', params: [id] };
  }

  failedStep(id: string, attempts: number, error: string, nextMs: number | null, nowMs: number): WriteStep {
    return {
      sql: 'UPDATE "_mailQueue" SET "attempts" = $1, "last_error" = $2, "status" = $3, "next_at" = $4, "updated" = $5 WHERE "id" = $6',
      params: [attempts, this.dialect.errorText(error.slice(0, 1000)), nextMs === null ? 'failed' : 'pending', this.dialect.ms(nextMs ?? nowMs), this.dialect.ms(nowMs), id],
    };
  }

  async counts(): Promise<{ pending: number; failed: number }> {
    const r = await this.reader.get('SELECT count(*) FILTER (WHERE "status" = \'pending\'), count(*) FILTER (WHERE "status" = \'failed\') FROM "_mailQueue"', []);
    return { pending: Number(r?.[0] ?? 0), failed: Number(r?.[1] ?? 0) };
  }

  async suppressed(email: string, account: string): Promise<boolean> {
    return !!(await this.reader.get(`SELECT 1 FROM "_suppressions" WHERE ${this.dialect.emailMatch(1)} AND "account" IN ('', $2) LIMIT 1`, [email, account]));
  }

  suppressStep(email: string, account: string, reason: string, now: string): WriteStep {
    return {
      sql: `INSERT INTO "_suppressions" ("email","account","reason","created","updated") VALUES ($1,$2,$3,$4,$5) ON CONFLICT (${this.dialect.suppressionKey}) DO UPDATE SET "reason" = excluded."reason", "updated" = excluded."updated"`,
      params: [email, account, reason, now, now],
    };
  }

  async sender(account: string, email: string): Promise<SenderRow | undefined> {
    const r = await this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = $1 AND ${this.dialect.emailMatch(2)}`, [account, email]);
    return r ? senderOf(r) : undefined;
  }

  async senderById(id: string): Promise<SenderRow | undefined> {
    const r = await this.reader.get(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "id" = $1`, [id]);
    return r ? senderOf(r) : undefined;
  }

  async senders(account: string): Promise<SenderRow[]> {
    return (await this.reader.all(`SELECT ${SENDER_COLS} FROM "_senders" WHERE "account" = $1 ORDER BY ${this.dialect.sendersOrder}`, [account])).map(senderOf);
  }

  putSenderStep(row: SenderRow, now: string): WriteStep {
    return {
      sql: `INSERT INTO "_senders" (${SENDER_COLS},"created","updated") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)
        ON CONFLICT (${this.dialect.senderKey}) DO UPDATE SET "token_hash" = excluded."token_hash", "sent_at" = excluded."sent_at", "updated" = excluded."updated" WHERE "_senders"."status" = 'pending'`,
      params: [row.id, row.account, row.email, row.status, row.verified_at, row.tokenHash, this.dialect.ms(row.sentAt), now, now],
    };
  }

  verifySenderStep(id: string, tokenHash: string, now: string, fail: NonNullable<WriteStep['fail']>): WriteStep {
    return {
      sql: 'UPDATE "_senders" SET "status" = \'verified\', "verified_at" = $1, "token_hash" = NULL, "updated" = $2 WHERE "id" = $3 AND "status" = \'pending\' AND "token_hash" = $4',
      params: [now, now, id, tokenHash],
      expect: 'change',
      fail,
    };
  }
}
