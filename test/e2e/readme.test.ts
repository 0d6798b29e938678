/**
 * The README and the tutorial pages of docs/ run as written (README.md, "A first collection").
 *
 * Every ```sh block of the pages below is run in order with bash against a fresh `svc serve`,
 * with the README's address (http://127.0.0.1:8090) replaced by the test server's. Variables a
 * block sets (B, TOKEN, ID, …) carry over to the next block, as in one terminal. Markers on the
 * fence line:
 * - ```sh norun: not run (`npm ci && npm start`, `npm test`, long-running commands);
 * - ```sh error: the block shows an error, so its output must hold an error envelope.
 * Any other block must exit 0 (bash with -e and pipefail) and print no `"status": 4xx/5xx`
 * envelope. Relative links of every docs page must name a file that exists.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { backendEnvSync } from '../helpers/backend.js';

/** Pages whose sh blocks are a tutorial, run in this order (each continues the previous). */
const TUTORIAL_PAGES = ['README.md', 'docs/files.md', 'docs/lists.md'];
/** The address the docs use; replaced by the test server's. */
const DOCS_URL = 'http://127.0.0.1:8090';
const ERROR_ENVELOPE = /"status"\s*:\s*[45]\d\d\b/;

interface Block { page: string; line: number; code: string; norun: boolean; error: boolean }

/** The fenced ```sh blocks of a Markdown file, with the markers of their fence line. */
function shBlocks(page: string): Block[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^```(\S*)(.*)$/.exec(lines[i]);
    if (!m || m[1] === '') continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    if (m[1] !== 'sh') continue;
    const tags = m[2].trim().split(/\s+/);
    blocks.push({ page, line: start + 1, code: body.join('\n'), norun: tags.includes('norun'), error: tags.includes('error') });
  }
  return blocks;
}

/** The text of a Markdown file without its fenced blocks (a fence is a line starting with ```). */
function withoutFences(md: string): string {
  let fenced = false;
  return md.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  }).join('\n');
}

let srv: Svc;
let work: string;
before(async () => {
  // no superuser: the README creates it; resumable uploads: docs/files.md asks to start with them
  srv = await startSvc({ superuser: false, args: ['--features=resumable-uploads'] });
  work = mkdtempSync(join(tmpdir(), 'svc-readme-'));
});
after(async () => {
  await srv?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the sh blocks of the README and the tutorial pages run as written', () => {
  const state = join(work, 'state.sh');
  writeFileSync(state, '');
  const env = { ...process.env, ...backendEnvSync(srv.dataDir), SERVICE_DATA_DIR: srv.dataDir };
  let ran = 0;
  for (const page of TUTORIAL_PAGES) {
    for (const b of shBlocks(page)) {
      if (b.norun) continue;
      const where = `${b.page}:${b.line}`;
      const code = b.code.split(DOCS_URL).join(srv.url);
      // one terminal: restore the variables of the blocks before, save them after
      const script = `set -a\n. '${state}'\nset -eo pipefail\ntrap 'export -p > ${JSON.stringify(state)}' EXIT\n${code}\n`;
      const r = spawnSync('bash', ['-c', script], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
      const out = r.stdout ?? '';
      assert.equal(r.status, 0, `${where} exited ${r.status}:\n${code}\n--- stdout\n${out}\n--- stderr\n${r.stderr}`);
      if (b.error) assert.match(out, ERROR_ENVELOPE, `${where} is marked as showing an error but printed none:\n${out}`);
      else assert.doesNotMatch(out, ERROR_ENVELOPE, `${where} answered an error:\n${code}\n--- stdout\n${out}`);
      ran++;
    }
  }
  assert.ok(ran >= 5, `only ${ran} blocks ran`);
});

test('every relative link of the README and docs/ names an existing file and heading', () => {
  const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const problems: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (file: string): Set<string> => {
    let set = anchorsOf.get(file);
    if (!set) {
      set = new Set();
      const seen = new Map<string, number>();
      let fenced = false;
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.startsWith('```')) fenced = !fenced;
        const h = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
        if (!h) continue;
        // GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats
        const base = h[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        set.add(n ? `${base}-${n}` : base);
      }
      anchorsOf.set(file, set);
    }
    return set;
  };
  for (const page of pages) {
    const text = withoutFences(readFileSync(join(ROOT, page), 'utf8'));
    for (const m of text.matchAll(/\]\(([^)\s]+)\)|<img src="([^"]+)"/g)) {
      const target = m[1] ?? m[2];
      if (/^[a-z]+:/.test(target)) continue;
      const [path, hash] = target.split('#');
      const file = path ? resolve(dirname(join(ROOT, page)), path) : join(ROOT, page);
      if (!existsSync(file)) problems.push(`${page}: ${target} (no such file)`);
      else if (hash && file.endsWith('.md') && !anchors(file).has(hash)) problems.push(`${page}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(problems, []);
});
