/**
 * Locates a worker script next to the running code: `dist/workers/<name>.js` when running the
 * compiled build, `workers/<name>.ts` (loaded through tsx) when running from source in tests.
 */
import { fileURLToPath } from 'node:url';

export function workerScript(name: string): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`../../workers/${name}.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  return { file: fileURLToPath(url), execArgv: fromSource ? ['--import', 'tsx'] : [] };
}
