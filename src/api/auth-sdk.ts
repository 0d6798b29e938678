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
 * write itself); `GET /api/collections/_externalAuths/records` and `DELETE …/records/:id`, the
 * two calls the SDK's listExternalAuths and unlinkExternalAuth make, read and remove a record's
 * OAuth2 links (no such collection exists: these two routes answer for it). Sign-ins go through
 * AuthService.signIn like every other.
 */
import type { Req, Route } from '../http/types.js';
import { json, noContent } from '../http/types.js';
import type { ApiContext } from './context.js';
import { jsonBody, query } from './request.js';
import { authReplies } from './auth.js';
import { ApiError } from '../errors/api-error.js';
import { isObject, methodOptions } from '../auth/methods/method.js';
import { OTP_TTL_S } from '../auth/methods/otp.js';
import { MFA_ATTEMPT_TTL_MS, twoFactorPolicy } from '../auth/two-factor.js';
import { TOKEN_TTL_S } from '../auth/tokens.js';
import { requireOwnCollection } from '../auth/auth-service.js';
import type { Principal } from '../rules/access.js';
import type { Collection } from '../model/schema.js';

/**
 * The only filters the SDK's external-auth calls send (its `pb.filter`): `recordRef = "…"`,
 * optionally `&& provider = "…"`; single or double quotes, a backslash escaping the next character.
 */
const STR = `("(?:[^"\\\\]|\\\\.)*"|'(?:[^'\\\\]|\\\\.)*')`;
const LINK_FILTER = new RegExp(`^\\s*recordRef\\s*=\\s*${STR}\\s*(?:&&\\s*provider\\s*=\\s*${STR}\\s*)?$`);
const unquote = (v: string) => v.slice(1, -1).replace(/\\(.)/g, '$1');

/** A link's id in the `_externalAuths` answers: base64url of `[collection id, record id, provider]`, so DELETE finds the link again. */
const linkId = (collectionId: string, recordId: string, provider: string) => Buffer.from(JSON.stringify([collectionId, recordId, provider])).toString('base64url');

function parseLinkId(id: string): [string, string, string] | null {
  try {
    const v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8')) as unknown;
    return Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'string') ? (v as [string, string, string]) : null;
  } catch {
    return null;
  }
}

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
        const rec = await auth.loadAuthRecord(c, req.params[1]);
        if (!rec) throw ApiError.notFound();
        const token = await auth.impersonate(c, rec, req, (duration as number) || TOKEN_TTL_S);
        return json(200, await body(c, token, rec));
      },
    },
    {
      // the signed-in owner (401 otherwise) asks; the token goes to the new address
      method: 'post', pattern: '/api/collections/:col/request-email-change', handler: async (req) => {
        const c = authCollection(req);
        const p = requireOwnCollection(c, await auth.resolve(req));
        await auth.limits.enforce('request-email-change', c, auth.limits.clientKeys(req, String(p.record.id)));
        auth.emails.requestEmailChange(c, String(p.record.id), jsonBody(req));
        return noContent();
      },
    },
    {
      method: 'post', pattern: '/api/collections/:col/confirm-email-change', handler: async (req) => {
        const c = authCollection(req);
        const b = jsonBody(req);
        const change = await auth.emails.checkEmailChange(c, b, async (col, id) => {
          // password guesses count per record, like a password change
          await auth.limits.enforce('confirm-email-change', col, auth.limits.clientKeys(req, id), 'password');
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
    {
      // listExternalAuths / getFirstListItem: the links of the record a `recordRef` filter names,
      // in a PocketBase list answer; only its owner and superusers see any (PocketBase's list rule
      // `recordRef = @request.auth.id`), anyone else an empty list
      method: 'get', pattern: '/api/collections/_externalAuths/records', handler: async (req) => {
        const q = query(req);
        const m = LINK_FILTER.exec(q.get('filter') ?? '');
        if (!m) throw ApiError.badRequest('Invalid filter: _externalAuths answers only recordRef = "…" (&& provider = "…").');
        const recordId = unquote(m[1]);
        const provider = m[2] === undefined ? undefined : unquote(m[2]);
        const c = await linkOwner(req, recordId);
        const items = c
          ? (await ctx.store.sql.externalAuths.list(c.id, [recordId])).filter((l) => provider === undefined || l.provider === provider)
            .map((l) => ({ collectionName: '_externalAuths', id: linkId(c.id, recordId, l.provider), collectionRef: c.id, recordRef: recordId, provider: l.provider, providerId: l.providerId }))
          : [];
        const perPage = Math.max(1, Number(q.get('perPage')) || 30);
        const page = Math.max(1, Number(q.get('page')) || 1);
        const shown = items.slice((page - 1) * perPage, page * perPage);
        return json(200, JSON.stringify({ page, perPage, totalItems: items.length, totalPages: Math.ceil(items.length / perPage), items: shown }));
      },
    },
    {
      // unlinkExternalAuth: 401 anonymous; 404 for an unknown id, a record not the caller's (superusers: any) or a link that is gone
      method: 'del', pattern: '/api/collections/_externalAuths/records/:id', handler: async (req) => {
        const p = await auth.resolve(req);
        if (!p) throw ApiError.unauthorized();
        const ref = parseLinkId(req.params[0]);
        if (!ref) throw ApiError.notFound();
        const [collectionId, recordId, provider] = ref;
        const c = await linkOwner(req, recordId);
        if (!c || c.id !== collectionId) throw ApiError.notFound();
        await auth.oauth2.unlink(c, recordId, provider);
        return noContent();
      },
    },
  ];

  /** The auth collection of `recordId` when the caller is that record or a superuser, else null. */
  async function linkOwner(req: Req, recordId: string): Promise<Collection | null> {
    const p = await auth.resolve(req);
    if (!p) return null;
    if (!p.superuser) return String(p.record.id) === recordId ? p.collection : null;
    // record ids are unique across auth collections (docs/auth.md, "Auth collections")
    for (const c of ctx.store.registry.all()) if (c.type === 'auth' && (await auth.loadAuthRecord(c, recordId)) !== null) return c;
    return null;
  }
}
