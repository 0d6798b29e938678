/**
 * Backups over HTTP (docs/operations.md, "Backups over HTTP"), in the shape of PocketBase's
 * `pb.backups.*`; superusers only (401 without auth, 403 for anyone else). The work is in
 * src/ops/backup-folder.ts (the archives of `<dataDir>/backups/`) over src/ops/backup.ts.
 *
 * - `GET /api/backups` → `[{key, size, modified}]`, newest first.
 * - `POST /api/backups {name?}` → 204 once the backup is written; 400 for a bad or taken name
 *   or while another backup runs.
 * - `POST /api/backups/upload` (multipart, the archive under `file`) → 204; 400 unless it is a
 *   tar archive with a manifest, or when its name is bad or taken.
 * - `GET /api/backups/{key}` → the archive (`application/x-tar`, attachment, streamed); the
 *   caller is a superuser's bearer token or cookie, or a superuser's file token in `?token=`
 *   (`POST /api/files/token`, src/files/file-tokens.ts).
 * - `DELETE /api/backups/{key}` → 204; `POST /api/backups/{key}/restore` → 204, the restore being
 *   applied at the next start of `svc serve`. An unknown key → 404.
 *
 * On PostgreSQL (`folder` null) every route answers 400: the database is backed up with pg_dump.
 */
import { createReadStream } from 'node:fs';
import { ApiError } from '../errors/api-error.js';
import type { Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import { isMultipart, parseMultipart } from './multipart.js';
import type { Principal } from '../rules/access.js';
import type { FileTokens } from '../files/file-tokens.js';
import { BackupError } from '../ops/backup.js';
import type { BackupFolder } from '../ops/backup-folder.js';

/** The message every route answers on PostgreSQL. */
export const PG_BACKUPS_MESSAGE = 'Backups over HTTP copy the embedded SQLite database; this server uses PostgreSQL (SERVICE_DATABASE_URL): back the database up with pg_dump, and the stored files with the bucket\'s own versioning.';

/** What the backup routes need beside the route context. */
export interface BackupDeps {
  /** the data directory's backups; null on PostgreSQL */
  folder: BackupFolder | null;
  /** verifies a download's `?token=` */
  tokens: FileTokens;
}

/** A BackupError as the API's answer: `not_found` → 404, `io` → 500 (logged), the rest → 400. */
function answer(err: unknown): never {
  if (!(err instanceof BackupError)) throw err;
  if (err.code === 'not_found') throw ApiError.notFound(err.message);
  if (err.code === 'io') throw err;
  throw ApiError.badRequest(err.message);
}

/** Runs `fn`, answering a BackupError it throws as {@link answer} does. */
function attempt<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    answer(err);
  }
}

export function backupRoutes(ctx: ApiContext, deps: BackupDeps): Route[] {
  const superuser = async (req: Req, viaToken = false): Promise<void> => {
    const token = viaToken ? query(req).get('token') : null;
    let p: Principal | null;
    if (token) {
      p = await deps.tokens.verify(token, {
        collection: (id) => ctx.store.registry.byId(id),
        record: (c, id) => ctx.auth.loadAuthRecord(c, id),
      });
      if (!p) throw ApiError.unauthorized('The file token is invalid or expired.');
    } else {
      p = await ctx.auth.resolve(req);
    }
    if (!p) throw ApiError.unauthorized();
    if (!p.superuser) throw ApiError.forbidden('Only superusers can perform this request.');
  };
  /** The folder after the superuser check; 400 on PostgreSQL. */
  const folder = async (req: Req, viaToken = false): Promise<BackupFolder> => {
    await superuser(req, viaToken);
    if (!deps.folder) throw ApiError.badRequest(PG_BACKUPS_MESSAGE);
    return deps.folder;
  };

  return [
    {
      method: 'get', pattern: '/api/backups', handler: async (req) => {
        const f = await folder(req);
        return json(200, JSON.stringify(f.list()));
      },
    },
    {
      method: 'post', pattern: '/api/backups', handler: async (req) => {
        const f = await folder(req);
        const body = jsonBody(req);
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ApiError.badRequest('The body must be a JSON object.');
        const name = (body as { name?: unknown }).name;
        if (name !== undefined && name !== null && name !== '' && typeof name !== 'string') throw ApiError.badRequest('name must be a string.');
        await f.create(typeof name === 'string' && name !== '' ? name : undefined).catch(answer);
        return noContent();
      },
    },
    {
      method: 'post', pattern: '/api/backups/upload', multipart: () => true, handler: async (req) => {
        const f = await folder(req);
        if (!isMultipart(req)) throw ApiError.badRequest('Send the backup archive as multipart/form-data under "file".');
        const { files } = await parseMultipart(req);
        const file = files.get('file');
        if (!file || file.length !== 1) throw ApiError.badRequest('Send exactly one backup archive under "file".');
        await f.saveUpload(file[0].filename, file[0].data).catch(answer);
        return noContent();
      },
    },
    {
      method: 'get', pattern: '/api/backups/:key', handler: async (req) => {
        const f = await folder(req, true);
        const key = req.params[0];
        const path = attempt(() => f.path(key));
        const { size } = attempt(() => f.info(key));
        return {
          status: 200, body: '', contentType: 'application/x-tar',
          headers: [['Content-Disposition', `attachment; filename="${key}"`], ['Cache-Control', 'no-store'], ['X-Content-Type-Options', 'nosniff']],
          stream: { size, open: () => createReadStream(path, { start: 0, end: Math.max(0, size - 1) }) },
        };
      },
    },
    {
      method: 'del', pattern: '/api/backups/:key', handler: async (req) => {
        const f = await folder(req);
        attempt(() => f.delete(req.params[0]));
        return noContent();
      },
    },
    {
      method: 'post', pattern: '/api/backups/:key/restore', handler: async (req) => {
        const f = await folder(req);
        attempt(() => f.requestRestore(req.params[0]));
        return noContent();
      },
    },
  ];
}
