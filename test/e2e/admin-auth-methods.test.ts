/**
 * The admin UI's sign-in methods form of an auth collection (docs/admin.md, "Sign-in methods") in
 * Chromium against the real server: one-time code and magic link with their lifetimes, passkeys,
 * an OAuth2 provider added with its secret, the server's validation errors shown beside the
 * inputs they name, the secret kept (never shown) when its input is left blank, a provider
 * removed, password turned off; each save checked through the API. Debian's chromium driven by
 * playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NO_BROWSER, adminSession, signIn, type AdminSession } from '../helpers/browser.js';

let s: AdminSession;

before(async () => {
  if (NO_BROWSER) return;
  s = await adminSession({}, (srv) => srv.createCollection({ name: 'members', type: 'auth', fields: [], options: { auth: { methods: { otp: { rate_limit: 'off' } } } } }));
});

after(async () => {
  await s?.stop();
});

const group = (name: string) => s.page.getByRole('group', { name, exact: true });
const methods = async () => (await s.srv.api('GET', '/api/collections/members', { token: s.srv.suToken })).body.options.auth.methods;

async function save(): Promise<void> {
  await s.page.getByRole('button', { name: 'Save changes' }).click();
}

/** Saves and waits for the 200 answer and its toast (earlier toasts may still show). */
async function saved(): Promise<void> {
  const answer = s.page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().includes('/api/collections/'));
  await save();
  assert.equal((await answer).status(), 200);
  await s.page.getByText('Collection members saved.').last().waitFor();
}

test('sign-in methods are a form: lifetimes, passkeys, an OAuth2 provider, errors beside their inputs', { skip: NO_BROWSER, timeout: 120_000 }, async () => {
  const { srv, page, problems } = s;
  await signIn(page, srv.url);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.goto(`${srv.url}/_/collections/members/edit`);
  await page.getByRole('heading', { name: 'Edit members' }).waitFor();

  await group('One-time code').getByLabel('Sign in with a mailed code').check();
  await group('One-time code').getByLabel('Code lifetime (seconds)').fill('120');
  await group('Magic link').getByLabel('Sign in with a mailed link').check();
  await group('Magic link').getByLabel('Link lifetime (seconds)').fill('20');
  await group('Passkeys').getByLabel('Sign in with a passkey (WebAuthn)').check();
  await group('Passkeys').getByLabel('Relying party id (rpId)').fill('localhost');
  await group('Passkeys').getByLabel('Origins').fill('http://localhost:8090');
  await group('OAuth2').getByLabel('Sign in with an OAuth2 provider').check();
  await page.getByRole('button', { name: '+ Add provider' }).click();
  const p1 = page.locator('fieldset.provider').first(); // its legend follows the name: "Provider 1: corp"
  await p1.getByLabel('Name').fill('corp');
  await p1.getByLabel('Kind').selectOption('generic');
  await p1.getByLabel('Client id').fill('client-1');
  await p1.getByLabel('Client secret').fill('first-secret');
  await p1.getByLabel('Issuer discovery URL').fill('http://idp.example.test/.well-known/openid-configuration');
  await p1.getByLabel('Scopes').fill('openid email');
  await p1.getByLabel('Redirect URLs').fill('https://app.example.test/oauth');
  await save();

  // the server refuses two values; each error is beside its input
  const ttl = group('Magic link').getByLabel('Link lifetime (seconds)');
  await group('Magic link').getByText('Must be an integer number of seconds from 30 to 604800.').waitFor();
  assert.equal(await ttl.getAttribute('aria-invalid'), 'true');
  await group('Provider 1: corp').getByText(/Must be an absolute https URL/).waitFor();
  assert.equal(await group('Provider 1: corp').getByLabel('Issuer discovery URL').getAttribute('aria-invalid'), 'true');
  assert.equal(await group('One-time code').getByLabel('Code lifetime (seconds)').getAttribute('aria-invalid'), null);
  problems.length = 0; // Chromium logs the 400 answer as a console error

  await ttl.fill('300');
  await group('Provider 1: corp').getByLabel('Issuer discovery URL').fill('https://idp.example.test/.well-known/openid-configuration');
  await saved();
  let m = await methods();
  assert.deepEqual(m.otp, { rate_limit: 'off', enabled: true, ttl_s: 120 }, 'a key the form does not show is kept');
  assert.deepEqual(m.magic_link, { enabled: true, ttl_s: 300 });
  assert.deepEqual(m.webauthn, { enabled: true, rpId: 'localhost', origins: ['http://localhost:8090'] });
  assert.equal(m.oauth2.enabled, true);
  assert.deepEqual(m.oauth2.providers, [{
    name: 'corp', kind: 'generic', clientId: 'client-1', clientSecret: 'first-secret',
    discoveryUrl: 'https://idp.example.test/.well-known/openid-configuration', scopes: ['openid', 'email'], redirectUrls: ['https://app.example.test/oauth'],
  }]);
  assert.equal(m.password, undefined, 'password untouched: not written');

  // a fresh editor: the secret is write-only (never in the input) and kept when left blank
  await page.reload();
  const p = group('Provider 1: corp');
  await p.waitFor();
  assert.equal(await p.getByLabel('Client secret').inputValue(), '');
  assert.equal(await p.getByLabel('Client secret').getAttribute('type'), 'password');
  await p.getByText('Set. Write-only: leave blank to keep it, or type a new one.').waitFor();
  assert.equal(await page.locator('input[value="first-secret"]').count(), 0);
  await p.getByLabel('Client id').fill('client-2');
  await saved();
  m = await methods();
  assert.equal(m.oauth2.providers[0].clientId, 'client-2');
  assert.equal(m.oauth2.providers[0].clientSecret, 'first-secret', 'a blank secret keeps the stored one');

  // a new secret replaces it
  await p.getByLabel('Client secret').fill('second-secret');
  await saved();
  assert.equal((await methods()).oauth2.providers[0].clientSecret, 'second-secret');

  // removing the only provider while OAuth2 is on: the server's reason under OAuth2; then off
  await page.getByRole('button', { name: 'Remove Provider 1: corp' }).click();
  await save();
  await group('OAuth2').getByText('OAuth2 needs at least one provider to be enabled.').waitFor();
  problems.length = 0;
  await group('OAuth2').getByLabel('Sign in with an OAuth2 provider').uncheck();
  await group('Password').getByLabel('Sign in with a password').uncheck();
  await saved();
  m = await methods();
  assert.deepEqual(m.oauth2, { enabled: false, providers: [] });
  assert.deepEqual(m.password, { enabled: false });
  const pub = await srv.api('GET', '/api/collections/members/auth-methods');
  assert.equal(pub.body.password.enabled, false);
  assert.equal(pub.body.otp.enabled, true);
  assert.deepEqual(problems, []);
});
