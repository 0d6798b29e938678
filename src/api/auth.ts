/**
 * Auth endpoints (docs/api.md, "Auth" and "Rate limits"; docs/auth.md,
 * "Magic links and one-time codes"): auth-with-password, auth-refresh, auth-logout, the methods'
 * initiate and complete, the two-factor ceremonies, magic-link consume, request-verification,
 * confirm-verification, request-password-reset, confirm-password-reset, and each sign-in
 * method's own routes (AuthMethod.routes: OAuth2's provider list and unlink, passkey
 * registration and a record's passkeys), served here without naming the method. Magic-link
 * consume stays a route of its own: it sets the session cookies and redirects. The per-device
 * session routes are in ./auth-sessions.ts.
 */
import type { Reply, Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import { requireAuthCollection } from './records.js';
import { hidePrivate, withLinks } from '../records/records-read.js';
import { AccountEmails } from '../auth/account-emails.js';
import type { AuthPrincipal, SignInOutcome } from '../auth/auth-service.js';
import type { Collection } from '../model/schema.js';
import { clearCookies, sessionCookies } from './cookies.js';
import type { MethodRoute } from '../auth/methods/method.js';

/**
 * What the auth routes answer with (here and in ./auth-sdk.ts): `body` the sign-in JSON
 * `{token, record, meta?}` (hidden columns dropped, private fields hidden as for the record
 * itself, `externalAuths` included), `signedIn` that JSON with the session cookies or the pending
 * second-factor JSON without, `authCollection` the route's `:col` (404 unless an auth collection).
 */
export function authReplies(ctx: ApiContext) {
  const { store } = ctx;
  const insecure = ctx.config.insecureCookies;
  const body = async (c: Collection, token: string, record: Record<string, unknown>, meta?: Record<string, unknown>): Promise<string> => {
    const codec = store.codec(c);
    const visible: Record<string, unknown> = {};
    for (const k of Object.keys(record)) if (k !== 'passwordHash' && k !== 'tokenKey' && k !== 'token_epoch') visible[k] = record[k];
    const self = { superuser: false, collection: c, record };
    hidePrivate(c, visible, self);
    await withLinks(store, c, visible, self);
    return `{"token":${JSON.stringify(token)},"record":${codec.stringify(visible)}${meta ? `,"meta":${JSON.stringify(meta)}` : ''}}`;
  };
  /** A sign-in's answer: `{token, record, meta?}` with cookies, or the pending second-factor JSON without. */
  const signedIn = async (c: Collection, out: SignInOutcome): Promise<Reply> => {
    if (!out.session) return json(200, JSON.stringify(out.pending));
    return json(200, await body(c, out.session.token, out.record, out.meta), sessionCookies(out.session, insecure));
  };
  const authCollection = (req: Req): Collection => {
    const c = store.collection(req.params[0]);
    requireAuthCollection(c);
    return c;
  };
  return { body, signedIn, authCollection };
}

export function authRoutes(ctx: ApiContext): Route[] {
  const { store, auth } = ctx;
  const insecure = ctx.config.insecureCookies;
  const { body, signedIn, authCollection } = authReplies(ctx);
  /** A method's own route (MethodRoute) under `/api/collections/:col/`: its answer as JSON (200), or 204. */
  const methodRoute = (r: MethodRoute): Route => ({
    method: r.verb, pattern: `/api/collections/:col/${r.path}`, handler: async (req) => {
      const c = authCollection(req);
      const out = await r.handle(c, req.params.slice(1), () => jsonBody(req), req);
      return out === undefined ? noContent() : json(200, JSON.stringify(out));
    },
  });
  /** request-*: validate, count, queue; the same work and the same 204 whether or not the address exists. */
  const requestMail = (scope: string, kind: 'verify' | 'reset') => async (req: Req) => {
    const c = authCollection(req);
    const b = jsonBody(req);
    const submitted = typeof b === 'object' && b !== null ? (b as Record<string, unknown>).email : undefined;
    await auth.limits.enforce(scope, c, auth.limits.clientKeys(req, submitted));
    auth.emails.request(kind, c, AccountEmails.requestedEmail(b));
    return noContent();
  };

  return [
    {
      method: 'post', pattern: '/api/collections/:col/auth-with-password', handler: async (req) => {
        const c = authCollection(req);
        return signedIn(c, await auth.signIn('password', c, jsonBody(req), req));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-refresh', handler: async (req) => {
        const c = authCollection(req);
        const app = ctx.app;
        const around = {
          before: app.hasAuthHook('beforeRefresh') ? (rec: Record<string, unknown>) => app.authHook('beforeRefresh', 'refresh', c, rec, req) : undefined,
          after: app.hasAuthHook('afterRefresh') ? (rec: Record<string, unknown>) => app.authHook('afterRefresh', 'refresh', c, rec, req) : undefined,
        };
        const { record, session } = await auth.refresh(c, await auth.resolve(req), req, around);
        return json(200, await body(c, session.token, record), sessionCookies(session, insecure));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-logout', handler: async (req) => {
        const c = authCollection(req);
        // Table store: the caller's own session row ends too. Logout never fails: a bad or
        // foreign credential still gets its cookies cleared.
        let p: AuthPrincipal | null = null;
        try {
          p = await auth.resolve(req);
        } catch {
          p = null;
        }
        const own = p && p.collection.id === c.id ? p : null;
        if (own) await ctx.app.authHook('beforeLogout', 'logout', c, own.record, req); // may abort: nothing ends
        if (own?.sid) await auth.sessions.revoke(c, String(own.record.id), own.sid).catch(() => {});
        if (own) await ctx.app.authHook('afterLogout', 'logout', c, own.record, req);
        return noContent(clearCookies(insecure));
      },
    },
    // Pluggable sign-in methods (docs/auth.md): 404 for a missing
    // or non-auth collection, an unknown method or one that is off.
    {
      method: 'post', pattern: '/api/collections/:col/auth/:method/initiate', handler: async (req) => {
        const c = authCollection(req);
        const out = await auth.initiate(req.params[1], c, jsonBody(req), req);
        return out === undefined ? noContent() : json(200, JSON.stringify(out));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth/:method/complete', handler: async (req) => {
        const c = authCollection(req);
        return signedIn(c, await auth.signIn(req.params[1], c, jsonBody(req), req));
      },
    },
    {
      // Second factors (docs/auth.md, "Two-factor sign-in"): 404 unknown action or policy disabled.
      method: 'post', pattern: '/api/collections/:col/auth/two-factor/:action', handler: async (req) => {
        const c = authCollection(req);
        const { outcome, session } = await auth.twoFactorAction(req.params[1], c, jsonBody(req), req);
        if (outcome.kind === 'none') return noContent();
        if (outcome.kind === 'json') return json(200, JSON.stringify(outcome.body));
        const rec = await body(c, session!.token, outcome.record);
        const extra = `,"managementToken":${JSON.stringify(outcome.managementToken)}${outcome.recoveryCodes ? `,"recoveryCodes":${JSON.stringify(outcome.recoveryCodes)}` : ''}`;
        return json(200, `{"status":"authenticated",${rec.slice(1, -1)}${extra}}`, sessionCookies(session!, insecure));
      },
    },
    // the sign-in methods' own routes (AuthMethod.routes: OAuth2's provider list and unlink,
    // passkey registration and a record's passkeys), at the place they always had
    ...[...auth.methods.values()].flatMap((m) => (m.routes?.() ?? []).map(methodRoute)),
    {
      // The link a magic-link mail carries: consume the token, set the cookies, 302 to a safe target.
      method: 'get', pattern: '/api/collections/:col/auth/magic-link/consume', handler: async (req) => {
        const c = authCollection(req);
        const q = query(req);
        const target = auth.magicLink.redirectTarget(c, q.get('redirect') ?? undefined);
        const out = await auth.signIn(auth.magicLink.slug, c, { token: q.get('token') ?? '' }, req);
        // a second factor is needed: the pending JSON instead of a redirect (docs/auth.md,
        // "Two-factor sign-in")
        if (!out.session) return signedIn(c, out);
        const session = out.session;
        return { status: 302, body: '', headers: [...sessionCookies(session, insecure), ['Location', target], ['Cache-Control', 'no-store']] };
      },
    },
    { method: 'post', pattern: '/api/collections/:col/request-verification', handler: requestMail('request-verification', 'verify') },
    { method: 'post', pattern: '/api/collections/:col/request-password-reset', handler: requestMail('request-password-reset', 'reset') },
    {
      method: 'post', pattern: '/api/collections/:col/confirm-verification', handler: async (req) => {
        const c = authCollection(req);
        await auth.emails.confirmVerification(c, jsonBody(req));
        return noContent();
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/confirm-password-reset', handler: async (req) => {
        const c = authCollection(req);
        await auth.emails.confirmPasswordReset(c, jsonBody(req));
        return noContent();
      },
    },
  ];
}
