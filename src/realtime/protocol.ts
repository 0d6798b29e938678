/**
 * Realtime (docs/realtime.md; this folder is its seam). Deliveries will come from the change
 * feed (src/store/change-feed.ts): one batch per committed transaction, each change checked
 * against the subscriber's rules before it is sent. The frames below are the WebSocket protocol
 * settled in docs/realtime.md ("Protocol"), JSON text frames on `GET /api/realtime`.
 */

/** Client → server frames. */
export type ClientFrame =
  | { action: 'auth'; token: string }
  /** `topic`: a collection name, or `<collection>/<id>`; `filter` narrows the events */
  | { action: 'subscribe'; topic: string; filter?: string }
  | { action: 'unsubscribe'; topic: string };

/** Server → client frames; a delete event carries only the record id. */
export type ServerFrame =
  | { type: 'connect'; clientId: string }
  | { type: 'auth'; status: 'ok' | 'error' }
  | { type: 'ack'; action: 'subscribe' | 'unsubscribe'; topic: string }
  | { type: 'error'; message: string }
  | { type: 'event'; topic: string; action: 'create' | 'update' | 'delete'; record: Record<string, unknown> }
  | { type: 'signal'; topic: '__features' };

/** A WebSocket error frame (`{"type":"error","message"}`); the socket stays open. */
export const errorFrame = (message: string): string => `{"type":"error","message":${JSON.stringify(message)}}`;

/** A WebSocket auth verdict frame. */
export const authFrame = (ok: boolean): string => `{"type":"auth","status":"${ok ? 'ok' : 'error'}"}`;
