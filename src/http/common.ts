/** Pieces both HTTP engines share (server.ts for uWS, node-server.ts for node:http). */
import { ApiError, writeErrorBody } from '../errors/api-error.js';
import { TOO_LARGE } from './admission.js';
import type { Reply } from './types.js';

/** Methods whose requests carry a body. */
export const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** The reply of an error: its status and the envelope. */
export function errorReply(err: ApiError): Reply {
  return { status: err.status, body: writeErrorBody(err) };
}

/** 413 for a body over `limit` bytes. */
export function tooLarge(limit: number): Reply {
  return errorReply(TOO_LARGE(limit));
}

/** Milliseconds since a `process.hrtime.bigint()` reading. */
export function elapsedMs(start: bigint): number {
  return Number((process.hrtime.bigint() - start) / 1_000_000n);
}

/**
 * Appends the route parameters, percent-decoded, to `out`; returns the 400 reply for malformed
 * percent-encoding, or null. `raw(i)` reads parameter i as received.
 */
export function decodeParams(count: number, raw: (i: number) => string, out: string[]): Reply | null {
  for (let i = 0; i < count; i++) {
    const r = raw(i);
    if (r.indexOf('%') < 0) {
      out.push(r);
      continue;
    }
    try {
      out.push(decodeURIComponent(r));
    } catch {
      return errorReply(ApiError.badRequest('Malformed percent-encoding in the path.'));
    }
  }
  return null;
}
