/**
 * What the auth services read of a request, and nothing else: its credentials and the facts that
 * key rate limits and session rows. The route layer passes its request snapshot (src/http's `Req`
 * has this shape), so nothing under src/auth depends on the HTTP front end.
 */
export interface ClientInfo {
  /** upper-case HTTP method (CSRF applies to unsafe methods) */
  readonly method: string;
  readonly headers: {
    /** `Bearer <jwt>` or a raw token; '' when absent */
    readonly authorization: string;
    /** the Cookie header ('' when absent): `svc_auth` carries a session token */
    readonly cookie: string;
    /** the X-CSRF-Token header ('' when absent) */
    readonly csrf: string;
    readonly userAgent: string;
    /** X-Forwarded-For and X-Real-IP, read only behind a trusted proxy */
    readonly forwardedFor: string;
    readonly realIp: string;
    /** X-Account-Id, the active account an app's tenancy resolver checks ('' or absent: none) */
    readonly account?: string;
    /** X-Request-Id as sent */
    readonly requestId?: string;
  };
  /** the peer address */
  readonly remoteAddress: string;
}

/** The auth collection each request's credential resolved to (keys die with their requests). */
const resolvedCallers = new WeakMap<ClientInfo, string>();

/**
 * Notes that `client`'s credential resolved to a caller of the auth collection `name`
 * (`AuthService.resolve`), for the request logs (docs/operations.md, "Request logs"): a look-up
 * of what the route resolved anyway, so the logs never verify a token themselves.
 */
export function noteResolvedCaller(client: ClientInfo, name: string): void {
  resolvedCallers.set(client, name);
}

/** The auth collection name `client`'s credential resolved to during its request; undefined when it was not resolved (or failed). */
export function resolvedCaller(client: ClientInfo): string | undefined {
  return resolvedCallers.get(client);
}
