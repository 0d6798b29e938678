/**
 * A request's JSON body, parsed once by the route that reads it (src/api/ and the capability
 * folders' route modules, ARCHITECTURE.md "Folders").
 */
import { ApiError } from '../errors/api-error.js';
import type { Req } from './types.js';

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
