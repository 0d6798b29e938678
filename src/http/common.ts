/** Pieces of the shared HTTP pipeline (pipeline.ts), which both engines run (server.ts for uWS, node-server.ts for node:http). */
import { ApiError, writeErrorBody } from '../errors/api-error.js';
import { TOO_LARGE } from './admission.js';
import { isBodySink, type BodySink, type EventSink, type EventStreamBody, type Reply, type Req, type Route } from './types.js';

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

/**
 * A request body handed to a route's sink as it arrives (Route.bodySink), the same on both
 * engines. While the sink is being opened (it may await), chunks are kept (copied by the engine's
 * `keep`) and replayed to it. A refusing reply (from the open, or a sink that throws) drops the
 * rest of the body and is answered after its end, so the connection stays usable. Exactly one of
 * the sink's `end` and `abort` is called.
 */
export class SinkIntake {
  private sink: BodySink | null = null;
  private refusal: Reply | null = null;
  private pending: Buffer[] | null = [];
  private ended = false;
  private closed = false;
  /** bytes received so far */
  received = 0;

  /**
   * `finish` answers the request (ignored once answered); `fail` turns an exception into its
   * reply; `gone` says whether the request was answered or aborted already.
   */
  constructor(private finish: (r: Reply) => void, private fail: (err: unknown) => Reply, private gone: () => boolean) {}

  /** Opens the route's sink (`declared`: the Content-Length, -1 when absent). */
  open(open: NonNullable<Route['bodySink']>, req: Req, declared: number): void {
    try {
      const out = open(req, declared);
      if (out instanceof Promise) out.then((o) => this.opened(o), (err) => this.opened(this.fail(err)));
      else this.opened(out);
    } catch (err) {
      this.opened(this.fail(err));
    }
  }

  /** A chunk arrived: passed to the sink during the call, or kept (`keep()`: a copy the engine may hold) while it opens. */
  data(chunk: Uint8Array, keep: () => Buffer): void {
    this.received += chunk.byteLength;
    if (this.refusal || chunk.byteLength === 0) return;
    if (!this.sink) {
      this.pending!.push(keep());
      return;
    }
    try {
      this.sink.write(chunk);
    } catch (err) {
      this.abort();
      this.refusal = this.fail(err);
    }
  }

  /** The whole body arrived. */
  end(): void {
    this.ended = true;
    this.complete();
  }

  /** The body will not complete (client gone, deadline, limit). */
  abort(): void {
    if (this.sink && !this.closed) {
      this.closed = true;
      this.sink.abort();
    }
  }

  private opened(out: BodySink | Reply): void {
    if (this.gone()) {
      if (isBodySink(out)) out.abort();
      return;
    }
    if (!isBodySink(out)) this.refusal = out;
    else {
      this.sink = out;
      try {
        for (const b of this.pending!) out.write(b);
      } catch (err) {
        this.abort();
        this.refusal = this.fail(err);
      }
    }
    this.pending = null;
    if (this.ended) this.complete();
  }

  private complete(): void {
    if (this.gone()) return;
    if (this.refusal) return this.finish(this.refusal);
    if (!this.sink) return; // still opening: opened() completes
    this.closed = true;
    let out: Reply | Promise<Reply>;
    try {
      out = this.sink.end();
    } catch (err) {
      return this.finish(this.fail(err));
    }
    if (out instanceof Promise) out.then(this.finish, (err) => this.finish(this.fail(err)));
    else this.finish(out);
  }
}
