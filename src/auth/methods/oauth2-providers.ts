/**
 * OAuth2 provider kinds and the talk with a provider (docs/auth.md, "OAuth2 and
 * passkeys"): the four named kinds (`google`, `github`,
 * `microsoft`, `discord`) with their endpoints, default scopes and profile shapes, plus `generic`
 * (OpenID Connect: three URLs given, or a `discoveryUrl`). Every provider URL must be https, both
 * when the options are saved and when a discovered endpoint is used; responses are bounded in size
 * and time.
 */
import { ApiError } from '../../errors/api-error.js';
import { boundedCache } from '../../cache/bounded.js';

/** The provider kinds `options.auth.methods.oauth2.providers[].kind` accepts. */
export const PROVIDER_KINDS = ['google', 'github', 'microsoft', 'discord', 'generic'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** One provider as stored in the collection options. */
export interface ProviderOptions {
  name: string;
  kind: ProviderKind;
  clientId: string;
  clientSecret?: string;
  authUrl?: string;
  tokenUrl?: string;
  userInfoUrl?: string;
  discoveryUrl?: string;
  scopes?: string[];
  /** the redirect allow-list: `complete` accepts exactly these `redirectUrl`s */
  redirectUrls: string[];
}

/** The endpoints a provider is reached at (all https). */
export interface Endpoints {
  authUrl: string;
  tokenUrl: string;
  userInfoUrl: string;
  /** send the client secret as HTTP Basic credentials instead of in the form */
  basicAuth: boolean;
}

/** What a provider says about the signed-in account. */
export interface ProviderProfile {
  /** the account's stable id at the provider */
  id: string;
  email: string;
  /** the provider vouches that the account owns `email` */
  emailVerified: boolean;
  name: string;
  avatarURL: string;
  /** the provider's own answer, for the response's `meta.rawUser` */
  raw: Record<string, unknown>;
}

interface KindDefaults {
  authUrl?: string;
  tokenUrl?: string;
  userInfoUrl?: string;
  scopes: string[];
}

const KINDS: Record<ProviderKind, KindDefaults> = {
  google: {
    authUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    userInfoUrl: 'https://openidconnect.googleapis.com/v1/userinfo',
    scopes: ['openid', 'email', 'profile'],
  },
  github: {
    authUrl: 'https://github.com/login/oauth/authorize',
    tokenUrl: 'https://github.com/login/oauth/access_token',
    userInfoUrl: 'https://api.github.com/user',
    scopes: ['read:user', 'user:email'],
  },
  microsoft: {
    authUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    userInfoUrl: 'https://graph.microsoft.com/oidc/userinfo',
    scopes: ['openid', 'email', 'profile'],
  },
  discord: {
    authUrl: 'https://discord.com/oauth2/authorize',
    tokenUrl: 'https://discord.com/api/oauth2/token',
    userInfoUrl: 'https://discord.com/api/users/@me',
    scopes: ['identify', 'email'],
  },
  generic: { scopes: ['openid', 'email', 'profile'] },
};

/** The scopes a provider asks for: its own list, else its kind's defaults. */
export function providerScopes(p: ProviderOptions): string[] {
  return p.scopes?.length ? p.scopes : KINDS[p.kind].scopes;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** True for an absolute https URL without credentials. */
export function isHttpsUrl(v: unknown): v is string {
  if (typeof v !== 'string' || v.length > 2000) return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' && u.username === '' && u.password === '' && u.hostname !== '';
  } catch {
    return false;
  }
}

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/**
 * The errors of `options.auth.methods.oauth2.providers` (keys relative to `at`); empty when valid.
 * Checks names (unique, `[a-z0-9_-]`), kinds, the client id, https-only URLs (a `generic`
 * provider needs a `discoveryUrl` or all three endpoint URLs), scopes and a non-empty redirect
 * allow-list of absolute http(s) URLs.
 */
export function providerOptionErrors(providers: unknown, at: string): Record<string, { code: string; message: string }> {
  const errors: Record<string, { code: string; message: string }> = {};
  const bad = (k: string, message: string) => (errors[k] = { code: 'validation_value', message });
  if (!Array.isArray(providers)) {
    bad(at, 'Must be an array of providers.');
    return errors;
  }
  const names = new Set<string>();
  providers.forEach((p, i) => {
    const k = `${at}.${i}`;
    if (!isObject(p)) return void bad(k, 'Must be an object.');
    if (typeof p.name !== 'string' || !NAME_RE.test(p.name)) bad(`${k}.name`, 'Must be 1 to 40 lowercase letters, digits, "-" or "_".');
    else if (names.has(p.name)) bad(`${k}.name`, `The provider name "${p.name}" is used twice.`);
    else names.add(p.name);
    if (!PROVIDER_KINDS.includes(p.kind as ProviderKind)) bad(`${k}.kind`, `Must be one of ${PROVIDER_KINDS.join(', ')}.`);
    if (typeof p.clientId !== 'string' || p.clientId === '' || p.clientId.length > 500) bad(`${k}.clientId`, 'Must be a non-empty string.');
    if ('clientSecret' in p && (typeof p.clientSecret !== 'string' || p.clientSecret.length > 2000)) bad(`${k}.clientSecret`, 'Must be a string.');
    for (const u of ['authUrl', 'tokenUrl', 'userInfoUrl', 'discoveryUrl']) {
      if (u in p && p[u] !== '' && !isHttpsUrl(p[u])) bad(`${k}.${u}`, 'Must be an absolute https URL: provider URLs are https only.');
    }
    if (p.kind === 'generic' && !p.discoveryUrl && !(p.authUrl && p.tokenUrl && p.userInfoUrl)) {
      bad(`${k}.discoveryUrl`, 'A generic provider needs a discoveryUrl, or authUrl, tokenUrl and userInfoUrl.');
    }
    if ('scopes' in p && (!Array.isArray(p.scopes) || p.scopes.some((s) => typeof s !== 'string' || !/^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/.test(s)))) {
      bad(`${k}.scopes`, 'Must be an array of scope names (printable characters, no space, quote or backslash).');
    }
    const urls = p.redirectUrls;
    if (!Array.isArray(urls) || urls.length === 0 || urls.some((u) => !isAbsoluteWebUrl(u))) {
      bad(`${k}.redirectUrls`, 'Must be a non-empty array of absolute http(s) URLs: the redirect allow-list.');
    }
  });
  return errors;
}

function isAbsoluteWebUrl(v: unknown): boolean {
  if (typeof v !== 'string' || v.length > 2000) return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '' && u.hash === '';
  } catch {
    return false;
  }
}

/** Longest provider answer read (bytes), and how long a provider may take (milliseconds). */
export const MAX_PROVIDER_RESPONSE = 1 << 20;
export const PROVIDER_TIMEOUT_MS = 10_000;

const upstream = (message: string) => new ApiError(502, 'bad_gateway', message);

/**
 * One request to a provider: https only, at most {@link PROVIDER_TIMEOUT_MS}, the answer at most
 * {@link MAX_PROVIDER_RESPONSE} bytes and JSON. Answers `{status, body}`.
 * @throws ApiError 502 `bad_gateway` when the provider cannot be reached or answers no JSON
 */
export async function providerRequest(url: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: unknown }> {
  if (!isHttpsUrl(url)) throw upstream('The provider endpoint is not an https URL.');
  let res: Response;
  try {
    res = await fetch(url, { method: init.method ?? 'GET', headers: { accept: 'application/json', 'user-agent': 'svc', ...init.headers }, body: init.body, redirect: 'error', signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
  } catch (err) {
    throw upstream(`The provider could not be reached (${(err as Error).name === 'TimeoutError' ? 'timed out' : ((err as { cause?: Error }).cause?.message ?? (err as Error).message)}).`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += (chunk as Uint8Array).byteLength;
      if (size > MAX_PROVIDER_RESPONSE) throw upstream('The provider answer is too large.');
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw upstream('The provider answer was cut off.');
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  } catch {
    throw upstream(`The provider answered ${res.status} without JSON.`);
  }
}

/** Discovery documents by URL, kept an hour. */
const discovered = boundedCache<string, { at: number; endpoints: Endpoints }>(100);
const DISCOVERY_TTL_MS = 3600_000;

/**
 * The endpoints of a provider: its own URLs over its kind's defaults, or, for `generic` with a
 * `discoveryUrl`, the OpenID Connect discovery document (cached an hour; every endpoint in it
 * must be https). @throws ApiError 502 when discovery fails
 */
export async function providerEndpoints(p: ProviderOptions): Promise<Endpoints> {
  const d = KINDS[p.kind];
  if (p.kind === 'generic' && p.discoveryUrl && !(p.authUrl && p.tokenUrl && p.userInfoUrl)) {
    const hit = discovered.get(p.discoveryUrl);
    if (hit && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit.endpoints;
    const { status, body } = await providerRequest(p.discoveryUrl, {});
    if (status !== 200 || !isObject(body)) throw upstream(`The provider's discovery document answered ${status}.`);
    const { authorization_endpoint: a, token_endpoint: t, userinfo_endpoint: u, token_endpoint_auth_methods_supported: m } = body;
    if (!isHttpsUrl(a) || !isHttpsUrl(t) || !isHttpsUrl(u)) throw upstream('The provider\'s discovery document lacks an https authorization, token or userinfo endpoint.');
    const methods = Array.isArray(m) ? m : [];
    const endpoints: Endpoints = { authUrl: p.authUrl || a, tokenUrl: p.tokenUrl || t, userInfoUrl: p.userInfoUrl || u, basicAuth: methods.length > 0 && !methods.includes('client_secret_post') && methods.includes('client_secret_basic') };
    discovered.set(p.discoveryUrl, { at: Date.now(), endpoints });
    return endpoints;
  }
  return { authUrl: p.authUrl || d.authUrl!, tokenUrl: p.tokenUrl || d.tokenUrl!, userInfoUrl: p.userInfoUrl || d.userInfoUrl!, basicAuth: false };
}

/**
 * Exchanges an authorization code (with its PKCE verifier) for an access token.
 * @throws ApiError 400 when the provider refuses the code, 502 when it cannot be reached
 */
export async function exchangeCode(p: ProviderOptions, e: Endpoints, code: string, codeVerifier: string, redirectUrl: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUrl, code_verifier: codeVerifier, client_id: p.clientId });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (e.basicAuth) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(p.clientId)}:${encodeURIComponent(p.clientSecret ?? '')}`).toString('base64')}`;
  else if (p.clientSecret) form.set('client_secret', p.clientSecret);
  const { status, body } = await providerRequest(e.tokenUrl, { method: 'POST', headers, body: form.toString() });
  const b = isObject(body) ? body : {};
  // GitHub answers 200 with an `error` member
  if (status >= 400 || typeof b.error === 'string') {
    const reason = typeof b.error === 'string' ? b.error.slice(0, 100) : `status ${status}`;
    if (status >= 500) throw upstream(`The provider's token endpoint failed (${reason}).`);
    throw ApiError.validation({ code: { code: 'validation_value', message: `The provider refused the authorization code (${reason}).` } });
  }
  if (typeof b.access_token !== 'string' || b.access_token === '') throw upstream('The provider\'s token answer has no access_token.');
  return b.access_token;
}

const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
const truthy = (v: unknown) => v === true || v === 'true';

/**
 * The signed-in account as the provider describes it, from its userinfo endpoint (and, for
 * GitHub, its emails endpoint: the primary verified address).
 * @throws ApiError 502 when the provider answers without an account id
 */
export async function fetchProfile(p: ProviderOptions, e: Endpoints, accessToken: string): Promise<ProviderProfile> {
  const auth = { authorization: `Bearer ${accessToken}` };
  const { status, body } = await providerRequest(e.userInfoUrl, { headers: auth });
  if (status !== 200 || !isObject(body)) throw upstream(`The provider's userinfo endpoint answered ${status}.`);
  const profile = mapProfile(p.kind, body);
  if (p.kind === 'github' && !profile.emailVerified) {
    const emails = await providerRequest(new URL('/user/emails', e.userInfoUrl).href, { headers: auth });
    const list = Array.isArray(emails.body) ? emails.body.filter(isObject) : [];
    const best = list.find((m) => m.primary === true && m.verified === true) ?? list.find((m) => m.verified === true);
    if (best && typeof best.email === 'string') {
      profile.email = best.email;
      profile.emailVerified = true;
    }
  }
  if (profile.id === '') throw upstream('The provider\'s userinfo answer has no account id.');
  return profile;
}

/**
 * A provider's userinfo answer as a {@link ProviderProfile}: OpenID Connect claims (`sub`,
 * `email`, `email_verified`, `name`, `picture`) for google, microsoft and generic; GitHub's
 * `/user` (`id`, `login`, `name`, `avatar_url`; its public email counts as unverified until the
 * emails endpoint says otherwise); Discord's `/users/@me` (`id`, `username`, `global_name`,
 * `email`, `verified`, `avatar`).
 */
export function mapProfile(kind: ProviderKind, raw: Record<string, unknown>): ProviderProfile {
  switch (kind) {
    case 'github':
      return { id: str(raw.id), email: str(raw.email), emailVerified: false, name: str(raw.name) || str(raw.login), avatarURL: str(raw.avatar_url), raw };
    case 'discord': {
      const id = str(raw.id);
      const avatar = str(raw.avatar);
      return { id, email: str(raw.email), emailVerified: truthy(raw.verified), name: str(raw.global_name) || str(raw.username), avatarURL: avatar ? `https://cdn.discordapp.com/avatars/${id}/${avatar}.png` : '', raw };
    }
    default:
      // Microsoft's userinfo carries no email_verified for work accounts; an address it cannot
      // vouch for stays unverified (the "nOAuth" takeover relies on trusting it)
      return { id: str(raw.sub), email: str(raw.email), emailVerified: truthy(raw.email_verified), name: str(raw.name), avatarURL: str(raw.picture), raw };
  }
}
