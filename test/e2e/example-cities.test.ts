/**
 * End-to-end test of examples/cities/load.ts against the real, built server: a temp data dir, a
 * superuser made with the CLI, `svc serve` on a free port, then the loader with CITIES_LIMIT=2000.
 * Skipped when dist/cli/main.js is missing (run `npm run build`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO_ROOT, SvcClient, startSvc, svcBuilt, type SvcInstance } from '../../bench/lib/svc.js';
import { runToEnd } from '../../bench/lib/wrk.js';

const LIMIT = 2000;

/** Runs the loader as a child process; resolves with its exit code and output. */
function runLoader(svc: SvcInstance, extraArgs: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_') || k.startsWith('CITIES_')) delete env[k];
  Object.assign(env, {
    SVC_URL: svc.url,
    SVC_EMAIL: svc.email,
    SVC_PASSWORD: svc.password,
    CITIES_LIMIT: String(LIMIT),
  });
  return runToEnd(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'examples', 'cities', 'load.ts'), ...extraArgs], { cwd: REPO_ROOT, env });
}

/** The row counts of the "N rows in X ms" lines the loader prints for its queries. */
function queryRowCounts(stdout: string): number[] {
  return [...stdout.matchAll(/^\s+(\d+) rows in [\d.]+ ms/gm)].map((m) => Number(m[1]));
}

test('cities example loads countries and cities and runs its queries', { timeout: 240_000 }, async (t) => {
  if (!svcBuilt()) {
    t.skip('dist/cli/main.js is missing; run `npm run build` first');
    return;
  }
  const svc = await startSvc({ email: 'cities@example.com', password: 'cities-password-1' });
  t.after(() => svc.stop());

  const first = await runLoader(svc);
  const output = `--- stdout ---\n${first.stdout}\n--- stderr ---\n${first.stderr}\n--- server ---\n${svc.proc.output().slice(-4000)}`;
  assert.equal(first.code, 0, `loader failed:\n${output}`);

  const client = new SvcClient(svc.url);
  await client.loginSuperuser(svc.email, svc.password);
  const total = async (col: string, filter?: string): Promise<number> => {
    const qs = new URLSearchParams({ perPage: '1', skipTotal: 'false' });
    if (filter) qs.set('filter', filter);
    const r = await client.request<{ totalItems: number }>('GET', `/api/collections/${col}/records?${qs}`);
    return r.totalItems;
  };
  assert.equal(await total('countries'), 250, output);
  assert.equal(await total('cities'), LIMIT, output);
  // Every city points at an existing country: the relation path resolves for each of them.
  assert.equal(await total('cities', "country.code != ''"), LIMIT, output);

  const rows = queryRowCounts(first.stdout);
  assert.equal(rows.length, 3, `expected three query reports:\n${output}`);
  for (const n of rows) assert.ok(n > 0, `a query printed no rows:\n${output}`);
  assert.match(first.stdout, /cities: 2000 new, 0 already present/);

  // A second run finds every record in place (deterministic ids → 409) and loads nothing new.
  const second = await runLoader(svc);
  assert.equal(second.code, 0, `second run failed:\n${second.stdout}\n${second.stderr}`);
  assert.match(second.stdout, /countries: 0 new, 250 already present; cities: 0 new, 2000 already present/);
  assert.equal(await total('cities'), LIMIT);
});

test('cities example with the vector feature and --vector-index lists the nearest cities', { timeout: 240_000 }, async (t) => {
  if (!svcBuilt()) {
    t.skip('dist/cli/main.js is missing; run `npm run build` first');
    return;
  }
  const svc = await startSvc({ email: 'cities@example.com', password: 'cities-password-1', env: { SERVICE_FEATURES: 'vector' } });
  t.after(() => svc.stop());
  const run = await runLoader(svc, ['--vector-index']);
  const output = `--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}\n--- server ---\n${svc.proc.output().slice(-4000)}`;
  assert.equal(run.code, 0, `loader failed:\n${output}`);
  const rows = queryRowCounts(run.stdout);
  assert.equal(rows.length, 4, `expected four query reports:\n${output}`);
  assert.equal(rows[3], 10, output);
  // the nearest city to the country's largest city is that city itself (rank 1 of the table)
  const m = /10 cities nearest to (.+?) \(vector search/.exec(run.stdout);
  assert.ok(m, output);
  const after = run.stdout.slice(run.stdout.indexOf(m[0]));
  assert.match(after, new RegExp(`^\\s*1\\s+${m[1].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s`, 'm'), output);
  const client = new SvcClient(svc.url);
  await client.loginSuperuser(svc.email, svc.password);
  const col = await client.request<{ schema: Array<{ name: string; options: Record<string, unknown> }> }>('GET', '/api/collections/cities');
  const embedding = col.schema.find((f) => f.name === 'embedding');
  assert.equal(embedding?.options.dimensions, 3);
  assert.equal(embedding?.options.vectorIndex, true);
});
