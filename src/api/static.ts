/**
 * Static files at `/` beside the API: `svc serve --public=DIR` (docs/operations.md,
 * "Command line"; docs/devtool.md). The devtool's dev session serves its built site this way.
 *
 * - `GET`/`HEAD /<path>` answers the file DIR/<path>; a directory answers its `index.html` (a path
 *   naming a directory without the trailing slash is redirected to the slash form so relative
 *   links resolve; 302 rather than 301, which browsers cache for good, while a dev rebuild may turn
 *   the path into a file; the Location is rebuilt from the decoded segments, so repeated leading
 *   slashes collapse and it is always a path on this site); anything missing is a plain-text 404
 *   (`Not found.`).
 * - Every file carries `ETag` (size and modification time), `Last-Modified`, `Cache-Control:
 *   no-cache` (a browser keeps the copy and revalidates it: a dev rebuild is seen at once, and an
 *   unchanged file costs a 304), a content type from the extension, `Accept-Ranges: bytes`;
 *   `If-None-Match` answers 304 and one byte range 206 (416 when unsatisfiable). Files over 1 MiB
 *   are streamed.
 * - `/api/…` and `/_/…` are never files: the API's routes and the admin UI win, and an unknown
 *   `/api/` path keeps the JSON 404 envelope.
 * - Containment: each path segment is percent-decoded once; a malformed escape, a NUL, a backslash
 *   or a slash inside a segment is a 400; `.` and `..` segments and dot-files (other than
 *   `.well-known`) are 404; the resolved real path (symlinks followed) must stay inside DIR's real
 *   path, so a symlink pointing out of DIR is a 404 too.
 */
import { createReadStream, realpathSync, statSync, type Stats } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { extname, join, sep } from 'node:path';
import { ApiError } from '../errors/api-error.js';
import type { Reply, Req, Route } from '../http/types.js';
import { etagMatches, parseRange } from './files.js';

/** Files up to this size are read whole; larger ones go out as a stream. */
const INLINE_MAX = 1024 * 1024;
const STREAM_CHUNK = 256 * 1024;

/** Content types by lowercase extension; anything else is application/octet-stream. */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.xml': 'application/xml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg',
  '.wav': 'audio/wav',
};

/** The content type served for a file name. */
export function contentTypeOf(name: string): string {
  return TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
}

const plain = (status: number, text: string): Reply => ({
  status,
  body: `${text}\n`,
  contentType: 'text/plain; charset=utf-8',
  headers: [['Cache-Control', 'no-cache'], ['X-Content-Type-Options', 'nosniff']],
});

/**
 * The decoded segments of a request path, or the reply refusing it (400 malformed, 404 never
 * served). An empty last segment (a trailing slash) is kept as ''.
 */
export function decodeStaticPath(path: string): string[] | Reply {
  const raw = path.split('/').slice(1);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw[i]);
    } catch {
      return plain(400, 'Bad request.');
    }
    if (seg.includes('\0') || seg.includes('/') || seg.includes('\\')) return plain(400, 'Bad request.');
    if (seg === '' && i < raw.length - 1) continue; // `//` collapses
    if (seg === '.' || seg === '..') return plain(404, 'Not found.');
    if (seg.startsWith('.') && seg !== '.well-known') return plain(404, 'Not found.');
    out.push(seg);
  }
  return out;
}

/**
 * The path of decoded `segments` as one local path: `/` then each segment percent-encoded, joined
 * by single slashes. Built from the segments, never from the request's path, so a redirect cannot
 * begin with `//` or `/\` (a browser reads those as another host: `GET //evil.example` must not
 * answer `Location: //evil.example/`). Segments are never empty here (decodeStaticPath collapses
 * repeated slashes and refuses backslashes).
 */
export function localPath(segments: readonly string[]): string {
  return `/${segments.filter((s) => s !== '').map(encodeURIComponent).join('/')}`;
}

/**
 * The routes serving `dir` at `/` (one `GET /*`, HEAD included). Register them after every other
 * GET route and before the final catch-all.
 * @param dir the public directory; resolved through symlinks once, now
 * @throws Error when `dir` is not an existing directory (serve then fails to start)
 */
export function staticRoutes(dir: string): Route[] {
  let root: string;
  try {
    root = realpathSync(dir);
    if (!statSync(root).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new Error(`the public directory ${dir} is not a readable directory (${err instanceof Error ? err.message : String(err)})`);
  }
  const inside = (real: string): boolean => real === root || real.startsWith(root + sep);

  /** The real path and stats of `path` when it exists inside the root; null otherwise. */
  const resolveInside = async (path: string): Promise<{ real: string; st: Stats } | null> => {
    const real = await realpath(path).catch(() => null);
    if (!real || !inside(real)) return null;
    const st = await stat(real).catch(() => null);
    return st ? { real, st } : null;
  };

  const serveFile = async (req: Req, file: string, st: Stats): Promise<Reply> => {
    const etag = `"${st.size.toString(36)}-${Math.trunc(st.mtimeMs).toString(36)}"`;
    const headers: Array<[string, string]> = [
      ['ETag', etag],
      ['Last-Modified', st.mtime.toUTCString()],
      ['Cache-Control', 'no-cache'],
      ['Accept-Ranges', 'bytes'],
      ['X-Content-Type-Options', 'nosniff'],
    ];
    if (etagMatches(req.headers.ifNoneMatch, etag)) return { status: 304, body: '', headers };
    const range = st.size > 0 ? parseRange(req.headers.range, st.size) : null;
    if (range === 'unsatisfiable') return { status: 416, body: '', headers: [...headers, ['Content-Range', `bytes */${st.size}`]] };
    const contentType = contentTypeOf(file);
    const start = range ? range.start : 0;
    const end = range ? range.end : st.size - 1;
    if (range) headers.push(['Content-Range', `bytes ${start}-${end}/${st.size}`]);
    const status = range ? 206 : 200;
    if (st.size <= INLINE_MAX) {
      const whole = await readFile(file);
      return { status, body: range ? whole.subarray(start, end + 1) : whole, contentType, headers };
    }
    return {
      status, body: '', contentType, headers,
      stream: { size: end - start + 1, open: () => createReadStream(file, { start, end, highWaterMark: STREAM_CHUNK }) },
    };
  };

  const handler = async (req: Req): Promise<Reply> => {
    const path = req.path;
    // The API's own namespace keeps its JSON 404 (the final catch-all's envelope).
    if (path === '/api' || path.startsWith('/api/') || path.startsWith('/_/')) throw ApiError.notFound();
    const segments = decodeStaticPath(path);
    if (!Array.isArray(segments)) return segments;
    const trailingSlash = segments.length === 0 || segments[segments.length - 1] === '';
    const target = join(root, ...segments.filter((s) => s !== ''));
    const found = await resolveInside(target);
    if (!found) return plain(404, 'Not found.');
    if (found.st.isDirectory()) {
      if (!trailingSlash) {
        return { status: 302, body: '', headers: [['Location', `${localPath(segments)}/${req.query ? `?${req.query}` : ''}`], ['Cache-Control', 'no-cache']] };
      }
      const index = await resolveInside(join(found.real, 'index.html'));
      if (!index || !index.st.isFile()) return plain(404, 'Not found.');
      return serveFile(req, index.real, index.st);
    }
    if (!found.st.isFile() || trailingSlash) return plain(404, 'Not found.');
    return serveFile(req, found.real, found.st);
  };

  return [{ method: 'get', pattern: '/*', handler, fileHeaders: true }];
}
