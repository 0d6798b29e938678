/**
 * The realtime transports (docs/realtime.md, "Protocol"; docs/pocketbase.md for the PocketBase
 * client): both of the hub's (hub.ts) on `/api/realtime`, bound from the route table of
 * src/server.ts (the WebSocket endpoint through src/http/websocket.ts):
 *
 * - WebSocket (upgrade): `{"type":"connect","clientId"}` on open; client frames `auth`,
 *   `subscribe`, `unsubscribe`; answers `auth`, `ack` and `error` frames (a bad frame never
 *   closes the socket); events `{"type":"event","topic","action","record"}`.
 * - Server-Sent Events in PocketBase's shape: `GET` with `Accept: text/event-stream` opens the
 *   stream with a `PB_CONNECT` event (`id:` and data `{clientId}`); `POST {clientId,
 *   subscriptions}` replaces the client's topics (`col/*`, `col/<id>`, each optionally with
 *   `?options={"query":{"filter":…}}` as the PocketBase SDK sends), authenticated by the POST's
 *   own Authorization header; events are named by the topic as sent, data `{action, record}`.
 *   With several instances the POST may reach another instance than the stream's: it is relayed
 *   to the instance holding the stream (ClusterRelay), which applies it and answers. The topic
 *   `@oauth2` (PocketBase's popup OAuth2 flow) is served by oauth2-redirect.ts.
 * - `GET /api/realtime/metrics` (superusers): connections, subscriptions, deliveries, drops.
 *
 * Past the connection cap an upgrade or stream answers 503 `overloaded`.
 */
import type { EventSink, Reply, Req, Route, WsConnection, WsRoute } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { errorReply } from '../http/common.js';
import { jsonBody } from '../http/json-body.js';
import { ApiError, toApiError } from '../errors/api-error.js';
import type { Logger } from '../log/logger.js';
import type { RealtimeClient, RealtimeHub, RealtimeTransport } from './hub.js';
import { authFrame, errorFrame } from './protocol.js';
import type { ClientInfo } from '../auth/client.js';
import { credential, type AuthService } from '../auth/auth-service.js';
import type { ClusterRelay } from '../store/backend.js';
import { isOAuth2Topic } from './oauth2-redirect.js';

/** Bytes queued for one client before it is dropped as a slow consumer. */
export const REALTIME_MAX_QUEUE = 1024 * 1024;
/** Interval of SSE keep-alive comments (proxies close idle streams). */
const SSE_PING_MS = 30_000;

const OVERLOADED = () => new ApiError(503, 'overloaded', 'Too many realtime connections; try again later.');

/** A snapshot of what the auth service reads of the connecting request (the Req dies with it). */
function clientInfo(req: Req): ClientInfo {
  return { method: 'GET', headers: { ...req.headers }, remoteAddress: req.remoteAddress };
}


/** The WebSocket endpoint; `logger` logs each upgrade as a request (101). */
export function realtimeSocket(hub: RealtimeHub, logger: Logger): WsRoute {
  return {
    pattern: '/api/realtime',
    maxBackpressure: REALTIME_MAX_QUEUE,
    upgrade: () => (hub.refuse() ? errorReply(OVERLOADED()) : undefined),
    bind: (publisher) => hub.bindPublisher((topic, text) => publisher.publish(topic, text)),
    open(ws: WsConnection, req: Req) {
      const start = process.hrtime.bigint();
      const transport: RealtimeTransport = {
        kind: 'ws',
        send: (text) => ws.send(text),
        get dropped() {
          return ws.dropped;
        },
        close: (code) => ws.close(code ?? 1000),
        join: (topic) => ws.subscribe(topic),
        leave: (topic) => ws.unsubscribe(topic),
        checkQueue: () => ws.checkBackpressure(),
      };
      const client = hub.connect(transport, clientInfo(req));
      ws.data.client = client;
      logger.request('GET', req.path, 101, Number(process.hrtime.bigint() - start) / 1e6);
      ws.send(`{"type":"connect","clientId":"${client.id}"}`);
    },
    message(ws: WsConnection, data: string) {
      const client = ws.data.client as RealtimeClient | undefined;
      if (!client || client.closed) return;
      // Frames are handled in order: a subscribe sent right after an auth waits for its verdict.
      const prev = ws.data.chain as Promise<void> | undefined;
      ws.data.chain = prev ? prev.then(() => onFrame(hub, client, ws, data)) : onFrame(hub, client, ws, data);
    },
    close(ws: WsConnection) {
      const client = ws.data.client as RealtimeClient | undefined;
      if (client) hub.ended(client, ws.dropped);
    },
  };
}

/** One client frame; every failure answers an error frame and leaves the socket open. */
async function onFrame(hub: RealtimeHub, client: RealtimeClient, ws: WsConnection, data: string): Promise<void> {
  let msg: unknown;
  try {
    msg = JSON.parse(data);
  } catch {
    ws.send(errorFrame('The frame is not valid JSON.'));
    return;
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
    ws.send(errorFrame('A frame is a JSON object with an "action".'));
    return;
  }
  const m = msg as Record<string, unknown>;
  try {
    switch (m.action) {
      case 'auth': {
        if (typeof m.token !== 'string' || m.token === '') throw ApiError.badRequest('auth needs a "token" string.');
        if (m.account !== undefined && (typeof m.account !== 'string' || m.account.length > 200)) throw ApiError.badRequest('"account" must be a string (the active account, as X-Account-Id).');
        const ok = await hub.authenticate(client, m.token, (m.account as string | undefined) ?? '');
        ws.send(authFrame(ok));
        return;
      }
      case 'subscribe': {
        if (typeof m.topic !== 'string') throw ApiError.badRequest('subscribe needs a "topic" string.');
        if (m.filter !== undefined && m.filter !== null && typeof m.filter !== 'string') throw ApiError.badRequest('"filter" must be a string.');
        hub.subscribe(client, m.topic, (m.filter as string | null | undefined) ?? null, true);
        ws.send(`{"type":"ack","action":"subscribe","topic":${JSON.stringify(m.topic)}}`);
        return;
      }
      case 'unsubscribe': {
        if (typeof m.topic !== 'string') throw ApiError.badRequest('unsubscribe needs a "topic" string.');
        hub.unsubscribeTopic(client, m.topic);
        ws.send(`{"type":"ack","action":"unsubscribe","topic":${JSON.stringify(m.topic)}}`);
        return;
      }
      default:
        throw ApiError.badRequest('Unknown action: expected "auth", "subscribe" or "unsubscribe".');
    }
  } catch (err) {
    ws.send(errorFrame(toApiError(err).message));
  }
}

/** Splits a PocketBase SDK topic `col/*?options={...}` into the topic and its filter. */
function sseTopic(raw: string): { topic: string; filter: string | null } {
  const q = raw.indexOf('?');
  if (q < 0) return { topic: raw, filter: null };
  const params = new URLSearchParams(raw.slice(q + 1));
  let filter: string | null = null;
  const options = params.get('options');
  if (options) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(options);
    } catch {
      throw ApiError.badRequest(`Invalid subscription options in ${JSON.stringify(raw)}: not JSON.`);
    }
    const query = (parsed as { query?: Record<string, unknown> } | null)?.query;
    if (query && typeof query.filter === 'string' && query.filter !== '') filter = query.filter;
  }
  return { topic: raw.slice(0, q), filter };
}

/** The relay request kind of an SSE subscription POST that reached another instance than the stream's. */
export const RELAY_SSE_SUBSCRIPTIONS = 'sse-subscriptions';

/**
 * The SSE routes and the metrics route. `relay` (several instances on PostgreSQL): a POST naming
 * a stream held by another instance is applied there (ClusterRelay).
 */
export function realtimeRoutes(auth: AuthService, hub: RealtimeHub, relay: ClusterRelay | null): Route[] {
  const open = (req: Req): Reply => {
    if (!/text\/event-stream/i.test(req.headers.accept)) {
      throw new ApiError(400, 'bad_request', 'GET /api/realtime is a WebSocket upgrade, or an event stream with "Accept: text/event-stream".');
    }
    if (hub.refuse()) return errorReply(OVERLOADED());
    const info = clientInfo(req);
    return {
      status: 200,
      body: '',
      events: {
        maxQueuedBytes: REALTIME_MAX_QUEUE,
        open(sink: EventSink) {
          let dropped = false;
          const transport: RealtimeTransport = {
            kind: 'sse',
            send: (text) => sink.write(text),
            get dropped() {
              return dropped;
            },
            close: () => sink.close(),
          };
          const client = hub.connect(transport, info);
          const ping = setInterval(() => sink.write(':\n\n'), SSE_PING_MS);
          ping.unref();
          sink.onClose((wasDropped) => {
            dropped = wasDropped;
            clearInterval(ping);
            hub.ended(client, wasDropped);
          });
          sink.write(`id:${client.id}\nevent:PB_CONNECT\ndata:{"clientId":"${client.id}"}\n\n`);
        },
      },
    };
  };

  /**
   * Replaces the subscriptions of the SSE client `clientId` of this instance, for the caller of
   * `info`. @throws ApiError 404 (no such stream here), 403 (another caller's stream), 400 (a bad topic or filter, past a filter cap)
   */
  const applySubscriptions = async (clientId: string, subs: string[], info: ClientInfo): Promise<void> => {
    const client = hub.find(clientId);
    if (!client || client.transport.kind !== 'sse') throw ApiError.notFound('Missing or invalid client id.');
    const principal = await auth.resolve(info);
    // A stream keeps the identity its first POST gave it: once signed in, a POST from another
    // caller, or one without credentials, is refused and changes nothing (an anonymous stream
    // may be signed in later, as the PocketBase SDK does after a sign-in).
    const caller = principal ? `${principal.collection.id}/${String(principal.record.id)}` : '';
    if (client.streamCaller && client.streamCaller !== caller) {
      throw ApiError.forbidden('The current and the previous request authorization don\'t match.');
    }
    const token = principal ? (credential(info)?.token ?? null) : null;
    // Validate every topic before changing anything.
    // `@oauth2` is no collection: it marks the stream for one OAuth2 redirect (oauth2-redirect.ts)
    const parsed = subs.filter((raw) => !isOAuth2Topic(raw)).map((raw) => {
      const { topic, filter } = sseTopic(raw);
      hub.parseTopic(topic);
      return { raw, topic, filter };
    });
    hub.checkFilters(client, parsed.flatMap((p) => (p.filter ? [p.filter] : [])));
    client.streamCaller = caller;
    // the active account (tenancy) the caller was resolved with, for the hub's re-checks
    client.account = principal?.account?.id ?? '';
    hub.setPrincipal(client, principal, token);
    client.oauth2 = subs.some(isOAuth2Topic);
    for (const t of [...client.subs.keys()]) hub.unsubscribeTopic(client, t);
    // SSE names events by the topic as the SDK sent it (options included)
    for (const { raw, topic, filter } of parsed) hub.subscribe(client, topic, filter, false, raw);
  };

  // Several instances (PostgreSQL): the stream may be held by another instance than the one the
  // POST reached; that instance applies it, with the caller's credentials, and answers.
  relay?.handle(RELAY_SSE_SUBSCRIPTIONS, async (body) => {
    const b = body as { clientId?: unknown; subscriptions?: unknown; auth?: unknown; cookie?: unknown; csrf?: unknown; account?: unknown };
    if (typeof b?.clientId !== 'string' || !hub.find(b.clientId)) return undefined; // not ours: stay silent
    const subs = Array.isArray(b.subscriptions) ? b.subscriptions.filter((x): x is string => typeof x === 'string') : [];
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    const info: ClientInfo = {
      method: 'POST',
      headers: { authorization: str(b.auth), cookie: str(b.cookie), csrf: str(b.csrf), userAgent: '', forwardedFor: '', realIp: '', account: str(b.account) },
      remoteAddress: '',
    };
    try {
      await applySubscriptions(b.clientId, subs, info);
      return { status: 204, body: '' };
    } catch (err) {
      const reply = errorReply(toApiError(err));
      return { status: reply.status, body: String(reply.body) };
    }
  });

  const setSubscriptions = async (req: Req): Promise<Reply> => {
    const body = jsonBody(req) as { clientId?: unknown; subscriptions?: unknown };
    if (typeof body !== 'object' || body === null || typeof body.clientId !== 'string' || body.clientId === '') {
      throw ApiError.validation({ clientId: { code: 'validation_required', message: 'Missing or invalid client id.' } });
    }
    const subs = body.subscriptions ?? [];
    if (!Array.isArray(subs) || subs.some((s) => typeof s !== 'string')) {
      throw ApiError.validation({ subscriptions: { code: 'validation_type', message: 'Must be an array of topic strings.' } });
    }
    const info: ClientInfo = { method: req.method, headers: { ...req.headers }, remoteAddress: req.remoteAddress };
    if (hub.find(body.clientId) || !relay) {
      await applySubscriptions(body.clientId, subs as string[], info);
      return noContent();
    }
    // not a stream of this instance: the one holding it applies the POST with the caller's
    // credential as sent (a cookie stays a cookie, so its CSRF check applies there too)
    const cred = credential(info);
    let reply: unknown;
    try {
      reply = await relay.request(RELAY_SSE_SUBSCRIPTIONS, {
        clientId: body.clientId, subscriptions: subs,
        auth: cred && !cred.viaCookie ? `Bearer ${cred.token}` : '', cookie: cred?.viaCookie ? `svc_auth=${cred.token}` : '',
        csrf: req.headers.csrf, account: req.headers.account ?? '',
      });
    } catch (err) {
      if (err instanceof RangeError) throw ApiError.badRequest('The subscriptions are too large to send to the instance holding this stream; send fewer topics per request.');
      throw err;
    }
    const r = reply as { status?: unknown; body?: unknown } | undefined;
    if (!r || typeof r.status !== 'number') throw ApiError.notFound('Missing or invalid client id.');
    hub.relayed();
    return r.status === 204 ? noContent() : { status: r.status, body: typeof r.body === 'string' ? r.body : '' };
  };

  return [
    { method: 'get', pattern: '/api/realtime', handler: open, clientHeaders: true },
    { method: 'post', pattern: '/api/realtime', handler: setSubscriptions },
    {
      method: 'get',
      pattern: '/api/realtime/metrics',
      handler: async (req) => {
        const p = await auth.resolve(req);
        if (!p) throw ApiError.unauthorized();
        if (!p.superuser) throw ApiError.forbidden('Only superusers can read realtime metrics.');
        return json(200, JSON.stringify(hub.metrics()));
      },
    },
  ];
}
