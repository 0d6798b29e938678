/**
 * What a request may cost the server before it is answered (docs/api.md, "Request limits"), shared
 * by both HTTP engines: at most `maxInFlight` requests at once, request bodies up to their limit (a
 * small one, and `maxBodyBytes` for multipart bodies to routes that take files), at most
 * `maxInflightBodyBytes` of bodies buffered across all requests, and a deadline for a body to
 * arrive. Refusals are the error envelope: 413 `payload_too_large`, 408 `request_timeout`, 503
 * `overloaded`.
 *
 * Deadlines are checked by one sweep a second over the bodies being received (a Set add and
 * delete per request, no timer per request), so a body is cut off between its deadline and one
 * second after it.
 */
import { ApiError } from '../errors/api-error.js';

/** The limits an engine enforces (HttpServerOptions; ServeConfig.limits feeds them). */
export interface AdmissionLimits {
  /** bytes a multipart/form-data body to a route taking files may have (published as limits.maxUploadSize) */
  maxBodyBytes: number;
  /** bytes any other body may have (JSON bodies, and multipart bodies to routes that take no files) */
  jsonBodyBytes: number;
  /** milliseconds a body may take to arrive, from the request's start */
  bodyTimeoutMs: number;
  /** requests in flight at once (on node:http: open connections) */
  maxInFlight: number;
  /** body bytes buffered at once across every request */
  maxInflightBodyBytes: number;
}

/** A body being received: its deadline, the bytes buffered so far, and how to cut it off. */
export interface BodyTicket {
  deadline: number;
  bytes: number;
  /** answers 408 and closes the connection (set by the engine) */
  expire: () => void;
}

export const OVERLOADED = (): ApiError => new ApiError(503, 'overloaded', 'The server is at capacity; retry shortly.');
export const TIMED_OUT = (): ApiError => new ApiError(408, 'request_timeout', 'The request body did not arrive before the deadline.');
export const TOO_LARGE = (limit: number): ApiError => new ApiError(413, 'payload_too_large', `The request body exceeds the limit of ${limit} bytes.`);

export class Admission {
  /** bytes of bodies buffered now */
  private buffered = 0;
  private receiving = new Set<BodyTicket>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(readonly limits: AdmissionLimits) {}

  /**
   * The body limit of a request: `maxBodyBytes` for a multipart/form-data body on a route that
   * takes files (`acceptsFiles`: Route.multipart said so for this request), `jsonBodyBytes` for
   * every other body, multipart ones included (docs/api.md, "Request limits").
   */
  bodyLimit(contentType: string, acceptsFiles: boolean): number {
    return acceptsFiles && contentType.length >= 19 && contentType.slice(0, 19).toLowerCase() === 'multipart/form-data' ? this.limits.maxBodyBytes : this.limits.jsonBodyBytes;
  }

  /** A body starts arriving: its ticket, watched for its deadline until `done`. */
  start(expire: () => void): BodyTicket {
    const t: BodyTicket = { deadline: Date.now() + this.limits.bodyTimeoutMs, bytes: 0, expire };
    this.receiving.add(t);
    this.sweeper ??= setInterval(() => this.sweep(), 1000).unref();
    return t;
  }

  /**
   * Counts `n` more bytes of the body; false when the server's buffered total would pass
   * `maxInflightBodyBytes` (the caller answers 503 and calls `done`).
   */
  take(t: BodyTicket, n: number): boolean {
    if (this.buffered + n > this.limits.maxInflightBodyBytes) return false;
    this.buffered += n;
    t.bytes += n;
    return true;
  }

  /** The body was handed on, refused or abandoned: its bytes no longer count, its deadline ends. */
  done(t: BodyTicket): void {
    if (!this.receiving.delete(t)) return;
    this.buffered -= t.bytes;
    t.bytes = 0;
  }

  /** Stops the sweep (server shutdown). */
  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  private sweep(): void {
    if (this.receiving.size === 0) return;
    const now = Date.now();
    for (const t of this.receiving) {
      if (t.deadline > now) continue;
      this.done(t);
      t.expire();
    }
  }
}
