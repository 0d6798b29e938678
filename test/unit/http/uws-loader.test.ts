/**
 * The HTTP engine loader: candidates are tried in a fixed order, one is accepted only
 * when its native binding loads, a JavaScript shim is refused, and without any the choice is the
 * `node:http` adapter with the reasons. Fake packages in a temporary node_modules stand for the
 * failure cases; the real `@trufflesuite/uws-js-unofficial` (native on Node 20 here) for success.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chooseEngine, UWS_CANDIDATES, type UwsCandidate } from '../../../src/http/uws-loader.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const abi = process.versions.modules;
const realTruffle = UWS_CANDIDATES.find((c) => c.name === '@trufflesuite/uws-js-unofficial')!;
const nativeHere = process.versions.node.startsWith('20.');

function sandbox(): { dir: string; from: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-uws-'));
  const nm = join(dir, 'node_modules');
  mkdirSync(join(nm, '@trufflesuite'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules', '@trufflesuite', 'uws-js-unofficial'), join(nm, '@trufflesuite', 'uws-js-unofficial'));
  // a package whose binary is not a loadable library (as a build for a newer C library fails to load)
  mkdirSync(join(nm, 'fake-broken'));
  writeFileSync(join(nm, 'fake-broken', 'package.json'), JSON.stringify({ name: 'fake-broken', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(nm, 'fake-broken', 'index.js'), 'module.exports = {};');
  writeFileSync(join(nm, 'fake-broken', `uws_${process.platform}_${process.arch}_${abi}.node`), 'not a shared library');
  // a package that loads a real binary but hands out a JavaScript shim (no getParts)
  mkdirSync(join(nm, 'fake-shim'));
  writeFileSync(join(nm, 'fake-shim', 'package.json'), JSON.stringify({ name: 'fake-shim', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(nm, 'fake-shim', 'index.js'), 'module.exports = { App() { return {}; } };');
  const from = pathToFileURL(join(dir, 'entry.js')).href;
  return { dir, from, done: () => rmSync(dir, { recursive: true, force: true }) };
}

const broken: UwsCandidate = { name: 'fake-broken', binary: (p, a, v) => `uws_${p}_${a}_${v}.node` };
const shim: UwsCandidate = { name: 'fake-shim', binary: (p, a, v) => join('..', '@trufflesuite', 'uws-js-unofficial', 'binaries', `uws_${p}_${a}_${v}.node`) };
const missing: UwsCandidate = { name: 'not-installed-anywhere', binary: () => 'x.node' };

test('candidates are tried in order; a broken binary, a shim and a missing package are skipped with reasons', { skip: !nativeHere && 'the native @trufflesuite build exists for Node 20 only' }, () => {
  const s = sandbox();
  try {
    const c = chooseEngine([missing, broken, shim, realTruffle], {}, s.from);
    assert.equal(c.engine, 'uws');
    assert.equal(c.engine === 'uws' && c.package, '@trufflesuite/uws-js-unofficial');
    assert.equal(c.skipped.length, 3);
    assert.match(c.skipped[0], /^not-installed-anywhere: not installed$/);
    assert.match(c.skipped[1], /^fake-broken: the native binding does not load/);
    assert.match(c.skipped[2], /^fake-shim: only its JavaScript fallback loaded$/);
    // first acceptable wins
    const first = chooseEngine([realTruffle, broken], {}, s.from);
    assert.equal(first.engine, 'uws');
    assert.deepEqual(first.skipped, []);
  } finally {
    s.done();
  }
});

test('without a native build the choice is node:http, with every reason; SERVICE_HTTP_ENGINE=node forces it', () => {
  const s = sandbox();
  try {
    const none = chooseEngine([missing, broken, shim], {}, s.from);
    assert.equal(none.engine, 'node:http');
    assert.equal(none.skipped.length, 3);
    assert.ok(none.engine === 'node:http' && none.reason.includes('fake-broken'), JSON.stringify(none));
    const forced = chooseEngine([realTruffle], { SERVICE_HTTP_ENGINE: 'node' }, s.from);
    assert.deepEqual(forced, { engine: 'node:http', reason: 'SERVICE_HTTP_ENGINE=node', skipped: [] });
  } finally {
    s.done();
  }
});

test('the shipped order: btc-vision first, then trufflesuite', () => {
  assert.deepEqual(UWS_CANDIDATES.map((c) => c.name), ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial']);
  assert.equal(UWS_CANDIDATES[1].binary('linux', 'x64', '115'), join('binaries', 'uws_linux_x64_115.node'));
});
