/** Request helpers for route bindings: JSON bodies and query strings. */
import { ApiError } from '../errors/api-error.js';
import type { Req } from '../http/types.js';

/** The JSON body as a value; an empty body is `{}`; malformed JSON or another type answers 400. */
export function jsonBody(req: Req): unknown {
  if (!req.body || req.body.length === 0) return {};
  const ct = req.headers.contentType.toLowerCase();
  if (ct && !ct.startsWith('application/json') && !ct.includes('+json')) {
    if (ct.startsWith('multipart/form-data')) throw ApiError.badRequest('Only record create and update accept multipart/form-data; send JSON.');
    throw new ApiError(400, 'bad_request', `Unsupported Content-Type "${ct.split(';')[0]}": send application/json.`);
  }
  try {
    return JSON.parse(req.body.toString('utf8'));
  } catch {
    throw ApiError.badRequest('The request body is not valid JSON.');
  }
}

export function query(req: Req): URLSearchParams {
  return new URLSearchParams(req.query);
}
