/**
 * Realtime clients (docs/realtime.md, "Protocol"): the connections, their callers (auth frames,
 * an SSE stream's POSTs) and revocation. A session that ends stops deliveries at once: a change
 * to the caller's auth record (password change, logout everywhere, deletion), an ended session
 * row, or the token's expiry re-checks the client's token before anything more is sent to it; a
 * token that no longer resolves leaves the client anonymous, with an error frame. With tenancy, a
 * caller's account context (membership, role) is resolved again before a delivery once it is
 * ACCOUNT_RECHECK_MS old.
 */
import type { ChangeBatch } from '../store/change-feed.js';
import type { AuthPrincipal, AuthService } from '../auth/auth-service.js';
import type { ClientInfo } from '../auth/client.js';
import { newId } from '../records/ids.js';
import { authFrame, errorFrame } from './protocol.js';
import type { Logger } from '../log/logger.js';
import type { Subscription, Topics } from './topics.js';

/**
 * How long a tenancy caller's account context (membership, role, accounts) is trusted before it
 * is resolved again, ms: a member removed from an account hears of it for at most this long
 * after REST refuses it (docs/api.md "Realtime").
 */
export const ACCOUNT_RECHECK_MS = 5000;

/** How a client receives: one call per event, already framed for its transport. */
export interface RealtimeTransport {
  readonly kind: 'ws' | 'sse';
  /** false when the client is gone or was just dropped as a slow consumer */
  send(text: string): boolean;
  /** true when the last failed send dropped the client for its queue */
  readonly dropped: boolean;
  close(code?: number): void;
  /**
   * Native pub/sub (WebSockets): join or leave a topic that `Topics.publisher` (topics.ts) publishes to
   * in one call for every member; `checkQueue` drops the client (false) when a publish left its
   * queue past the bound.
   */
  join?(topic: string): void;
  leave?(topic: string): void;
  checkQueue?(): boolean;
}

/** The hub's counters, shared by its parts (RealtimeHub.metrics). */
export interface HubStats {
  delivered: number;
  droppedConsumers: number;
  refusedConnections: number;
  ws: number;
  sse: number;
  subscriptions: number;
  relayedPosts: number;
}

/** A connected client: its transport, caller and subscriptions. */
export class RealtimeClient {
  readonly id = newId();
  principal: AuthPrincipal | null = null;
  /** the bearer token the principal came from (re-checked when the session may have ended) */
  token: string | null = null;
  /** the active account named in the auth frame (tenancy), '' for none */
  account = '';
  /**
   * SSE: the caller the stream's first subscription POST established (`<collectionId>/<recordId>`,
   * '' for anonymous), null before it. Later POSTs must come from the same signed-in caller
   * (docs/api.md "Realtime"); a session that ends does not change it.
   */
  streamCaller: string | null = null;
  /**
   * SSE: the stream is subscribed to `@oauth2`, PocketBase's one-off topic for the SDK's popup
   * OAuth2 flow (docs/pocketbase.md, "The popup OAuth2 flow"): the next `/api/oauth2-redirect`
   * whose `state` is this client's id delivers one message to it, then the subscription ends.
   */
  oauth2 = false;
  /** distinct filter strings of the subscriptions, with how many subscriptions use each */
  readonly filters = new Map<string, number>();
  /** summed length of `filters`' keys */
  filterBytes = 0;
  /** when the principal (and its tenancy account) was last resolved, performance.now() ms */
  resolvedAt = 0;
  /** the token is being re-checked: nothing is delivered until it is */
  checking = false;
  /** the re-check under way (settles once `checking` is false again), or null */
  checked: Promise<void> | null = null;
  /** bumped whenever the caller or `checking` changes (native memberships are decided again) */
  authVersion = 0;
  expiry: NodeJS.Timeout | null = null;
  readonly subs = new Map<string, Subscription>();
  closed = false;
  dropCounted = false;

  /**
   * @param address the client's address as far as it is trusted (AuthRateLimits.clientIp): what
   *   the per-address filter cap counts by
   */
  constructor(readonly transport: RealtimeTransport, readonly info: ClientInfo, readonly address = info.remoteAddress) {}
}

/** The connected clients, by id and by the auth record they are signed in as. */
export class Clients {
  private clients = new Map<string, RealtimeClient>();
  /** authenticated clients by `<collectionId>/<recordId>` of their auth record */
  readonly byPrincipal = new Map<string, Set<RealtimeClient>>();

  constructor(private auth: AuthService, private logger: Logger, private topics: Topics, private stats: HubStats) {}

  /** Connections open now (WebSocket and SSE). */
  get size(): number {
    return this.clients.size;
  }

  /** The clients, in connection order. */
  values(): IterableIterator<RealtimeClient> {
    return this.clients.values();
  }

  /** Registers a connected client. */
  connect(transport: RealtimeTransport, info: ClientInfo): RealtimeClient {
    const client = new RealtimeClient(transport, info, this.auth.limits.clientIp(info));
    this.clients.set(client.id, client);
    this.stats[transport.kind]++;
    return client;
  }

  /** Forgets a client (its transport closed). */
  disconnect(client: RealtimeClient): void {
    if (client.closed) return;
    client.closed = true;
    this.clients.delete(client.id);
    this.stats[client.transport.kind]--;
    for (const sub of client.subs.values()) this.topics.dropSub(sub);
    client.subs.clear();
    this.setPrincipal(client, null, null);
  }

  /** A client by id (SSE: the POST that sets its subscriptions). */
  find(id: string): RealtimeClient | undefined {
    return this.clients.get(id);
  }

  /**
   * Sends every client `{"type":"signal","topic":<topic>}` (SSE: an event named `topic` with that
   * JSON): `__features` after a flag or experiment override changes (docs/realtime.md,
   * "Protocol"). Counts as delivered.
   */
  signal(topic: string): void {
    const frame = JSON.stringify({ type: 'signal', topic });
    for (const c of this.clients.values()) {
      const text = c.transport.kind === 'ws' ? frame : `id:${c.id}\nevent:${topic}\ndata:${frame}\n\n`;
      if (c.transport.send(text)) this.stats.delivered++;
    }
  }

  /**
   * Hands `message` (`{state, code, error?}`, JSON) to the SSE client `id` as the `@oauth2` event
   * when that client holds the `@oauth2` subscription, and ends the subscription (one message per
   * flow). Answers false, sending nothing, for an unknown id, a WebSocket client or a client not
   * subscribed: a redirect only ever reaches the stream its state names.
   */
  deliverOAuth2(id: string, message: string): boolean {
    const c = this.clients.get(id);
    if (!c || c.closed || c.transport.kind !== 'sse' || !c.oauth2) return false;
    c.oauth2 = false;
    if (!c.transport.send(`id:${c.id}\nevent:@oauth2\ndata:${message}\n\n`)) return false;
    this.stats.delivered++;
    return true;
  }

  /**
   * Authenticates a client with a bearer token (and, for an app with tenancy, its active
   * `account`, as X-Account-Id names it on REST). Resolves true when the token is valid (the
   * client is then that caller), false otherwise (the client is anonymous).
   */
  async authenticate(client: RealtimeClient, token: string, account = ''): Promise<boolean> {
    let principal: AuthPrincipal | null = null;
    client.account = account;
    try {
      principal = await this.auth.resolve(this.clientInfo(client, token));
    } catch {
      principal = null;
    }
    if (client.closed) return false;
    this.setPrincipal(client, principal, principal ? token : null);
    return principal !== null;
  }

  /** Sets the caller of a client (from an SSE POST already authenticated by the route). */
  setPrincipal(client: RealtimeClient, principal: AuthPrincipal | null, token: string | null): void {
    client.authVersion++;
    if (client.principal) {
      const key = `${client.principal.collection.id}/${String(client.principal.record.id)}`;
      const set = this.byPrincipal.get(key);
      set?.delete(client);
      if (set?.size === 0) this.byPrincipal.delete(key);
    }
    if (client.expiry) clearTimeout(client.expiry);
    client.expiry = null;
    client.principal = principal;
    client.token = principal ? token : null;
    client.resolvedAt = performance.now();
    if (!principal || client.closed) return;
    const key = `${principal.collection.id}/${String(principal.record.id)}`;
    let set = this.byPrincipal.get(key);
    if (!set) this.byPrincipal.set(key, (set = new Set()));
    set.add(client);
    const exp = token ? this.auth.tokens.peek(token)?.exp : undefined;
    if (exp !== undefined) {
      // the token's expiry ends deliveries as surely as a logout (timers cap at about 24.8 days)
      const ms = Math.min(exp * 1000 - Date.now(), 2 ** 31 - 1);
      client.expiry = setTimeout(() => this.recheck(client), Math.max(0, ms));
      client.expiry.unref();
    }
  }

  private clientInfo(client: RealtimeClient, token: string): ClientInfo {
    const headers = { ...client.info.headers, authorization: `Bearer ${token}`, cookie: '', csrf: '', account: client.account || client.info.headers.account || '' };
    return { method: 'GET', headers, remoteAddress: client.info.remoteAddress };
  }

  /**
   * Re-checks a client's token (its session may have ended). Synchronous when the token's
   * verification is cached (the usual case after a profile change); otherwise deliveries to the
   * client pause until the check ends. A token that no longer resolves makes the client
   * anonymous and sends it an error frame.
   */
  recheck(client: RealtimeClient): void {
    if (client.closed || !client.token) return;
    const token = client.token;
    const done = (p: AuthPrincipal | null) => {
      client.checking = false;
      client.checked = null;
      client.authVersion++;
      this.settle(client, token, p);
    };
    let out: AuthPrincipal | null | Promise<AuthPrincipal | null>;
    try {
      out = this.auth.resolve(this.clientInfo(client, token));
    } catch {
      out = null;
    }
    if (out instanceof Promise) {
      client.checking = true;
      client.authVersion++;
      client.checked = out.then(done, () => done(null));
    } else done(out);
  }

  /**
   * Applies a re-check's verdict `p` for the token `token` (ignored when the client closed or
   * authenticated again meanwhile): the client's new principal, or anonymous with an `auth`
   * error frame (SSE: a `PB_AUTH` event) when the token no longer resolves.
   */
  private settle(client: RealtimeClient, token: string, p: AuthPrincipal | null): void {
    if (client.closed || client.token !== token) return;
    if (p) {
      this.setPrincipal(client, p, token);
      return;
    }
    this.setPrincipal(client, null, null);
    const msg = 'The session ended: deliveries continue as an anonymous client until a new auth.';
    client.transport.send(client.transport.kind === 'ws' ? authFrame(false) : `id:${client.id}\nevent:PB_AUTH\ndata:{"status":"error"}\n\n`);
    if (client.transport.kind === 'ws') client.transport.send(errorFrame(msg));
  }

  /**
   * Tenancy: the signed-in subscribers of `collectionIds` whose account context (membership,
   * role, accounts) was resolved more than ACCOUNT_RECHECK_MS ago; none without a tenancy
   * resolver. Superusers have no account context.
   */
  staleAccounts(collectionIds: Iterable<string>): Set<RealtimeClient> {
    const out = new Set<RealtimeClient>();
    if (!this.auth.tenancy) return out;
    const now = performance.now();
    for (const cid of collectionIds) {
      for (const sub of this.topics.byCollection.get(cid) ?? []) {
        const c = sub.client;
        if (c.principal && !c.principal.superuser && c.token && !c.checking && !c.closed && now - c.resolvedAt > ACCOUNT_RECHECK_MS) out.add(c);
      }
    }
    return out;
  }

  /**
   * Resolves the callers of `clients` again (token, session, the tenancy resolver's account
   * context), so a member removed from an account stops hearing of it as REST stops answering
   * (docs/api.md "Realtime"). A caller that no longer resolves becomes anonymous (settle).
   */
  async refresh(clients: Set<RealtimeClient>): Promise<void> {
    await Promise.all([...clients].map(async (client) => {
      const token = client.token;
      if (!token) return;
      let p: AuthPrincipal | null;
      try {
        p = await this.auth.resolve(this.clientInfo(client, token));
      } catch {
        p = null;
      }
      this.settle(client, token, p);
    }));
  }

  /** Re-checks every client signed in as this auth record (a session row of it ended). */
  sessionEnded(collectionId: string, recordId: string): void {
    for (const c of [...(this.byPrincipal.get(`${collectionId}/${recordId}`) ?? [])]) this.recheck(c);
  }

  /**
   * Revocation, synchronously as a batch arrives, before any later commit can be delivered: the
   * clients signed in as a changed, deleted or truncated auth record are re-checked.
   */
  revoke(batch: ChangeBatch): void {
    for (const ch of batch.changes) {
      if (ch.op !== 'create' && this.byPrincipal.size) {
        const set = this.byPrincipal.get(`${ch.collection}/${ch.id}`);
        if (set) for (const c of [...set]) this.recheck(c);
      }
    }
    for (const cid of batch.truncated) {
      for (const [key, set] of this.byPrincipal) if (key.startsWith(`${cid}/`)) for (const c of [...set]) this.recheck(c);
    }
  }

  /**
   * A client's transport ended: `dropped` when it was closed for falling behind its send queue
   * (counted once, logged). Also called when a send fails.
   */
  ended(client: RealtimeClient, dropped: boolean): void {
    if (dropped && !client.dropCounted) {
      client.dropCounted = true;
      this.stats.droppedConsumers++;
      this.logger.warn(`realtime: dropped a slow consumer (${client.transport.kind} client ${client.id})`);
    }
    this.disconnect(client);
  }

  /** A send to `client` failed: it ended (ended), dropped when its queue was past the bound. */
  lost(client: RealtimeClient): void {
    this.ended(client, client.transport.dropped);
  }
}
