/**
 * The admin UI at `/_/` (docs/admin.md): the single-page app whose source
 * is `admin/` and whose build output `admin-dist/` is committed, so `npm ci && npm start` serves
 * it with no build step (`npm run build:admin` rebuilds it).
 *
 * - `GET /_` redirects (302) to `/_/`.
 * - `GET /_/`, `/_/index.html` and every other path under `/_/` that is not an asset answer
 *   `index.html` (the app routes on the client), `Cache-Control: no-cache` with an ETag, and a
 *   strict Content-Security-Policy (scripts, styles and connections from this origin only).
 * - `GET /_/assets/<name>` answers a built asset (hashed names: `app-<hash>.js`, `app-<hash>.css`)
 *   with `Cache-Control: public, max-age=31536000, immutable`, gzip-compressed (once, at load)
 *   when the client accepts it; an unknown asset is 404.
 *
 * The files are read once, when the routes are made (the build is small); an asset name is only
 * ever looked up in that map, so no request path reaches the file system.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reply, Req, Route } from '../http/types.js';
import type { ApiContext } from './context.js';
import { etagMatches } from './files.js';

/** Cache lifetime of a hashed asset: a year, never revalidated (its name changes with its bytes). */
const ASSET_CACHE = 'public, max-age=31536000, immutable';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/** What the app may load: its own scripts and styles, images from the API (and local previews). */
const INDEX_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Array<[string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'same-origin'],
  ['X-Frame-Options', 'DENY'],
];

/** The built admin app held in memory: `index.html` and the assets by file name. */
export interface AdminBuild {
  index: Buffer;
  /** by file name; `gzip`: the body gzip-compressed once at load (text assets only) */
  assets: Map<string, { body: Buffer; contentType: string; gzip?: Buffer }>;
}

/**
 * Finds `admin-dist/` beside the package root: the first ancestor of this module's folder that
 * holds it (this file runs from `src/api/` under tsx and from `dist/src/api/` when built).
 */
export function findAdminDist(from = dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = resolve(from);
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'admin-dist');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

/** Reads a build directory (`index.html` and `assets/*`) into memory; null when there is none. */
export function loadAdminBuild(dir: string | null = findAdminDist()): AdminBuild | null {
  if (!dir || !existsSync(join(dir, 'index.html'))) return null;
  const assets = new Map<string, { body: Buffer; contentType: string; gzip?: Buffer }>();
  const assetDir = join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const path = join(assetDir, name);
      if (!statSync(path).isFile()) continue;
      const body = readFileSync(path);
      const contentType = CONTENT_TYPES[extname(name)] ?? 'application/octet-stream';
      const compressible = /^(text\/|application\/json|image\/svg)/.test(contentType);
      assets.set(name, compressible ? { body, contentType, gzip: gzipSync(body, { level: 9 }) } : { body, contentType });
    }
  }
  return { index: readFileSync(join(dir, 'index.html')), assets };
}

/**
 * The `/_/` routes serving `build` (by default the `admin-dist/` found beside the package). With
 * no build present, `/_/` answers a plain-text 404 saying how to make one (and a warning is logged).
 */
export function adminRoutes(ctx: Pick<ApiContext, 'logger'>, build: AdminBuild | null = loadAdminBuild()): Route[] {
  const redirect = (): Reply => ({ status: 302, body: '', headers: [['Location', '/_/']] });
  if (!build) {
    ctx.logger.warn('the admin UI is not built (no admin-dist/index.html): /_/ answers 404; build it with npm run build:admin');
    const missing = (): Reply => ({ status: 404, body: 'The admin UI is not built: run `npm run build:admin`.\n', contentType: 'text/plain; charset=utf-8' });
    return [
      { method: 'get', pattern: '/_', handler: redirect },
      { method: 'get', pattern: '/_/', handler: missing },
      { method: 'get', pattern: '/_/*', handler: missing },
    ];
  }
  const etag = `"${createHash('sha256').update(build.index).digest('base64url').slice(0, 22)}"`;
  const indexHeaders: Array<[string, string]> = [
    ['Cache-Control', 'no-cache'],
    ['ETag', etag],
    ['Content-Security-Policy', INDEX_CSP],
    ...SECURITY_HEADERS,
  ];
  const index = (req: Req): Reply => {
    if (etagMatches(req.headers.ifNoneMatch, etag)) return { status: 304, body: '', headers: indexHeaders };
    return { status: 200, body: build.index, contentType: 'text/html; charset=utf-8', headers: indexHeaders };
  };
  const assetHeaders: Array<[string, string]> = [['Cache-Control', ASSET_CACHE], ['X-Content-Type-Options', 'nosniff'], ['Vary', 'Accept-Encoding']];
  const gzipHeaders: Array<[string, string]> = [...assetHeaders, ['Content-Encoding', 'gzip']];
  const notFound = (): Reply => ({ status: 404, body: 'Not found.\n', contentType: 'text/plain; charset=utf-8', headers: [['Cache-Control', 'no-cache']] });
  const any = (req: Req): Reply => {
    if (!req.path.startsWith('/_/assets/')) return index(req);
    const asset = build.assets.get(req.path.slice('/_/assets/'.length));
    if (!asset) return notFound();
    // the text assets go out gzip-compressed to every client that takes it (all browsers)
    if (asset.gzip && /\bgzip\b/.test(req.headers.extra?.['accept-encoding'] ?? '')) return { status: 200, body: asset.gzip, contentType: asset.contentType, headers: gzipHeaders };
    return { status: 200, body: asset.body, contentType: asset.contentType, headers: assetHeaders };
  };
  return [
    { method: 'get', pattern: '/_', handler: redirect },
    { method: 'get', pattern: '/_/', handler: index, fileHeaders: true },
    { method: 'get', pattern: '/_/*', handler: any, fileHeaders: true, extraHeaders: ['accept-encoding'] },
  ];
}
