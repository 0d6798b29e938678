/**
 * Auth endpoints (spec 1-core-api.md, "Auth endpoints", "Pluggable auth methods", "Magic-link
 * consume", "Rate limiting"): auth-with-password, auth-refresh, auth-logout, the methods'
 * initiate and complete, magic-link consume, request-verification, confirm-verification,
 * request-password-reset, confirm-password-reset, passkey registration (a recent sign-in
 * required) and a record's passkeys (list, delete). The per-device session routes are in
 * ./auth-sessions.ts.
 */
import type { Reply, Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import { requireAuthCollection } from './records.js';
import { hidePrivate, withLinks } from '../records/records-read.js';
import { AccountEmails } from '../auth/account-emails.js';
import { requireOwnCollection, type AuthPrincipal, type SignInOutcome } from '../auth/auth-service.js';
import type { Collection } from '../collections/types.js';
import { clearCookies, sessionCookies } from './cookies.js';
import { ApiError } from '../errors/api-error.js';
import { twoFactorPolicy } from '../auth/two-factor.js';

export function authRoutes(ctx: ApiContext): Route[] {
  const { store, auth } = ctx;
  const insecure = ctx.config.insecureCookies;
  const body = (c: Collection, token: string, record: Record<string, unknown>, meta?: Record<string, unknown>) => {
    const codec = store.codec(c);
    const visible: Record<string, unknown> = {};
    for (const k of Object.keys(record)) if (k !== 'passwordHash' && k !== 'tokenKey' && k !== 'token_epoch') visible[k] = record[k];
    const self = { superuser: false, collection: c, record };
    hidePrivate(c, visible, self);
    withLinks(store, c, visible, self);
    return `{"token":${JSON.stringify(token)},"record":${codec.stringify(visible)}${meta ? `,"meta":${JSON.stringify(meta)}` : ''}}`;
  };
  /** A sign-in's answer: `{token, record, meta?}` with cookies, or the pending second-factor JSON without. */
  const signedIn = (c: Collection, out: SignInOutcome): Reply => {
    if (!out.session) return json(200, JSON.stringify(out.pending));
    return json(200, body(c, out.session.token, out.record, out.meta), sessionCookies(out.session, insecure));
  };
  const authCollection = (req: Req): Collection => {
    const c = store.collection(req.params[0]);
    requireAuthCollection(c);
    return c;
  };
  /**
   * The passkey routes' access (like external-auths): 401 anonymous; 404 unless the caller is the
   * record itself or a superuser (and, for a superuser, the record exists).
   */
  const passkeyOwner = async (c: Collection, req: Req): Promise<void> => {
    const p = await auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    const own = p.collection.id === c.id && p.record.id === req.params[1];
    if (!own && !(p.superuser && auth.loadAuthRecord(c, req.params[1]))) throw ApiError.notFound();
  };
  /** request-*: validate, count, queue; the same work and the same 204 whether or not the address exists. */
  const requestMail = (scope: string, kind: 'verify' | 'reset') => (req: Req) => {
    const c = authCollection(req);
    const b = jsonBody(req);
    const submitted = typeof b === 'object' && b !== null ? (b as Record<string, unknown>).email : undefined;
    auth.limits.enforce(scope, c, auth.limits.clientKeys(req, submitted));
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
        const around = app ? {
          before: (rec: Record<string, unknown>) => app.authHook('beforeRefresh', 'refresh', c, rec, req),
          after: (rec: Record<string, unknown>) => app.authHook('afterRefresh', 'refresh', c, rec, req),
        } : undefined;
        const { record, session } = await auth.refresh(c, await auth.resolve(req), req, around);
        return json(200, body(c, session.token, record), sessionCookies(session, insecure));
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
        if (own && ctx.app) await ctx.app.authHook('beforeLogout', 'logout', c, own.record, req); // may abort: nothing ends
        if (own?.sid) await auth.sessions.revoke(c, String(own.record.id), own.sid).catch(() => {});
        if (own && ctx.app) await ctx.app.authHook('afterLogout', 'logout', c, own.record, req);
        return noContent(clearCookies(insecure));
      },
    },
    // Pluggable sign-in methods (spec 1-core-api.md, "Pluggable auth methods"): 404 for a missing
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
      // Second factors (spec "Two-factor ceremonies"): 404 unknown action or policy disabled.
      method: 'post', pattern: '/api/collections/:col/auth/two-factor/:action', handler: async (req) => {
        const c = authCollection(req);
        const { outcome, session } = await auth.twoFactorAction(req.params[1], c, jsonBody(req), req);
        if (outcome.kind === 'none') return noContent();
        if (outcome.kind === 'json') return json(200, JSON.stringify(outcome.body));
        const rec = body(c, session!.token, outcome.record);
        const extra = `,"managementToken":${JSON.stringify(outcome.managementToken)}${outcome.recoveryCodes ? `,"recoveryCodes":${JSON.stringify(outcome.recoveryCodes)}` : ''}`;
        return json(200, `{"status":"authenticated",${rec.slice(1, -1)}${extra}}`, sessionCookies(session!, insecure));
      },
    },
    {
      // Passkey registration (spec "Passkey registration"): the signed-in record of this
      // collection, its session made by a primary sign-in within SERVICE_REAUTH_MAX_AGE (a passkey
      // outlives the session: a stolen session must not be able to plant one), else 403
      // `reauthentication_required`; checked at both steps.
      method: 'post', pattern: '/api/collections/:col/auth/webauthn/register/begin', handler: async (req) => {
        const c = authCollection(req);
        if (!auth.webauthn.enabled(c)) throw ApiError.notFound();
        const p = requireOwnCollection(c, await auth.resolve(req));
        auth.requireRecentSignIn(p);
        return json(200, JSON.stringify(await auth.webauthn.registerBegin(c, p.record)));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth/webauthn/register/finish', handler: async (req) => {
        const c = authCollection(req);
        if (!auth.webauthn.enabled(c)) throw ApiError.notFound();
        const p = requireOwnCollection(c, await auth.resolve(req));
        auth.requireRecentSignIn(p);
        await auth.webauthn.registerFinish(c, p.record, jsonBody(req));
        return json(200, '{}');
      },
    },
    {
      // A record's sign-in passkeys (docs/api.md, "Passkeys (WebAuthn)"), shaped like its
      // external-auths: the record's owner or a superuser; 404 otherwise. Never key material.
      method: 'get', pattern: '/api/collections/:col/records/:id/passkeys', handler: async (req) => {
        const c = authCollection(req);
        await passkeyOwner(c, req);
        return json(200, JSON.stringify({ items: auth.webauthn.signInKeys(c, req.params[1]) }));
      },
    },
    {
      method: 'del', pattern: '/api/collections/:col/records/:id/passkeys/:passkeyId', handler: async (req) => {
        const c = authCollection(req);
        await passkeyOwner(c, req);
        const recordId = req.params[1];
        const passkeyId = req.params[2];
        // a sign-in passkey counts as a second factor: under `required` the last factor stays,
        // as with the two-factor `remove` action
        if (twoFactorPolicy(c) === 'required' && auth.webauthn.signInKeys(c, recordId).some((k) => k.id === passkeyId)
          && auth.twoFactor.factorsOf(c, recordId, passkeyId).length === 0) {
          throw ApiError.validation({ passkeyId: { code: 'validation_value', message: 'This passkey is the last second factor and the collection requires one: enroll another first.' } });
        }
        await auth.webauthn.deleteSignInKey(c, recordId, passkeyId);
        return noContent();
      },
    },
    {
      // The sign-in page's provider list (spec "OAuth2"): 404 unless OAuth2 is on; no secrets.
      method: 'get', pattern: '/api/collections/:col/auth/oauth2/providers', handler: async (req) => {
        const c = authCollection(req);
        if (!auth.oauth2.enabled(c)) throw ApiError.notFound();
        return json(200, JSON.stringify({ items: await auth.oauth2.list(c) }));
      },
    },
    {
      // Unlinks a provider (spec "Records": external-auths): the record's owner or a superuser.
      method: 'del', pattern: '/api/collections/:col/records/:id/external-auths/:provider', handler: async (req) => {
        const c = authCollection(req);
        const p = await auth.resolve(req);
        if (!p) throw ApiError.unauthorized();
        if (!p.superuser && !(p.collection.id === c.id && p.record.id === req.params[1])) throw ApiError.notFound();
        await auth.oauth2.unlink(c, req.params[1], req.params[2]);
        return noContent();
      },
    },
    {
      // The link a magic-link mail carries: consume the token, set the cookies, 302 to a safe target.
      method: 'get', pattern: '/api/collections/:col/auth/magic-link/consume', handler: async (req) => {
        const c = authCollection(req);
        const q = query(req);
        const target = auth.magicLink.redirectTarget(c, q.get('redirect') ?? undefined);
        const out = await auth.signIn('magic_link', c, { token: q.get('token') ?? '' }, req);
        // a second factor is needed: the pending JSON instead of a redirect (spec "Two-factor ceremonies")
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
