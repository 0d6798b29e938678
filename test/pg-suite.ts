/**
 * The end-to-end suite on the server-SQL backend: starts one throw-away PostgreSQL
 * server (test/helpers/postgres.ts) for the whole run, then runs the given test files (default:
 * every end-to-end file) with SVC_TEST_BACKEND=postgres, so each server a test starts gets a
 * database of its own on it (test/helpers/backend.ts). Exits with the test run's status.
 *
 *   npx tsx test/pg-suite.ts [test files…]        (npm run test:pg)
 *
 * When PostgreSQL cannot be started here it says why and exits 0 without running anything: the
 * PostgreSQL unit tests (test/unit/pg/) report the same reason as skips in `npm test`.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { postgresSkipReason, startPostgres } from './helpers/postgres.js';

const ROOT = resolve(import.meta.dirname, '..');

async function main(): Promise<number> {
  const reason = postgresSkipReason();
  if (reason) {
    console.error(`test:pg: skipped, ${reason}`);
    return 0;
  }
  const files = process.argv.slice(2);
  const targets = files.length ? files : readdirSync(join(ROOT, 'test', 'e2e')).filter((f) => f.endsWith('.test.ts')).map((f) => join('test', 'e2e', f));
  const pgs = await startPostgres();
  try {
    return await new Promise<number>((done) => {
      const child = spawn(process.execPath, ['--test', ...(process.env.SVC_TEST_REPORTER ? [`--test-reporter=${process.env.SVC_TEST_REPORTER}`] : []), '--test-concurrency=2', '--test-timeout=600000', '--import', 'tsx', ...targets], {
        cwd: ROOT,
        stdio: 'inherit',
        env: { ...process.env, SVC_TEST_BACKEND: 'postgres', SVC_TEST_PG_URL: pgs.url },
      });
      child.once('exit', (code, signal) => done(code ?? (signal ? 1 : 0)));
    });
  } finally {
    await pgs.stop();
  }
}

main().then((code) => process.exit(code), (err) => {
  console.error(err);
  process.exit(1);
});
