/**
 * The engine-independent side of a WebSocket endpoint (WsRoute): the connection's send queue
 * bound and close rules. Each engine subclasses `EngineSocket` with its socket primitives (uWS's
 * native WebSockets in server.ts, the `ws` package in node-server.ts).
 */
import { WS_SLOW_CONSUMER, type WsConnection, type WsRoute } from './types.js';

/** Bytes a connection may queue unsent before it is dropped, unless its route says (WsRoute.maxBackpressure). */
export const WS_DEFAULT_MAX_QUEUE = 1024 * 1024;
/** Largest message a client may send, in bytes (both engines refuse longer ones). */
export const WS_MAX_PAYLOAD = 64 * 1024;

/** The send-queue bound of a route's connections, in bytes. */
export function maxQueue(route: WsRoute): number {
  return route.maxBackpressure ?? WS_DEFAULT_MAX_QUEUE;
}

/**
 * One open WebSocket (see WsConnection): `send` and `checkBackpressure` drop the connection with
 * 1008 once more than `max` bytes are queued; no call reaches the socket after it was closed here
 * (`closed`, which the engine also sets once its socket is gone).
 */
export abstract class EngineSocket implements WsConnection {
  readonly data: Record<string, unknown> = {};
  /** closed here, or the engine's socket is gone */
  closed = false;
  private droppedHere = false;

  /** @param max bytes queued before the connection is dropped (maxQueue) */
  constructor(private max: number) {}

  get dropped(): boolean {
    return this.droppedHere;
  }

  send(text: string): boolean {
    if (!this.checkBackpressure()) return false;
    this.transmit(text);
    return true;
  }

  checkBackpressure(): boolean {
    if (this.closed || !this.writable()) return false;
    if (this.queued() <= this.max) return true;
    this.closed = true;
    this.droppedHere = true;
    this.end(WS_SLOW_CONSUMER, 'slow consumer');
    return false;
  }

  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.end(code, reason);
  }

  abstract bufferedAmount(): number;
  abstract subscribe(topic: string): void;
  abstract unsubscribe(topic: string): void;
  /** whether the engine's socket takes writes (it may be closing on its own) */
  protected abstract writable(): boolean;
  /** bytes the engine holds unsent */
  protected abstract queued(): number;
  /** sends one text frame */
  protected abstract transmit(text: string): void;
  /** starts the closing handshake */
  protected abstract end(code: number, reason: string): void;
}
