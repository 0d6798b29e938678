/**
 * An auth collection's options as form values (docs/admin.md, "Sign-in methods"): identity
 * fields, password length, second factor, sessions, and each sign-in method of
 * `options.auth.methods` (docs/auth.md): password on/off, one-time code and magic link with their
 * lifetimes, passkeys (rpId, rpName, origins) and OAuth2 providers. Keys the form does not show
 * (`rate_limit`, magic-link redirects, an app's own methods) are kept as loaded. A provider's
 * client secret is write-only in the form: never put in an input, and sent as loaded when the
 * input is left blank.
 */
import type { AuthOptions } from '../types';

/** The OAuth2 provider kinds the server accepts (src/auth/methods/oauth2-providers.ts). */
export const PROVIDER_KINDS = ['google', 'github', 'microsoft', 'discord', 'generic'] as const;

/** The provider keys the form edits; any other key of a loaded provider is kept. */
const PROVIDER_KEYS = ['name', 'kind', 'clientId', 'clientSecret', 'authUrl', 'tokenUrl', 'userInfoUrl', 'discoveryUrl', 'scopes', 'redirectUrls'];

export interface ProviderDraft {
  key: string;
  name: string;
  kind: string;
  clientId: string;
  /** a new secret typed in the form; '' keeps `storedSecret` */
  clientSecret: string;
  /** the secret as loaded (null: none), never shown */
  storedSecret: string | null;
  authUrl: string;
  tokenUrl: string;
  userInfoUrl: string;
  discoveryUrl: string;
  /** space- or comma-separated */
  scopes: string;
  /** one per line or comma-separated */
  redirectUrls: string;
  /** the loaded provider's other keys */
  rest: Record<string, unknown>;
}

export interface AuthDraft {
  identityFields: string;
  minPasswordLength: string;
  two_factor: string;
  require_verified: boolean;
  sessionStore: string;
  password: boolean;
  otp: { enabled: boolean; ttl: string };
  magicLink: { enabled: boolean; ttl: string };
  webauthn: { enabled: boolean; rpId: string; rpName: string; origins: string };
  oauth2: { enabled: boolean; providers: ProviderDraft[] };
  /** `options.auth.methods` as loaded: what the form does not show is sent back unchanged */
  methodsBase: Record<string, unknown>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
const strList = (v: unknown, sep: string): string => (Array.isArray(v) ? v.map(String).join(sep) : '');
export const splitList = (s: string): string[] => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
const splitComma = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);

let seq = 0;
const providerKey = (): string => `p${++seq}`;

/** A blank provider row (kind google). */
export function newProvider(): ProviderDraft {
  return { key: providerKey(), name: '', kind: 'google', clientId: '', clientSecret: '', storedSecret: null, authUrl: '', tokenUrl: '', userInfoUrl: '', discoveryUrl: '', scopes: '', redirectUrls: '', rest: {} };
}

function providerDraft(p: unknown): ProviderDraft {
  const o = isObj(p) ? p : {};
  const rest: Obj = {};
  for (const [k, v] of Object.entries(o)) if (!PROVIDER_KEYS.includes(k)) rest[k] = v;
  return {
    key: providerKey(),
    name: str(o.name),
    kind: str(o.kind) || 'generic',
    clientId: str(o.clientId),
    clientSecret: '',
    storedSecret: typeof o.clientSecret === 'string' ? o.clientSecret : null,
    authUrl: str(o.authUrl),
    tokenUrl: str(o.tokenUrl),
    userInfoUrl: str(o.userInfoUrl),
    discoveryUrl: str(o.discoveryUrl),
    scopes: strList(o.scopes, ' '),
    redirectUrls: strList(o.redirectUrls, '\n'),
    rest,
  };
}

/** The form values of an auth collection's options (defaults for a new collection). */
export function authDraft(auth: AuthOptions | undefined): AuthDraft {
  const methods: Obj = isObj(auth?.methods) ? (auth!.methods as Obj) : {};
  const m = (slug: string): Obj => (isObj(methods[slug]) ? (methods[slug] as Obj) : {});
  const wa = m('webauthn');
  const oa = m('oauth2');
  return {
    identityFields: (auth?.identityFields ?? ['email']).join(', '),
    minPasswordLength: String(auth?.minPasswordLength ?? 8),
    two_factor: auth?.two_factor ?? 'disabled',
    require_verified: auth?.require_verified ?? false,
    sessionStore: auth?.session?.store ?? 'epoch',
    password: m('password').enabled !== false,
    otp: { enabled: m('otp').enabled === true, ttl: str(m('otp').ttl_s) },
    magicLink: { enabled: m('magic_link').enabled === true, ttl: str(m('magic_link').ttl_s) },
    webauthn: { enabled: wa.enabled === true, rpId: str(wa.rpId), rpName: str(wa.rpName), origins: strList(wa.origins, '\n') },
    oauth2: { enabled: oa.enabled === true, providers: Array.isArray(oa.providers) ? oa.providers.map(providerDraft) : [] },
    methodsBase: methods,
  };
}

/** A lifetime input's value: a number when it is one, the text as is otherwise (the API says why). */
function seconds(s: string): number | string {
  const n = Number(s.trim());
  return Number.isFinite(n) ? n : s;
}

function providerBody(p: ProviderDraft): Obj {
  const out: Obj = { ...p.rest, name: p.name.trim(), kind: p.kind, clientId: p.clientId.trim() };
  const secret = p.clientSecret !== '' ? p.clientSecret : p.storedSecret;
  if (secret !== null) out.clientSecret = secret;
  for (const k of ['authUrl', 'tokenUrl', 'userInfoUrl', 'discoveryUrl'] as const) if (p[k].trim()) out[k] = p[k].trim();
  const scopes = splitList(p.scopes);
  if (scopes.length) out.scopes = scopes;
  out.redirectUrls = splitList(p.redirectUrls);
  return out;
}

/**
 * `options.auth.methods` from the form: the loaded object with each shown method's keys set. A
 * method absent before is written only once the form turns it on (or, for password, off), so
 * saving an untouched form sends the methods as they were.
 */
function methodsBody(d: AuthDraft): Obj {
  const base = d.methodsBase;
  const out: Obj = { ...base };
  const prev = (slug: string): Obj | null => (isObj(base[slug]) ? (base[slug] as Obj) : null);
  const put = (slug: string, on: boolean, set: (m: Obj) => void) => {
    const before = prev(slug);
    if (!before && !on) return;
    const m: Obj = { ...(before ?? {}), enabled: on };
    set(m);
    out[slug] = m;
  };
  if (prev('password') || !d.password) out.password = { ...(prev('password') ?? {}), enabled: d.password };
  for (const [slug, v] of [['otp', d.otp], ['magic_link', d.magicLink]] as const) {
    put(slug, v.enabled, (m) => {
      if (v.ttl.trim()) m.ttl_s = seconds(v.ttl);
      else delete m.ttl_s;
    });
  }
  const wa = d.webauthn;
  put('webauthn', wa.enabled || !!wa.rpId.trim(), (m) => {
    m.enabled = wa.enabled;
    if (wa.enabled || wa.rpId.trim()) {
      m.rpId = wa.rpId.trim();
      m.origins = splitList(wa.origins);
    } else {
      delete m.rpId;
      delete m.origins;
    }
    if (wa.rpName.trim()) m.rpName = wa.rpName.trim();
    else delete m.rpName;
  });
  const oa = d.oauth2;
  put('oauth2', oa.enabled || oa.providers.length > 0, (m) => {
    m.enabled = oa.enabled;
    m.providers = oa.providers.map(providerBody);
  });
  return out;
}

/** The `options.auth` of a create or update. */
export function authBody(d: AuthDraft): Obj {
  return {
    identityFields: splitComma(d.identityFields),
    minPasswordLength: Number(d.minPasswordLength),
    two_factor: d.two_factor,
    require_verified: d.require_verified,
    session: { store: d.sessionStore },
    methods: methodsBody(d),
  };
}
