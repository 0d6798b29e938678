/**
 * Version report shared by `svc version`, `/api/health` and `/api/meta` (docs/api.md,
 * "Probes"; docs/operations.md, "Command line" and "Upgrades").
 *
 * The product version comes from package.json; the commit and build time are baked in by
 * scripts/build-info.mjs, which writes dist/build-info.json after `tsc`. When running from source
 * (tsx) there is no such file and they read "unknown" / "dev".
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chooseEngine, type EngineChoice } from '../http/uws-loader.js';
import { sqliteVersion } from '../store/engine-version.js';

export interface VersionInfo {
  /** Product version (package.json `version`). */
  svc: string;
  /** Short git commit of the build, or "unknown". */
  commit: string;
  /** Build time `YYYY-MM-DDTHH:MM:SSZ`, or "dev" when running from source. */
  build: string;
  /** `${process.platform}-${process.arch}`, e.g. linux-x64. */
  target: string;
  /** Node.js version without the leading v. */
  node: string;
  /** Database, HTTP library and native dependency versions, in a fixed order. */
  components: Record<string, string>;
  /** The HTTP engine this process uses (docs/api.md, "Probes"): native uWS (which build) or the node:http adapter and why. */
  http: HttpEngineReport;
}

/** `engine` with the uWS package and its version, or the reason no native build loaded (no paths). */
export type HttpEngineReport = { engine: 'uws'; package: string; version: string } | { engine: 'node:http'; reason: string };

/** The engine report of a choice: directories are cut from the reasons (they name install paths). */
export function engineReport(choice: EngineChoice): HttpEngineReport {
  if (choice.engine === 'uws') return { engine: 'uws', package: choice.package, version: choice.version };
  return { engine: 'node:http', reason: choice.reason.replace(/(?:\/[^\s/()'"]+)+\/([^\s/()'"]+)/g, '$1') };
}

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The nearest package.json above this file whose name is "svc" (src/meta or dist/src/meta). */
function ownPackage(): Record<string, unknown> | undefined {
  for (let dir = here; ; dir = path.dirname(dir)) {
    const pkg = readJson(path.join(dir, 'package.json'));
    if (pkg && pkg.name === 'svc') return pkg;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The installed version of a dependency. Looks in the node_modules folders Node would search
 * (via createRequire) rather than require('<pkg>/package.json'), which a package's `exports`
 * map may forbid.
 */
export function packageVersion(name: string): string {
  for (const dir of require.resolve.paths(name) ?? []) {
    const pkg = readJson(path.join(dir, name, 'package.json'));
    if (pkg && typeof pkg.version === 'string') return pkg.version;
  }
  return 'unknown';
}

/** uWebSockets.js release of the chosen build (its major.minor) with the package, or "not loaded". */
function uwsVersion(choice: EngineChoice): string {
  if (choice.engine !== 'uws') return 'not loaded (node:http engine)';
  const m = /^(\d+)\.(\d+)/.exec(choice.version);
  return m ? `${m[1]}.${m[2]} (${choice.package} ${choice.version})` : `${choice.package} ${choice.version}`;
}

let engine: EngineChoice | undefined;
/** The HTTP engine of this process, chosen once (src/http/uws-loader.ts). */
export function httpEngine(): EngineChoice {
  engine ??= chooseEngine();
  return engine;
}

let head: Omit<VersionInfo, 'components' | 'http'> | undefined;
let components: Record<string, string> | undefined;

function readHead(): Omit<VersionInfo, 'components' | 'http'> {
  const pkg = ownPackage();
  // dist/src/meta/version-info.js → dist/build-info.json; from source the file is absent.
  const build = readJson(path.resolve(here, '../../build-info.json'));
  return {
    svc: typeof pkg?.version === 'string' ? pkg.version : 'unknown',
    commit: typeof build?.commit === 'string' ? build.commit : 'unknown',
    build: typeof build?.build === 'string' ? build.build : 'dev',
    target: `${process.platform}-${process.arch}`,
    node: process.versions.node,
  };
}

/** Versions without `components`: loads no native module, cheap enough for any caller. */
export function productVersion(): Omit<VersionInfo, 'components' | 'http'> {
  head ??= readHead();
  return { ...head };
}

/**
 * The full version report, keys in the order svc, commit, build, target, node, components, http.
 * The first call loads libsql to ask SQLite its version; later calls reuse the result.
 */
export function versionInfo(): VersionInfo {
  components ??= {
    libsql: packageVersion('libsql'),
    sqlite: sqliteVersion(),
    'uWebSockets.js': uwsVersion(httpEngine()),
    '@node-rs/argon2': packageVersion('@node-rs/argon2'),
    '@node-rs/xxhash': packageVersion('@node-rs/xxhash'),
    jose: packageVersion('jose'),
    'fast-json-stringify': packageVersion('fast-json-stringify'),
    piscina: packageVersion('piscina'),
  };
  return { ...productVersion(), components: { ...components }, http: engineReport(httpEngine()) };
}
