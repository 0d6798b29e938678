/**
 * Build errors in the open page (docs/devtool.md, "Build errors in the page"), in Debian's
 * chromium: a failed rebuild shows an overlay naming the file, the line and the reason, without
 * reloading the page; a page opened while the build is failed shows it too; fixing the file
 * removes it (the good build reloads the page). Skipped, saying why, where chromium is not
 * installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { NO_BROWSER, launchBrowser } from '../helpers/browser.js';
import { STARTER, cleanupSites, controlStatus, makeSite, nextGeneration, settled, sleep, startBackground, writeSite } from '../helpers/devtool.js';

let site: string;
let info: any;
let browser: Browser;
const problems: string[] = [];

/** A page that counts its loads and its open reload streams, and records its errors. */
async function openPage(): Promise<{ page: Page; loads: () => number; streamOpen: () => Promise<void> }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  let loads = 0;
  let streams = 0;
  page.on('load', () => loads++);
  page.on('response', (r) => { if (r.url().includes('/_devtool/reload')) streams++; });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(info.url);
  return {
    page,
    loads: () => loads,
    // an edit before the reload stream is open would go unseen by the page
    async streamOpen() {
      for (let i = 0; i < 200 && streams < loads; i++) await sleep(50);
      assert.ok(streams >= loads, 'the reload stream opened');
    },
  };
}

before(async () => {
  if (NO_BROWSER) return;
  site = makeSite();
  info = (await startBackground(site)).info;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await cleanupSites();
});

const GOOD_LAYOUT = STARTER['layouts/default.html'];
// line 3 names a placeholder that does not exist: BuildError layouts/default.html:3
const BAD_LAYOUT = '<!doctype html><html><head><title>{{ title }}</title></head>\n<body>{{> nav }}\n<main>{{ nope }}</main>\n</body></html>\n';

test('a failed build shows file, line and message in the open page; the fix removes it', { skip: NO_BROWSER }, async () => {
  const { page, loads, streamOpen } = await openPage();
  await page.getByRole('heading', { name: 'Welcome' }).waitFor();
  await settled(info);
  await streamOpen();
  assert.equal(await page.getByRole('alert').count(), 0, 'no overlay while the build is good');
  const stable = loads();

  let gen = (await controlStatus(info)).build.generation;
  writeSite(site, 'layouts/default.html', BAD_LAYOUT);
  const failed = await nextGeneration(info, gen);
  assert.equal(failed.build.status, 'failed');
  assert.match(failed.build.error, /layouts\/default\.html:3: unknown placeholder "\{\{ nope \}\}"/);

  const overlay = page.getByRole('alert');
  await overlay.waitFor();
  const text = await overlay.innerText();
  assert.match(text, /^Build failed: layouts\/default\.html:3$/m);
  assert.match(text, /unknown placeholder "\{\{ nope \}\}"/);
  assert.equal(loads(), stable, 'a failed build does not reload the page');
  await page.getByRole('heading', { name: 'Welcome' }).waitFor(); // the last good page is still there

  // a page opened while the build is failed shows the overlay too
  const second = await openPage();
  await second.page.getByRole('alert').waitFor();
  assert.match(await second.page.getByRole('alert').innerText(), /layouts\/default\.html:3/);
  await second.streamOpen();

  gen = failed.build.generation;
  writeSite(site, 'layouts/default.html', GOOD_LAYOUT);
  const fixed = await nextGeneration(info, gen);
  assert.equal(fixed.build.status, 'ok');
  for (const p of [page, second.page]) {
    await p.getByRole('alert').waitFor({ state: 'detached' });
    await p.getByRole('heading', { name: 'Welcome' }).waitFor();
  }
  assert.ok(loads() > stable, 'the good build reloaded the page');
  assert.deepEqual(problems, []);
});

test('the overlay can be dismissed; the next failure shows it again', { skip: NO_BROWSER }, async () => {
  const { page, streamOpen } = await openPage();
  await page.getByRole('heading', { name: 'Welcome' }).waitFor();
  await streamOpen();
  let gen = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/index.md', '---\ntitle: Home\nlayout: nowhere\n---\n# Welcome\n');
  gen = (await nextGeneration(info, gen)).build.generation;
  const overlay = page.getByRole('alert');
  assert.match(await overlay.innerText(), /Build failed: content\/index\.md:3/);
  await page.getByRole('button', { name: 'Dismiss' }).click();
  await overlay.waitFor({ state: 'detached' });
  writeSite(site, 'content/index.md', '---\ntitle: Home\nlayout: elsewhere\n---\n# Welcome\n');
  await nextGeneration(info, gen);
  assert.match(await overlay.innerText(), /unknown layout "elsewhere"/);
  writeSite(site, 'content/index.md', STARTER['content/index.md']);
  await overlay.waitFor({ state: 'detached' });
  assert.deepEqual(problems, []);
});
