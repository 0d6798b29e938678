/**
 * Which database backend the end-to-end suite runs against ("run the end-to-end suite
 * against both backends"). By default the embedded libsql database of each test's data directory.
 * With SVC_TEST_BACKEND=postgres every server a test starts (test/helpers/server.ts, startSvc)
 * and every CLI run given a `--data-dir` (runCli) gets SERVICE_DATABASE_URL of a database of its
 * own on a throw-away PostgreSQL server: the one of SVC_TEST_PG_URL (started once for the whole
 * run by test/pg-suite.ts), else one this test process starts on first use and stops at exit.
 *
 * A data directory is tied to its database by the file `.test-database-url` inside it, so a test
 * that restarts a server on the same directory finds the same data, as it would on SQLite.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { postgresBinDir, startPostgres, type Postgres } from './postgres.js';

export type TestBackend = 'sqlite' | 'postgres';

/** The backend of this run. */
export const TEST_BACKEND: TestBackend = process.env.SVC_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite';

const URL_FILE = '.test-database-url';

let server: Promise<{ admin: string; port: number }> | null = null;

/** The PostgreSQL server of this run: SVC_TEST_PG_URL's, or one started now (stopped at exit). */
function pgServer(): Promise<{ admin: string; port: number }> {
  server ??= (async () => {
    const given = process.env.SVC_TEST_PG_URL;
    if (given) return { admin: given, port: Number(new URL(given).port) };
    const pgs: Postgres = await startPostgres();
    process.once('exit', () => stopDetached(pgs));
    return { admin: pgs.url, port: pgs.port };
  })();
  return server;
}

/** At process exit (no awaiting): the postmaster gets a fast shutdown, a detached shell removes the directory after it. */
function stopDetached(pgs: Postgres): void {
  const pidFile = join(pgs.dir, 'data', 'postmaster.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
  if (pid) {
    try {
      process.kill(pid, 'SIGINT');
    } catch { /* gone */ }
  }
  spawn('sh', ['-c', `for i in $(seq 100); do kill -0 ${pid || 0} 2>/dev/null || break; sleep 0.1; done; rm -rf '${pgs.dir}'`], { detached: true, stdio: 'ignore' }).unref();
}

/** Creates a database on the run's server synchronously (createdb), answering its URL. */
function createDatabaseSync(admin: string, port: number): string {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL client binaries are not installed');
  const r = spawnSync(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', new URL(admin).username || 'svc', name], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`createdb failed: ${r.stderr}`);
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * The environment a server or CLI run on `dataDir` needs for this run's backend: {} on SQLite;
 * on PostgreSQL SERVICE_DATABASE_URL of the directory's database (made on first use).
 */
export async function backendEnv(dataDir: string): Promise<Record<string, string>> {
  if (TEST_BACKEND !== 'postgres') return {};
  const { admin, port } = await pgServer();
  return { SERVICE_DATABASE_URL: databaseOf(dataDir, admin, port) };
}

/**
 * Synchronous form for runCli: the directory's database when this process knows the server
 * (SVC_TEST_PG_URL, or one started earlier), else {} (the CLI then works on the SQLite file).
 */
export function backendEnvSync(dataDir: string): Record<string, string> {
  if (TEST_BACKEND !== 'postgres') return {};
  const file = join(dataDir, URL_FILE);
  if (existsSync(file)) return { SERVICE_DATABASE_URL: readFileSync(file, 'utf8').trim() };
  const given = process.env.SVC_TEST_PG_URL;
  if (!given) return {};
  return { SERVICE_DATABASE_URL: databaseOf(dataDir, given, Number(new URL(given).port)) };
}

/**
 * Data directories this process made only to hold `.test-database-url` (a CLI run given a
 * `--data-dir` that did not exist yet): removed at exit, so a path a test expects to be missing
 * (e.g. doctor's "no data directory") is not left behind for later runs.
 */
const madeDirs = new Set<string>();
process.once('exit', () => {
  for (const d of madeDirs) rmSync(d, { recursive: true, force: true });
});

function databaseOf(dataDir: string, admin: string, port: number): string {
  const file = join(dataDir, URL_FILE);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const url = createDatabaseSync(admin, port);
  if (!existsSync(dataDir)) madeDirs.add(dataDir);
  // as svc makes a data directory: the folder 0700, the file 0600 (test/e2e/limits.test.ts)
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(file, url, { mode: 0o600 });
  return url;
}
