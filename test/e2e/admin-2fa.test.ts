/**
 * The admin UI's sign-in when `_superusers` requires a second factor: the first
 * sign-in enrolls a TOTP authenticator (the key shown, the recovery codes shown once), a later
 * one asks for a code (a wrong one shows the API's error), and a recovery code works too. Debian's
 * chromium driven by playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { NO_BROWSER, holdRealtimePosts, launchBrowser, watchedPage, signIn } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';

let srv: Svc;
let browser: Browser;
let page: Page;
const problems: string[] = [];
let secret = '';
let codes: string[] = [];

const totp = (steps = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + steps * 30 });

before(async () => {
  if (NO_BROWSER) return;
  srv = await startSvc();
  const r = await srv.api('PATCH', '/api/collections/_superusers', { token: srv.suToken, body: { name: '_superusers', type: 'auth', options: { auth: { two_factor: 'required' } } } });
  assert.equal(r.status, 200, r.text);
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

async function password(): Promise<void> {
  await signIn(page, srv.url);
}

async function signOut(): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
}

test('the first sign-in enrolls a TOTP authenticator and shows the recovery codes once', { skip: NO_BROWSER }, async () => {
  await password();
  await page.getByRole('heading', { name: 'Set up two-factor sign-in' }).waitFor();
  secret = ((await page.locator('.secret code').textContent()) ?? '').trim();
  assert.match(secret, /^[A-Z2-7]{16,}$/, 'a Base32 key');
  assert.match((await page.getByRole('link', { name: 'the otpauth link' }).getAttribute('href')) ?? '', /^otpauth:\/\/totp\//);
  await page.getByLabel('Authentication code').fill(totp());
  await page.getByRole('button', { name: 'Activate and sign in' }).click();
  await page.getByRole('heading', { name: 'Recovery codes' }).waitFor();
  codes = (await page.locator('.codes code').allTextContents()).map((c) => c.trim());
  assert.equal(codes.length, 10);
  await page.getByRole('button', { name: 'I saved them, continue' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  const cookies = await page.context().cookies();
  assert.equal(cookies.find((c) => c.name === 'svc_auth')?.httpOnly, true);
  await page.reload();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
});

test('a later sign-in asks for a code: a wrong one shows the API\'s error, the next step\'s code signs in', { skip: NO_BROWSER }, async () => {
  await signOut();
  await password();
  await page.getByRole('heading', { name: 'Second factor' }).waitFor();
  await page.getByLabel('Authentication code').fill('000000');
  await page.getByRole('button', { name: 'Verify' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.ok(((await alert.textContent()) ?? '').length > 0);
  // the enrollment used this 30-second step; the adjacent one is accepted, the same one never twice
  await page.getByLabel('Authentication code').fill(totp(1));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
});

test('a recovery code signs in instead of the authenticator', { skip: NO_BROWSER }, async () => {
  await signOut();
  await password();
  await page.getByRole('heading', { name: 'Second factor' }).waitFor();
  await page.getByRole('button', { name: 'Use a recovery code' }).click();
  await page.getByLabel('Recovery code').fill(codes[0]);
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
});

let suToken = '';

/** The number of open SSE streams the server holds (its realtime metrics). */
async function sseStreams(): Promise<number> {
  if (!suToken) {
    // the enrollment ended the superuser's earlier sessions: a new one, with a recovery code
    const login = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { token: null, body: { identity: SU_EMAIL, password: SU_PASSWORD } });
    assert.equal(login.body.status, 'factor_required', login.text);
    const done = await srv.api('POST', '/api/collections/_superusers/auth/two-factor/complete', { token: null, body: { pendingToken: login.body.pendingToken, factor: 'recovery', code: codes[1] } });
    assert.equal(done.status, 200, done.text);
    suToken = done.body.token;
  }
  const m = await srv.api('GET', '/api/realtime/metrics', { token: suToken });
  assert.equal(m.status, 200, m.text);
  return m.body.sse as number;
}

test('a sign-out while the subscription POST is under way: the POST is answered before the stream closes', { skip: NO_BROWSER }, async () => {
  // the server forgets an SSE client when its stream closes, so a stream closed first makes the
  // POST a 404: hold the POST in the browser, sign out, and let it go only once the server has
  // seen the stream close (or 0.8 s passed with the stream still open, as it should be)
  const answers: number[] = [];
  const onResponse = (r: import('playwright-core').Response) => {
    if (r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/realtime') answers.push(r.status());
  };
  // the page settled first (its subscription answered), so the POST held is the reloaded page's
  await page.goto(`${srv.url}/_/collections/_superusers`);
  await page.locator('.live-on').waitFor();
  page.on('response', onResponse);
  const { held: isHeld, release, stop } = await holdRealtimePosts(page);
  try {
    await page.reload();
    await isHeld;
    // the stream of the page before the reload may take a moment to be seen closed
    await waitFor(async () => (await sseStreams()) === 1, 5000);
    assert.equal(await sseStreams(), 1, 'the page\'s stream is open');
    const click = page.getByRole('button', { name: 'Sign out' }).click();
    await waitFor(async () => (await sseStreams()) === 0, 800); // the UI waits up to 2 s for the POST
    assert.equal(await sseStreams(), 1, 'the stream stays open while its POST is under way');
    release();
    await click;
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await waitFor(async () => (await sseStreams()) === 0, 5000);
    assert.equal(await sseStreams(), 0, 'the stream closes once the POST is answered');
    // one POST, or two when the stream's PB_CONNECT and the page's subscription each sent one
    assert.ok(answers.length >= 1 && answers.every((s) => s === 204), `the POSTs' answers: ${answers.join(', ')}`);
  } finally {
    page.off('response', onResponse);
    await stop();
  }
});

test('no console errors but the wrong code\'s answer', { skip: NO_BROWSER }, () => {
  const unexpected = problems.filter((p) => !/^Failed to load resource: the server responded with a status of 401 .* at .*\/auth\/two-factor\/complete$/.test(p));
  assert.deepEqual(unexpected, []);
  assert.equal(problems.length, 1, problems.join('\n'));
});
