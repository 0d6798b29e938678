/** Request helpers for route bindings: JSON bodies, query strings and request ids. */
import { randomBytes } from 'node:crypto';
import { ApiError } from '../errors/api-error.js';
import type { Req } from '../http/types.js';

// the JSON body parser lives in src/http/, where the capability folders' route modules
// (src/settings/routes.ts, src/realtime/routes.ts) read it too
export { jsonBody } from '../http/json-body.js';

/** A well-formed X-Request-Id a caller or proxy may send (then it is kept). */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const made = new WeakMap<object, string>();

/**
 * The request's id: its X-Request-Id when that is 1 to 128 safe characters (a proxy's id carries
 * through), else one made for it on first ask (16 hex digits), the same on every later ask.
 * Failures of application code are logged with it.
 */
export function requestId(req: { readonly headers: { readonly requestId?: string } }): string {
  const sent = req.headers.requestId;
  if (sent && REQUEST_ID.test(sent)) return sent;
  let id = made.get(req.headers);
  if (id === undefined) {
    id = randomBytes(8).toString('hex');
    made.set(req.headers, id);
  }
  return id;
}

export function query(req: Req): URLSearchParams {
  return new URLSearchParams(req.query);
}
