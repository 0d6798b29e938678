/**
 * The session cookies (docs/api.md, "Authentication"; the names `svc_auth` and `svc_csrf`), set by
 * the route layer from the sessions the auth services issue: `svc_auth` holds the token (HttpOnly),
 * `svc_csrf` the value unsafe cookie requests echo in X-CSRF-Token (readable). Both
 * SameSite=Strict, Secure unless `serve --insecure-cookies`.
 */
import { TOKEN_TTL_S } from '../auth/tokens.js';

export type HeaderList = Array<[string, string]>;

/** Set-Cookie headers for a new session. */
export function sessionCookies(session: { token: string; csrf: string }, insecure: boolean): HeaderList {
  const secure = insecure ? '' : '; Secure';
  return [
    ['Set-Cookie', `svc_auth=${session.token}; Path=/; Max-Age=${TOKEN_TTL_S}; HttpOnly; SameSite=Strict${secure}`],
    ['Set-Cookie', `svc_csrf=${session.csrf}; Path=/; Max-Age=${TOKEN_TTL_S}; SameSite=Strict${secure}`],
  ];
}

/** Set-Cookie headers that clear both session cookies. */
export function clearCookies(insecure: boolean): HeaderList {
  const secure = insecure ? '' : '; Secure';
  return [
    ['Set-Cookie', `svc_auth=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure}`],
    ['Set-Cookie', `svc_csrf=; Path=/; Max-Age=0; SameSite=Strict${secure}`],
  ];
}
