/**
 * Debian's chromium driven by playwright-core, with a CDP virtual WebAuthn authenticator: a real
 * browser making real passkey ceremonies. Tests skip (saying so) when chromium is not installed;
 * `.ci/run` installs it with ci/install-apt.sh.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type CDPSession, type Page } from 'playwright-core';
import { SU_EMAIL, SU_PASSWORD, startSvc, type Svc } from './server.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** A skip reason when no browser can run here, else false. */
export const NO_BROWSER: string | false = existsSync(CHROMIUM) ? false : `chromium is not installed at ${CHROMIUM} (install it with: bash ci/install-apt.sh chromium chromium)`;

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // as root in a sandbox with a closed network: no sandbox, no background connections
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * A 1280×800 page with a 10 s default timeout that records what went wrong in it into `problems`:
 * console errors as `<text> at <url>` (Chromium logs every 4xx/5xx answer this way) and uncaught
 * exceptions as `pageerror: <message>`.
 */
export async function watchedPage(browser: Browser, problems: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${m.text()} at ${m.location().url}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return page;
}

/** A server, a browser and a watched page on it (`problems` collects the page's errors); `stop()` closes both. */
export interface AdminSession {
  srv: Svc;
  browser: Browser;
  page: Page;
  problems: string[];
  stop(): Promise<void>;
}

/** Starts a server (`startSvc(opts)`), lets `prepare` set it up, then opens a browser and a watched page. */
export async function adminSession(opts: Parameters<typeof startSvc>[0] = {}, prepare: (srv: Svc) => Promise<unknown> = async () => undefined): Promise<AdminSession> {
  const srv = await startSvc(opts);
  await prepare(srv);
  const browser = await launchBrowser();
  const problems: string[] = [];
  const page = await watchedPage(browser, problems);
  return { srv, browser, page, problems, stop: async () => { await browser.close(); await srv.stop(); } };
}

/**
 * Holds every realtime subscription POST (`POST /api/realtime`) of `page` in the browser until
 * `release()`: `held` resolves when the first one is held. `stop()` releases and removes the route.
 */
export async function holdRealtimePosts(page: Page): Promise<{ held: Promise<void>; release(): void; stop(): Promise<void> }> {
  let onHeld!: () => void;
  const held = new Promise<void>((r) => (onHeld = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  await page.route('**/api/realtime', async (route) => {
    if (route.request().method() === 'POST') {
      onHeld();
      await released;
    }
    await route.continue();
  });
  return { held, release, stop: async () => { release(); await page.unroute('**/api/realtime'); } };
}

/** Opens the admin UI of the server at `url` and submits its sign-in form with the test superuser's password. */
export async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/_/`);
  await page.getByLabel('Email').fill(SU_EMAIL);
  await page.getByLabel('Password').fill(SU_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * A page with a virtual platform authenticator (resident keys, automatic presence, and user
 * verification unless `userVerification` is false: then an authenticator that can only prove
 * presence, whose assertions carry the UP flag without UV).
 */
export async function pageWithAuthenticator(browser: Browser, { userVerification = true } = {}): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: userVerification, isUserVerified: userVerification, automaticPresenceSimulation: true },
  });
  return { page, cdp, authenticatorId };
}

// Browser code as source text: the test runner's transform would add helpers the page lacks.
const CODEC = `
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));`;
const CREATE = `async (o) => {${CODEC}
  const cred = await navigator.credentials.create({
    publicKey: { ...o, challenge: unb64(o.challenge), user: { ...o.user, id: unb64(o.user.id) }, excludeCredentials: (o.excludeCredentials || []).map((c) => ({ ...c, id: unb64(c.id) })) },
  });
  const r = cred.response;
  return { id: cred.id, rawId: b64(cred.rawId), response: { clientDataJSON: b64(r.clientDataJSON), attestationObject: b64(r.attestationObject), transports: r.getTransports() } };
}`;
const GET = `async (o) => {${CODEC}
  const cred = await navigator.credentials.get({ publicKey: { challenge: unb64(o.challenge), rpId: o.rpId, allowCredentials: [], userVerification: o.userVerification, timeout: o.timeout } });
  const r = cred.response;
  return { credentialId: b64(cred.rawId), authenticatorData: b64(r.authenticatorData), clientDataJSON: b64(r.clientDataJSON), signature: b64(r.signature), userHandle: r.userHandle ? b64(r.userHandle) : undefined };
}`;

/** Runs navigator.credentials.create in the page with creation options from register/begin. */
export function createInPage(p: Page, options: unknown): Promise<any> {
  return p.evaluate(`(${CREATE})(${JSON.stringify(options)})`);
}

/** Runs navigator.credentials.get (discoverable: no allowCredentials) in the page with request options from initiate. */
export function getInPage(p: Page, options: unknown): Promise<any> {
  return p.evaluate(`(${GET})(${JSON.stringify(options)})`);
}
