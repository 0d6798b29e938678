/**
 * Locates a worker script: `dist/workers/<name>.js` next to the compiled code. Code running from
 * TypeScript sources (tests under tsx) uses the compiled worker too: on Node 20 a worker thread
 * started from a .ts file gets no tsx loader, so `npm run build` must have run.
 */
import { fileURLToPath } from 'node:url';

export function workerScript(name: string): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(fromSource ? `../../dist/workers/${name}.js` : `../../workers/${name}.js`, import.meta.url);
  return { file: fileURLToPath(url), execArgv: [] };
}
