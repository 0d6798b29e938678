/**
 * The `svc` launcher (bin/svc.js) runs through its own `#!/usr/bin/env -S node …` line, and
 * `npm start` gives node the same flags, so the server users start is the one the benchmark
 * measures (bench/lib/svc.ts reads the flags from that line).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { launcherNodeArgs, REPO_ROOT } from '../../bench/lib/svc.ts';

const execFileP = promisify(execFile);

test('the launcher line bounds the heap, and npm start passes the same flags', () => {
  const flags = launcherNodeArgs();
  assert.ok(flags.includes('--max-semi-space-size=4'), `launcher flags: ${flags.join(' ')}`);
  assert.ok(flags.includes('--heap-growing-percent=50'), `launcher flags: ${flags.join(' ')}`);
  const start = JSON.parse(readFileSync(`${REPO_ROOT}/package.json`, 'utf8')).scripts.start as string;
  assert.equal(start, `node ${flags.join(' ')} dist/cli/main.js serve`);
});

test('bin/svc.js runs as an executable through its launcher line', async () => {
  const { stdout } = await execFileP(`${REPO_ROOT}/bin/svc.js`, ['version', '--json'], { cwd: REPO_ROOT });
  const v = JSON.parse(stdout);
  assert.match(String(v.svc), /^\d+\.\d+\.\d+/);
});
