/**
 * The service binary under a dev session: `svc serve --public=<served root> --data-dir=<data>/data`
 * on the session host and the `--port` given, else a free one (docs/devtool.md).
 *
 * - It runs in its own process group, so a terminal's Ctrl-C reaches only the dev process, which
 *   then stops it with one SIGTERM (a second signal would make `svc` skip its shutdown).
 * - Its stdin is a pipe from the dev process, watched by a tiny preloaded module: when the dev
 *   process dies, even by kill -9, the pipe closes and the service terminates itself. This is not
 *   a supervisor (nothing is restarted); it only keeps a crash from leaving an orphan holding the
 *   service's data directory. `devtool dev stop` still sweeps orphans (docs/devtool.md).
 * - `svc serve --json` prints one line `{address, pid, data_dir}` on stdout once it listens: that
 *   is how the port is learnt. Its stderr (logs) goes straight to the dev process's stderr.
 *
 * `DEVTOOL_SERVICE_BIN` (a script run with node instead of `bin/svc.js`) exists for tests that
 * need a service that never becomes ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlive } from './lock.js';
import { urlHost } from './control-server.js';

/** Grace between SIGTERM and SIGKILL when stopping a process (docs/devtool.md). */
export const STOP_GRACE_MS = 5000;

/** Terminates this process when its stdin (the dev process's pipe) closes. */
const WATCHDOG = 'data:text/javascript,' + encodeURIComponent(
  "process.stdin.on('error',()=>{});process.stdin.on('end',()=>{try{process.kill(process.pid,'SIGTERM')}catch{}});process.stdin.resume();",
);

/** `bin/svc.js` of this package (searched upwards: devtool/ under tsx, dist/devtool/ when built). */
export function serviceBin(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DEVTOOL_SERVICE_BIN) return env.DEVTOOL_SERVICE_BIN;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'bin', 'svc.js');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find bin/svc.js (the service binary) beside the devtool');
}

/** A running service binary. */
export interface ServiceProcess {
  proc: ChildProcess;
  pid: number;
  /** `http://host:port` (no path) */
  origin: string;
  /** resolves with the exit code (or the signal name) once it exits */
  exited: Promise<number | string | null>;
  /** SIGTERM, then SIGKILL after STOP_GRACE_MS; resolves once it has exited */
  stop(): Promise<void>;
}

/**
 * Spawns the service and resolves once it listens.
 * @throws Error with the reason when it exits (or reports an error) before listening
 */
export function startService(opts: { host: string; port?: number; publicDir: string; dataDir: string; env?: NodeJS.ProcessEnv; stdout: NodeJS.WritableStream }): Promise<ServiceProcess> {
  const env = { ...(opts.env ?? process.env) };
  // the flags below decide; variables of the same settings must not argue with them
  delete env.SERVICE_HTTP;
  delete env.SERVICE_PUBLIC;
  delete env.SERVICE_DATA_DIR;
  const args = ['--import', WATCHDOG, serviceBin(env), 'serve', `--http=${urlHost(opts.host)}:${opts.port ?? 0}`, `--public=${opts.publicDir}`, `--data-dir=${opts.dataDir}`, '--no-request-log', '--json'];
  const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'], detached: true, env });
  const exited = new Promise<number | string | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    let buf = '';
    let listening = false;
    proc.once('error', (err) => reject(new Error(`cannot start the service binary: ${err.message}`)));
    void exited.then((code) => {
      if (!listening) reject(new Error(`the service binary exited (${code}) before listening; its output is above`));
    });
    proc.stdout!.setEncoding('utf8');
    proc.stdout!.on('data', (chunk: string) => {
      if (listening) {
        opts.stdout.write(chunk);
        return;
      }
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const line = buf.slice(0, nl);
      let parsed: { address?: string; error?: { message?: string } } = {};
      try {
        parsed = JSON.parse(line);
      } catch {
        /* not the listening line */
      }
      if (!parsed.address) {
        reject(new Error(`the service binary did not start: ${parsed.error?.message ?? line}`));
        return;
      }
      listening = true;
      const service: ServiceProcess = {
        proc,
        pid: proc.pid!,
        origin: `http://${parsed.address}`,
        exited,
        async stop() {
          if (proc.exitCode !== null || proc.signalCode !== null) return;
          proc.kill('SIGTERM');
          const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        },
      };
      resolve(service);
    });
  });
}

/**
 * Whether `origin` answers `GET /api/health` as the service binary does (`{status: "ok", svc}`),
 * within `ms`.
 */
export function isServiceAt(origin: string, ms = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL('/api/health', origin);
    } catch {
      resolve(false);
      return;
    }
    const req = request(url, { agent: false, timeout: ms }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => resolve(false));
      res.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          resolve(res.statusCode === 200 && body?.status === 'ok' && typeof body.svc === 'string');
        } catch {
          resolve(false);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Waits until `pid` is gone, for up to `ms`; true when it is gone. */
export async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * The orphan sweep (docs/devtool.md, `dev stop`): if `svcPid` is alive and `origin`'s health route
 * confirms the service binary, SIGTERM, up to STOP_GRACE_MS, then SIGKILL. True when it swept one.
 */
export async function sweepOrphan(svcPid: number, origin: string): Promise<boolean> {
  if (!Number.isInteger(svcPid) || !isAlive(svcPid) || !(await isServiceAt(origin))) return false;
  try {
    process.kill(svcPid, 'SIGTERM');
  } catch {
    return false;
  }
  if (!(await waitGone(svcPid, STOP_GRACE_MS))) {
    try { process.kill(svcPid, 'SIGKILL'); } catch { /* gone meanwhile */ }
    await waitGone(svcPid, 2000);
  }
  return true;
}

/**
 * Why `port` on `host` cannot be listened on, or null when it can: a listen with the port held
 * exclusively, closed at once (docs/devtool.md, `--port`). Checked before the service binary
 * starts so a taken port gets a clear message; a server sharing the port (SO_REUSEPORT) counts
 * as taking it. Port 0 is always free.
 */
export function portProblem(host: string, port: number): Promise<string | null> {
  if (port === 0) return Promise.resolve(null);
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(`port ${port} on ${host} is already in use; choose another with --port (or leave --port out for a free one)`);
      else if (err.code === 'EACCES') resolve(`port ${port} on ${host} needs privileges this process lacks; choose a port above 1023`);
      else if (err.code === 'EADDRNOTAVAIL') resolve(`${host} is not an address of this machine (--host)`);
      else resolve(`cannot listen on ${host}:${port}: ${err.message}`);
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** Whether an HTTP GET of `url` gets any response (readiness: the server answers, even 404). */
export function answers(url: string, ms = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: ms }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
