/**
 * A devtool site directory and its data directory (docs/devtool.md).
 *
 * Site layout: `site.json` (optional `{title, base}`), `content/**\/*.md`, `layouts/*.html`,
 * `components/*.html`, `assets/**`. The data directory (default `<site>/.svc/`) holds the build
 * output `site/`, the service's own data `data/`, the session files and, for a site with a URL
 * prefix, the staged `.served-root/`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BuildError } from './errors.js';

/** The source folders a site may have; the dev session watches those present at its start. */
export const SOURCE_DIRS = ['content', 'layouts', 'components', 'assets'] as const;
export type SourceDir = (typeof SOURCE_DIRS)[number];

/** A site's settings (`site.json`, every key optional). */
export interface SiteConfig {
  /** absolute path of the site directory */
  dir: string;
  /** `site.json` `title` ('' when absent) */
  title: string;
  /** URL path prefix: `/` or `/a/b/` (leading and trailing slash); `site.json` `base` */
  base: string;
}

/**
 * Normalizes a URL prefix to `/` or `/seg/…/`.
 * @throws Error for a segment outside `[A-Za-z0-9._~-]` or a `.`/`..` segment
 */
export function normalizeBase(raw: string): string {
  const segments = raw.split('/').filter((s) => s !== '');
  for (const s of segments) {
    if (!/^[A-Za-z0-9._~-]+$/.test(s) || s === '.' || s === '..') throw new Error(`invalid URL prefix "${raw}": segments may hold only letters, digits and . _ ~ -`);
  }
  return segments.length ? `/${segments.join('/')}/` : '/';
}

/**
 * Reads `<dir>/site.json` (absent: title '' and base `/`); `basePrefix` (the `--url-prefix` flag)
 * overrides `base`.
 * @throws BuildError naming site.json and the line of a syntax error or a bad value
 */
export function loadSiteConfig(dir: string, basePrefix?: string): SiteConfig {
  const abs = resolve(dir);
  const file = join(abs, 'site.json');
  let title = '';
  let base = '/';
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const pos = /position (\d+)/.exec(message);
      const line = pos ? text.slice(0, Number(pos[1])).split('\n').length : 1;
      throw new BuildError('site.json', line, `invalid JSON: ${message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new BuildError('site.json', 1, 'expected a JSON object');
    const obj = parsed as Record<string, unknown>;
    const lineOf = (key: string): number => {
      const at = text.indexOf(`"${key}"`);
      return at < 0 ? 1 : text.slice(0, at).split('\n').length;
    };
    if (obj.title !== undefined) {
      if (typeof obj.title !== 'string') throw new BuildError('site.json', lineOf('title'), '"title" must be a string');
      title = obj.title;
    }
    if (obj.base !== undefined) {
      if (typeof obj.base !== 'string') throw new BuildError('site.json', lineOf('base'), '"base" must be a string such as "/" or "/docs/"');
      try {
        base = normalizeBase(obj.base);
      } catch (err) {
        throw new BuildError('site.json', lineOf('base'), (err as Error).message);
      }
    }
  }
  if (basePrefix !== undefined) base = normalizeBase(basePrefix);
  return { dir: abs, title, base };
}

/** Every path of a data directory, by role (docs/devtool.md). */
export interface DataPaths {
  /** absolute data directory (`.svc/` under the site unless `--data-dir`) */
  dataDir: string;
  /** build output (no prefix directory) */
  out: string;
  /** the staged served root of a prefixed site (`.served-root/`) */
  servedRoot: string;
  /** the service binary's data directory */
  serviceData: string;
  /** `dev.lock`: held under an exclusive advisory lock by the live session */
  lock: string;
  /** `dev.json`: the published lock file */
  lockFile: string;
  /** `dev.log`: a background session's stdout and stderr */
  log: string;
  /** `last-build.log`: the latest rebuild's captured output */
  lastBuildLog: string;
  /** `dev.ndjson`: build events */
  events: string;
}

/** The data directory for a site: `dataDirFlag` resolved against the site, else `<site>/.svc`. */
export function resolveDataDir(siteDir: string, dataDirFlag?: string): string {
  return dataDirFlag ? resolve(siteDir, dataDirFlag) : join(resolve(siteDir), '.svc');
}

/** The paths of the files in `dataDir`. */
export function dataPaths(dataDir: string): DataPaths {
  return {
    dataDir,
    out: join(dataDir, 'site'),
    servedRoot: join(dataDir, '.served-root'),
    serviceData: join(dataDir, 'data'),
    lock: join(dataDir, 'dev.lock'),
    lockFile: join(dataDir, 'dev.json'),
    log: join(dataDir, 'dev.log'),
    lastBuildLog: join(dataDir, 'last-build.log'),
    events: join(dataDir, 'dev.ndjson'),
  };
}
