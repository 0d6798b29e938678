/**
 * Password hashing with argon2id (@node-rs/argon2) on a piscina pool of its own (workers/hash.ts,
 * ARCHITECTURE.md, "Threads"): libuv's four shared threads, which file reads need, take no
 * hashing, so a burst of sign-ins does not stall file downloads. The pool's threads
 * (DEFAULT_HASH_THREADS) start on the first hash and end after HASH_THREAD_IDLE_MS without one; at most
 * `MAX_WAITING` hashes wait for a thread, and beyond that callers get 503.
 */
import { Piscina } from 'piscina';
import { Algorithm } from '@node-rs/argon2';
import { availableParallelism } from 'node:os';
import { ApiError } from '../errors/api-error.js';
import { piscinaRan, workerScript } from '../store/worker-url.js';
import type { HashTask } from '../../workers/hash.js';

/**
 * argon2id with 7 MiB, 5 passes, 1 lane: one of the configurations the OWASP Password Storage Cheat
 * Sheet lists as equal in defence to its 19 MiB / 2 passes (they trade memory for passes at about
 * the same CPU cost). Every hash in flight holds its memory. Of the equivalent settings this one
 * verifies fastest here (measured against 12 MiB / 3 passes; a smaller block array stays in cache
 * better; bench/README.md, "Memory" and "Password sign-in"). Stored hashes carry their own
 * parameters, so hashes made with other settings still verify.
 */
const PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 7168, timeCost: 5, parallelism: 1 } as const;
/**
 * Hashing threads unless SERVICE_HASH_THREADS says otherwise (sizeHashPool): one a core but one,
 * at least one. A hash is pure CPU work, so more threads than cores only queue; the core left
 * over keeps the main thread serving every other request during a burst of sign-ins (on 2 cores,
 * file downloads kept 0.87 of their rate with one hashing thread, 0.40 with two: bench/README.md,
 * "Password hashing").
 */
export const DEFAULT_HASH_THREADS = Math.max(1, availableParallelism() - 1);
/** Hashes that may wait for a thread; past it a sign-in is answered 503 at once. */
const MAX_WAITING = 1024;
/** An idle hashing thread ends after this long (ms), giving its memory back. */
const HASH_THREAD_IDLE_MS = 30_000;

let threads = DEFAULT_HASH_THREADS;
let pool: Piscina | null = null;

/**
 * Sets the hashing threads (SERVICE_HASH_THREADS, docs/configuration.md); called once when the
 * server's auth service is built, before any hash. A pool already started is replaced.
 * @param n threads, at least 1
 */
export function sizeHashPool(n: number): void {
  if (n === threads) return;
  threads = Math.max(1, Math.floor(n));
  const old = pool;
  pool = null;
  if (old) void endPool(old);
}

/** Hashes run by pools already ended (sizeHashPool, closeHashPool), for hashPoolStats. */
const endedRuns = { completed: 0, busyMs: 0 };

/** Ends `p` (its threads) and adds what it ran to endedRuns. */
function endPool(p: Piscina): Promise<void> {
  return p.destroy().finally(() => {
    const ran = piscinaRan(p);
    endedRuns.completed += ran.completed;
    endedRuns.busyMs += ran.busyMs;
  });
}

/**
 * The hashing threads running now (0 while none is needed), hashes and verifications waiting for
 * one, and those finished since start with the milliseconds they ran, summed (GET /api/metrics,
 * docs/operations.md "Metrics").
 */
export function hashPoolStats(): { threads: number; waiting: number; completed: number; busyMs: number } {
  if (!pool) return { threads: 0, waiting: 0, ...endedRuns };
  const ran = piscinaRan(pool);
  return { threads: pool.threads.length, waiting: pool.queueSize, completed: endedRuns.completed + ran.completed, busyMs: endedRuns.busyMs + ran.busyMs };
}

function hashPool(): Piscina {
  if (pool) return pool;
  const { file, execArgv } = workerScript('hash');
  // small young generation: a task allocates a few strings (as the reader pool's workers)
  pool = new Piscina({ filename: file, execArgv, minThreads: 0, maxThreads: threads, idleTimeout: HASH_THREAD_IDLE_MS, maxQueue: MAX_WAITING, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
  pool.on('error', () => undefined);
  return pool;
}

async function onPool<T extends string | boolean>(task: HashTask): Promise<T> {
  const p = hashPool();
  if (p.queueSize >= MAX_WAITING) throw new ApiError(503, 'overloaded', 'The server is busy hashing passwords. Try again shortly.');
  return (await p.run(task)) as T;
}

/** argon2id PHC string of `password`. Throws ApiError 503 `overloaded` when MAX_WAITING hashes wait. */
export function hashPassword(password: string): Promise<string> {
  return onPool<string>({ op: 'hash', password, options: PARAMS });
}

/** A fixed hash verified against when no account matches, so both paths cost the same. */
let dummyHash: Promise<string> | null = null;

/**
 * True when `password` matches `phc`. With `phc` null (no such account or no password) a dummy
 * hash is verified anyway and the answer is false, keeping timing equal. Throws ApiError 503
 * `overloaded` when MAX_WAITING hashes wait.
 */
export async function verifyPassword(phc: string | null, password: string): Promise<boolean> {
  if (!phc) {
    dummyHash ??= hashPassword('svc-dummy-password-for-equal-timing');
    await onPool<boolean>({ op: 'verify', phc: await dummyHash, password });
    return false;
  }
  return onPool<boolean>({ op: 'verify', phc, password });
}

/** Ends the hashing threads (server stop); a later hash starts the pool again. */
export async function closeHashPool(): Promise<void> {
  const p = pool;
  pool = null;
  if (p) await endPool(p);
}

/** Longest accepted password (characters); bounds the hashing input. */
export const MAX_PASSWORD_LENGTH = 256;

/**
 * The one check of a new password (record create and update, confirm-password-reset): adds to
 * `errors` under `password` the first of `validation_required` (absent, null or ""),
 * `validation_type` (not a string), `validation_min` (fewer than `min` characters, counted as
 * code points; `min` is the collection's minPasswordLength) and `validation_max` (over
 * {@link MAX_PASSWORD_LENGTH} UTF-16 units), and under `passwordConfirm` a `validation_value`
 * when `passwordConfirm` is present and differs. A `validation_required` never replaces an error
 * already under `password`.
 * @returns the password when it is a non-empty string (even when too short or too long: callers
 * check `errors`), else null
 */
export function checkNewPassword(body: Record<string, unknown>, min: number, errors: Record<string, { code: string; message: string }>): string | null {
  const pw = body.password;
  let out: string | null = null;
  if (pw === undefined || pw === null || pw === '') errors.password ??= { code: 'validation_required', message: 'Missing required value.' };
  else if (typeof pw !== 'string') errors.password = { code: 'validation_type', message: 'Must be a string.' };
  else {
    out = pw;
    if ([...pw].length < min) errors.password = { code: 'validation_min', message: `Must be at least ${min} characters.` };
    else if (pw.length > MAX_PASSWORD_LENGTH) errors.password = { code: 'validation_max', message: `Must be at most ${MAX_PASSWORD_LENGTH} characters.` };
  }
  if ('passwordConfirm' in body && body.passwordConfirm !== pw) errors.passwordConfirm = { code: 'validation_value', message: "Values don't match." };
  return out;
}
