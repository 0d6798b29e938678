/**
 * Live reload in a real browser (3-devtool.md, "Reload stream"): a page served by a background dev
 * session, open in Debian's chromium (playwright-core), reloads itself after a content edit and
 * after a component edit, and shows the new text; a failed build does not reload it. Skipped,
 * saying why, where chromium is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { NO_BROWSER, launchBrowser } from '../helpers/browser.js';
import { cleanupSites, makeSite, nextGeneration, settled, sleep, startBackground, writeSite } from '../helpers/devtool.js';

let site: string;
let info: any;
let browser: Browser;
let page: Page;
const problems: string[] = [];
let loads = 0;
/** Reload streams whose response headers arrived (one per page load once connected). */
let streams = 0;

/** Waits until the page now loaded has its reload stream open: an edit before that would go unseen. */
async function streamOpen(): Promise<void> {
  for (let i = 0; i < 200 && streams < loads; i++) await sleep(50);
  assert.ok(streams >= loads, `the reload stream of load ${loads} opened`);
}

before(async () => {
  if (NO_BROWSER) return;
  site = makeSite();
  info = (await startBackground(site)).info;
  browser = await launchBrowser();
  page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  page.on('load', () => loads++);
  page.on('response', (r) => { if (r.url().includes('/_devtool/reload')) streams++; });
  page.on('pageerror', (e) => problems.push(e.message));
});
after(async () => {
  await browser?.close();
  await cleanupSites();
});

test('a content edit reloads the open page with the new text', { skip: NO_BROWSER }, async () => {
  await page.goto(info.url);
  await page.getByRole('heading', { name: 'Welcome' }).waitFor();
  await streamOpen();
  const before = loads;
  const gen = (await (await fetch(`http://${info.host}:${info.control_port}/_devtool/status`)).json()).build.generation;
  writeSite(site, 'content/index.md', '---\ntitle: Home\n---\n# Welcome back\n\nEdited.\n');
  await nextGeneration(info, gen);
  await page.getByRole('heading', { name: 'Welcome back' }).waitFor();
  assert.ok(loads > before, 'the page reloaded itself');
});

test('a component edit reloads it too; a failed build leaves it as it is', { skip: NO_BROWSER }, async () => {
  const status = async () => (await (await fetch(`http://${info.host}:${info.control_port}/_devtool/status`)).json()).build;
  await streamOpen();
  let gen = (await status()).generation;
  writeSite(site, 'components/nav.html', '<nav><a href="/">home</a> <a href="/about/">about us</a></nav>\n');
  await nextGeneration(info, gen);
  await page.getByRole('link', { name: 'about us' }).waitFor();
  // a layout that names a missing component fails the build: no reload, the old page stays
  await settled(info);
  await streamOpen();
  const stable = loads;
  gen = (await status()).generation;
  writeSite(site, 'layouts/default.html', '<html><body>{{> missing }}{{ content }}</body></html>\n');
  await nextGeneration(info, gen);
  assert.equal((await status()).status, 'failed');
  await sleep(700);
  assert.equal(loads, stable, 'a failed build sends no reload');
  await page.getByRole('link', { name: 'about us' }).waitFor();
  assert.deepEqual(problems, []);
});
