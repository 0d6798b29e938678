/** Pieces both HTTP engines share (server.ts for uWS, node-server.ts for node:http). */
import { ApiError, writeErrorBody } from '../errors/api-error.js';
import { TOO_LARGE } from './admission.js';
import type { EventSink, EventStreamBody, Reply } from './types.js';

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

/** What an engine does for an event stream (Reply.events). */
export interface EventTransport {
  /** queues text; false when the stream is now past its queue bound (it is then dropped) */
  write(text: string): boolean;
  /** ends the response normally */
  end(): void;
  /** closes the connection at once (a dropped consumer) */
  abort(): void;
}

/**
 * Opens an event stream on an engine's transport: the sink handed to `events.open`, whose close
 * callbacks and request-log record (`log`) run once however the stream ends: `close()`, a drop
 * past the queue bound, or the client going away (the engine calls the returned `gone`). A
 * dropped stream is ended as dropped before the connection is closed, so an engine that reports
 * the close as an abort cannot end it as a plain one first. `onError`: `events.open` threw (the
 * stream is then closed).
 */
export function openEventStream(events: EventStreamBody, t: EventTransport, log: () => void, onError: (err: unknown) => void): { gone: () => void } {
  let closed = false;
  const closers: Array<(dropped: boolean) => void> = [];
  const end = (dropped: boolean) => {
    if (closed) return;
    closed = true;
    log();
    for (const cb of closers) cb(dropped);
  };
  const sink: EventSink = {
    write: (text) => {
      if (closed) return false;
      if (t.write(text)) return true;
      end(true);
      t.abort();
      return false;
    },
    close: () => {
      if (closed) return;
      end(false);
      t.end();
    },
    onClose: (cb) => {
      closers.push(cb);
    },
  };
  try {
    events.open(sink);
  } catch (err) {
    onError(err);
    sink.close();
  }
  return { gone: () => end(false) };
}

/**
 * Resolves once `waiters` is called back (the last request in flight ended) or after `timeoutMs`,
 * at once when nothing is in flight (`inFlight` 0). Used by both engines' drain.
 */
export function untilIdle(inFlight: number, waiters: Array<() => void>, timeoutMs: number): Promise<void> {
  if (inFlight === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, timeoutMs);
    waiters.push(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
