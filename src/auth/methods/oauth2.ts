/**
 * OAuth2 sign-in with PKCE (docs/auth.md, "OAuth2 and passkeys", OAuth state included). The client
 * holds the PKCE verifier and runs the authorization redirect; the server hands out the provider's
 * authorization URL and a single-use state, then exchanges the code.
 *
 * initiate `{provider}` → `{authURL, clientId, scopes, state}`. `authURL` carries `client_id`,
 * `response_type=code`, `scope` and `state`; the client appends `redirect_uri`, `code_challenge`
 * and `code_challenge_method=S256`. The state is bound to whoever started the flow: the caller
 * signed in to this collection, or nobody. With SERVICE_OAUTH_STATE_SERVER false an anonymous
 * start gets no state (the client holds its own), but a signed-in start still gets a server-held
 * one, since only that can link a provider to a record.
 *
 * complete `{provider, code, codeVerifier, redirectUrl, state}`, in this order of checks:
 * the body, the redirect allow-list, then the server-side state is consumed (a missing,
 * mismatched, expired or replayed state, or one started by someone other than the completing
 * caller, is 400 before the provider is contacted; a signed-in caller needs one even with
 * SERVICE_OAUTH_STATE_SERVER false); then the code is exchanged with the verifier and the profile
 * fetched. The account is found by its link; without one, an authenticated caller of the same
 * collection gets the link on their own record, anyone else gets a new record (the provider's
 * email, which the provider must vouch for, else 400; judged by the create rule) created together
 * with its link. An existing record with the same email is never linked silently: that is 409,
 * sign in and link from the account instead. Each link records whether it was made under a proven
 * address (`confirmed`): a signup's is, a signed-in caller's is when their record is verified;
 * verification and password reset drop the others (docs/api.md, "OAuth2").
 */
import { ApiError, type FieldError } from '../../errors/api-error.js';
import type { Collection } from '../../model/schema.js';
import type { OAuth2Repository } from '../../context/auth-repositories.js';
import type { WriteStep } from '../../store/write-job.js';
import type { AuthRateLimits } from '../rate-limit.js';
import type { ClientInfo } from '../client.js';
import { isObject, methodEnabled, methodOptions, type AuthMethod, type CallerAccess, type MethodOptionsCheck, type MethodResult, type MethodRoute } from './method.js';
import type { AuthTokens } from '../auth-tokens.js';
import { createHash } from 'node:crypto';
import { newId, randomToken } from '../../records/ids.js';
import { nowDate } from '../../collections/fields/index.js';
import { exchangeCode, fetchProfile, providerEndpoints, providerOptionErrors, providerScopes, type ProviderOptions } from './oauth2-providers.js';

/** RFC 7636: 43 to 128 unreserved characters. */
const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;

/** What auth-with-oauth2's `createData` may not set: the provider and the server decide these. */
const SDK_CREATE_SKIP = new Set(['id', 'email', 'emailVisibility', 'verified', 'password', 'passwordConfirm']);

/** A provider as PocketBase's auth-methods lists it (the JS SDK's AuthProviderInfo). */
export interface SdkProvider {
  name: string;
  displayName: string;
  state: string;
  authURL: string;
  codeVerifier: string;
  codeChallenge: string;
  codeChallengeMethod: 'S256';
}

/** A provider's name for a sign-in button: the built-in kind's brand, else the configured name. */
function displayName(p: ProviderOptions): string {
  const brands: Record<string, string> = { google: 'Google', github: 'GitHub', microsoft: 'Microsoft', discord: 'Discord' };
  return brands[p.kind] ?? p.name;
}

const BAD_STATE = { state: { code: 'validation_value', message: 'Invalid, expired or already used state.' } };
const NOT_VOUCHED = {
  provider: {
    code: 'validation_value',
    message: 'The provider has not verified this email address, so no account is made from it. Verify it with the provider, or sign up with it and link the provider while signed in.',
  },
};

/** Creates an auth record for a first sign-in and returns its id (RecordWriter.createExternal). */
export type ExternalSignup = (c: Collection, body: Record<string, unknown>, verified: boolean, extra: (id: string) => WriteStep[]) => Promise<string>;

export interface OAuth2StateOptions {
  /** issue and verify state on the server (SERVICE_OAUTH_STATE_SERVER) */
  server: boolean;
  /** state lifetime in seconds (SERVICE_OAUTH_STATE_TTL) */
  ttlS: number;
}

/**
 * OAuth2's options check: the providers (providerOptionErrors, keys under `<path>.providers`)
 * when given or when the method is enabled, and at least one provider to be enabled.
 */
export const oauth2Options: MethodOptionsCheck = {
  slug: 'oauth2',
  checkOptions(m, at) {
    const errors: Record<string, FieldError> = {};
    if ('providers' in m || m.enabled === true) Object.assign(errors, providerOptionErrors(m.providers ?? [], `${at}.providers`));
    if (m.enabled === true && Array.isArray(m.providers) && m.providers.length === 0) errors[`${at}.providers`] = { code: 'validation_value', message: 'OAuth2 needs at least one provider to be enabled.' };
    return errors;
  },
};

export class OAuth2Method implements AuthMethod {
  readonly slug = oauth2Options.slug;
  readonly checkOptions = oauth2Options.checkOptions;
  readonly stores = ['_externalAuths', '_authTokens'] as const;
  readonly events = ['auth-success'] as const;

  /**
   * `signup`: how a first sign-in creates its record (the record writer's `createExternal`, so
   * its record events fire); null: a first sign-in answers 404.
   */
  constructor(
    private repo: OAuth2Repository,
    private limits: AuthRateLimits,
    private tokens: AuthTokens,
    private state: OAuth2StateOptions,
    private loadRecord: (c: Collection, id: string) => Promise<Record<string, unknown> | null>,
    private access: CallerAccess,
    private signup: ExternalSignup | null,
  ) {}

  enabled(c: Collection): boolean {
    return methodEnabled(c, this.slug);
  }

  /** The configured providers of a collection (validated when the options were saved). */
  providers(c: Collection): ProviderOptions[] {
    const list = methodOptions(c, this.slug).providers;
    return Array.isArray(list) ? (list as ProviderOptions[]) : [];
  }

  private provider(c: Collection, name: unknown): ProviderOptions {
    if (typeof name !== 'string' || name === '') throw ApiError.validation({ provider: { code: 'validation_required', message: 'Missing required value.' } });
    const p = this.providers(c).find((x) => x.name === name);
    if (!p) throw ApiError.validation({ provider: { code: 'validation_value', message: `No provider named "${name.slice(0, 60)}" is configured.` } });
    return p;
  }

  /**
   * The sign-in page's list (GET …/auth/oauth2/providers): name, the provider's authorization
   * endpoint, client id and scopes of each; never a secret.
   * @throws ApiError 502 when a discovery document cannot be read
   */
  async list(c: Collection): Promise<{ name: string; authURL: string; clientId: string; scopes: string[] }[]> {
    return Promise.all(this.providers(c).map(async (p) => ({ name: p.name, authURL: (await providerEndpoints(p)).authUrl, clientId: p.clientId, scopes: providerScopes(p) })));
  }

  /**
   * initiate `{provider}` → `{authURL, clientId, scopes, state?}`. The state token's row holds the
   * provider (record column) and the initiating caller's record id, '' for an anonymous start
   * (email column), so complete can refuse a flow someone else started.
   * @throws ApiError 400 for an unknown provider, 429 over the rate limit, 502 when discovery fails
   */
  async initiate(c: Collection, body: unknown, client: ClientInfo): Promise<{ authURL: string; clientId: string; scopes: string[]; state?: string }> {
    await this.limits.enforce('auth-oauth2-initiate', c, this.limits.clientKeys(client, ''), this.slug);
    const p = this.provider(c, isObject(body) ? body.provider : undefined);
    const url = await this.authorizationUrl(p);
    const scopes = providerScopes(p);
    const caller = await this.callerIn(c, client);
    // client-held state (the PocketBase SDK flow) for anonymous starts only: linking needs ours
    if (!this.state.server && !caller) return { authURL: url.href, clientId: p.clientId, scopes };
    // the provider name rides in the row's record column (a state answers for one provider only),
    // the initiator in its email column
    const state = await this.tokens.issue('oauth_state', c, p.name, caller ? String(caller.record.id) : '', this.state.ttlS);
    url.searchParams.set('state', state);
    return { authURL: url.href, clientId: p.clientId, scopes, state };
  }

  /** The provider's authorization endpoint with `client_id`, `response_type=code` and `scope`. */
  private async authorizationUrl(p: ProviderOptions): Promise<URL> {
    const url = new URL((await providerEndpoints(p)).authUrl);
    url.searchParams.set('client_id', p.clientId);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', providerScopes(p).join(' '));
    return url;
  }

  /**
   * The OAuth2 part of PocketBase's `GET …/auth-methods` (docs/pocketbase.md, "The JS SDK's auth
   * calls"): per provider `{name, displayName, state, authURL, codeVerifier, codeChallenge,
   * codeChallengeMethod: "S256"}`. The code verifier IS a server-held single-use state of the
   * initiate kind (an `oauth_state` token bound to the provider and to the caller signed in to
   * this collection, or nobody, living SERVICE_OAUTH_STATE_TTL seconds), so
   * {@link completeWithVerifier} consumes it before the provider is contacted, as complete
   * consumes its `state`. `state` is a random value for the client to compare with the callback's;
   * it never carries the verifier. `authURL` ends with `redirect_uri=` for the client to complete.
   * Counted against the initiate rate limit; an empty list when OAuth2 is off.
   * @throws ApiError 429 over the rate limit, 502 when a discovery document cannot be read
   */
  async handOut(c: Collection, client: ClientInfo): Promise<SdkProvider[]> {
    if (!this.enabled(c)) return [];
    await this.limits.enforce('auth-oauth2-initiate', c, this.limits.clientKeys(client, ''), this.slug);
    const caller = await this.callerIn(c, client);
    const out: SdkProvider[] = [];
    for (const p of this.providers(c)) {
      const url = await this.authorizationUrl(p);
      const codeVerifier = await this.tokens.issue('oauth_state', c, p.name, caller ? String(caller.record.id) : '', this.state.ttlS);
      const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
      const state = randomToken(24);
      url.searchParams.set('state', state);
      url.searchParams.set('code_challenge', codeChallenge);
      url.searchParams.set('code_challenge_method', 'S256');
      out.push({ name: p.name, displayName: displayName(p), state, authURL: `${url.href}&redirect_uri=`, codeVerifier, codeChallenge, codeChallengeMethod: 'S256' });
    }
    return out;
  }

  /**
   * complete `{provider, code, codeVerifier, redirectUrl, state}` → the record signed in, linked
   * or created, with `meta` (see the file's comment for the order of checks).
   * @throws ApiError 400 (body, state, refused code, an email the provider does not vouch for),
   * 403 (create rule), 409 (email taken, provider account linked elsewhere), 502 (provider)
   */
  async complete(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    return this.finish(c, isObject(body) ? body : {}, client, null);
  }

  /**
   * PocketBase's `POST …/auth-with-oauth2 {provider, code, codeVerifier, redirectURL, createData}`
   * (docs/pocketbase.md): complete's checks in complete's order, with the code verifier handed out
   * by {@link handOut} standing for the state: it must be an unexpired, unused `oauth_state` of
   * this collection and provider started by the same caller (400 otherwise, before the provider
   * is contacted), whatever SERVICE_OAUTH_STATE_SERVER says. `createData`'s fields of the
   * collection (never `email`, `password`, `verified`, `emailVisibility` or `id`) go into a first
   * sign-in's new record, judged by the create rule and validated like any create.
   * @throws ApiError as complete does
   */
  async completeWithVerifier(c: Collection, body: unknown, client: ClientInfo): Promise<MethodResult> {
    const b = isObject(body) ? body : {};
    const extra: Record<string, unknown> = {};
    if (isObject(b.createData)) {
      for (const f of c.fields) if (!SDK_CREATE_SKIP.has(f.name) && f.name in b.createData) extra[f.name] = b.createData[f.name];
    }
    return this.finish(c, { provider: b.provider, code: b.code, codeVerifier: b.codeVerifier, redirectUrl: b.redirectURL, state: b.codeVerifier }, client, extra);
  }

  /** complete's flow; `sdk`: the auth-with-oauth2 form (the state is the verifier, always server-held; extra create fields). */
  private async finish(c: Collection, b: Record<string, unknown>, client: ClientInfo, sdk: Record<string, unknown> | null): Promise<MethodResult> {
    await this.limits.enforce('auth-oauth2-complete', c, this.limits.clientKeys(client, ''), this.slug);
    const p = this.provider(c, b.provider);
    const errors: Record<string, { code: string; message: string }> = {};
    const missing = { code: 'validation_required', message: 'Missing required value.' };
    if (typeof b.code !== 'string' || b.code === '') errors.code = missing;
    else if (b.code.length > 2000) errors.code = { code: 'validation_max', message: 'Must be at most 2000 characters.' };
    if (typeof b.codeVerifier !== 'string' || b.codeVerifier === '') errors.codeVerifier = missing;
    else if (!VERIFIER_RE.test(b.codeVerifier)) errors.codeVerifier = { code: 'validation_value', message: 'Must be a PKCE code verifier: 43 to 128 letters, digits, "-", ".", "_" or "~".' };
    if (typeof b.redirectUrl !== 'string' || b.redirectUrl === '') errors.redirectUrl = missing;
    else if (!p.redirectUrls.includes(b.redirectUrl)) errors.redirectUrl = { code: 'validation_value', message: 'The redirect URL is not in the provider\'s allow-list.' };
    const caller = await this.callerIn(c, client);
    // a signed-in caller may link, so needs a state they started even when states are client-held
    const serverState = sdk !== null || this.state.server || caller !== null;
    if (serverState && sdk === null && (typeof b.state !== 'string' || b.state === '')) errors.state = missing;
    if (Object.keys(errors).length) throw ApiError.validation(errors);
    if (serverState) await this.consumeState(c, p, b.state as string, caller ? String(caller.record.id) : '');

    const endpoints = await providerEndpoints(p);
    const accessToken = await exchangeCode(p, endpoints, b.code as string, b.codeVerifier as string, b.redirectUrl as string);
    const profile = await fetchProfile(p, endpoints, accessToken);
    const meta = { provider: p.name, id: profile.id, email: profile.email, name: profile.name, avatarURL: profile.avatarURL, isNew: false, rawUser: profile.raw };

    const linked = await this.repo.externalAuths.recordFor(c.id, p.name, profile.id);
    if (caller) {
      // an authenticated user adds the provider to their own record; the link is confirmed only
      // when the record's address is proven: someone signed in to an unverified record may not
      // own the address, and its owner's verification or reset must end their way in
      const own = String(caller.record.id);
      if (linked !== undefined && linked !== own) throw ApiError.conflict('This provider account is already linked to another record.');
      // a new way into the account outlives the session: a stolen session may not add one
      if (linked === undefined) this.access.requireRecent(caller);
      const verified = caller.record.verified === true || Number(caller.record.verified) === 1;
      if (linked === undefined) await this.link(c, own, p.name, profile.id, verified);
      return { record: await this.mustLoad(c, own), meta };
    }
    if (linked !== undefined) return { record: await this.mustLoad(c, linked), meta };

    // first sign-in: a new record with its link, in one write job
    if (!profile.email) throw ApiError.validation({ provider: { code: 'validation_value', message: 'The provider did not share an email address; ask for its email scope.' } });
    // auth records always hold an email (a required system field), so an address the provider
    // does not vouch for makes no account: its holder could not be told from the address's owner
    if (!profile.emailVerified) throw ApiError.validation(NOT_VOUCHED);
    if (await this.repo.auth.byEmail(c, profile.email)) {
      throw ApiError.conflict('An account with this email already exists. Sign in to it, then complete this provider\'s sign-in while signed in to link it.');
    }
    if (!this.signup) throw ApiError.notFound();
    const fields: Record<string, unknown> = { ...sdk, email: profile.email, emailVisibility: false };
    const nameField = c.fields.find((f) => f.name === 'name' && f.type === 'text');
    if (nameField && profile.name && fields.name === undefined) fields.name = profile.name.slice(0, Number(nameField.options.max) > 0 ? Number(nameField.options.max) : 200);
    const id = await this.signup(c, fields, true, (recordId) => [this.repo.externalAuths.linkStep(newId(), c.id, recordId, p.name, profile.id, nowDate(), true)]);
    return { record: await this.mustLoad(c, id), meta: { ...meta, isNew: true } };
  }

  /** Unlinks a provider from a record (DELETE …/records/:id/external-auths/:provider); 404 when not linked. */
  async unlink(c: Collection, recordId: string, provider: string): Promise<void> {
    await this.repo.write([this.repo.externalAuths.unlinkStep(c.id, recordId, provider, { status: 404, code: 'not_found', message: 'The requested resource was not found.' })]);
  }

  /**
   * Consumes a server-side state: it must exist, be unexpired, belong to this collection and
   * provider, and have been started by `initiator` (the completing caller's record id, '' when
   * anonymous).
   */
  private async consumeState(c: Collection, p: ProviderOptions, state: string, initiator: string): Promise<void> {
    const found = await this.tokens.find('oauth_state', c, state);
    if (!found) throw ApiError.validation(BAD_STATE);
    // consumed whatever follows: a state that was tried with the wrong provider is spent too
    await this.repo.write([this.tokens.consumeStep(found, { status: 400, code: 'validation_failed', message: 'Failed to validate the submitted data.', data: BAD_STATE })]);
    if (found.recordId !== p.name || found.email !== initiator) throw ApiError.validation(BAD_STATE);
  }

  private async callerIn(c: Collection, client: ClientInfo): Promise<{ record: Record<string, unknown>; authTime?: number } | null> {
    if (!client.headers.authorization && !client.headers.cookie) return null;
    let who;
    try {
      who = await this.access.resolve(client);
    } catch {
      return null; // a bad token is no caller: the sign-in goes on as anonymous
    }
    return who && who.collection.id === c.id ? who : null;
  }

  /**
   * OAuth2's own routes: the sign-in page's provider list (GET …/auth/oauth2/providers, 404 unless
   * OAuth2 is on; docs/auth.md, "OAuth2 and passkeys") and unlinking a provider from a record
   * (DELETE …/records/:id/external-auths/:provider, docs/api.md, "OAuth2": 401 anonymous, 404
   * unless the caller is the record itself or a superuser, or when the provider is not linked).
   */
  routes(): readonly MethodRoute[] {
    return [
      {
        verb: 'get', path: 'auth/oauth2/providers', handle: async (c) => {
          if (!this.enabled(c)) throw ApiError.notFound();
          return { items: await this.list(c) };
        },
      },
      {
        verb: 'del', path: 'records/:id/external-auths/:provider', handle: async (c, [recordId, provider], _body, client) => {
          const p = await this.access.resolve(client);
          if (!p) throw ApiError.unauthorized();
          if (!p.superuser && !(p.collection.id === c.id && p.record.id === recordId)) throw ApiError.notFound();
          await this.unlink(c, recordId, provider);
          return undefined;
        },
      },
    ];
  }

  private async link(c: Collection, recordId: string, provider: string, providerId: string, confirmed: boolean): Promise<void> {
    try {
      await this.repo.write([this.repo.externalAuths.linkStep(newId(), c.id, recordId, provider, providerId, nowDate(), confirmed)]);
    } catch (err) {
      if (this.repo.dialect.writeFailure(err)?.constraint) throw ApiError.conflict('This provider account is already linked to a record.');
      throw err;
    }
  }

  private async mustLoad(c: Collection, id: string): Promise<Record<string, unknown>> {
    const rec = await this.loadRecord(c, id);
    if (!rec) throw ApiError.notFound();
    return rec;
  }
}

