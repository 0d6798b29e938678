/** Random ids: 15 lowercase alphanumeric characters (≈77 bits), the record id format. */
import { randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const ID_PATTERN = /^[a-z0-9]{15}$/;

// One randomFillSync per 8 KiB instead of one randomBytes call per id (the per-call cost showed
// in create profiles).
const pool = Buffer.alloc(8192);
let pos = pool.length;

function nextByte(): number {
  if (pos >= pool.length) {
    randomFillSync(pool);
    pos = 0;
  }
  return pool[pos++];
}

export function newId(length = 15): string {
  let out = '';
  while (out.length < length) {
    const b = nextByte();
    if (b < 252) out += ALPHABET[b % 36]; // 252 = 7 × 36: rejection keeps the distribution uniform
  }
  return out;
}

/** A random secret of `bytes` bytes as base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
