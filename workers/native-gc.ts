/**
 * Collects a worker isolate's garbage on a timer while it works (issue 12, soak).
 *
 * libsql's statements and row sets hold native memory (SQLite's) behind small JavaScript
 * wrappers, freed only when V8 collects the wrapper. A worker that runs many queries makes
 * little JavaScript garbage, so V8 rarely collects, and the native memory behind dead wrappers
 * piles up: measured with heaptrack under the soak's load, about 650 bytes per read task stayed
 * allocated in the reader worker, and RSS rose 4 to 6 MB a minute while the JavaScript heaps
 * held still. A full collection of a worker's small heap takes a few milliseconds; once a second
 * while tasks run (`noteWork`) keeps the native side flat at well under 1% of one core.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;

let gc: Gc | null = null;
try {
  // `gc` exists in contexts made after the flag is set (V8 flags are process-wide; setting it
  // again from another worker is harmless).
  setFlagsFromString('--expose-gc');
  gc = runInNewContext('gc') as Gc;
} catch {
  gc = null; // an embedder that refuses the flag: collection stays V8's own
}

let worked = 0;
const INTERVAL_MS = 1000;

/** Counts work done; `start` must have been called once in the worker. */
export function noteWork(n = 1): void {
  worked += n;
}

/** Starts the timer (unref'd: it never keeps the worker alive). */
export function startNativeGc(): void {
  if (!gc) return;
  const collect = gc;
  setInterval(() => {
    if (worked === 0) return;
    worked = 0;
    collect({ type: 'major', execution: 'sync' });
  }, INTERVAL_MS).unref();
}
