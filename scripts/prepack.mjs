#!/usr/bin/env node
/**
 * `npm pack` / `npm publish` run this first (package.json "prepack"): the tarball ships the
 * compiled code, not the TypeScript sources (package.json "files": dist/, admin-dist/, bin/,
 * docs/), so an installed package needs neither tsc nor tsx (README.md, "Embedding").
 *
 * Steps: remove dist/ (a file left by a deleted source must not ship), `npm run build` (tsc and
 * dist/build-info.json), `npm run build:admin` only when admin-dist/ is missing (it is committed),
 * then check that every entry point the package names exists.
 * Exits 1 with the missing paths when one does not.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = (script) => execFileSync(npm, ['run', script, '--silent'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });

fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
run('build');
if (!fs.existsSync(path.join(root, 'admin-dist', 'index.html'))) run('build:admin');

// What the installed package loads: the root export, both command lines, the worker threads
// (src/store/worker-url.ts), the build facts (`svc version`) and the admin UI (src/api/admin.ts).
const needed = [
  'dist/src/index.js',
  'dist/src/index.d.ts',
  'dist/cli/main.js',
  'dist/devtool/main.js',
  'dist/workers/writer.js',
  'dist/workers/reader.js',
  'dist/workers/hash.js',
  'dist/build-info.json',
  'admin-dist/index.html',
];
const missing = needed.filter((f) => !fs.existsSync(path.join(root, f)));
if (missing.length) {
  process.stderr.write(`prepack: the build did not produce ${missing.join(', ')}\n`);
  process.exit(1);
}
