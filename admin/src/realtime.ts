/**
 * Live record events over the API's Server-Sent Events transport (PocketBase's shape): one
 * EventSource for the whole app, carrying the session cookie; `POST /api/realtime` sets its
 * topics (`<collection>/*`, with the table's filter in `?options=`). Reconnects re-send the
 * topics; a stream the server refused is opened again after 1 s, doubling up to 30 s. The
 * socket transport needs a token in a frame, which this UI never holds.
 */
import { api } from './api';
import type { RecordModel } from './types';

export interface RecordEvent {
  action: 'create' | 'update' | 'delete';
  record: RecordModel;
}

type Handler = (e: RecordEvent) => void;

let source: EventSource | null = null;
let clientId = '';
const topics = new Map<string, Set<Handler>>();
/** per topic, what to call each time the server confirms it on a stream (see subscribeRecords) */
const readyCallbacks = new Map<string, Set<() => void>>();
/** the topics the server confirmed on the current stream */
const confirmed = new Set<string>();
const bound = new Set<string>();
let syncTimer: ReturnType<typeof setTimeout> | null = null;
/** the subscription POSTs under way (a stream closed before their answer would make them 404s) */
const inflight = new Set<Promise<unknown>>();
/** How long a disconnect waits for the subscription POSTs under way before closing the stream, ms. */
const CLOSE_WAIT_MS = 2000;
/** A stream the server refused (e.g. 503 at its connection limit) is opened again after these, ms. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
let retryMs = RETRY_FIRST_MS;
let retryTimer: ReturnType<typeof setTimeout> | null = null;
const statusListeners = new Set<(live: boolean) => void>();
let live = false;

function setLive(v: boolean): void {
  live = v;
  for (const l of statusListeners) l(v);
}

/** Calls `fn` with the connection state now and on every change; returns the unsubscribe. */
export function onLiveChange(fn: (live: boolean) => void): () => void {
  statusListeners.add(fn);
  fn(live);
  return () => void statusListeners.delete(fn);
}

function topicFor(collection: string, filter: string): string {
  const base = `${collection}/*`;
  return filter ? `${base}?options=${encodeURIComponent(JSON.stringify({ query: { filter } }))}` : base;
}

function bind(topic: string): void {
  const src = source;
  if (!src || bound.has(topic)) return;
  bound.add(topic);
  src.addEventListener(topic, (ev) => {
    // a stream left open after a disconnect (until its POST is answered) delivers to nobody
    if (src !== source) return;
    let data: RecordEvent;
    try {
      data = JSON.parse((ev as MessageEvent<string>).data) as RecordEvent;
    } catch {
      return;
    }
    for (const h of topics.get(topic) ?? []) h(data);
  });
}

function scheduleSync(): void {
  if (syncTimer) clearTimeout(syncTimer);
  syncTimer = setTimeout(() => {
    syncTimer = null;
    void sync();
  }, 30);
}

async function sync(): Promise<void> {
  if (!clientId) return;
  // this POST sends every topic: one already scheduled would repeat it
  if (syncTimer) clearTimeout(syncTimer);
  syncTimer = null;
  const src = source;
  const sent = [...topics.keys()];
  const req = api('POST', '/api/realtime', { json: { clientId, subscriptions: sent } });
  inflight.add(req);
  try {
    await req;
    if (src !== source) return;
    setLive(true);
    for (const t of sent) {
      if (confirmed.has(t) || !topics.has(t)) continue;
      confirmed.add(t);
      for (const cb of readyCallbacks.get(t) ?? []) cb();
    }
  } catch (err) {
    if (src !== source) return; // disconnected meanwhile: nothing of this stream is kept
    setLive(false);
    // 403: the stream was opened under another authorization (the session changed): open a new
    // one under the current cookie, keeping the topics
    if ((err as { status?: number }).status === 403 && source) {
      source.close();
      source = null;
      clientId = '';
      connect();
    }
  } finally {
    inflight.delete(req);
  }
}

function connect(): void {
  if (source) return;
  const src = new EventSource('/api/realtime');
  source = src;
  bound.clear();
  confirmed.clear();
  src.addEventListener('PB_CONNECT', (ev) => {
    if (src !== source) return;
    try {
      clientId = (JSON.parse((ev as MessageEvent<string>).data) as { clientId: string }).clientId;
    } catch {
      return;
    }
    retryMs = RETRY_FIRST_MS;
    for (const t of topics.keys()) bind(t);
    void sync();
  });
  src.onerror = () => {
    if (src !== source) return;
    // the server forgot this stream's client: no POST names it again; the browser's reconnect
    // brings a new PB_CONNECT with a new id, which re-sends the topics (confirmed anew)
    clientId = '';
    confirmed.clear();
    setLive(false);
    // an answer other than a stream (503 at the server's connection limit, a proxy's error) ends
    // the EventSource for good: open a new one later, backing off, while any topic wants it
    if (src.readyState === EventSource.CLOSED) {
      source = null;
      if (retryTimer || topics.size === 0) return;
      retryTimer = setTimeout(() => {
        retryTimer = null;
        if (!source && topics.size > 0) connect();
      }, retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    }
  };
}

/**
 * Receives the events of `collection`'s records matching `filter` ('' for all) until the returned
 * function is called. `onReady` is called each time the server confirms the subscription (its
 * POST answered; again after a reconnect): a change made before that sent no event here, so a
 * view loaded earlier reloads then (docs/admin.md, "Live rows").
 */
export function subscribeRecords(collection: string, filter: string, handler: Handler, onReady?: () => void): () => void {
  connect();
  const topic = topicFor(collection, filter);
  let set = topics.get(topic);
  if (!set) {
    set = new Set();
    topics.set(topic, set);
    bind(topic);
    scheduleSync();
  }
  set.add(handler);
  if (onReady) {
    let ready = readyCallbacks.get(topic);
    if (!ready) readyCallbacks.set(topic, (ready = new Set()));
    ready.add(onReady);
    if (confirmed.has(topic)) queueMicrotask(onReady);
  }
  return () => {
    if (onReady) readyCallbacks.get(topic)?.delete(onReady);
    if (readyCallbacks.get(topic)?.size === 0) readyCallbacks.delete(topic);
    const s = topics.get(topic);
    if (!s) return;
    s.delete(handler);
    if (s.size === 0) {
      topics.delete(topic);
      confirmed.delete(topic);
      scheduleSync();
    }
  };
}

/**
 * Forgets the topics and closes the stream (sign-out, and before a sign-in). The subscription
 * POSTs under way are answered first (at most 2 s): the server forgets a client when its stream
 * closes, so closing before would make them 404s. Resolves once the stream is closed.
 */
export function disconnect(): Promise<void> {
  if (syncTimer) clearTimeout(syncTimer);
  syncTimer = null;
  if (retryTimer) clearTimeout(retryTimer);
  retryTimer = null;
  retryMs = RETRY_FIRST_MS;
  const old = source;
  const pending = [...inflight];
  source = null;
  clientId = '';
  inflight.clear();
  topics.clear();
  readyCallbacks.clear();
  confirmed.clear();
  bound.clear();
  setLive(false);
  if (!old) return Promise.resolve();
  if (pending.length === 0) {
    old.close();
    return Promise.resolve();
  }
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      old.close();
      resolve();
    };
    const timer = setTimeout(done, CLOSE_WAIT_MS);
    void Promise.allSettled(pending).then(done);
  });
}
