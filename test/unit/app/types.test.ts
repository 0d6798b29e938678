/**
 * The app definition's types reject what they can: test/types/app-definition.ts marks
 * each bad definition with @ts-expect-error, so the compile fails if a type accepts one, and
 * checks that a valid app compiles. Runs the project's own TypeScript against the built package
 * root (`svc` resolves to dist/src/index.d.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../helpers/server.js';

test('bad app definitions are type errors; a valid one compiles', () => {
  const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
  const r = spawnSync(tsc, ['-p', join(ROOT, 'test', 'types', 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
