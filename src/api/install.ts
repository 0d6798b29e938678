/**
 * The first superuser from the browser (docs/admin.md, "First start"; docs/api.md, "Install"):
 * a server started with no superuser makes a one-time install token and logs the admin UI link
 * carrying it (`/_/install#<token>`: in the fragment, so no access log sees it).
 *
 * - `GET /api/_/install` → 200 `{"installed": boolean}` (whether a superuser exists; public).
 * - `POST /api/_/install` `{token, email, password}` → 201 `{id, email}`, the superuser created
 *   (the UI then signs in with the password). Errors in the API's envelope: 404 once any
 *   superuser exists; 403 from a client that is not on loopback (the first X-Forwarded-For hop
 *   or X-Real-IP with --trust-proxy) unless SERVICE_INSTALL_ALLOW_REMOTE=true; 401 for a wrong,
 *   used or expired token; 400 validation_failed for the email or password.
 *
 * The token is single use and lives 30 minutes; it is held in this process only (each instance
 * of a cluster logs its own).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Req, Route } from '../http/types.js';
import { json } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { createSuperuser } from '../auth/superuser-admin.js';

/** How long an install token is accepted, ms. */
export const INSTALL_TOKEN_TTL_MS = 30 * 60_000;

/** The install state of a server: the token (null once used, or when a superuser existed at start). */
export interface InstallState {
  token: string | null;
  /** epoch ms after which the token is refused */
  expiresAt: number;
}

/** A new install token valid for INSTALL_TOKEN_TTL_MS from `now` (epoch ms). */
export function newInstallState(now = Date.now()): InstallState {
  return { token: randomBytes(24).toString('base64url'), expiresAt: now + INSTALL_TOKEN_TTL_MS };
}

/** Whether `address` (an IPv4, IPv6 or IPv4-mapped IPv6 address) is a loopback address. */
export function isLoopback(address: string): boolean {
  const a = address.trim().toLowerCase().replace(/^::ffff:/, '');
  return a === '::1' || a === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

const sameToken = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The install routes. `state` is shared with the startup log line; `opts.allowRemote` accepts
 * clients off loopback; `opts.dataDir` / `opts.databaseUrl` say where the superuser is written.
 */
export function installRoutes(ctx: ApiContext, state: InstallState, opts: { allowRemote: boolean; dataDir: string; databaseUrl?: string }): Route[] {
  const installed = async (): Promise<boolean> => (await ctx.store.sql.auth.superuserCount()) > 0;
  const install = async (req: Req) => {
    if (await installed()) throw ApiError.notFound('A superuser exists: sign in at /_/.');
    const address = ctx.auth.limits.clientIp(req);
    if (!opts.allowRemote && !isLoopback(address)) throw ApiError.forbidden('The install link works only from the server\'s own machine (loopback); set SERVICE_INSTALL_ALLOW_REMOTE=true to allow others.');
    const b = jsonBody(req);
    const body = (typeof b === 'object' && b !== null ? b : {}) as Record<string, unknown>;
    const token = state.token;
    if (!token || Date.now() > state.expiresAt || typeof body.token !== 'string' || !sameToken(body.token, token)) {
      throw ApiError.unauthorized('The install link is wrong, used or expired: restart the server for a new one, or run `npx svc superuser create`.');
    }
    // taken before the write, so two requests with the token create one superuser; given back on a refusal
    state.token = null;
    try {
      const r = await createSuperuser(opts.dataDir, typeof body.email === 'string' ? body.email : '', typeof body.password === 'string' ? body.password : '', opts.databaseUrl);
      return json(201, JSON.stringify({ id: r.id, email: r.email }));
    } catch (err) {
      state.token = token;
      throw err;
    }
  };
  return [
    { method: 'get', pattern: '/api/_/install', handler: async () => json(200, JSON.stringify({ installed: await installed() })) },
    { method: 'post', pattern: '/api/_/install', handler: install },
  ];
}
