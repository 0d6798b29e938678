/**
 * PocketBase's auth routes as its JS SDK calls them (docs/pocketbase.md, "The JS SDK's auth
 * calls"; docs/api.md, "PocketBase SDK routes"), over svc's own sign-in methods: nothing here
 * proves anything itself. `GET …/auth-methods` lists the collection's methods in PocketBase's
 * shape (OAuth2 providers with a server-held code verifier, OAuth2Method.handOut);
 * `POST …/auth-with-oauth2` completes OAuth2 with that verifier (OAuth2Method.completeWithVerifier);
 * `POST …/request-otp` and `…/auth-with-otp` run the one-time code method (an `otpId` sealing the
 * address, OtpMethod.otpIdFor); `POST …/impersonate/:id` gives a superuser a non-refreshable token
 * for a record (AuthService.impersonate); `POST …/request-email-change` and
 * `…/confirm-email-change` change a record's address (AccountEmails, the record writer for the
 * write itself). Sign-ins go through AuthService.signIn like every other.
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { authReplies } from './auth.js';
import { ApiError } from '../errors/api-error.js';
import { isObject, methodOptions } from '../auth/methods/method.js';
import { OTP_TTL_S } from '../auth/methods/otp.js';
import { MFA_ATTEMPT_TTL_MS, twoFactorPolicy } from '../auth/two-factor.js';
import { TOKEN_TTL_S } from '../auth/tokens.js';
import { requireOwnCollection } from '../auth/auth-service.js';
import { noContent } from '../http/types.js';
import type { Principal } from '../rules/access.js';

export function authSdkRoutes(ctx: ApiContext): Route[] {
  const { auth } = ctx;
  const { body, signedIn, authCollection } = authReplies(ctx);
  return [
    {
      // PocketBase's AuthMethodsList: every key present, `enabled: false` for a method that is off
      method: 'get', pattern: '/api/collections/:col/auth-methods', handler: async (req) => {
        const c = authCollection(req);
        const on = (slug: string) => auth.methods.get(slug)?.enabled(c) === true;
        const ttl = methodOptions(c, 'otp').ttl_s;
        const policy = twoFactorPolicy(c);
        return json(200, JSON.stringify({
          password: { enabled: on('password'), identityFields: c.options.auth?.identityFields ?? ['email'] },
          oauth2: { enabled: on('oauth2'), providers: await auth.oauth2.handOut(c, req) },
          otp: { enabled: on('otp'), duration: typeof ttl === 'number' ? ttl : OTP_TTL_S },
          mfa: { enabled: policy !== 'disabled', duration: policy === 'disabled' ? 0 : MFA_ATTEMPT_TTL_MS / 1000 },
        }));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-with-oauth2', handler: async (req) => {
        const c = authCollection(req);
        const b = jsonBody(req);
        return signedIn(c, await auth.signIn(auth.oauth2.slug, c, b, req, () => auth.oauth2.completeWithVerifier(c, b, req)));
      },
    },
    {
      // the otp method's initiate (same rate limit, same 404 when off, mail from the background
      // queue only for a known address), answering an otpId for every address
      method: 'post', pattern: '/api/collections/:col/request-otp', handler: async (req) => {
        const c = authCollection(req);
        const b = jsonBody(req);
        const email = isObject(b) ? b.email : undefined;
        if (typeof email !== 'string' || email.trim() === '') throw ApiError.validation({ email: { code: 'validation_required', message: 'Missing required value.' } });
        await auth.initiate(auth.otp.slug, c, { identity: email }, req);
        return json(200, JSON.stringify({ otpId: auth.otp.otpIdFor(c, email.trim()) }));
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/auth-with-otp', handler: async (req) => {
        const c = authCollection(req);
        if (!auth.otp.enabled(c)) throw ApiError.notFound();
        const b = jsonBody(req);
        const code = isObject(b) ? b.password : undefined;
        if (typeof code !== 'string' && typeof code !== 'number') throw ApiError.validation({ password: { code: 'validation_required', message: 'Missing required value.' } });
        const identity = auth.otp.identityOfOtpId(c, isObject(b) ? b.otpId : undefined);
        return signedIn(c, await auth.signIn(auth.otp.slug, c, { identity, code }, req));
      },
    },
    {
      // superusers only: 401 anonymous, 403 any other caller, 404 an unknown record; no cookies
      method: 'post', pattern: '/api/collections/:col/impersonate/:id', handler: async (req) => {
        const c = authCollection(req);
        await auth.requireSuperuser(req);
        const b = jsonBody(req);
        const duration = isObject(b) && b.duration !== undefined ? b.duration : 0;
        if (!Number.isInteger(duration) || (duration as number) < 0 || (duration as number) > TOKEN_TTL_S) {
          throw ApiError.validation({ duration: { code: 'validation_value', message: `Must be a whole number of seconds from 0 (the default, ${TOKEN_TTL_S}) to ${TOKEN_TTL_S}.` } });
        }
        const rec = auth.loadAuthRecord(c, req.params[1]);
        if (!rec) throw ApiError.notFound();
        const token = await auth.impersonate(c, rec, req, (duration as number) || TOKEN_TTL_S);
        return json(200, body(c, token, rec));
      },
    },
    {
      // the signed-in owner (401 otherwise) asks; the token goes to the new address
      method: 'post', pattern: '/api/collections/:col/request-email-change', handler: async (req) => {
        const c = authCollection(req);
        const p = requireOwnCollection(c, await auth.resolve(req));
        auth.limits.enforce('request-email-change', c, auth.limits.clientKeys(req, String(p.record.id)));
        auth.emails.requestEmailChange(c, String(p.record.id), jsonBody(req));
        return noContent();
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/confirm-email-change', handler: async (req) => {
        const c = authCollection(req);
        const b = jsonBody(req);
        const change = await auth.emails.checkEmailChange(c, b, (col, id) => {
          // password guesses count per record, like a password change
          auth.limits.enforce('confirm-email-change', col, auth.limits.clientKeys(req, id), 'password');
          return auth.loadAuthRecord(col, id);
        });
        // the record writer as the system: the address is validated, must be free (409) and
        // becomes verified (the token proved it); record hooks fire
        const system: Principal = { superuser: true, collection: ctx.store.registry.find('_superusers')!, record: { id: '' } };
        await ctx.writes.update(c, change.recordId, system, { email: change.email, verified: true });
        await auth.emails.finishEmailChange(c, change.found);
        return noContent();
      },
    },
  ];
}
