/**
 * Live record events over the API's Server-Sent Events transport (PocketBase's shape): one
 * EventSource for the whole app, carrying the session cookie; `POST /api/realtime` sets its
 * topics (`<collection>/*`, with the table's filter in `?options=`). Reconnects re-send the
 * topics. The socket transport needs a token in a frame, which this UI never holds.
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
const bound = new Set<string>();
let syncTimer: ReturnType<typeof setTimeout> | null = null;
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
  if (!source || bound.has(topic)) return;
  bound.add(topic);
  source.addEventListener(topic, (ev) => {
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
  try {
    await api('POST', '/api/realtime', { json: { clientId, subscriptions: [...topics.keys()] } });
    setLive(true);
  } catch (err) {
    setLive(false);
    // 403: the stream was opened under another authorization (the session changed): open a new
    // one under the current cookie, keeping the topics
    if ((err as { status?: number }).status === 403 && source) {
      source.close();
      source = null;
      clientId = '';
      connect();
    }
  }
}

function connect(): void {
  if (source) return;
  source = new EventSource('/api/realtime');
  bound.clear();
  source.addEventListener('PB_CONNECT', (ev) => {
    try {
      clientId = (JSON.parse((ev as MessageEvent<string>).data) as { clientId: string }).clientId;
    } catch {
      return;
    }
    for (const t of topics.keys()) bind(t);
    void sync();
  });
  source.onerror = () => setLive(false);
}

/**
 * Receives the events of `collection`'s records matching `filter` ('' for all) until the returned
 * function is called.
 */
export function subscribeRecords(collection: string, filter: string, handler: Handler): () => void {
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
  return () => {
    const s = topics.get(topic);
    if (!s) return;
    s.delete(handler);
    if (s.size === 0) {
      topics.delete(topic);
      scheduleSync();
    }
  };
}

/** Closes the stream and forgets its topics (sign-out, and before a sign-in). */
export function disconnect(): void {
  if (syncTimer) clearTimeout(syncTimer);
  syncTimer = null;
  source?.close();
  source = null;
  clientId = '';
  topics.clear();
  bound.clear();
  setLive(false);
}
