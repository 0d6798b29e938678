/**
 * Rate limits shared by every instance of a cluster (docs/deployment.md: rate limits count in the
 * database): the fixed-window counters of src/auth/rate-limit.ts (RateLimiter) kept in the
 * PostgreSQL table `_rateLimits` instead of one process's memory, so a client spreading its
 * attempts over several instances behind a load balancer meets one budget.
 *
 * One statement per counted request, atomic in PostgreSQL (an upsert that restarts the window
 * when it has ended), run on the reader's pool in autocommit (the main thread goes on during the
 * round trip). Rows of ended windows are deleted now and then (one request in 256).
 *
 * A database error is no reason to refuse a sign-in nor to let a flood through unbounded: the
 * request is counted in this instance's memory instead (the fallback counter, an in-memory
 * RateLimiter of src/auth/rate-limit.ts handed in when the store opens) and the error is reported
 * once through `onError`.
 */
import type { RateCounter } from '../store.js';
import type { PgReader } from './reader.js';

/** The table, made at startup (src/store/pg/open.ts). */
export const RATE_LIMITS_DDL = 'CREATE TABLE IF NOT EXISTS "_rateLimits" ("key" text PRIMARY KEY, "reset_at" bigint NOT NULL, "count" integer NOT NULL)';

const HIT = `INSERT INTO "_rateLimits" ("key", "reset_at", "count") VALUES ($1, $2, 1)
  ON CONFLICT ("key") DO UPDATE SET
    "count" = CASE WHEN "_rateLimits"."reset_at" <= $3 THEN 1 ELSE "_rateLimits"."count" + 1 END,
    "reset_at" = CASE WHEN "_rateLimits"."reset_at" <= $4 THEN EXCLUDED."reset_at" ELSE "_rateLimits"."reset_at" END
  RETURNING "count"`;
const SWEEP = 'DELETE FROM "_rateLimits" WHERE "reset_at" <= $1';

/** Fixed-window counters in `_rateLimits`; the same `hit` as RateLimiter. */
export class PgRateLimiter implements RateCounter {
  private warned = false;

  /** `fallback`: counts in this process's memory while the database cannot. */
  constructor(private readonly reader: PgReader, private readonly fallback: RateCounter, private readonly onError: (err: Error) => void = () => undefined, private readonly now: () => number = Date.now) {}

  /** Counts one request under `key`; false when it exceeds `budget` in the current window. */
  async hit(key: string, budget: { max: number; windowS: number }): Promise<boolean> {
    const t = this.now();
    try {
      // `all` runs a statement on a pool connection outside any snapshot: the upsert commits at once
      const rows = await this.reader.all(HIT, [key, t + budget.windowS * 1000, t, t]);
      if ((t & 0xff) === 0) await this.reader.all(SWEEP, [t]);
      return Number(rows[0]?.[0] ?? 0) <= budget.max;
    } catch (err) {
      if (!this.warned) {
        this.warned = true;
        this.onError(err instanceof Error ? err : new Error(String(err)));
      }
      return this.fallback.hit(key, budget);
    }
  }
}
