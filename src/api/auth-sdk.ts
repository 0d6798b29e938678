/**
 * PocketBase's auth routes as its JS SDK calls them (docs/pocketbase.md, "The JS SDK's auth
 * calls"; docs/api.md, "PocketBase SDK routes"), over svc's own sign-in methods: nothing here
 * proves anything itself. `GET …/auth-methods` lists the collection's methods in PocketBase's
 * shape (OAuth2 providers with a server-held code verifier, OAuth2Method.handOut);
 * `POST …/auth-with-oauth2` completes OAuth2 with that verifier (OAuth2Method.completeWithVerifier).
 * Sign-ins go through AuthService.signIn like every other.
 */
import type { Route } from '../http/types.js';
import { json } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';
import { authReplies } from './auth.js';
import { methodOptions } from '../auth/methods/method.js';
import { OTP_TTL_S } from '../auth/methods/otp.js';
import { MFA_ATTEMPT_TTL_MS, twoFactorPolicy } from '../auth/two-factor.js';

export function authSdkRoutes(ctx: ApiContext): Route[] {
  const { auth } = ctx;
  const { signedIn, authCollection } = authReplies(ctx);
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
  ];
}
