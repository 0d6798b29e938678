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
