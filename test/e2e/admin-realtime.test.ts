/**
 * The admin UI's live rows when the server refuses its event stream (503 at
 * SERVICE_REALTIME_MAX_CONNECTIONS): the page shows "offline", keeps asking again (1 s, doubling
 * up to 30 s), and goes live once a connection is free, without a reload. Debian's chromium
 * driven by playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startSvc, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage, signIn } from '../helpers/browser.js';
import { until } from '../helpers/wait.js';

let srv: Svc;
let browser: Browser;
let page: Page;
const problems: string[] = [];

before(async () => {
  if (NO_BROWSER) return;
  srv = await startSvc({ env: { SERVICE_REALTIME_MAX_CONNECTIONS: '1' } });
  await srv.createCollection({ name: 'notes', fields: [{ name: 'title', type: 'text' }], listRule: '@public', viewRule: '@public' });
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** The server's realtime metrics. */
async function metrics(): Promise<{ connections: number; refusedConnections: number }> {
  const m = await srv.api('GET', '/api/realtime/metrics', { token: srv.suToken });
  assert.equal(m.status, 200, m.text);
  return m.body;
}

test('a refused event stream is asked for again; the table goes live once a connection is free', { skip: NO_BROWSER }, async () => {
  // another client holds the server's only realtime connection
  const holder = new AbortController();
  const held = await fetch(`${srv.url}/api/realtime`, { headers: { Accept: 'text/event-stream' }, signal: holder.signal });
  assert.equal(held.status, 200);
  const reader = held.body!.getReader();
  let text = '';
  while (!text.includes('PB_CONNECT')) text += new TextDecoder().decode((await reader.read()).value);
  const before = await metrics();
  assert.equal(before.connections, 1);

  await signIn(page, srv.url);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.goto(`${srv.url}/_/collections/notes`);
  await page.getByText('offline').waitFor();
  // refused, then asked again after a second: the page did not give up after the first 503
  await until(async () => (await metrics()).refusedConnections >= before.refusedConnections + 2, 10_000, 'a second refused stream');
  assert.equal(await page.locator('.live-on').count(), 0, 'offline while refused');

  holder.abort();
  await until(async () => (await metrics()).connections === 0, 10_000, 'the held stream to close');
  // the next attempt comes at most 4 s after the second refusal (1 s, 2 s, 4 s, ...)
  await page.locator('.live-on').waitFor({ timeout: 15_000 });
  const made = await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { title: 'Made while watching' } });
  assert.equal(made.status, 201, made.text);
  await page.locator('table.records tbody tr', { hasText: 'Made while watching' }).waitFor({ timeout: 5000 });
});

test('no console errors but the refused streams', { skip: NO_BROWSER }, () => {
  const refused = /^Failed to load resource: the server responded with a status of 503 .* at .*\/api\/realtime$/;
  assert.ok(problems.some((p) => refused.test(p)), `the refusals are seen: ${problems.join('\n')}`);
  assert.deepEqual(problems.filter((p) => !refused.test(p)), []);
});
