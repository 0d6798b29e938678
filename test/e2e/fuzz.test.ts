/**
 * Fuzzing against the running server: seeded and bounded property runs over list
 * queries (PocketBase's modifiers, any-of operators and macros among the filters), record bodies,
 * multipart bodies and collection definitions (test/helpers/fuzz.ts).
 * Zero 5xx, zero dropped connections, every error the documented envelope, the server alive
 * after every batch. SVC_FUZZ_SEED replays a run; SVC_FUZZ_RUNS changes its size.
 * A longer run: `npm run fuzz -- --minutes=N`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { startSvc, type Svc } from '../helpers/server.js';
import { collectCursors, probe, requestArb, setupFuzzSchema } from '../helpers/fuzz.js';

let srv: Svc;
let tokens: { su: string; user: string };
let cursors: string[];
let ids: string[];
const seed = Number(process.env.SVC_FUZZ_SEED ?? Date.now() % 2 ** 31);
const runs = Number(process.env.SVC_FUZZ_RUNS ?? 8000);

before(async () => {
  srv = await startSvc({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  ({ ids } = await setupFuzzSchema(srv));
  const login = await srv.api('POST', '/api/collections/fz_people/auth-with-password', { body: { identity: 'p0@example.com', password: 'password123' } });
  tokens = { su: srv.suToken, user: login.body.token };
  cursors = await collectCursors(srv);
  console.log(`fuzz seed ${seed} (replay with SVC_FUZZ_SEED=${seed}), ${runs} requests`);
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('hostile and valid requests never answer 5xx, never drop the connection, always in the envelope', { timeout: 240_000 }, async () => {
  const batches = 5;
  for (let b = 0; b < batches; b++) {
    await fc.assert(
      fc.asyncProperty(requestArb(cursors, ids), async (r) => {
        const failure = await probe(srv, tokens, r);
        if (failure) console.error(`fuzz failure: ${failure}`);
        if (failure) throw new Error(`${r.method} ${r.path.slice(0, 300)} (${r.contentType ?? ''}, ${String(r.body ?? '').slice(0, 200)}): ${failure}`);
      }),
      { seed: seed + b, numRuns: Math.ceil(runs / batches), endOnFailure: true },
    );
    const h = await srv.api('GET', '/api/health');
    assert.equal(h.status, 200, `the server is alive after batch ${b}`);
  }
  assert.ok(!/unhandled error/.test(srv.stderr()), 'no unhandled error in the server log');
});
