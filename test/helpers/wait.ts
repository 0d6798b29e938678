/**
 * Waiting in tests for what happens in its own time (a server's log line, a lock taken, writes
 * acknowledged): by checking a condition until a deadline, never by sleeping a fixed time, so a
 * loaded machine only takes longer.
 */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value, and answers it; throws after `ms`. */
export async function until<T>(fn: () => T | Promise<T>, ms = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Checks `check` every 20 ms until it holds or `ms` pass, and answers whether it held; the caller
 * asserts what it needs (also what must still not hold after `ms`).
 */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}
