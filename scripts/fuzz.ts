/**
 * `npm run fuzz -- --minutes=N [--seed=S]`: the fuzz properties of test/helpers/fuzz.ts against a
 * real svc for N minutes (default 5), batch after batch with successive seeds. Prints the seed of
 * each batch; on the first failure prints the shrunk counterexample with its seed and exits 1.
 * Needs `npm run build` first.
 */
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { startSvc } from '../test/helpers/server.js';
import { collectCursors, probe, requestArb, setupFuzzSchema } from '../test/helpers/fuzz.js';

const arg = (name: string, dflt: string): string => process.argv.slice(2).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const minutes = Number(arg('minutes', '5'));
let seed = Number(arg('seed', String(Date.now() % 2 ** 31)));

const srv = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
let code = 0;
try {
  const { ids } = await setupFuzzSchema(srv);
  const login = await srv.api('POST', '/api/collections/fz_people/auth-with-password', { body: { identity: 'p0@example.com', password: 'password123' } });
  const tokens = { su: srv.suToken, user: login.body.token };
  const cursors = await collectCursors(srv);
  const end = Date.now() + minutes * 60_000;
  let total = 0;
  while (Date.now() < end) {
    const details = await fc.check(
      fc.asyncProperty(requestArb(cursors, ids), async (r) => {
        const failure = await probe(srv, tokens, r);
        if (failure) throw new Error(`${r.method} ${r.path.slice(0, 500)} (${r.contentType ?? ''}, ${String(r.body ?? '').slice(0, 300)}): ${failure}`);
      }),
      { seed, numRuns: 500 },
    );
    total += details.numRuns;
    if (details.failed) {
      console.error(`fuzz: FAILED with seed ${seed} after ${total} requests:\n${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`);
      code = 1;
      break;
    }
    const h = await srv.api('GET', '/api/health');
    if (h.status !== 200) {
      console.error(`fuzz: the server stopped answering after seed ${seed}`);
      code = 1;
      break;
    }
    console.error(`fuzz: seed ${seed} passed (${total} requests so far)`);
    seed++;
  }
  if (code === 0) console.error(`fuzz: ${total} requests in ${minutes} minute(s), no failure`);
} finally {
  await srv.stop();
  rmSync(srv.dataDir, { recursive: true, force: true });
}
process.exitCode = code;
