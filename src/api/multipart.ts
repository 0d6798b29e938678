/**
 * Record write bodies: JSON, or multipart/form-data when files are uploaded (docs/api.md,
 * "Records": non-file fields as form fields, files under the field's name).
 *
 * The body was collected whole by the HTTP layer (bounded by the request limit); busboy parses it.
 * Form values are strings, so they are converted by the collection's field types: number (float)
 * → number, bool → `true`/`1`/`on` or `false`/`0`/`off`/``, json → parsed when valid JSON, multiple
 * select/relation and file fields → the list of every value given (a single value holding a JSON
 * array is parsed), other types → the last value. A `@jsonPayload` form field (the PocketBase SDK
 * sends the non-file fields there) holds a JSON object merged under the form fields. File parts
 * go under a file field's name (`<field>` replaces, `<field>+` appends); an empty part without a
 * file name (a browser's empty file input) is ignored; a file under any other name is 400.
 */
import type busboyType from 'busboy';

/** busboy is loaded on the first multipart body. */
let busboyModule: Promise<typeof busboyType> | null = null;
const loadBusboy = () => (busboyModule ??= import('busboy').then((m) => m.default));
import { ApiError } from '../errors/api-error.js';
import type { Req } from '../http/types.js';
import type { Collection, Field } from '../model/schema.js';
import type { Upload, Uploads } from '../files/record-files.js';
import { jsonBody } from './request.js';

/** Largest non-file form value (a json field's text is at most 1 MiB; leave room for spacing). */
const FIELD_VALUE_MAX = 4 * 1024 * 1024;

/** A record write's body and (multipart only) its uploads. */
export interface WriteBody {
  body: unknown;
  uploads: Uploads | null;
}

/** True for a multipart/form-data request. */
export function isMultipart(req: Req): boolean {
  return req.headers.contentType.toLowerCase().startsWith('multipart/form-data');
}

/** The body of a record create or update: JSON (see jsonBody) or parsed multipart. */
export async function recordWriteBody(req: Req, c: Collection): Promise<WriteBody> {
  if (!isMultipart(req)) return { body: jsonBody(req), uploads: null };
  const { fields, files } = await parseMultipart(req);
  const body: Record<string, unknown> = {};
  const payload = fields.get('@jsonPayload');
  if (payload) {
    for (const text of payload) {
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch {
        throw ApiError.badRequest('@jsonPayload must be a JSON object.');
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw ApiError.badRequest('@jsonPayload must be a JSON object.');
      for (const [k, x] of Object.entries(v)) if (k !== '__proto__') body[k] = x;
    }
    fields.delete('@jsonPayload');
  }
  const byName = new Map(c.fields.map((f) => [f.name, f]));
  for (const [name, values] of fields) {
    if (name === '__proto__') continue;
    const modifier = /^(.+)[+-]$/.exec(name);
    const f = byName.get(name) ?? (modifier ? byName.get(modifier[1]) : undefined);
    body[name] = f ? coerce(f, values) : values.length === 1 ? values[0] : values;
  }
  return { body, uploads: recordUploads(c, files) };
}

/**
 * The files of one record write by form name (`<field>` or `<field>+`); 400 `validation_failed`
 * (`validation_type`) for a file under any name but a file field's of `c`.
 */
export function recordUploads(c: Collection, files: Map<string, Upload[]>): Uploads {
  const uploads: Uploads = new Map();
  for (const [name, list] of files) {
    const f = c.fields.find((x) => x.name === (name.endsWith('+') ? name.slice(0, -1) : name));
    if (!f || f.type !== 'file') {
      throw ApiError.validation({ [name]: { code: 'validation_type', message: 'Files can only be sent under the name of a file field.' } });
    }
    uploads.set(name, list);
  }
  return uploads;
}

/** A form value list converted by the field's type (see the module comment). */
function coerce(f: Field, values: string[]): unknown {
  const last = values[values.length - 1];
  const multiple = f.type === 'file' || ((f.type === 'select' || f.type === 'relation') && (f.options.maxSelect ?? 1) > 1);
  if (multiple) {
    if (values.length === 1 && last.trim().startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(last);
        if (Array.isArray(parsed)) return parsed;
      } catch { /* a plain value */ }
    }
    return values.filter((v) => v !== '');
  }
  switch (f.type) {
    case 'number': {
      if (f.options.mode === 'fixed') return last;
      if (last.trim() === '') return null;
      const n = Number(last);
      return Number.isFinite(n) ? n : last;
    }
    case 'bool': {
      const v = last.trim().toLowerCase();
      if (v === 'true' || v === '1' || v === 'on') return true;
      if (v === 'false' || v === '0' || v === 'off' || v === '') return false;
      return last;
    }
    case 'json':
      if (last.trim() === '') return null;
      try {
        return JSON.parse(last) as unknown;
      } catch {
        return last;
      }
    default:
      return last;
  }
}

/** Parses a collected multipart body into form values and files by name; 400 when malformed. */
export async function parseMultipart(req: Req): Promise<{ fields: Map<string, string[]>; files: Map<string, Upload[]> }> {
  const busboy = await loadBusboy();
  const fields = new Map<string, string[]>();
  const files = new Map<string, Upload[]>();
  return new Promise((resolve, reject) => {
    let bb: busboyType.Busboy;
    try {
      bb = busboy({ headers: { 'content-type': req.headers.contentType }, defParamCharset: 'utf8', limits: { fieldSize: FIELD_VALUE_MAX, fields: 1000, files: 100, parts: 1100 } });
    } catch {
      reject(ApiError.badRequest('Malformed multipart/form-data Content-Type (missing boundary?).'));
      return;
    }
    let failed: ApiError | null = null;
    const fail = (e: ApiError) => (failed ??= e);
    bb.on('field', (name, value, info) => {
      if (typeof name !== 'string' || name === '') return void fail(ApiError.badRequest('Every multipart/form-data part needs a name.'));
      if (info.valueTruncated) fail(ApiError.badRequest(`The form value "${name}" is too large.`));
      const list = fields.get(name);
      if (list) list.push(value);
      else fields.set(name, [value]);
    });
    bb.on('file', (name, stream, info) => {
      if (typeof name !== 'string' || name === '') {
        fail(ApiError.badRequest('Every multipart/form-data part needs a name.'));
        stream.on('error', () => {});
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      // A body that ends inside a file part (no closing boundary) errors the file's stream as
      // well as the parser: without a listener that error would take the process down.
      stream.on('error', () => fail(ApiError.badRequest('Malformed multipart/form-data body.')));
      stream.on('data', (d: Buffer) => chunks.push(d));
      stream.on('end', () => {
        const data = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        if (!info.filename && data.length === 0) return; // an empty file input
        const list = files.get(name) ?? [];
        list.push({ filename: info.filename || 'file', data });
        files.set(name, list);
      });
    });
    for (const ev of ['fieldsLimit', 'filesLimit', 'partsLimit'] as const) bb.on(ev, () => fail(ApiError.badRequest('Too many parts in the multipart/form-data body.')));
    bb.on('error', () => reject(failed ?? ApiError.badRequest('Malformed multipart/form-data body.')));
    bb.on('close', () => (failed ? reject(failed) : resolve({ fields, files })));
    bb.end(req.body ?? Buffer.alloc(0));
  });
}
