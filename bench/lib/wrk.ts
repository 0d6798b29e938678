/**
 * Benchmark plumbing: run `wrk` and parse its report, start and stop child processes, wait for
 * an HTTP endpoint to answer, find a free TCP port, and take medians.
 *
 * Used by bench/read-by-id.ts and by the end-to-end example test.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Settings of one wrk run. */
export interface WrkOptions {
  /** Target URL. */
  url: string;
  /** wrk threads (-t). Default 1. */
  threads?: number;
  /** Open connections (-c). Default 64. */
  connections?: number;
  /** Duration in seconds (-d). Default 5. */
  durationS?: number;
  /** Optional Lua script (-s). */
  script?: string;
  /** Arguments after the URL, handed to the script's `init(args)`. */
  scriptArgs?: string[];
  /** Extra request headers, sent with -H. */
  headers?: Record<string, string>;
  /** Socket/request timeout in seconds (--timeout). Default 2. */
  timeoutS?: number;
}

/** Socket-level error counts as reported by wrk's "Socket errors" line. */
export interface WrkSocketErrors {
  connect: number;
  read: number;
  write: number;
  timeout: number;
}

/** Parsed outcome of one wrk run. */
export interface WrkResult {
  /** Requests completed per second over the run ("Requests/sec"). */
  requestsPerSec: number;
  /** Total requests completed. */
  requests: number;
  /** Measured duration in seconds. */
  durationS: number;
  /** Median latency in milliseconds (from the --latency distribution). */
  latencyP50Ms: number;
  /** 99th percentile latency in milliseconds. */
  latencyP99Ms: number;
  /** Mean latency in milliseconds. */
  latencyAvgMs: number;
  /** Socket errors by kind. */
  socketErrors: WrkSocketErrors;
  /** Responses with a status >= 400 (wrk's "Non-2xx or 3xx responses"). */
  non2xx: number;
  /** Sum of every socket error and non-2xx response. */
  errors: number;
  /** The raw wrk report, for diagnostics. */
  raw: string;
}

const TIME_UNITS_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const COUNT_UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9 };

/** Converts a wrk duration such as `512.00us`, `1.20ms` or `2.00s` to milliseconds. */
export function parseWrkDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`unrecognised wrk duration: ${JSON.stringify(text)}`);
  return Number(m[1]) * TIME_UNITS_MS[m[2]!]!;
}

/** Converts a wrk count such as `12.34k` or `1500` to a number. */
export function parseWrkCount(text: string): number {
  const m = /^([\d.]+)([kMG]?)$/.exec(text.trim());
  if (!m) throw new Error(`unrecognised wrk count: ${JSON.stringify(text)}`);
  return Number(m[1]) * COUNT_UNITS[m[2]!]!;
}

/**
 * Parses the text report that `wrk --latency` prints.
 * Throws when the report lacks the summary lines (wrk failed to connect at all, for example).
 */
export function parseWrkOutput(raw: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(raw);
  const summary = /^\s*(\d+) requests in ([\d.]+\w+),/m.exec(raw);
  if (!rps || !summary) throw new Error(`wrk output has no summary:\n${raw}`);

  const percentile = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+\\w+)\\s*$`, 'm').exec(raw);
    if (!m) throw new Error(`wrk output has no ${p}% latency (was --latency passed?):\n${raw}`);
    return parseWrkDuration(m[1]!);
  };
  const avg = /^\s+Latency\s+([\d.]+\w+)/m.exec(raw);

  const socketErrors: WrkSocketErrors = { connect: 0, read: 0, write: 0, timeout: 0 };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(raw);
  if (sock) {
    socketErrors.connect = Number(sock[1]);
    socketErrors.read = Number(sock[2]);
    socketErrors.write = Number(sock[3]);
    socketErrors.timeout = Number(sock[4]);
  }
  const non2xxMatch = /Non-2xx or 3xx responses: (\d+)/.exec(raw);
  const non2xx = non2xxMatch ? Number(non2xxMatch[1]) : 0;

  return {
    requestsPerSec: Number(rps[1]),
    requests: Number(summary[1]),
    durationS: parseWrkDuration(summary[2]!) / 1000,
    latencyP50Ms: percentile('50'),
    latencyP99Ms: percentile('99'),
    latencyAvgMs: avg ? parseWrkDuration(avg[1]!) : NaN,
    socketErrors,
    non2xx,
    errors: socketErrors.connect + socketErrors.read + socketErrors.write + socketErrors.timeout + non2xx,
    raw,
  };
}

/** Returns true when a `wrk` binary is on PATH. */
export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** Returns wrk's version line (for result files), or 'unknown'. */
export function wrkVersion(): string {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  const line = `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0]?.trim();
  return line || 'unknown';
}

/** Runs wrk once with `--latency` and returns the parsed report. Rejects if wrk fails. */
export async function runWrk(opts: WrkOptions): Promise<WrkResult> {
  const args = [
    `-t${opts.threads ?? 1}`,
    `-c${opts.connections ?? 64}`,
    `-d${opts.durationS ?? 5}s`,
    `--timeout`,
    `${opts.timeoutS ?? 2}s`,
    '--latency',
  ];
  if (opts.script) args.push('-s', opts.script);
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(opts.url);
  if (opts.scriptArgs?.length) args.push('--', ...opts.scriptArgs);

  const { code, stdout, stderr } = await runToEnd('wrk', args);
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${stderr || stdout}`);
  return parseWrkOutput(stdout);
}

/**
 * Runs a command to its end with stdin closed; resolves with its exit code (null when killed by
 * a signal) and its whole stdout and stderr as UTF-8. Rejects when it cannot be started.
 */
export function runToEnd(command: string, args: string[], opts: SpawnOptions = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Median of a non-empty list of numbers (mean of the two middle values for even lengths). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of an empty list');
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Asks the OS for a free TCP port on 127.0.0.1 (bind to port 0, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('could not determine a free port'));
        return;
      }
      srv.close(() => resolve(addr.port));
    });
  });
}

/** A child process started by {@link startProcess}, with its collected output. */
export interface ManagedProcess {
  /** The underlying child process. */
  child: ChildProcess;
  /** A label used in messages. */
  name: string;
  /** Everything the process wrote to stdout and stderr so far (tail-capped). */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string | null>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** Sends SIGTERM, then SIGKILL after `graceMs` if still running; resolves when it is gone. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_CAP = 64 * 1024;

/**
 * Starts a child process whose stdout and stderr are captured (the last 64 KiB are kept for
 * error messages). Set `echo` to also copy its output to this process's stderr.
 */
export function startProcess(
  name: string,
  command: string,
  args: readonly string[],
  options: SpawnOptions & { echo?: boolean } = {},
): ManagedProcess {
  const { echo, ...spawnOpts } = options;
  const child = spawn(command, args, { ...spawnOpts, stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  const collect = (d: Buffer): void => {
    buf += d.toString('utf8');
    if (buf.length > OUTPUT_CAP) buf = buf.slice(-OUTPUT_CAP);
    if (echo) process.stderr.write(d);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);

  let done = false;
  const exited = new Promise<number | string | null>((resolve) => {
    child.on('error', (err) => {
      buf += `\n[spawn error] ${err.message}\n`;
      done = true;
      resolve(null);
    });
    child.on('exit', (code, signal) => {
      done = true;
      resolve(code ?? signal);
    });
  });

  return {
    child,
    name,
    output: () => buf,
    exited,
    hasExited: () => done,
    async stop(graceMs = 5000): Promise<void> {
      if (done) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (!done) child.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `url` with GET until it answers with a status below 500, the process exits, or
 * `timeoutMs` passes. Throws with the process's output in the latter two cases.
 */
export async function waitForHttp(url: string, proc?: ManagedProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc?.hasExited()) {
      throw new Error(`${proc.name} exited before serving ${url}:\n${proc.output()}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status < 500) return;
      lastError = `HTTP ${res.status}`;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  const out = proc ? `\n--- ${proc.name} output ---\n${proc.output()}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${url} (${lastError})${out}`);
}
