/**
 * End-to-end helpers for the devtool tests: temporary sites, the real built CLI
 * (dist/devtool/main.js) run as a process, the control endpoint, a real SSE client, and cleanup
 * of every session a test started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from './server.js';
import { sleep, until } from './wait.js';

export const DEVTOOL = join(ROOT, 'dist', 'devtool', 'main.js');

/** Every variable that could switch a dev session's mode, removed from the tests' environment. */
const MODE_VARS = [
  'DEVTOOL_DEV_BACKGROUND', 'DEVTOOL_DEV_BACKGROUND_CHILD', 'DEVTOOL_SERVICE_BIN', 'DEVTOOL_READY_TIMEOUT_MS',
  'CLAUDECODE', 'CLAUDE_CODE_ENTRYPOINT', 'CURSOR_AGENT', 'GEMINI_CLI', 'CODEX_SANDBOX', 'CODEX_THREAD_ID', 'AUGMENT_AGENT',
  'CLINE_ACTIVE', 'OPENCODE_CLIENT', 'AMP_CURRENT_THREAD_ID', 'GOOSE_TERMINAL', 'REPL_ID', 'COPILOT_AGENT', 'QWEN_CODE',
  'CURSOR_TRACE_ID', 'PAGER', 'AGENT', 'AI_AGENT', 'SERVICE_HTTP', 'SERVICE_DATA_DIR', 'SERVICE_PUBLIC',
];

/** process.env without the mode variables, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !MODE_VARS.includes(k)) env[k] = v;
  return { ...env, ...extra };
}

const sites: string[] = [];

/** Writes `files` (relative path → content) under a new temporary site directory. */
export function makeSite(files: Record<string, string> = STARTER): string {
  const dir = mkdtempSync(join(tmpdir(), 'devtool-site-'));
  for (const [rel, text] of Object.entries(files)) writeSite(dir, rel, text);
  sites.push(dir);
  return dir;
}

/** Writes one file of a site (creating folders). */
export function writeSite(dir: string, rel: string, text: string): void {
  const file = join(dir, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** A small site using every source kind. */
export const STARTER: Record<string, string> = {
  'site.json': '{"title": "Test site"}\n',
  'layouts/default.html': '<!doctype html><html><head><title>{{ title }} | {{ site.title }}</title><link rel="stylesheet" href="/assets/app.css"></head>\n<body>{{> nav }}\n<main>{{ content }}</main>\n</body></html>\n',
  'layouts/plain.html': '<html><body class="plain">{{ content }}</body></html>\n',
  'components/nav.html': '<nav><a href="/">home</a> <a href="/about/">about</a></nav>\n',
  'components/unused.html': '<p>never referenced</p>\n',
  'content/index.md': '---\ntitle: Home\n---\n# Welcome\n\nHello *world*.\n',
  'content/about.md': '---\ntitle: About\n---\nAbout page.\n',
  'assets/app.css': 'body { color: black; }\n',
};

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `devtool <args>` to completion (asynchronously: the test's event loop keeps running). */
export function devtool(args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [DEVTOOL, ...args], { cwd: opts.cwd, env: opts.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`devtool ${args.join(' ')} timed out:\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 45_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A devtool process left running (a foreground session), with its output so far. */
export interface Running {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** resolves once stdout matches `re` */
  waitOut(re: RegExp, ms?: number): Promise<RegExpExecArray>;
}

/** Spawns `devtool <args>` without waiting for it. */
export function spawnDevtool(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Running {
  const proc = spawn(process.execPath, [DEVTOOL, ...args], { cwd: opts.cwd, env: opts.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  proc.stderr!.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => proc.once('close', (code) => r(code)));
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitOut(re, ms = 20_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = re.exec(out);
        if (m) return m;
        if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`no ${re} in output:\n${out}\n${err}`);
        await sleep(25);
      }
    },
  };
}

export { sleep, until };

/** The lock file `dev.json` of a site (default data dir), or null. */
export function lockInfo(site: string, dataDir = join(site, '.svc')): any {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'dev.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** GET the control status object of a running session. */
export async function controlStatus(info: any): Promise<any> {
  const r = await fetch(`http://${info.host}:${info.control_port}/_devtool/status`);
  return r.json();
}

/** Polls the status endpoint until `build.generation` exceeds `after` and the build settled. */
export async function nextGeneration(info: any, after: number, ms = 10_000): Promise<any> {
  return until(async () => {
    const s = await controlStatus(info);
    return s.build.generation > after && s.build.status !== 'building' && !s.build.pending ? s : null;
  }, ms, `generation > ${after}`);
}

/**
 * Waits until the dev server is quiet: no build running or pending and the build generation
 * unchanged for `quietMs`. A file write can reach the watcher as more than one event, and a late
 * one starts another (good) build, which reloads open pages: a test that counts reloads takes its
 * baseline only after this.
 */
export async function settled(info: any, quietMs = 400, ms = 15_000): Promise<void> {
  let generation = -1;
  let since = Date.now();
  await until(async () => {
    const s = await controlStatus(info);
    if (s.build.status === 'building' || s.build.pending || s.build.generation !== generation) {
      generation = s.build.generation;
      since = Date.now();
      return null;
    }
    return Date.now() - since >= quietMs ? true : null;
  }, ms, 'the dev server to settle');
}

/** Whether a process exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One server-sent event. */
export interface SseEvent {
  event: string;
  id: string;
  data: string;
}

/** A real SSE client over fetch: parses the stream as it arrives. */
export interface SseClient {
  events: SseEvent[];
  status: number;
  headers: Headers;
  /** resolves with the first event named `name` at index >= `from` */
  next(name: string, from?: number, ms?: number): Promise<SseEvent>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const events: SseEvent[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let at: number;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const e: SseEvent = { event: 'message', id: '', data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') e.event = value;
            else if (field === 'id') e.id = value;
            else if (field === 'data') { e.data += (hasData ? '\n' : '') + value; hasData = true; }
          }
          if (hasData) events.push(e);
        }
      }
    } catch {
      /* aborted */
    }
  })();
  return {
    events,
    status: res.status,
    headers: res.headers,
    async next(name, from = 0, ms = 10_000) {
      return until(() => events.slice(from).find((e) => e.event === name), ms, `SSE event ${name}`);
    },
    close: () => ac.abort(),
  };
}

/** Stops every session of the sites made here (best effort) and removes the directories. */
export async function cleanupSites(): Promise<void> {
  for (const dir of sites.splice(0)) {
    const info = lockInfo(dir);
    await devtool(['dev', 'stop'], { cwd: dir }).catch(() => {});
    for (const pid of [info?.pid, info?.svc_pid]) if (pid && alive(pid)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts `devtool dev --background` in `site`; returns the result and the lock file. */
export async function startBackground(site: string, args: string[] = [], env?: Record<string, string>): Promise<{ run: RunResult; info: any }> {
  const run = await devtool(['dev', '--background', ...args], { cwd: site, env });
  if (run.code !== 0) throw new Error(`dev --background failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
  return { run, info: lockInfo(site) };
}
