/**
 * PocketBase's popup OAuth2 flow (docs/pocketbase.md, "The popup OAuth2 flow"): the JS SDK's
 * `authWithOAuth2({provider})` opens an SSE stream, subscribes it to `@oauth2`, and sends the
 * provider `state=<the stream's client id>` with `redirect_uri=<server>/api/oauth2-redirect`.
 * The provider sends the browser back to `GET /api/oauth2-redirect?state&code` (or POSTs the
 * same as a form, `response_mode=form_post`); this route hands `{state, code, error?}` to that
 * one stream as the `@oauth2` event and answers a small HTML page for the popup. The SDK then
 * completes with `auth-with-oauth2` and the code verifier auth-methods handed out, whose checks
 * (single-use server-held verifier, redirect URL allow-list) are the sign-in's (src/api/auth-sdk.ts).
 *
 * Only the stream whose id is the state receives the message: client ids are fully random
 * (src/records/ids.ts, newId) and known only to their stream. A state that names no stream
 * subscribed to `@oauth2` (unknown, ended, a WebSocket client, already used) delivers nothing and
 * answers the failure page. With several instances (PostgreSQL) the redirect may reach another
 * instance than the stream's: it is relayed there (ClusterRelay).
 */
import { createHash } from 'node:crypto';
import type { Reply, Req, Route } from '../http/types.js';
import { jsonBody } from '../http/json-body.js';
import type { ClusterRelay } from '../store/backend.js';
import { ID_PATTERN } from '../records/ids.js';
import type { RealtimeHub } from './hub.js';

/** The relay request kind of a redirect whose stream another instance holds. */
export const RELAY_OAUTH2_REDIRECT = 'oauth2-redirect';

/** Longest `code` and `error` passed on, characters (auth-with-oauth2 refuses a code over 2000). */
const MAX_CODE = 2000;
const MAX_ERROR = 256;

/** True for the SDK's `@oauth2` subscription (any `?options=` suffix ignored). */
export function isOAuth2Topic(raw: string): boolean {
  return raw === '@oauth2' || raw.startsWith('@oauth2?');
}

// The success page closes the popup; its one inline script is allowed by hash, nothing else runs.
const CLOSE_SCRIPT = 'window.close();';
const SCRIPT_HASH = createHash('sha256').update(CLOSE_SCRIPT).digest('base64');
const page = (title: string, text: string, script: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><p>${text}</p>${script}</body></html>`;
const SUCCESS = page('Signed in', 'Sign-in complete. You can close this window.', `<script>${CLOSE_SCRIPT}</script>`);
const FAILURE = page('Sign-in failed', 'Sign-in failed. Close this window and try again.', '');

/** The popup's page: no caching, no referrer (the URL held a code), no framing, no other script. */
function htmlReply(ok: boolean): Reply {
  return {
    status: ok ? 200 : 400,
    body: ok ? SUCCESS : FAILURE,
    contentType: 'text/html; charset=utf-8',
    headers: [
      ['Cache-Control', 'no-store'],
      ['Referrer-Policy', 'no-referrer'],
      ['X-Content-Type-Options', 'nosniff'],
      ['Content-Security-Policy', `default-src 'none'; script-src 'sha256-${SCRIPT_HASH}'; frame-ancestors 'none'`],
    ],
  };
}

/** What the provider sent back: from the query (GET) or a form or JSON body (POST); null when unreadable. */
function redirectData(req: Req): { state: string; code: string; error: string } | null {
  let get: (k: string) => unknown;
  if (req.method === 'GET') {
    const q = new URLSearchParams(req.query);
    get = (k) => q.get(k);
  } else if (req.headers.contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const q = new URLSearchParams(req.body ? req.body.toString('utf8') : '');
    get = (k) => q.get(k);
  } else {
    let b: unknown;
    try {
      b = jsonBody(req);
    } catch {
      return null;
    }
    if (typeof b !== 'object' || b === null) return null;
    get = (k) => (b as Record<string, unknown>)[k];
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return { state: str(get('state')), code: str(get('code')), error: str(get('error')) };
}

/**
 * `GET` and `POST /api/oauth2-redirect`. Answers 200 with a page that closes the popup when the
 * message went to the stream and carried a code; 400 with a failure page otherwise (no or an
 * unknown state, nothing delivered; or the provider's `error`, delivered so the SDK's promise
 * rejects). `relay`: the cluster's request relay (PostgreSQL), null on SQLite.
 */
export function oauth2RedirectRoutes(hub: RealtimeHub, relay: ClusterRelay | null): Route[] {
  // another instance's redirect for a stream of this one: deliver it, or stay silent
  relay?.handle(RELAY_OAUTH2_REDIRECT, (body) => {
    const b = body as { state?: unknown; message?: unknown };
    if (typeof b?.state !== 'string' || typeof b.message !== 'string') return undefined;
    return hub.deliverOAuth2(b.state, b.message) ? { delivered: true } : undefined;
  });

  const handler = async (req: Req): Promise<Reply> => {
    const d = redirectData(req);
    if (!d || !ID_PATTERN.test(d.state) || d.code.length > MAX_CODE || d.error.length > MAX_ERROR) return htmlReply(false);
    // PocketBase's message: `error` only when the provider sent one
    const message = JSON.stringify(d.error ? d : { state: d.state, code: d.code });
    let delivered = hub.deliverOAuth2(d.state, message);
    if (!delivered && relay) delivered = (await relay.request(RELAY_OAUTH2_REDIRECT, { state: d.state, message })) !== undefined;
    return htmlReply(delivered && d.error === '' && d.code !== '');
  };
  return [
    { method: 'get', pattern: '/api/oauth2-redirect', handler },
    { method: 'post', pattern: '/api/oauth2-redirect', handler },
  ];
}
