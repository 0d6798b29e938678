/**
 * `POST /api/batch`: several record writes in one transaction, in PocketBase's shape, which its JS
 * SDK's `pb.createBatch()` sends (docs/api.md, "Batch"; docs/pocketbase.md).
 *
 * The body is `{requests: [{method, url, body?, headers?}]}`, as JSON or as multipart/form-data
 * with that object in a `@jsonPayload` part and each request's files under
 * `requests.<index>.<file field>` (`<field>+` appends). Each request is a create (`POST
 * /api/collections/:col/records`), an update (`PATCH …/records/:id`), a delete (`DELETE
 * …/records/:id`) or an upsert (`PUT …/records`: an update when the body's `id` names an existing
 * record, else a create); its query string may carry `expand` and `fields` for its answer.
 *
 * Every request runs as the caller, under its collection's rules as it would alone, with the
 * record events firing as for a single write; all of them are one write job of the writer
 * (runWriteBatch, src/records/records-write.ts), in the order given, so all are written or none.
 * The answer is `[{status, body}]` in request order. When one fails the answer is 400
 * `batch_failed` with `data.requests.<index>` = `{code, message, response}` (`response`: the error
 * envelope the request would have had alone) and nothing is written.
 */
import { ApiError, knownApiError, writeErrorBody, type FieldError } from '../errors/api-error.js';
import type { Req, Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { isMultipart, parseMultipart, recordUploads } from './multipart.js';
import { writtenRecordJson } from './records.js';
import type { Principal } from '../rules/access.js';
import type { Collection } from '../model/schema.js';
import type { Upload, Uploads } from '../files/record-files.js';
import { readShape, type ReadShape } from '../records/records-read.js';
import { runWriteBatch, stripServerManaged } from '../records/records-write.js';

/** One request of a batch, checked and resolved before anything runs. */
interface BatchItem {
  action: 'create' | 'update' | 'delete' | 'upsert';
  collection: Collection;
  /** the record id of an update or delete */
  id: string;
  /** its answer's `expand` and `fields`, from its url's query string */
  shape: ReadShape;
  body: Record<string, unknown>;
  uploads: Uploads | null;
}

const RECORDS_URL = /^\/api\/collections\/([^/?#]+)\/records(?:\/([^/?#]+))?\/?(?:\?(.*))?$/;

/** A request's own failure as `data.requests.<index>` (PocketBase's `{code, message, response}`). */
function failure(index: number, err: ApiError): ApiError {
  const entry = { code: err.code, message: err.message, response: JSON.parse(writeErrorBody(err)) as unknown };
  // `data` of this code nests one level deeper than a field error (docs/api.md, "Batch")
  const data = { requests: { [String(index)]: entry } } as unknown as Record<string, FieldError>;
  return new ApiError(400, 'batch_failed', 'Batch transaction failed.', data);
}

/** 400 `validation_failed` on the `requests` key itself (missing, empty, too many). */
function invalidRequests(code: string, message: string): ApiError {
  return ApiError.validation({ requests: { code, message } });
}

/** A password change ends the record's other sessions (src/api/records.ts): only as its own PATCH. */
function refusePasswordChange(c: Collection, body: Record<string, unknown>): void {
  if (c.type === 'auth' && 'password' in body) throw ApiError.badRequest('A password is changed with its own PATCH request, not in a batch (it ends the record\'s other sessions).');
}

export function batchRoutes(ctx: ApiContext): Route[] {
  const { store, writes, auth } = ctx;
  const { batchMaxRequests: maxRequests, batchMaxBodyBytes } = ctx.config.limits;

  /** The body and each request's files (multipart), by index. */
  const readBody = async (req: Req): Promise<{ body: unknown; files: Map<number, Map<string, Upload[]>> }> => {
    const files = new Map<number, Map<string, Upload[]>>();
    if (!isMultipart(req)) return { body: jsonBody(req), files };
    const form = await parseMultipart(req);
    const payload = form.fields.get('@jsonPayload');
    form.fields.delete('@jsonPayload');
    if (!payload || payload.length !== 1) throw ApiError.badRequest('A multipart batch carries its requests as JSON in one `@jsonPayload` part.');
    const [other] = form.fields.keys();
    if (other !== undefined) throw ApiError.badRequest(`A multipart batch takes only \`@jsonPayload\` and files under \`requests.<index>.<field>\`, not the form value "${other}".`);
    let body: unknown;
    try {
      body = JSON.parse(payload[0]);
    } catch {
      throw ApiError.badRequest('@jsonPayload must be a JSON object.');
    }
    for (const [name, list] of form.files) {
      const m = /^requests\.(\d{1,6})\.(.+)$/.exec(name);
      if (!m) throw ApiError.badRequest(`A batch's files go under \`requests.<index>.<field>\`, not "${name}".`);
      const index = Number(m[1]);
      const byField = files.get(index) ?? new Map<string, Upload[]>();
      byField.set(m[2], list);
      files.set(index, byField);
    }
    return { body, files };
  };

  /** One request resolved to its action, collection and body; throws its own error (ApiError). */
  const resolveItem = (raw: unknown, files: Map<string, Upload[]> | undefined, callerAuthorization: string): BatchItem => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw ApiError.badRequest('A batch request must be an object {method, url, body, headers}.');
    const r = raw as Record<string, unknown>;
    const method = typeof r.method === 'string' ? r.method.toUpperCase() : '';
    const url = typeof r.url === 'string' ? r.url : '';
    const m = RECORDS_URL.exec(url);
    if (!m) throw ApiError.badRequest('A batch request\'s url must be /api/collections/:col/records or /api/collections/:col/records/:id.');
    const decode = (v: string): string => {
      try {
        return decodeURIComponent(v);
      } catch {
        throw ApiError.badRequest('Malformed percent-encoding in a batch request\'s url.');
      }
    };
    const id = m[2] === undefined ? '' : decode(m[2]);
    const action = method === 'POST' && !id ? 'create' : method === 'PATCH' && id ? 'update' : method === 'DELETE' && id ? 'delete' : method === 'PUT' && !id ? 'upsert' : null;
    if (!action) throw ApiError.badRequest(`A batch takes POST and PUT on …/records and PATCH and DELETE on …/records/:id, not ${method || 'no method'} on ${url}.`);
    const body = r.body ?? {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ApiError.badRequest('A batch request\'s body must be a JSON object.');
    if (r.headers !== undefined && r.headers !== null) {
      if (typeof r.headers !== 'object' || Array.isArray(r.headers)) throw ApiError.badRequest('A batch request\'s headers must be an object.');
      for (const [k, v] of Object.entries(r.headers)) {
        // every request runs as the batch's caller; another identity per request is refused
        if (k.toLowerCase() === 'authorization' && v !== callerAuthorization) throw ApiError.badRequest('A batch request cannot carry its own Authorization: every request runs as the caller of the batch.');
      }
    }
    const collection = store.collection(decode(m[1]));
    const cleaned = stripServerManaged(collection, body) as Record<string, unknown>;
    if (action === 'update') refusePasswordChange(collection, cleaned);
    return { action, collection, id, shape: readShape(m[3] ?? ''), body: cleaned, uploads: files ? recordUploads(collection, files) : null };
  };

  return [
    {
      method: 'post', pattern: '/api/batch', bodyLimit: batchMaxBodyBytes, handler: async (req) => {
        const principal: Principal | null = await auth.resolve(req);
        const { body, files } = await readBody(req);
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ApiError.badRequest('The batch body must be a JSON object {requests: [...]}.');
        const list = (body as { requests?: unknown }).requests;
        if (!Array.isArray(list) || list.length === 0) throw invalidRequests('validation_required', 'Give at least one request.');
        if (list.length > maxRequests) throw invalidRequests('validation_max', `At most ${maxRequests} requests in a batch (SERVICE_BATCH_MAX_REQUESTS).`);
        for (const index of files.keys()) if (index >= list.length) throw ApiError.badRequest(`Files under requests.${index} name no request.`);
        const items = list.map((raw, index) => {
          try {
            return resolveItem(raw, files.get(index), req.headers.authorization);
          } catch (err) {
            const known = knownApiError(err);
            throw known ? failure(index, known) : err;
          }
        });

        const { settled, failed } = await runWriteBatch(store.writer, items.map((it) => async (sink) => {
          const { collection: c } = it;
          let action = it.action;
          if (action === 'upsert') {
            const id = it.body.id;
            // PocketBase's upsert: an update when the id names an existing record (whoever may see it), else a create
            const exists = typeof id === 'string' && id !== '' && (await store.reader.get(store.sql.records.rowById(c, '"id"'), [id])) !== undefined;
            action = exists ? 'update' : 'create';
            it.id = exists ? (id as string) : '';
            if (exists) refusePasswordChange(c, it.body);
          }
          if (action === 'delete') {
            await writes.delete(c, it.id, principal, sink, req);
            return { status: 204, body: 'null' };
          }
          const { shape } = it;
          const { row } = action === 'create'
            ? await writes.create(c, principal, it.body, it.uploads, sink, req)
            : await writes.update(c, it.id, principal, it.body, it.uploads, sink, req);
          return { status: action === 'create' ? 201 : 200, body: await writtenRecordJson(ctx, c, row, principal, shape) };
        }));
        if (failed) {
          const known = knownApiError(failed.error);
          throw known ? failure(failed.index, known) : failed.error;
        }
        const parts = settled.map((x) => {
          const v = (x as PromiseFulfilledResult<{ status: number; body: string }>).value;
          return `{"status":${v.status},"body":${v.body}}`;
        });
        return json(200, `[${parts.join(',')}]`);
      },
    },
  ];
}
