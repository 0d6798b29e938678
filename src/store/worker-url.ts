/**
 * Locates a worker script: `dist/workers/<name>.js` next to the compiled code. Code running from
 * TypeScript sources (tests under tsx) uses the compiled worker too: on Node 20 a worker thread
 * started from a .ts file gets no tsx loader, so `npm run build` must have run.
 */
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';

export function workerScript(name: string): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(fromSource ? `../../dist/workers/${name}.js` : `../../workers/${name}.js`, import.meta.url);
  return { file: fileURLToPath(url), execArgv: [] };
}

/**
 * Tasks a piscina pool finished and the milliseconds they ran, summed (its run-time histogram's
 * mean times the count): the busy time of GET /api/metrics (docs/operations.md, "Metrics").
 */
export function piscinaRan(pool: Piscina): { completed: number; busyMs: number } {
  const completed = pool.completed;
  return { completed, busyMs: completed > 0 ? pool.histogram.runTime.mean * completed : 0 };
}
