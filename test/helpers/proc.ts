/**
 * Lower-level process helpers for the e2e tests that need more control than startSvc() gives:
 * a `serve` whose flags the test chooses entirely (no forced --insecure-cookies, a log level that
 * hides the "serving on" line, a second server on a locked data directory), plus small HTTP,
 * cookie and log utilities.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { CLI } from './server.js';
import { backendEnvSync } from './backend.js';

export interface RawServe {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** resolves when the process exits */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** resolves with the first match of `re` in stderr; rejects on timeout or exit without a match */
  waitForStderr(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** sends a signal (if still running) and waits for the exit */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A free TCP port on 127.0.0.1 (bound then released; tiny reuse race accepted). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Spawns `svc <args>` with exactly the given arguments (nothing added) and collects its output. */
export function spawnSvc(args: string[], env: Record<string, string | undefined> = {}): RawServe {
  // SVC_TEST_BACKEND=postgres: the data directory's database (test/helpers/backend.ts)
  const dir = args.find((a) => a.startsWith('--data-dir='))?.slice('--data-dir='.length);
  const backend = dir ? backendEnvSync(dir) : {};
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...backend, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8');
  proc.stderr!.setEncoding('utf8');
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      // let the pipes drain so stdout()/stderr() are complete
      setTimeout(() => resolve({ code, signal }), 50);
    });
  });
  const self: RawServe = {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForStderr(re, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const m = re.exec(err);
          if (m) {
            cleanup();
            resolve(m);
            return true;
          }
          return false;
        };
        const onData = () => void check();
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timeout waiting for ${re} in stderr:\n${err}`));
        }, timeoutMs);
        const onExit = () => {
          setTimeout(() => {
            if (!check()) {
              cleanup();
              reject(new Error(`process exited before ${re} appeared in stderr:\n${err}`));
            }
          }, 60);
        };
        const cleanup = () => {
          clearTimeout(timer);
          proc.stderr!.off('data', onData);
          proc.off('exit', onExit);
        };
        proc.stderr!.on('data', onData);
        proc.once('exit', onExit);
        if (proc.exitCode !== null) onExit();
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  return self;
}

/** Polls GET {url}/api/health until it answers 200, or throws (also if the process exited). */
export async function waitHealthy(url: string, srv?: RawServe, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (srv && (srv.proc.exitCode !== null || srv.proc.signalCode !== null)) {
      throw new Error(`server exited (${srv.proc.exitCode}) before becoming healthy:\n${srv.stderr()}`);
    }
    try {
      const r = await fetch(`${url}/api/health`);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`server at ${url} not healthy in time:\n${srv?.stderr() ?? ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface SetCookie {
  name: string;
  value: string;
  /** attribute names lower-cased → value ('' for flags such as HttpOnly) */
  attrs: Map<string, string>;
}

/** Parses every Set-Cookie header of a response into name → cookie. */
export function setCookies(headers: Headers): Map<string, SetCookie> {
  const out = new Map<string, SetCookie>();
  for (const line of headers.getSetCookie()) {
    const [pair, ...rest] = line.split(';');
    const i = pair.indexOf('=');
    const name = pair.slice(0, i).trim();
    const value = pair.slice(i + 1).trim();
    const attrs = new Map<string, string>();
    for (const a of rest) {
      const j = a.indexOf('=');
      if (j < 0) attrs.set(a.trim().toLowerCase(), '');
      else attrs.set(a.slice(0, j).trim().toLowerCase(), a.slice(j + 1).trim());
    }
    out.set(name, { name, value, attrs });
  }
  return out;
}

/** JSON log records written to `stderr` after character offset `mark` (non-JSON lines skipped). */
export function jsonRecordsSince(stderr: string, mark: number): any[] {
  const out: any[] = [];
  for (const line of stderr.slice(mark).split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line);
      if (v && typeof v === 'object') out.push(v);
    } catch {
      /* skipped, per the stream rule */
    }
  }
  return out;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** ts format of every log record: `YYYY-MM-DDTHH:MM:SSZ`. */
export const TS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** Runs `svc <args>` to completion without blocking the event loop (so several can run at once). */
export function runCliAsync(args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawnSvc(args, env);
    const timer = setTimeout(() => p.proc.kill('SIGKILL'), timeoutMs);
    void p.exited.then(({ code }) => {
      clearTimeout(timer);
      resolve({ status: code, stdout: p.stdout(), stderr: p.stderr() });
    });
  });
}

/** Parses stdout that must hold exactly one JSON object on one line. */
export function oneJsonObject(stdout: string): any {
  const lines = stdout.split('\n').filter((l) => l.length > 0);
  if (lines.length !== 1) throw new Error(`expected exactly one line on stdout, got ${lines.length}: ${JSON.stringify(stdout)}`);
  const v = JSON.parse(lines[0]);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`expected a JSON object, got ${lines[0]}`);
  return v;
}
