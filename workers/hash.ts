/**
 * A piscina password-hashing worker (src/auth/passwords.ts): argon2id hashes and verifications
 * on a thread of their own, so a burst of sign-ins takes none of libuv's shared threads, which
 * file reads and DNS need (ARCHITECTURE.md, "Threads").
 *
 * Task: `{ op: 'hash', password, options }` → the PHC string; `{ op: 'verify', phc, password }` →
 * true when the password matches (a malformed hash answers false).
 */
import { hashSync, verifySync, type Options } from '@node-rs/argon2';

/** One hashing task (see the header). */
export type HashTask = { op: 'hash'; password: string; options: Options } | { op: 'verify'; phc: string; password: string };

export default function run(task: HashTask): string | boolean {
  if (task.op === 'hash') return hashSync(task.password, task.options);
  try {
    return verifySync(task.phc, task.password);
  } catch {
    return false;
  }
}
