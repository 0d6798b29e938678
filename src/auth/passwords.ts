/**
 * Password hashing with argon2id (@node-rs/argon2, whose async API runs on libuv's thread pool),
 * behind a bound on hashes in flight so a flood of logins cannot queue unbounded work: at most
 * `MAX_IN_FLIGHT` run at once, at most `MAX_WAITING` wait, and beyond that callers get 503.
 */
import { hash, verify, Algorithm } from '@node-rs/argon2';
import { availableParallelism } from 'node:os';
import { ApiError } from '../errors/api-error.js';

/**
 * argon2id with 7 MiB, 5 passes, 1 lane: one of the configurations the OWASP Password Storage Cheat
 * Sheet lists as equal in defence to its 19 MiB / 2 passes (they trade memory for passes at about
 * the same CPU cost). Every hash in flight holds its memory. Of the equivalent settings this one
 * verifies fastest here (measured against 12 MiB / 3 passes; a smaller block array stays in cache
 * better; bench/README.md, "Memory" and "Password sign-in"), and three in flight hold 21 MiB, less
 * than two of 12 MiB. Stored hashes carry their own parameters, so hashes made with other settings
 * still verify.
 */
const PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 7168, timeCost: 5, parallelism: 1 } as const;
/**
 * Hashes run at once: one more than the cores, at least 3, at most 4 (libuv's thread pool, which
 * file I/O shares, has 4 threads; the benchmark's raw reference uses the same bound). With one a
 * core, a core sits idle each time a hash finishes until the main thread has answered that login
 * and started the next hash; the extra hash fills that gap (measured closer to the raw verify
 * rate with three in flight than with two; bench/README.md, "Password sign-in").
 */
export const MAX_IN_FLIGHT = Math.max(3, Math.min(4, availableParallelism() + 1));
const MAX_WAITING = 1024;

let running = 0;
const waiting: Array<() => void> = [];

async function bounded<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAX_IN_FLIGHT) {
    if (waiting.length >= MAX_WAITING) throw new ApiError(503, 'overloaded', 'The server is busy hashing passwords. Try again shortly.');
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** argon2id PHC string of `password`. */
export function hashPassword(password: string): Promise<string> {
  return bounded(() => hash(password, PARAMS));
}

/** A fixed hash verified against when no account matches, so both paths cost the same. */
let dummyHash: Promise<string> | null = null;

/**
 * True when `password` matches `phc`. With `phc` null (no such account or no password) a dummy
 * hash is verified anyway and the answer is false, keeping timing equal.
 */
export async function verifyPassword(phc: string | null, password: string): Promise<boolean> {
  if (!phc) {
    dummyHash ??= hash('svc-dummy-password-for-equal-timing', PARAMS);
    const d = await dummyHash;
    await bounded(() => verify(d, password).catch(() => false));
    return false;
  }
  return bounded(() => verify(phc, password).catch(() => false));
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
