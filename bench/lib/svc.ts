/**
 * Start and drive a real, built `svc` server for benchmarks and end-to-end example tests:
 * temp data dir, superuser created through the CLI, `serve` on a free port, a tiny JSON client.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, startProcess, waitForHttp, type ManagedProcess } from './wrk.js';

const execFileP = promisify(execFile);

/** Repository root (two levels above this file). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Path of the built CLI entry point. */
export const CLI_PATH = join(REPO_ROOT, 'dist', 'cli', 'main.js');

/**
 * The node flags of the `svc` launcher: the arguments after `node` on bin/svc.js's
 * `#!/usr/bin/env -S node …` line (npm start passes the same; test/e2e/launcher.test.ts checks it).
 * The server is measured started the way users start it.
 */
export function launcherNodeArgs(): string[] {
  const first = readFileSync(join(REPO_ROOT, 'bin', 'svc.js'), 'utf8').split('\n', 1)[0];
  const m = /^#!\s*\/usr\/bin\/env\s+(?:-S\s+)?node\b(.*)$/.exec(first);
  if (!m) throw new Error(`bin/svc.js does not start with an env node line: ${first}`);
  return m[1].trim().split(/\s+/).filter(Boolean);
}

/** True when the server has been built (`npm run build`). */
export function svcBuilt(): boolean {
  return existsSync(CLI_PATH);
}

/** The superuser every benchmark data directory gets unless told otherwise. */
export const BENCH_EMAIL = 'bench@example.com';
export const BENCH_PASSWORD = 'bench-password-123';

/**
 * A new temp data directory (`svc-bench-<tag>…`) with a superuser made by `svc superuser create`
 * (`cliPath`: another CLI entry, e.g. a snapshot of dist). The directory is removed again when the
 * CLI fails, and the error carries its output.
 */
export async function newDataDir(tag = '', email = BENCH_EMAIL, password = BENCH_PASSWORD, env: NodeJS.ProcessEnv = process.env, cliPath?: string): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), `svc-bench-${tag}`));
  try {
    await runCli(['superuser', 'create', `--email=${email}`, `--password=${password}`, `--data-dir=${dataDir}`], env, cliPath);
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  return dataDir;
}

/** The node arguments of `svc serve` on a port and data directory, started as the launcher starts it. */
function serveArgs(port: number, dataDir: string, opts: { nodeArgs?: string[]; cliPath?: string; logLevel?: string; extra?: string[] } = {}): string[] {
  return [...launcherNodeArgs(), ...(opts.nodeArgs ?? []), opts.cliPath ?? CLI_PATH, 'serve', `--http=127.0.0.1:${port}`, `--data-dir=${dataDir}`, `--log-level=${opts.logLevel ?? 'warn'}`, ...(opts.extra ?? [])];
}

/** A running svc server with a throw-away data directory. */
export interface SvcInstance {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  dataDir: string;
  email: string;
  password: string;
  proc: ManagedProcess;
  /** Stops the server and deletes the data directory (unless it was given). Safe to call twice. */
  stop(): Promise<void>;
}

/** Options of {@link startSvc}. */
export interface StartSvcOptions {
  email?: string;
  password?: string;
  logLevel?: string;
  /** Copy the server's output to stderr. */
  echo?: boolean;
  /** Extra environment for the server. */
  env?: NodeJS.ProcessEnv;
  /** Node options placed before the CLI path after the launcher's (launcherNodeArgs), e.g. `['--cpu-prof', '--cpu-prof-dir=…']`. */
  nodeArgs?: string[];
  /** The CLI entry to run instead of dist/cli/main.js (e.g. a snapshot of dist). */
  cliPath?: string;
  /**
   * Serve an existing data directory (its superuser must already exist) instead of a new temp
   * one; `stop()` then leaves the directory in place.
   */
  dataDir?: string;
  /** Extra `svc serve` flags (e.g. `--ignore-lock` for a second read-only server on the same data). */
  extra?: string[];
  /** The node binary that runs the server (default: this process's, `process.execPath`), e.g. a Node 22 build. */
  node?: string;
}

/**
 * Creates a temp data dir, creates a superuser with `svc superuser create`, starts
 * `svc serve --http=127.0.0.1:<free port>` and waits until `/api/health` answers.
 * On failure everything started is cleaned up and the error carries the CLI/server output.
 */
export async function startSvc(opts: StartSvcOptions = {}): Promise<SvcInstance> {
  if (!svcBuilt()) throw new Error(`${CLI_PATH} is missing; run \`npm run build\` first`);
  const email = opts.email ?? BENCH_EMAIL;
  const password = opts.password ?? BENCH_PASSWORD;
  const owned = opts.dataDir === undefined;
  const env = { ...process.env, ...opts.env };
  const dataDir = opts.dataDir ?? (await newDataDir('', email, password, env, opts.cliPath));
  let proc: ManagedProcess | undefined;
  const cleanup = async (): Promise<void> => {
    await proc?.stop();
    if (owned) await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    proc = startProcess('svc serve', opts.node ?? process.execPath, serveArgs(port, dataDir, opts), { cwd: REPO_ROOT, env, echo: opts.echo });
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/api/health`, proc);
    let stopped = false;
    return {
      url,
      port,
      dataDir,
      email,
      password,
      proc,
      async stop() {
        if (stopped) return;
        stopped = true;
        await cleanup();
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** Runs `node dist/cli/main.js <args>` (or `cliPath`); rejects with its output when it exits non-zero. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env, cliPath = CLI_PATH): Promise<string> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [cliPath, ...args], {
      cwd: REPO_ROOT,
      env,
      timeout: 60_000,
    });
    return stdout + stderr;
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    throw new Error(
      `svc ${args.slice(0, 2).join(' ')} failed (exit ${e.code ?? '?'}): ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

/** An error answer from the svc REST API, with the parsed error envelope. */
export class ApiError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${method} ${path} → ${status} ${typeof body === 'string' ? body : JSON.stringify(body)}`);
  }
}

/** Minimal JSON client for the svc REST API (global fetch, keep-alive by default). */
export class SvcClient {
  token = '';
  constructor(readonly baseUrl: string) {}

  /** Sends a request and returns the parsed JSON body; throws {@link ApiError} on status >= 400. */
  async request<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const res = await fetch(this.baseUrl + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* keep the text */
    }
    if (res.status >= 400) throw new ApiError(method, path, res.status, parsed);
    return parsed as T;
  }

  /** Logs in as a superuser and keeps the token for later requests. */
  async loginSuperuser(email: string, password: string): Promise<void> {
    const r = await this.request<{ token: string }>('POST', '/api/collections/_superusers/auth-with-password', {
      identity: email,
      password,
    });
    if (!r?.token) throw new Error(`auth-with-password answered without a token: ${JSON.stringify(r)}`);
    this.token = r.token;
  }
}

/**
 * Starts `svc serve` on an existing data directory (warn-level logs, `extraArgs` appended) and
 * waits until /api/health answers (`cliPath`: another CLI entry, e.g. a snapshot of dist). For
 * benchmarks that prepare the database file themselves.
 */
export async function serveDataDir(dataDir: string, extraArgs: string[] = [], cliPath?: string): Promise<{ url: string; proc: ManagedProcess }> {
  const port = await freePort();
  const proc = startProcess('svc serve', process.execPath, serveArgs(port, dataDir, { extra: extraArgs, cliPath }), { cwd: REPO_ROOT });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/api/health`, proc);
  return { url, proc };
}

/** One GET, timed from request to the end of the body (ms); throws unless 200. */
export async function timedGet(url: string): Promise<{ ms: number; body: any }> {
  const t0 = performance.now();
  const res = await fetch(url);
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url} → ${res.status} ${text.slice(0, 300)}`);
  return { ms, body: JSON.parse(text) };
}
