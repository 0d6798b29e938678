/**
 * The active account (docs/framework.md, "Tenancy": the active account comes
 * from `X-Account-Id` or the signed account cookie). Present only when the app has a tenancy
 * resolver; every route needs a signed-in caller (401):
 * - `GET /api/account`: the caller's account context `{id, role, ids}` (id '' when none is active);
 * - `PUT /api/account` `{id}`: makes `id` the active account of this browser (the signed,
 *   HttpOnly `svc_account` cookie) after the resolver says the caller belongs to it (403 when not);
 * - `DELETE /api/account`: forgets it (204).
 * An X-Account-Id header wins over the cookie. Superusers are never members of an account.
 */
import type { Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import { ApiError } from '../errors/api-error.js';
import type { ApiContext } from './context.js';
import { jsonBody } from './request.js';

export function accountRoutes(ctx: ApiContext): Route[] {
  const { auth } = ctx;
  if (!auth.tenancy) return [];
  const secure = ctx.config.insecureCookies ? '' : '; Secure';
  const signedIn = async (req: Parameters<Route['handler']>[0]) => {
    const p = await auth.resolve(req);
    if (!p) throw ApiError.unauthorized();
    return p;
  };
  const view = (a: { id: string; role: string; ids: string[] } | undefined) => JSON.stringify({ id: a?.id ?? '', role: a?.role ?? '', ids: a?.ids ?? [] });
  return [
    {
      method: 'get', pattern: '/api/account', handler: async (req) => json(200, view((await signedIn(req)).account)),
    },
    {
      method: 'put', pattern: '/api/account', handler: async (req) => {
        const p = await signedIn(req);
        const b = jsonBody(req);
        const id = typeof b === 'object' && b !== null ? (b as Record<string, unknown>).id : undefined;
        if (typeof id !== 'string' || id === '' || id.length > 200) throw ApiError.validation({ id: { code: 'validation_required', message: 'Give the account id (1 to 200 characters).' } });
        if (p.superuser) throw ApiError.forbidden('Superusers are not members of accounts; they name one with X-Account-Id per request.');
        const account = await auth.tenancy!(p, id);
        if (!account || account.id !== id) throw ApiError.forbidden('You are not a member of this account.');
        return json(200, view(account), [['Set-Cookie', `svc_account=${auth.accountCookie(p, id)}; Path=/; HttpOnly; SameSite=Strict${secure}`]]);
      },
    },
    {
      method: 'del', pattern: '/api/account', handler: async (req) => {
        await signedIn(req);
        return noContent([['Set-Cookie', `svc_account=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure}`]]);
      },
    },
  ];
}
