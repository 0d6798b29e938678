#!/usr/bin/env node
/**
 * Bakes the commit and build time into dist/build-info.json after `tsc` (see
 * src/meta/version-info.ts, which reads it). The commit is `git rev-parse --short HEAD`, or
 * "unknown" outside a git checkout (or before the first commit). SOURCE_DATE_EPOCH, when set,
 * fixes the build time so a rebuild of the same commit is byte-identical.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function commit() {
  try {
    const out = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return /^[0-9a-f]{4,40}$/.test(out) ? out : 'unknown';
  } catch {
    return 'unknown';
  }
}

function buildTime() {
  const epoch = Number(process.env.SOURCE_DATE_EPOCH);
  const date = Number.isFinite(epoch) && process.env.SOURCE_DATE_EPOCH ? new Date(epoch * 1000) : new Date();
  return date.toISOString().slice(0, 19) + 'Z';
}

const info = { commit: commit(), build: buildTime() };
const outDir = path.join(root, 'dist');
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'build-info.json'), JSON.stringify(info, null, 2) + '\n');
