/**
 * `npm run bench:devtool` (its two figures), with the built CLI (`npm run build` first):
 *
 * 1. ready time: wall time of `devtool dev --background` for examples/site, from spawn to the
 *    parent's exit 0 (the site answers), over RUNS sessions (each stopped before the next);
 *    target under 3 s.
 * 2. edit latency: on a generated 1,000-page site, time from writing one content file to the
 *    status endpoint reporting a new generation (polled every 5 ms), over EDITS edits; target
 *    under 1 s.
 *
 * Prints one line per figure and a JSON summary. Usage: `npm run bench:devtool [-- --runs=5 --edits=20]`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const DEVTOOL = join(ROOT, 'dist', 'devtool', 'main.js');
const arg = (name: string, dflt: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const RUNS = arg('runs', 5);
const EDITS = arg('edits', 20);

const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(DEVTOOL_|CLAUDE|CURSOR|CODEX|GEMINI|AGENT$|AI_AGENT$)/.test(k)) env[k] = v;

function run(args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const p = spawn(process.execPath, [DEVTOOL, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('close', (code) => res({ code, out }));
  });
}

const stats = (xs: number[]): { min: number; median: number; p95: number; max: number } => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { min: s[0], median: at(0.5), p95: at(0.95), max: s[s.length - 1] };
};
const ms = (n: number): string => `${n.toFixed(0)} ms`;

async function readyTime(): Promise<number[]> {
  const site = join(ROOT, 'examples', 'site');
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const data = mkdtempSync(join(tmpdir(), 'devtool-bench-'));
    const t0 = performance.now();
    const r = await run(['dev', '--background', `--data-dir=${data}`], site);
    const t = performance.now() - t0;
    if (r.code !== 0) throw new Error(`dev --background failed:\n${r.out}`);
    times.push(t);
    await run(['dev', 'stop', `--data-dir=${data}`], site);
    rmSync(data, { recursive: true, force: true });
  }
  return times;
}

async function editLatency(): Promise<{ latencies: number[]; pages: number }> {
  const site = mkdtempSync(join(tmpdir(), 'devtool-bench-site-'));
  const write = (rel: string, text: string): void => {
    mkdirSync(dirname(join(site, rel)), { recursive: true });
    writeFileSync(join(site, rel), text);
  };
  write('site.json', '{"title": "Bench"}');
  write('layouts/default.html', '<!doctype html><html><head><title>{{ title }}</title></head><body>{{> nav }}<main>{{ content }}</main></body></html>');
  write('components/nav.html', '<nav><a href="/">home</a></nav>');
  const PAGES = 1000;
  for (let i = 0; i < PAGES; i++) {
    write(`content/section-${i % 10}/page-${i}.md`, `---\ntitle: Page ${i}\n---\n# Page ${i}\n\n${'Some **Markdown** with a [link](/section-1/page-1/) and `code`. '.repeat(8)}\n\n- one\n- two\n- three\n`);
  }
  const started = await run(['dev', '--background'], site);
  if (started.code !== 0) throw new Error(`dev --background failed:\n${started.out}`);
  const info = JSON.parse(readFileSync(join(site, '.svc', 'dev.json'), 'utf8'));
  const statusUrl = `http://${info.host}:${info.control_port}/_devtool/status`;
  const status = async (): Promise<any> => (await fetch(statusUrl)).json();
  const latencies: number[] = [];
  try {
    for (let i = 0; i < EDITS; i++) {
      const before = (await status()).build.generation;
      const t0 = performance.now();
      write(`content/section-3/page-${300 + i}.md`, `---\ntitle: Edited ${i}\n---\n# Edited ${i}\n\nNew text ${Date.now()}.\n`);
      for (;;) {
        const s = await status();
        if (s.build.generation > before) {
          if (s.build.status !== 'ok') throw new Error(`build failed: ${s.build.error}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
      latencies.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await run(['dev', 'stop'], site);
    rmSync(site, { recursive: true, force: true });
  }
  return { latencies, pages: PAGES };
}

const ready = await readyTime();
const r = stats(ready);
console.log(`dev --background ready (examples/site, ${RUNS} runs): median ${ms(r.median)}, min ${ms(r.min)}, max ${ms(r.max)} (target < 3000 ms)`);
const { latencies, pages } = await editLatency();
const e = stats(latencies);
console.log(`one-file edit to new generation (${pages} pages, ${EDITS} edits): median ${ms(e.median)}, p95 ${ms(e.p95)}, max ${ms(e.max)} (target < 1000 ms)`);
console.log(JSON.stringify({ ready_ms: r, edit_to_generation_ms: e }));
