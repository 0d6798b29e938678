/**
 * The admin UI's Logs page (docs/admin.md; docs/operations.md, "Request logs"): the table shows
 * requests the server answered (level, time, method, URL, status, duration), the filter box
 * narrows it in the API's grammar and shows the API's error for a bad filter, and a click on a
 * row opens its details; no WCAG 2 A/AA violation on the page (axe-core). Debian's chromium
 * driven by playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import type { Svc } from '../helpers/server.js';
import { NO_BROWSER, adminSession, signIn, type AdminSession } from '../helpers/browser.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
let session: AdminSession;
let srv: Svc;
let page: Page;
let problems: string[];

before(async () => {
  if (NO_BROWSER) return;
  session = await adminSession({ env: { SERVICE_LOGS_MIN_LEVEL: 'info' } }, async (svc) => {
    for (let i = 0; i < 3; i++) await svc.api('GET', `/api/health?probe=${i}`);
    await svc.api('POST', '/api/collections/nowhere/records', { body: {} });
  });
  ({ srv, page, problems } = session);
});

after(async () => {
  await session?.stop();
});

test('the Logs page lists requests, filters them and opens an entry', { skip: NO_BROWSER }, async () => {
  await signIn(page, srv.url);
  await page.getByRole('link', { name: 'Logs' }).click();
  await page.getByRole('heading', { name: 'Logs', exact: true }).waitFor();
  const table = page.getByRole('region', { name: 'Log entries' });
  await table.getByText('/api/health?probe=2').waitFor();
  const headers = await table.locator('thead th').allTextContents();
  assert.deepEqual(headers, ['level', 'time (UTC)', 'method', 'URL or message', 'status', 'duration']);

  // a filter in the API's grammar narrows the rows to the failed POST
  await page.getByLabel('Filter').fill('data.status >= 400 && data.method = "POST"');
  await page.getByRole('button', { name: 'Apply' }).click();
  await table.getByText('/api/collections/nowhere/records').waitFor();
  await table.getByText('/api/health?probe=2').waitFor({ state: 'detached' });
  const row = table.locator('tbody tr').first();
  assert.deepEqual((await row.locator('td').allTextContents()).slice(0, 5).map((t) => t.trim()).filter((t, i) => i !== 1), ['warn', 'POST', '/api/collections/nowhere/records', '404']);

  // details in a panel
  await row.getByRole('button', { name: '/api/collections/nowhere/records' }).click();
  const panel = page.getByRole('dialog', { name: 'Log entry' });
  await panel.waitFor();
  await panel.getByText('guest').waitFor();
  await panel.getByText('POST /api/collections/nowhere/records').waitFor();
  await page.evaluate(AXE);
  const found = JSON.parse(await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }).then((r) => JSON.stringify(r.violations.map((v) => v.id + ': ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '))))`) as string);
  assert.deepEqual(found, [], 'the panel open');
  await panel.getByRole('button', { name: 'Close' }).click();
  await panel.waitFor({ state: 'detached' });

  // a bad filter: the API's message under the box
  await page.getByLabel('Filter').fill('data.status >=');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.locator('#filter-error').waitFor();
  assert.match(await page.locator('#filter-error').textContent() ?? '', /Invalid filter/);
  await page.getByRole('button', { name: 'Clear' }).click();
  await table.getByText('/api/health?probe=2').waitFor();
  const all = JSON.parse(await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }).then((r) => JSON.stringify(r.violations.map((v) => v.id + ': ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '))))`) as string);
  assert.deepEqual(all, [], 'the table');
  // the refused filter's 400 is the one expected console line
  assert.deepEqual(problems.filter((p) => !/status of 400 .*\/api\/logs\?.*filter=data\.status/.test(p)), []);
});
