/**
 * The plain request snapshot and reply the rest of the app sees; only src/http imports uWS.
 */

/** Headers copied out of uWS before any await (uWS's request object dies with the handler). */
export interface RequestHeaders {
  authorization: string;
  contentType: string;
  cookie: string;
  csrf: string;
  userAgent: string;
  forwardedFor: string;
  realIp: string;
  origin: string;
  accept: string;
  range: string;
  ifNoneMatch: string;
  /** X-Account-Id: the active account (tenancy); read only next to a credential */
  account: string;
  /** X-Request-Id as sent ('' when absent); see requestId() in src/api/request.ts */
  requestId: string;
  /** the route's `extraHeaders` by lowercase name ('' when absent); undefined when it asks for none */
  extra?: Record<string, string>;
}

export interface Req {
  /** upper-case method */
  method: string;
  /** path without the query string, as received (percent-encoded) */
  path: string;
  /** raw query string without '?' */
  query: string;
  headers: RequestHeaders;
  /** decoded route parameters in pattern order */
  params: string[];
  /** peer address; on GET/HEAD readable only before the handler's first await */
  readonly remoteAddress: string;
  /**
   * The peer address if it was copied already, else '' without asking the engine (the request
   * observers read it after the reply, when uWS no longer answers); absent: `remoteAddress` is a
   * plain copy
   */
  knownRemoteAddress?(): string;
  /** request body (only for methods with a body) */
  body: Buffer | null;
}

export interface Reply {
  status: number;
  /** response body; empty string for none */
  body: string | Buffer;
  /** defaults to application/json when body (or stream) is non-empty */
  contentType?: string;
  headers?: Array<[string, string]>;
  /**
   * A streamed body of exactly `size` bytes instead of `body` (large file downloads): `open()` is
   * called only when the body is sent (not for HEAD); chunks go out with backpressure and the
   * iterator is closed when the client aborts.
   */
  stream?: BodyStream;
  /**
   * An open-ended event stream (Server-Sent Events) instead of `body`: the status and headers go
   * out at once, then `open` gets the sink and writes to it for as long as the client stays. The
   * stream does not count as a request in flight (so long-lived streams never hold up a drain or
   * fill the in-flight cap); its request is logged when it ends.
   */
  events?: EventStreamBody;
}

export interface EventStreamBody {
  /** bytes queued unsent before the stream is dropped as a slow consumer (default 1 MiB) */
  maxQueuedBytes?: number;
  open(sink: EventSink): void;
}

/** The writable end of an event stream. */
export interface EventSink {
  /** queues text; false when the stream is closed or was just dropped past maxQueuedBytes */
  write(text: string): boolean;
  /** ends the stream */
  close(): void;
  /** `cb(dropped)` once when the stream ends: client gone, close(), or dropped as a slow consumer */
  onClose(cb: (dropped: boolean) => void): void;
}

export interface BodyStream {
  size: number;
  open(): AsyncIterable<Buffer>;
}

export type Handler = (req: Req) => Reply | Promise<Reply>;

export type Method = 'get' | 'post' | 'patch' | 'put' | 'del' | 'options' | 'any';

export interface Route {
  method: Method;
  pattern: string;
  handler: Handler;
  /** copy the Range and If-None-Match headers (file downloads) */
  fileHeaders?: boolean;
  /** copy Accept, User-Agent, Origin and the proxy headers on bodiless methods too (event streams) */
  clientHeaders?: boolean;
  /** more headers to copy (lowercase names) into `req.headers.extra` (e.g. a webhook's signature) */
  extraHeaders?: readonly string[];
  /**
   * Takes the body as it arrives instead of buffered (resumable upload chunks): called once the
   * request head is read, with the declared Content-Length (-1 when absent). It returns the sink
   * that receives the bytes, or a reply that refuses the request (the body is then read and
   * dropped, and the reply sent after it). The route's `handler` is not called.
   */
  bodySink?: (req: Req, declaredLength: number) => BodySink | Reply | Promise<BodySink | Reply>;
  /** bytes this route's body may have (default: Admission.bodyLimit, see `multipart`) */
  bodyLimit?: number;
  /**
   * Whether this request may send files: called once the request head is read and its parameters
   * decoded, before any body byte is taken; true lets a multipart/form-data body have the upload
   * limit (`maxBodyBytes`). Absent or false: every body has the JSON limit, so a client cannot
   * make any route buffer an upload's worth of bytes by claiming multipart. Must not throw.
   */
  multipart?: (req: Req) => boolean;
}

/**
 * The receiving end of a streamed request body (Route.bodySink). Exactly one of `end` or `abort`
 * is called, once.
 */
export interface BodySink {
  /** bytes as they arrive; `chunk` is valid only during the call (copy what you keep) */
  write(chunk: Uint8Array): void;
  /** the whole body arrived: the reply */
  end(): Reply | Promise<Reply>;
  /** the body will not complete (client gone, deadline passed, over the limit) */
  abort(): void;
}

/** Whether a bodySink result is a sink (else a refusing reply). */
export function isBodySink(x: BodySink | Reply): x is BodySink {
  return typeof (x as BodySink).write === 'function';
}

/** A JSON reply (body already serialized). */
export function json(status: number, body: string | Buffer, headers?: Array<[string, string]>): Reply {
  return { status, body, headers };
}

export function noContent(headers?: Array<[string, string]>): Reply {
  return { status: 204, body: '', headers };
}

/**
 * A WebSocket endpoint (realtime builds on it), the same on both HTTP engines: uWS's native
 * WebSockets, or `ws` on the node:http adapter. Messages are delivered as they arrive; `send`
 * queues, and a connection whose queue passes `maxBackpressure` bytes is closed with code 1008
 * (a slow consumer) instead of buffering without bound.
 */
export interface WsRoute {
  /** the path, as for routes (GET upgrade requests) */
  pattern: string;
  /**
   * Decides on an upgrade before it happens: return an error reply to refuse it (e.g. 503
   * overloaded past a connection cap); undefined accepts.
   */
  upgrade?(req: Req): Reply | undefined;
  open(ws: WsConnection, req: Req): void;
  message(ws: WsConnection, data: string, isBinary: boolean): void;
  close(ws: WsConnection, code: number): void;
  /** receives the endpoint's publisher once the server has registered it */
  bind?(publisher: WsPublisher): void;
  /** bytes queued per connection before it is dropped (default 1 MiB) */
  maxBackpressure?: number;
}

/** One open WebSocket, engine-neutral. */
export interface WsConnection {
  /** queues a text frame; false when the connection is closed or was dropped as a slow consumer */
  send(text: string): boolean;
  close(code?: number, reason?: string): void;
  /** bytes queued and not yet sent */
  bufferedAmount(): number;
  /** the route's own state for this connection */
  readonly data: Record<string, unknown>;
  /** true once the connection was closed for going past maxBackpressure */
  readonly dropped: boolean;
  /**
   * Drops the connection (1008) when its queue is past maxBackpressure, as `send` would; false
   * then (or when closed). For after a `publish`, which queues without asking.
   */
  checkBackpressure(): boolean;
  /** joins a pub/sub topic of this endpoint (uWS's native topics; a set on node:http) */
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
}

/** Publishing to every connection of an endpoint subscribed to a topic, in one call. */
export interface WsPublisher {
  publish(topic: string, text: string): void;
}

/** Close code for a consumer dropped past its send queue (RFC 6455: policy violation). */
export const WS_SLOW_CONSUMER = 1008;
