/** Random ids: 15 lowercase alphanumeric characters (≈77 bits), the record id format. */
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const ID_PATTERN = /^[a-z0-9]{15}$/;

export function newId(length = 15): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const b = bytes[i];
    if (b < 252) out += ALPHABET[b % 36]; // 252 = 7 × 36: rejection keeps the distribution uniform
  }
  return out.length === length ? out : newId(length);
}

/** A random secret of `bytes` bytes as base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
