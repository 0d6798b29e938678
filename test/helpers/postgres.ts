/**
 * A throw-away PostgreSQL server for tests: Debian's PostgreSQL (15 or later, found in
 * /usr/lib/postgresql/<version>/bin or `SVC_TEST_PG_BIN`), a new cluster in a temp directory
 * (`initdb`, trust authentication for the `svc` role, UTF-8, C locale), started on a free
 * loopback port with its socket in that directory and durability off (fsync, synchronous commit
 * and full-page writes: a test cluster never outlives the test), and removed by `stop()`.
 *
 * As root (CI containers) the cluster's files belong to the `postgres` system user and the server
 * runs as that user (`runuser`): PostgreSQL refuses to run as root.
 *
 * `postgresSkipReason()` says why no server can start here (no binaries, root without a
 * `postgres` user), for `test(..., { skip })`; .ci/run installs the `postgresql` package.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './proc.js';
import pg from 'pg';

/** A running test server. */
export interface Postgres {
  /** `postgres://svc@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** the temp directory holding the cluster (`data/`) and the server's socket */
  dir: string;
  /** `url` with another database name. */
  urlOf(database: string): string;
  /** Creates a database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** The server's output so far (for failure messages). */
  log(): string;
  /** Stops the server (fast shutdown) and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** The directory of PostgreSQL's server binaries (highest version ≥ 15), or null. */
export function postgresBinDir(): string | null {
  const env = process.env.SVC_TEST_PG_BIN;
  if (env) return existsSync(join(env, 'initdb')) ? env : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => /^\d+$/.test(v) && Number(v) >= 15 && existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : null;
}

/** The uid and gid of the `postgres` system user, or null. */
function postgresUser(): { uid: number; gid: number } | null {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** Why a test server cannot start on this machine, or null when it can. */
export function postgresSkipReason(): string | null {
  if (!postgresBinDir()) return 'PostgreSQL server binaries (Debian package postgresql, version 15 or later) are not installed: run `bash ci/install-apt.sh pg_ctlcluster postgresql`';
  if (isRoot() && !postgresUser()) return 'running as root and there is no `postgres` system user to run PostgreSQL as';
  return null;
}


/** The postmaster's pid from `<data>/postmaster.pid`, or null. */
function postmasterPid(data: string): number | null {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** argv to run `bin` as the cluster's owner (the postgres user when we are root). */
function asOwner(bin: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

/**
 * Starts a new cluster and waits until it accepts connections (at most 30 s).
 * @throws Error with the server's output when initdb or the server fails, or the wait times out
 */
export async function startPostgres(opts: { durable?: boolean } = {}): Promise<Postgres> {
  const reason = postgresSkipReason();
  if (reason) throw new Error(reason);
  const bin = postgresBinDir()!;
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  const data = join(dir, 'data');
  if (isRoot()) {
    const owner = postgresUser()!;
    chownSync(dir, owner.uid, owner.gid);
  }
  const [initCmd, initArgs] = asOwner(join(bin, 'initdb'), ['-D', data, '-U', 'svc', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8' });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.stdout}`);
  }
  const port = await freePort();
  const [cmd, args] = asOwner(join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    // tests trade durability for speed; `durable` keeps PostgreSQL's defaults (benchmarks compare
    // its commits with libsql's durable ones)
    ...(opts.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=200',
  ]);
  const child: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (d: Buffer): void => { output = (output + d.toString('utf8')).slice(-32_768); };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `postgres://svc@127.0.0.1:${port}/postgres`;
  const urlOf = (database: string): string => `postgres://svc@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      // SIGINT is PostgreSQL's fast shutdown. It goes to the postmaster itself (its pid is the
      // first line of postmaster.pid): `runuser`, our child when we are root, does not pass
      // signals on.
      const postmaster = postmasterPid(data) ?? child.pid;
      try {
        if (postmaster) process.kill(postmaster, 'SIGINT');
      } catch { /* already gone */ }
      const timer = setTimeout(() => {
        try {
          if (postmaster) process.kill(postmaster, 'SIGKILL');
        } catch { /* already gone */ }
        child.kill('SIGKILL');
      }, 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`PostgreSQL exited while starting: ${output}`);
    }
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`PostgreSQL did not accept connections within 30 s (${(err as Error).message}): ${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    dir,
    urlOf,
    async createDatabase(name: string): Promise<string> {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } finally {
        await client.end();
      }
      return urlOf(name);
    },
    log: () => output,
    stop,
  };
}
