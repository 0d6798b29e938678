/**
 * A real OpenID Connect provider (npm `oidc-provider`) inside the test process, over HTTPS with a
 * certificate made at test time, and a user agent that walks its authorization flow: follows the
 * redirects with the provider's cookies and signs in as the account the test picks, the way a
 * browser with a logged-in user would. svc trusts the certificate through NODE_EXTRA_CA_CERTS
 * (write it with `caFile`), as a deployment behind a private CA would.
 */
import { createServer, request, type Server } from 'node:https';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { makeCert } from './smtp.js';

export interface OidcAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface TestOidc {
  /** https://localhost:<port> */
  issuer: string;
  /** a PEM file holding the provider's certificate (for NODE_EXTRA_CA_CERTS) */
  caFile: string;
  clientId: string;
  clientSecret: string;
  /** the redirect URIs registered for the client */
  redirectUris: string[];
  /** accounts by subject; add to it freely */
  accounts: Map<string, OidcAccount>;
  /**
   * Runs the authorization request `authURL` (as svc built it, plus what the client appends) as
   * the user `sub`: answers the `code` and `state` the provider sends to the redirect URI, or the
   * provider's `error`.
   */
  authorize(authURL: string, sub: string): Promise<{ code?: string; state?: string; error?: string; location: string }>;
  /** The account the next sign-in at the provider becomes, for a flow a real browser walks. */
  signInAs(sub: string): void;
  close(): Promise<void>;
}

/** One HTTPS request trusting the test certificate; answers status, headers and text. */
function fetchTls(url: string, ca: string, cookies: Map<string, string>): Promise<{ status: number; location: string; text: string }> {
  return new Promise((resolve, reject) => {
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const req = request(url, { ca, headers: cookie ? { cookie } : {} }, (res) => {
      for (const c of res.headers['set-cookie'] ?? []) {
        const [pair] = c.split(';');
        const i = pair.indexOf('=');
        cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: String(res.headers.location ?? ''), text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `redirectUris`: more redirect URIs to register for the client (a server's own, such as `<svc>/api/oauth2-redirect`). */
export async function startOidc(opts: { redirectUris?: string[] } = {}): Promise<TestOidc> {
  const { key, cert } = makeCert();
  const dir = mkdtempSync(join(tmpdir(), 'svc-oidc-'));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, cert);
  const accounts = new Map<string, OidcAccount>();
  const clientId = 'svc-test-client';
  const clientSecret = 'svc-test-secret-0123456789abcdef';
  const redirectUris = ['https://app.example.test/oauth/callback', 'http://localhost:5173/cb', ...(opts.redirectUris ?? [])];
  let nextAccount = '';

  // listen first: the issuer URL carries the port
  let handler: (req: any, res: any) => void = (_req, res) => res.end();
  const server: Server = createServer({ key, cert }, (req, res) => handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `https://localhost:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId, client_secret: clientSecret, redirect_uris: redirectUris,
      grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
    }],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: async (_ctx: unknown, sub: string) => {
      const a = accounts.get(sub);
      return a ? { accountId: sub, claims: async () => ({ sub, ...a }) } : undefined;
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['svc-test-cookie-key-0123456789'] },
    jwks: { keys: [{ ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' }] },
    features: { devInteractions: { enabled: false } },
    renderError: async (ctx: any, out: any) => { ctx.type = 'json'; ctx.body = out; },
  } as never);
  const callback = provider.callback();
  handler = async (req, res) => {
    if (!req.url.startsWith('/interaction/')) return callback(req, res);
    try {
      // the user signs in (as nextAccount) and consents to every scope asked for
      const details: any = await provider.interactionDetails(req, res);
      let result: Record<string, unknown>;
      if (details.prompt.name === 'login') result = { login: { accountId: nextAccount } };
      else {
        const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
        grant!.addOIDCScope(String(details.params.scope));
        result = { consent: { grantId: await grant!.save() } };
      }
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  };

  return {
    issuer, caFile, clientId, clientSecret, redirectUris, accounts,
    signInAs(sub) {
      nextAccount = sub;
    },
    async authorize(authURL, sub) {
      nextAccount = sub;
      const cookies = new Map<string, string>();
      let url = authURL;
      for (let hop = 0; hop < 12; hop++) {
        const r = await fetchTls(url, cert, cookies);
        if (r.status < 300 || r.status >= 400 || !r.location) return { error: `status ${r.status}: ${r.text.slice(0, 300)}`, location: url };
        const next = new URL(r.location, url);
        if (next.origin !== issuer) {
          const p = next.searchParams;
          return { code: p.get('code') ?? undefined, state: p.get('state') ?? undefined, error: p.get('error') ?? undefined, location: next.href };
        }
        url = next.href;
      }
      return { error: 'too many redirects', location: url };
    },
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** A PKCE code verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * One OAuth2 sign-in dance against svc: initiate on `collection` for `provider` (signed in with
 * `token`, else anonymous), the provider's authorization as the account `sub`, and what the
 * client then sends to complete: the code, the state svc issued and the PKCE verifier.
 */
export async function oauthDance(srv: { api: (method: string, path: string, opts?: any) => Promise<{ status: number; text: string; body: any }> }, idp: TestOidc, sub: string, { provider = 'idp', collection = 'people', token = null as string | null } = {}): Promise<{ code: string; state?: string; codeVerifier: string }> {
  const init = await srv.api('POST', `/api/collections/${collection}/auth/oauth2/initiate`, { body: { provider }, token });
  if (init.status !== 200) throw new Error(`initiate answered ${init.status}: ${init.text}`);
  const { verifier, challenge } = pkce();
  const url = `${init.body.authURL}&redirect_uri=${encodeURIComponent(idp.redirectUris[0])}&code_challenge=${challenge}&code_challenge_method=S256`;
  const out = await idp.authorize(url, sub);
  if (!out.code) throw new Error(`no code from the provider: ${out.error} at ${out.location}`);
  if (out.state !== init.body.state) throw new Error('the provider did not hand the state back');
  return { code: out.code, state: init.body.state, codeVerifier: verifier };
}
