/**
 * The resumable upload routes (docs/files.md, "Resumable uploads"; present only with the
 * `resumable-uploads` feature):
 *
 *   POST   /api/collections/{collection}/records/{record}/uploads   201 {id, offset, length, expiresAt, state, durability}
 *   PATCH  /api/uploads/{id}     raw bytes, Upload-Offset           204
 *   GET    /api/uploads/{id}                                        200 the session
 *   POST   /api/uploads/{id}/commit                                 204
 *   DELETE /api/uploads/{id}                                        204
 *
 * Every call needs a fresh `Authorization: Bearer` credential (cookies are ignored); a session
 * belongs to the principal (auth collection stable id and record id) that created it, and anyone
 * else gets 404. A commit is the normal record update (src/records/records-write.ts, or the app's
 * hooked update): rules again, the file checks on sniffed content, the file-field snapshot guard,
 * hooks and realtime; a single-file field is replaced, a multi-file field gets the file appended.
 */
import { ApiError } from '../errors/api-error.js';
import { json, noContent, type Reply, type Req, type Route } from '../http/types.js';
import type { ApiContext } from './context.js';
import type { Collection, Field } from '../model/schema.js';
import type { Principal } from '../rules/access.js';
import type { Uploads } from '../files/record-files.js';
import type { StepSink } from '../records/records-write.js';
import { jsonBody } from './request.js';
import { Where } from '../records/record-scope.js';
import { MAX_SESSION_METADATA_BYTES, type PrincipalKey, type UploadSession, type UploadStore } from '../uploads/upload-store.js';
import { metadataBytes } from '../uploads/durable.js';

const OFFSET = /^\d{1,15}$/;
/**
 * Headers that let a tus client (tus-js-client, given the session's URL as `uploadUrl`) resume
 * and send chunks: HEAD/GET report the offset and length as tus headers, PATCH answers the new
 * offset. Browsers may read them cross-origin.
 */
const TUS: Array<[string, string]> = [['Tus-Resumable', '1.0.0'], ['Access-Control-Expose-Headers', 'Upload-Offset, Upload-Length, Location, Tus-Resumable']];
const sessionHeaders = (s: UploadSession): Array<[string, string]> => [['Upload-Offset', String(s.offset)], ['Upload-Length', String(s.length)], ['Cache-Control', 'no-store'], ...TUS];
const CHUNK_TYPES = new Set(['application/octet-stream', 'application/offset+octet-stream']);

/** The upload routes over `uploads`. `maxChunkBody`: the server's request body limit, which also applies to each chunk. */
export function uploadRoutes(ctx: ApiContext, uploads: UploadStore, maxChunkBody: number): Route[] {
  const { store, auth, writes } = ctx;

  /** The caller from its bearer credential alone (401 without one, or with an invalid one). */
  const principalOf = async (req: Req): Promise<{ principal: Principal; key: PrincipalKey }> => {
    uploads.checkUsable();
    if (!/^bearer\s+\S/i.test(req.headers.authorization)) throw ApiError.unauthorized('Upload operations need an Authorization: Bearer credential.');
    const bearerOnly = Object.create(req, { headers: { value: { ...req.headers, cookie: '' } } }) as Req;
    const principal = await auth.resolve(bearerOnly);
    if (!principal) throw ApiError.unauthorized();
    return { principal, key: { collection: principal.collection.id, id: String(principal.record.id) } };
  };

  /** Rule 1: the update rule over the existing record with an empty proposed update; 404 when absent or denied. */
  const preauthorize = async (c: Collection, id: string, principal: Principal): Promise<void> => {
    const check = store.rules.check(c, 'updateRule', principal, {}, 'PATCH');
    if (check.kind === 'deny') throw ApiError.notFound();
    const where = new Where();
    where.add(store.sql.list.ID_EQUALS, [id]);
    where.addRule(check);
    where.addTtl(c);
    if (!(await store.reader.get(store.sql.records.selectOne(c, '1', where.sql()), where.params))) throw ApiError.notFound();
  };

  const create = async (req: Req): Promise<Reply> => {
    const { principal, key } = await principalOf(req);
    const c = store.collection(req.params[0]);
    const recordId = req.params[1];
    await preauthorize(c, recordId, principal);
    const raw = jsonBody(req);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw ApiError.badRequest('The request body must be a JSON object {field, filename, length, mimetype?}.');
    const body = raw as Record<string, unknown>;
    const errors: Record<string, { code: string; message: string }> = {};
    for (const k of Object.keys(body)) {
      if (!['field', 'filename', 'length', 'mimetype'].includes(k)) errors[k] = { code: 'validation_value', message: 'Not an upload field; an upload carries no record edits.' };
    }
    const field = typeof body.field === 'string' ? c.fields.find((f) => f.name === body.field) : undefined;
    if (typeof body.field !== 'string' || !body.field) errors.field = { code: 'validation_required', message: 'The name of a file field is required.' };
    else if (!field || field.type !== 'file') errors.field = { code: 'validation_value', message: `"${body.field}" is not a file field of ${c.name}.` };
    if (typeof body.filename !== 'string' || !body.filename.trim()) errors.filename = { code: 'validation_required', message: 'A file name is required.' };
    else if (/[\u0000-\u001f/\\]/.test(body.filename)) errors.filename = { code: 'validation_value', message: 'The file name may not hold control characters or slashes.' };
    if (!(typeof body.length === 'number' && Number.isSafeInteger(body.length) && body.length > 0)) errors.length = { code: 'validation_value', message: 'The length must be a positive integer (bytes).' };
    if (body.mimetype !== undefined && (typeof body.mimetype !== 'string' || body.mimetype.length > 255 || !/^[\w.+-]+\/[\w.+-]+$/.test(body.mimetype))) errors.mimetype = { code: 'validation_value', message: 'The mimetype must be a MIME type such as image/png.' };
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    const f = field as Field;
    const length = body.length as number;
    const filename = body.filename as string;
    const mimetype = (body.mimetype as string | undefined) ?? '';
    // rule 2: above the field's current maxSize is 413, before any budget or slot is used
    const maxSize = Number(f.options.maxSize ?? 0);
    if (maxSize > 0 && length > maxSize) throw new ApiError(413, 'payload_too_large', `The upload declares ${length} bytes; the field "${f.name}" takes at most ${maxSize}.`);
    if (length > uploads.budgets.max_upload_bytes) throw ApiError.badRequest(`The upload declares ${length} bytes; uploads may have at most ${uploads.budgets.max_upload_bytes}.`);
    const meta = { id: 'x'.repeat(32), principalCollection: key.collection, principalId: key.id, collectionId: c.id, recordId, fieldId: f.id, filename, mimetype };
    if (metadataBytes(meta) > MAX_SESSION_METADATA_BYTES) throw ApiError.badRequest(`The upload's identifying metadata is over ${MAX_SESSION_METADATA_BYTES} bytes (shorten the file name).`);
    // the address share: the client's address as far as it is trusted (a proxy's forwarded hop with --trust-proxy)
    const address = auth.limits.clientIp(req);
    const s = await uploads.create({ principalCollection: key.collection, principalId: key.id, collectionId: c.id, recordId, fieldId: f.id, filename, mimetype, length, address });
    return json(201, JSON.stringify(uploads.view(s)), [['Location', `/api/uploads/${s.id}`], ...sessionHeaders(s)]);
  };

  const view = async (req: Req): Promise<Reply> => {
    const { key } = await principalOf(req);
    const s = await uploads.get(req.params[0], key);
    return json(200, JSON.stringify(uploads.view(s)), sessionHeaders(s));
  };

  /** Rule 3: a chunk's bytes go straight into the session's payload (Route.bodySink). */
  const chunk = async (req: Req, declared: number) => {
    const { key } = await principalOf(req);
    const type = req.headers.contentType.split(';')[0].trim().toLowerCase();
    if (!CHUNK_TYPES.has(type)) throw ApiError.badRequest('A chunk is sent as Content-Type: application/octet-stream.');
    const raw = (req.headers.extra?.['upload-offset'] ?? '').trim();
    if (!OFFSET.test(raw)) throw ApiError.badRequest('The Upload-Offset header must be an unsigned decimal byte offset.');
    return uploads.chunk(req.params[0], key, Number(raw), declared);
  };

  /** Rule 5: the commit as the normal record update, the receipt in its job (persistence mode). */
  const commit = async (req: Req): Promise<Reply> => {
    const { principal, key } = await principalOf(req);
    await uploads.commit(req.params[0], key, async (s: UploadSession, receipt) => {
      // the collection by its stable id: one replaced under the same name is not this target
      const c = store.registry.byId(s.collectionId);
      if (!c) throw ApiError.notFound('The upload\'s collection no longer exists.');
      const f = c.fields.find((x) => x.id === s.fieldId);
      if (!f || f.type !== 'file') throw ApiError.validation({ field: { code: 'validation_value', message: 'The upload\'s file field no longer exists.' } });
      const single = Number(f.options.maxSelect ?? 1) <= 1;
      const files: Uploads = new Map([[single ? f.name : `${f.name}+`, [{ filename: s.filename, data: s.payload! }]]]);
      const sink: StepSink | undefined = receipt.length
        ? { write: (steps) => store.writer.write([...steps, ...receipt]).then((r) => r.slice(0, steps.length)) }
        : undefined;
      await writes.update(c, s.recordId, principal, {}, files, sink, req);
    });
    return noContent();
  };

  const abort = async (req: Req): Promise<Reply> => {
    const { key } = await principalOf(req);
    await uploads.abort(req.params[0], key);
    return noContent();
  };

  return [
    { method: 'post', pattern: '/api/collections/:col/records/:id/uploads', handler: create },
    { method: 'get', pattern: '/api/uploads/:id', handler: view },
    { method: 'patch', pattern: '/api/uploads/:id', handler: () => noContent(), bodySink: chunk, bodyLimit: maxChunkBody, extraHeaders: ['upload-offset'] },
    { method: 'post', pattern: '/api/uploads/:id/commit', handler: commit },
    { method: 'del', pattern: '/api/uploads/:id', handler: abort },
  ];
}
