/**
 * The first superuser from the browser (docs/admin.md, "First start"; docs/api.md, "Install"):
 * a server with no superuser logs the admin URL and a one-time install link; the sign-in page
 * says no superuser exists; `POST /api/_/install` refuses a wrong token (401) and a client off
 * loopback (403: a forwarded address, the server trusting its proxy); the link's page creates
 * the superuser and signs in; then the route is 404 and the token is spent. The browser part is
 * skipped where Debian's chromium is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startSvc, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage } from '../helpers/browser.js';
import { until } from '../helpers/wait.js';

let srv: Svc;
let browser: Browser | undefined;
let link = '';
let token = '';
const EMAIL = 'first@test.local';
const PASSWORD = 'first-password1';

before(async () => {
  srv = await startSvc({ superuser: false, args: ['--trust-proxy'] });
  const m = await until(() => /open (http:\/\/\S+\/_\/install#([\w-]+))/.exec(srv.stderr()), 10_000, 'the install link');
  link = m[1];
  token = m[2];
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

test('the admin URL and one install link are logged; the API says no superuser exists', async () => {
  assert.ok(srv.stderr().includes(`admin UI: ${srv.url}/_/`), srv.stderr());
  assert.equal(srv.stderr().match(/install#/g)?.length, 1);
  assert.ok(link.startsWith(`${srv.url}/_/install#`), link);
  const r = await srv.api('GET', '/api/_/install');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { installed: false });
});

test('a wrong token is 401, a forwarded non-loopback client is 403, bad input is 400 (token kept)', async () => {
  const wrong = await srv.api('POST', '/api/_/install', { body: { token: 'x'.repeat(32), email: EMAIL, password: PASSWORD } });
  assert.equal(wrong.status, 401, wrong.text);
  assert.deepEqual(Object.keys(wrong.body), ['status', 'code', 'message', 'data']);
  const remote = await srv.api('POST', '/api/_/install', { body: { token, email: EMAIL, password: PASSWORD }, headers: { 'X-Forwarded-For': '203.0.113.9' } });
  assert.equal(remote.status, 403, remote.text);
  assert.equal(remote.body.code, 'forbidden');
  const short = await srv.api('POST', '/api/_/install', { body: { token, email: EMAIL, password: 'short' } });
  assert.equal(short.status, 400, short.text);
  assert.equal(short.body.data.password.code, 'validation_min');
});

test('the sign-in page hints at the install link; the link\'s page creates the superuser and signs in', { skip: NO_BROWSER }, async () => {
  browser = await launchBrowser();
  const problems: string[] = [];
  const page = await watchedPage(browser, problems);
  await page.goto(`${srv.url}/_/`);
  await page.getByText('No superuser yet: see the install link in the server\'s output').waitFor();
  await page.goto(link);
  await page.getByRole('heading', { name: 'Create the first superuser' }).waitFor();
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Password again').fill(`${PASSWORD}x`);
  await page.getByRole('button', { name: 'Create and sign in' }).click();
  await page.getByText('The two passwords differ.').waitFor();
  await page.getByLabel('Password again').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create and sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  assert.equal(new URL(page.url()).hash, '', 'the token left the address bar');
  assert.deepEqual(problems, []);
});

test('once a superuser exists the route is 404; the spent token stays refused (401) if none is left', async () => {
  if (NO_BROWSER) {
    const r = await srv.api('POST', '/api/_/install', { body: { token, email: EMAIL, password: PASSWORD } });
    assert.equal(r.status, 201, r.text);
  }
  const again = await srv.api('POST', '/api/_/install', { body: { token, email: 'second@test.local', password: PASSWORD } });
  assert.equal(again.status, 404, again.text);
  assert.equal(again.body.code, 'not_found');
  assert.deepEqual((await srv.api('GET', '/api/_/install')).body, { installed: true });
  const login = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: EMAIL, password: PASSWORD } });
  assert.equal(login.status, 200, login.text);

  // with no superuser again, the spent token is still refused
  const del = await srv.api('DELETE', `/api/collections/_superusers/records/${login.body.record.id}`, { token: login.body.token });
  assert.equal(del.status, 204, del.text);
  assert.deepEqual((await srv.api('GET', '/api/_/install')).body, { installed: false });
  const spent = await srv.api('POST', '/api/_/install', { body: { token, email: EMAIL, password: PASSWORD } });
  assert.equal(spent.status, 401, spent.text);
  assert.equal(spent.body.code, 'unauthorized');
});
