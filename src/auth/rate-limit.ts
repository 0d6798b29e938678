/**
 * Auth rate limiting (docs/api.md, "Rate limits": every request to a
 * limited endpoint counts, successful or not).
 *
 * Fixed-window counters keyed by `${scope}:${collectionId}:${clientKey}` in one least-recently-used
 * cache (src/cache/bounded.ts) whose size is capped: when it is full, a new key evicts the key hit
 * least recently (every hit refreshes its key, and an expired window is replaced on its key's
 * next hit). Memory stays bounded; the price is that a flood larger than the cap can reset a
 * victim's counter early (only one the victim has not hit during the flood), which is why the cap
 * is large (100k keys, a few MB).
 */
import { ApiError } from '../errors/api-error.js';
import type { Collection } from '../model/schema.js';
import type { ClientInfo } from './client.js';
import { boundedCache, type LRUCache } from '../cache/bounded.js';
import type { RateCounter } from '../store/store.js';

/** One budget: at most `max` requests per `windowS` seconds. */
export interface Budget {
  max: number;
  windowS: number;
}

interface Window {
  count: number;
  /** epoch ms at which the window ends */
  resetAt: number;
}

export const DEFAULT_MAX_KEYS = 100_000;

/** Bounded fixed-window counters. */
export class RateLimiter {
  private readonly windows: LRUCache<string, Window>;

  /**
   * @param maxKeys cap on tracked keys (≥ 1)
   * @param now     clock in epoch ms (injectable for tests)
   */
  constructor(maxKeys = DEFAULT_MAX_KEYS, private now: () => number = Date.now) {
    this.windows = boundedCache<string, Window>(maxKeys);
  }

  /** Counts one request under `key`; false when it exceeds `budget` in the current window. */
  hit(key: string, budget: Budget): boolean {
    const t = this.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= t) {
      w = { count: 0, resetAt: t + budget.windowS * 1000 };
      this.windows.set(key, w);
    }
    w.count++;
    return w.count <= budget.max;
  }

  /** Number of tracked keys. */
  get size(): number {
    return this.windows.size;
  }
}

/**
 * A per-method override: `default`, `off` or `{max, window_s}` (docs/api.md, "Rate limits":
 * auth.methods.<slug>.rate_limit).
 */
export type RateLimitOption = 'default' | 'off' | { max: number; window_s: number };

/**
 * The budgets of the auth endpoints: the global one from SERVICE_RATE_LIMIT_MAX/WINDOW (max 0
 * disables it) unless the collection's method block overrides it.
 */
export class AuthRateLimits {
  readonly limiter: RateCounter;

  constructor(private global: Budget, private trustProxy: boolean, limiter: RateCounter = new RateLimiter()) {
    this.limiter = limiter;
  }

  /** The budget for `scope` on `c`, or null when unlimited. `method` names the auth method slug whose override applies. */
  budget(c: Collection, method?: string): Budget | null {
    const opt = method ? methodOption(c, method) : 'default';
    if (opt === 'off') return null;
    if (typeof opt === 'object') return { max: opt.max, windowS: opt.window_s };
    return this.global.max > 0 ? this.global : null;
  }

  /**
   * The client keys a request counts under (docs/api.md, "Rate
   * limits"): the submitted identity or email (trimmed, lower-cased), else the remote
   * address. With a trusted proxy the first X-Forwarded-For hop (or X-Real-IP) counts too, so a
   * client rotating its forwarded address still meets the identity's budget and one address
   * still meets its own across identities. Each key has its own window; a request over any of
   * them is refused.
   * @returns one or two keys such as `id:ann@example.com`, `ip:203.0.113.7`
   */
  clientKeys(req: ClientInfo, submitted: unknown): string[] {
    const keys: string[] = [];
    if (this.trustProxy) {
      const hop = req.headers.forwardedFor.split(',')[0].trim() || req.headers.realIp.trim();
      if (hop) keys.push(`ip:${hop}`);
    }
    if (typeof submitted === 'string' && submitted.trim() !== '') keys.push(`id:${submitted.trim().toLowerCase()}`);
    if (!keys.length) keys.push(`ip:${req.remoteAddress}`);
    return keys;
  }

  /** The caller's IP address as far as it is trusted (for session rows). */
  clientIp(req: ClientInfo): string {
    if (this.trustProxy) {
      const hop = req.headers.forwardedFor.split(',')[0].trim();
      if (hop) return hop;
      if (req.headers.realIp.trim()) return req.headers.realIp.trim();
    }
    return req.remoteAddress;
  }

  /**
   * Counts one request to a limited endpoint; rejects with 429 `too_many_requests` over the
   * budget. On PostgreSQL the counters are shared rows (src/store/pg/rate-limit-sql.ts), read on
   * the pool: await it before the endpoint's work.
   * @param scope  endpoint name, e.g. `auth-with-password`, `pwchange`, `otp:initiate`
   * @param clientKeys from clientKeys(): the request counts under each
   * @param method auth method slug whose `rate_limit` override applies (e.g. `password`, `otp`)
   */
  async enforce(scope: string, c: Collection, clientKeys: readonly string[], method?: string): Promise<void> {
    const budget = this.budget(c, method);
    if (!budget) return;
    // every key counts the request, even when an earlier one is already over its budget
    let allowed = true;
    for (const key of clientKeys) if (!(await this.limiter.hit(`${scope}:${c.id}:${key}`, budget))) allowed = false;
    if (!allowed) throw ApiError.tooManyRequests();
  }
}

function methodOption(c: Collection, method: string): RateLimitOption {
  const methods = c.options.auth?.methods;
  const block = methods && typeof methods === 'object' ? (methods as Record<string, unknown>)[method] : undefined;
  const v = block && typeof block === 'object' ? (block as Record<string, unknown>).rate_limit : undefined;
  if (v === 'off') return 'off';
  if (v && typeof v === 'object') {
    const { max, window_s } = v as Record<string, unknown>;
    if (Number.isInteger(max) && Number.isInteger(window_s) && (window_s as number) > 0) return { max: max as number, window_s: window_s as number };
  }
  return 'default';
}

/**
 * Validates a `rate_limit` option as written in a collection's `options.auth.methods.<slug>`;
 * returns an error message or null. Accepts `default`, `off`, or `{max: 1.., window_s: 1..}`.
 */
export function rateLimitOptionError(v: unknown): string | null {
  if (v === 'default' || v === 'off') return null;
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => k !== 'max' && k !== 'window_s');
    const intIn = (x: unknown, lo: number, hi: number) => Number.isInteger(x) && (x as number) >= lo && (x as number) <= hi;
    if (!extra.length && intIn(o.max, 1, 1_000_000) && intIn(o.window_s, 1, 86_400 * 30)) return null;
  }
  return 'rate_limit must be "default", "off" or {max, window_s} with positive integers.';
}
