/**
 * File routes (docs/api.md, "Records": `GET /api/files/:collection/:recordId/:filename`;
 * "Errors": a 416 has an empty body and a Content-Range header).
 *
 * - `POST /api/files/token` (authenticated) → `{token}`: a file token valid 2 minutes
 *   (src/files/file-tokens.ts), passed as `?token=` on a file URL.
 * - `GET`/`HEAD /api/files/:collection/:recordId/:filename`: the caller is the file token's
 *   principal when `?token=` is given (an invalid, expired or revoked one answers 401), else the
 *   bearer token or auth cookie. The record must be visible under the collection's view rule and
 *   hold the file in one of its file fields (404 otherwise, like a record view); a `protected`
 *   file field also needs a caller. Files up to 256 KiB are read whole; larger ones are streamed
 *   with backpressure (Reply.stream), so a download never holds a large file in memory.
 *
 * Headers: Content-Type sniffed from the bytes; strong ETag from size and mtime (a stored name
 * is never rewritten) with If-None-Match → 304; Cache-Control `public, max-age=2592000` when the
 * view rule is `@public` and the field not protected, `private, no-cache` otherwise; single byte
 * ranges (`a-b`, `a-`, `-n`) → 206 with Content-Range; unsatisfiable → 416, empty body,
 * Content-Range `bytes *` + `/<size>`; multiple or malformed ranges are ignored (200).
 * Downloads carry nosniff and a sandboxing CSP;
 * only images, audio, video, PDF and plain text are `inline` (`?download=1` forces attachment).
 *
 * `?thumb=<size>` (docs/files.md, "Thumbnails"): after the same access checks, a size listed in
 * the field's `options.thumbs` serves the stored thumbnail (made on the first request, see
 * src/files/thumbs.ts) with the same headers, its own ETag and sniffed type; any other size, a
 * file that is not an image, or one that cannot be decoded serves the original.
 */
import { ApiError } from '../errors/api-error.js';
import type { Reply, Req, Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { ApiContext } from './context.js';
import { query } from './request.js';
import type { Principal } from '../rules/access.js';
import { detectMime, type FileStorage } from '../files/files.js';
import type { FileTokens } from '../files/file-tokens.js';
import { fileNames } from '../collections/fields/index.js';
import { thumbKey, type Thumbnails } from '../files/thumbs.js';
import type { BlobInfo } from '../files/blob-store.js';
import type { Field } from '../model/schema.js';

/** Files up to this size are read whole; larger ones are streamed. */
export const INLINE_READ_MAX = 256 * 1024;
const SHARED_MAX_AGE_S = 30 * 24 * 3600;
const INLINE_TYPES = /^(?:image\/(?:png|jpeg|gif|webp|avif|bmp|x-icon|vnd\.microsoft\.icon)|video\/[\w.+-]+|audio\/[\w.+-]+|application\/pdf|text\/plain)$/;
const CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

export interface FileDeps {
  storage: FileStorage;
  tokens: FileTokens;
  /** makes `?thumb=` thumbnails (src/files/thumbs.ts) */
  thumbs: Thumbnails;
}

/** A satisfiable single byte range, 'unsatisfiable', or null (no usable Range: send everything). */
export function parseRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  if (m[2] !== '' && Number(m[2]) < start) return null; // invalid: ignored (RFC 9110 §14.2)
  if (start >= size) return 'unsatisfiable';
  return { start, end: m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1) };
}

/** If-None-Match against a strong ETag (weak comparison, `*` matches). */
export function etagMatches(header: string, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v.replace(/^W\//, '') === etag;
  });
}

export function fileRoutes(ctx: ApiContext, deps: FileDeps): Route[] {
  const { store, reads, auth } = ctx;

  const caller = async (req: Req): Promise<Principal | null> => {
    const token = query(req).get('token');
    if (!token) return auth.resolve(req);
    const p = await deps.tokens.verify(token, {
      collection: (id) => store.registry.byId(id),
      record: (c, id) => auth.loadAuthRecord(c, id),
    });
    if (!p) throw ApiError.unauthorized('The file token is invalid or expired.');
    return p;
  };

  /**
   * The stored thumbnail `size` of a file (made now when missing), or null to serve the original:
   * a size the field does not list, not an image, an image that cannot be decoded, or a storage
   * failure while making it (logged).
   */
  const thumbnail = async (field: Field, key: string, filename: string, size: string): Promise<{ key: string; st: BlobInfo } | null> => {
    const sizes = field.options.thumbs;
    if (!Array.isArray(sizes) || !sizes.includes(size)) return null;
    const tk = thumbKey(key, size);
    try {
      const existing = await deps.storage.stat(tk);
      if (existing) return { key: tk, st: existing };
      const mime = await detectMime(await deps.storage.head(key), filename);
      if (!(await deps.thumbs.ensure(key, mime, size))) return null;
      const st = await deps.storage.stat(tk);
      return st ? { key: tk, st } : null;
    } catch (err) {
      ctx.logger.warn(`thumbnail ${size} of ${key}: ${(err as Error).message}`);
      return null;
    }
  };

  const download = async (req: Req): Promise<Reply> => {
    const [col, recordId, filename] = req.params;
    const c = store.registry.find(col);
    if (!c) throw ApiError.notFound();
    const principal = await caller(req);
    const rec = await reads.view(c, recordId, principal, { expand: null, projection: null }, req, 'protectedFile');
    const field = c.fields.find((f) => f.type === 'file' && fileNames(rec[f.name]).includes(filename));
    if (!field || (field.options.protected && !principal)) throw ApiError.notFound();
    const original = deps.storage.key(c.id, recordId, filename);
    const originalStat = original ? await deps.storage.stat(original) : null;
    if (!original || !originalStat) throw ApiError.notFound();
    const thumb = query(req).get('thumb');
    const served = thumb ? await thumbnail(field, original, filename, thumb) : null;
    const key = served?.key ?? original;
    const st = served?.st ?? originalStat;

    const etag = st.etag;
    const shared = !field.options.protected && store.rules.isPublic(c, 'viewRule');
    const headers: Array<[string, string]> = [
      ['ETag', etag],
      ['Cache-Control', shared ? `public, max-age=${SHARED_MAX_AGE_S}` : 'private, no-cache'],
      ['Accept-Ranges', 'bytes'],
    ];
    if (etagMatches(req.headers.ifNoneMatch, etag)) return { status: 304, body: '', headers };
    const range = parseRange(req.headers.range, st.size);
    if (range === 'unsatisfiable') return { status: 416, body: '', headers: [...headers, ['Content-Range', `bytes */${st.size}`]] };

    const whole = st.size <= INLINE_READ_MAX ? await deps.storage.readAll(key) : null;
    const mime = await detectMime(whole ?? (await deps.storage.head(key)), filename);
    const inline = INLINE_TYPES.test(mime) && !query(req).has('download');
    headers.push(
      ['Content-Disposition', `${inline ? 'inline' : 'attachment'}; filename="${filename}"`],
      ['X-Content-Type-Options', 'nosniff'],
      ['Content-Security-Policy', CSP],
    );
    const start = range ? range.start : 0;
    const end = range ? range.end : st.size - 1;
    if (range) headers.push(['Content-Range', `bytes ${start}-${end}/${st.size}`]);
    const status = range ? 206 : 200;
    if (whole) return { status, body: whole.subarray(start, end + 1), contentType: mime, headers };
    return {
      status, body: '', contentType: mime, headers,
      stream: { size: end - start + 1, open: () => deps.storage.read(key, start, end) },
    };
  };

  return [
    {
      method: 'post', pattern: '/api/files/token', handler: async (req) => {
        const p = await auth.resolve(req);
        if (!p) throw ApiError.unauthorized('A file token is issued only to an authenticated caller.');
        return json(200, JSON.stringify({ token: await deps.tokens.issue(p) }));
      },
    },
    { method: 'get', pattern: '/api/files/:collection/:recordId/:filename', fileHeaders: true, handler: download },
  ];
}
