/**
 * Ids: 15 lowercase alphanumeric characters, the record id format. Record ids are time-ordered
 * ({@link newRecordId}); everything that must not be guessed (session ids, token selectors,
 * collection ids, file name suffixes) is fully random ({@link newId}, ≈77 bits).
 */
import { randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const ID_PATTERN = /^[a-z0-9]{15}$/;

// One randomFillSync per 8 KiB instead of one randomBytes call per id (the per-call cost showed
// in create profiles).
const pool = Buffer.alloc(8192);
let pos = pool.length;

/** Makes `n` (≤ the pool's size) unused bytes available from `pos` on, refilling the pool when short. */
function reserve(n: number): void {
  if (pos + n > pool.length) {
    randomFillSync(pool);
    pos = 0;
  }
}

function nextByte(): number {
  reserve(1);
  return pool[pos++];
}

/** A fully random id of `length` characters of [a-z0-9] (≈5.17 bits each). */
export function newId(length = 15): string {
  let out = '';
  while (out.length < length) {
    const b = nextByte();
    if (b < 252) out += ALPHABET[b % 36]; // 252 = 7 × 36: rejection keeps the distribution uniform
  }
  return out;
}

/** Milliseconds since this instant form the time part of record ids (8 base-36 digits last until 2109). */
const RECORD_ID_EPOCH = Date.UTC(2020, 0, 1);
let lastMs = -1;
let lastPrefix = '';
const suffixesThisMs = new Set<string>();

/**
 * A new record id: 8 characters of creation time (milliseconds since 2020-01-01 in base 36, so
 * ids sort by creation under SQLite's binary collation) and 7 random ones (≈36 bits).
 *
 * Time order is what keeps creates cheap: a new row's id lands on the last page of the id index
 * instead of a random one, so a group commit writes one or two index pages instead of one per row
 * (measured: less writer CPU a row and a commit than with random ids; bench/README.md, "Create").
 * Ids issued by this process never repeat: a suffix drawn twice in the same millisecond is drawn
 * again. Ids reveal their creation time to the millisecond; they are names, not secrets (access is
 * decided by rules).
 */
export function newRecordId(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = (ms - RECORD_ID_EPOCH).toString(36).padStart(8, '0').slice(-8);
    suffixesThisMs.clear();
  }
  let suffix = newId(7);
  while (suffixesThisMs.has(suffix)) suffix = newId(7);
  suffixesThisMs.add(suffix);
  return lastPrefix + suffix;
}

/**
 * A random secret of `bytes` bytes as base64url, drawn from the same CSPRNG pool as ids (a
 * randomBytes call costs a native job object each time, a measured share of each password sign-in's
 * main-thread time: bench/README.md, "Password sign-in"). Bytes handed out are zeroed in the pool,
 * so a secret's bytes do not stay behind in memory until the next refill.
 */
export function randomToken(bytes = 32): string {
  if (bytes > pool.length) return randomBytes(bytes).toString('base64url');
  reserve(bytes);
  const out = pool.toString('base64url', pos, pos + bytes);
  pool.fill(0, pos, pos + bytes);
  pos += bytes;
  return out;
}
