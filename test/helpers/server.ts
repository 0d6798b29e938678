/**
 * End-to-end test harness: runs the real built `svc` (dist/cli/main.js) on a free port with a
 * temporary data directory, and talks to it over real HTTP.
 *
 *   const srv = await startSvc();            // superuser admin@test.local / supersecret1
 *   const r = await srv.api('GET', '/api/health');
 *   await srv.stop();
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { backendEnv, backendEnvSync } from './backend.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');
export const SU_EMAIL = 'admin@test.local';
export const SU_PASSWORD = 'supersecret1';

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** parsed JSON body, or null when empty / not JSON */
  body: any;
  text: string;
}

export interface Svc {
  url: string;
  dataDir: string;
  proc: ChildProcess;
  /** everything the server wrote to stderr so far */
  stderr(): string;
  /** superuser bearer token */
  suToken: string;
  api(method: string, path: string, opts?: { body?: unknown; token?: string | null; headers?: Record<string, string>; raw?: string | Buffer }): Promise<ApiResponse>;
  /** POST a collection as superuser; throws unless 201 */
  createCollection(def: Record<string, unknown>): Promise<any>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs the CLI synchronously. */
export function runCli(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const dir = args.find((a) => a.startsWith('--data-dir='))?.slice('--data-dir='.length);
  const backend = dir ? backendEnvSync(dir) : {};
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...backend, ...env }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export async function startSvc(opts: { args?: string[]; env?: Record<string, string>; dataDir?: string; superuser?: boolean } = {}): Promise<Svc> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  // SVC_TEST_BACKEND=postgres: the directory's own database (test/helpers/backend.ts)
  const backend = await backendEnv(dataDir);
  if (opts.superuser !== false) {
    const r = runCli(['superuser', 'upsert', `--email=${SU_EMAIL}`, `--password=${SU_PASSWORD}`, `--data-dir=${dataDir}`], backend);
    if (r.status !== 0) throw new Error(`superuser create failed: ${r.stderr}`);
  }
  const proc = spawn(process.execPath, [CLI, 'serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, '--insecure-cookies', ...(opts.args ?? [])], {
    env: { ...process.env, SERVICE_LOG_FORMAT: 'json', ...backend, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc did not start in time:\n${err}`)), 20_000);
    const onData = () => {
      const m = /serving on (http:\/\/[^\s"]+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        proc.stderr!.off('data', onData);
        resolveUrl(m[1]);
      }
    };
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc exited with ${code} before serving:\n${err}`));
    });
  });

  const api: Svc['api'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const token = o.token === undefined ? null : o.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | Buffer | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    let res: Response;
    try {
      try {
        res = await fetch(url + path, { method, headers, body });
      } catch (e) {
        // A kept-alive connection the server closed while idle, whose close this process had not
        // seen yet: the test was blocked in a synchronous CLI run (runCli is spawnSync), so undici
        // took the dead socket from its pool; the server closed it idle, before any request on it,
        // so sending again cannot run a request twice.
        if ((e as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw e;
        res = await fetch(url + path, { method, headers, body });
      }
    } catch (e) {
      // say whether the server is still up, and what it logged last
      const state = proc.exitCode !== null || proc.signalCode !== null ? `the server exited (${proc.exitCode ?? proc.signalCode})` : 'the server is still running';
      throw new Error(`${method} ${path}: ${(e as Error).message} (${String((e as { cause?: unknown }).cause ?? '')}); ${state}; its log ends:\n${err.slice(-3000)}`, { cause: e });
    }
    const text = await res.text();
    let parsed: any = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };

  let suToken = '';
  if (opts.superuser !== false) {
    const r = await api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: SU_EMAIL, password: SU_PASSWORD } });
    if (r.status !== 200) throw new Error(`superuser login failed: ${r.text}`);
    suToken = r.body.token;
  }

  const svc: Svc = {
    url,
    dataDir,
    proc,
    stderr: () => err,
    suToken,
    api,
    async createCollection(def) {
      const r = await api('POST', '/api/collections', { body: def, token: suToken });
      if (r.status !== 201) throw new Error(`create collection failed (${r.status}): ${r.text}`);
      return r.body;
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null) return proc.exitCode;
      const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
      proc.kill(signal);
      const code = await exited;
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
  return svc;
}

/** Parses the JSON log lines of a server's stderr (skipping non-JSON lines, as the spec says). */
export function jsonLogLines(stderr: string): any[] {
  const out: any[] = [];
  for (const line of stderr.split('\n')) {
    try {
      const v = JSON.parse(line);
      if (v && typeof v === 'object') out.push(v);
    } catch {
      /* not JSON: skipped */
    }
  }
  return out;
}
