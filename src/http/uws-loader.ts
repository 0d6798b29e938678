/**
 * Chooses the HTTP engine (docs/internals.md): the best native uWebSockets.js build for the running
 * Node and platform, or none, in which case the server runs on the `node:http` adapter.
 *
 * The candidates are tried in a fixed order, and one is accepted only when its native binding
 * really loads: the binary for this platform, architecture and Node ABI must exist and load
 * (dlopen fails on an older glibc), and the module must be the native one. A package that falls
 * back to its JavaScript shim (as `@trufflesuite/uws-js-unofficial` does where it has no binary,
 * printing to stderr) is refused: the shim is slower than `node:http` and not uWS at all. Nothing
 * here prints; the caller logs the one warning line when the fallback is used.
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

/** A native uWS build on the registry and where its binary for this process lives. */
export interface UwsCandidate {
  /** npm package name */
  name: string;
  /** path of the native binary for this process, relative to the package directory */
  binary(platform: string, arch: string, abi: string): string;
}

/**
 * The candidates in the order tried: `@btc-vision/uwebsockets.js` (20.57: Node 20, 22, 24 and 25;
 * needs glibc 2.38 or newer), then `@trufflesuite/uws-js-unofficial` (20.30: Node 16, 18 and 20 on
 * older glibc, such as Debian 12).
 */
export const UWS_CANDIDATES: readonly UwsCandidate[] = [
  { name: '@btc-vision/uwebsockets.js', binary: (p, a, abi) => `uws_${p}_${a}_${abi}.node` },
  { name: '@trufflesuite/uws-js-unofficial', binary: (p, a, abi) => join('binaries', `uws_${p}_${a}_${abi}.node`) },
];

/** The engine chosen: uWS (which package, which version) or the `node:http` adapter and why. */
export type EngineChoice =
  | { engine: 'uws'; package: string; version: string; uws: typeof UWS; skipped: string[] }
  | { engine: 'node:http'; reason: string; skipped: string[] };

/**
 * Tries `candidates` in order; returns the first whose native binding loads, else the
 * `node:http` choice with the reasons each candidate was skipped (one short sentence each).
 * `SERVICE_HTTP_ENGINE=node` forces the adapter (for comparisons and tests).
 * @param resolveFrom a file whose location packages are resolved from (default: this module)
 */
export function chooseEngine(candidates: readonly UwsCandidate[] = UWS_CANDIDATES, env: NodeJS.ProcessEnv = process.env, resolveFrom: string = import.meta.url): EngineChoice {
  const skipped: string[] = [];
  if (env.SERVICE_HTTP_ENGINE === 'node') return { engine: 'node:http', reason: 'SERVICE_HTTP_ENGINE=node', skipped };
  const require = createRequire(resolveFrom);
  for (const c of candidates) {
    const pkgJson = packageJsonOf(require, c.name);
    if (!pkgJson) {
      skipped.push(`${c.name}: not installed`);
      continue;
    }
    const dir = dirname(pkgJson);
    const binary = join(dir, c.binary(process.platform, process.arch, process.versions.modules));
    if (!existsSync(binary)) {
      skipped.push(`${c.name}: no binary for ${process.platform}-${process.arch} Node ABI ${process.versions.modules} (Node ${process.versions.node})`);
      continue;
    }
    try {
      require(binary); // dlopen: fails here on a C library older than the build needs
    } catch (err) {
      skipped.push(`${c.name}: the native binding does not load (${firstLine(err)})`);
      continue;
    }
    let mod: typeof UWS;
    try {
      mod = require(c.name) as typeof UWS;
    } catch (err) {
      skipped.push(`${c.name}: ${firstLine(err)}`);
      continue;
    }
    if (!isNative(mod)) {
      skipped.push(`${c.name}: only its JavaScript fallback loaded`);
      continue;
    }
    const version = String((JSON.parse(readFileSync(pkgJson, 'utf8')) as { version?: string }).version ?? '');
    return { engine: 'uws', package: c.name, version, uws: mod, skipped };
  }
  return { engine: 'node:http', reason: skipped.length ? skipped.join('; ') : 'no uWebSockets.js candidate', skipped };
}

/**
 * The package.json of an installed package, found from its entry point (a package's `exports`
 * may hide `package.json` itself); null when the package is not installed.
 */
function packageJsonOf(require: NodeJS.Require, name: string): string | null {
  let entry: string;
  try {
    entry = require.resolve(name);
  } catch {
    return null;
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === name) return file;
  }
  return null;
}

/** The native module exports `getParts` and `App`; the JavaScript shims lack `getParts`. */
function isNative(mod: unknown): boolean {
  const m = mod as { getParts?: unknown; App?: unknown };
  return typeof m?.getParts === 'function' && typeof m.App === 'function';
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0].slice(0, 200);
}
