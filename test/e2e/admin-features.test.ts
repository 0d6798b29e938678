/**
 * The admin UI's flags and experiments page ("flag/experiment overrides"), on a server
 * running an app that declares some (test/fixtures/app-features.mjs): an override set in the UI
 * is stored as the spec's setting and changes what the app sees; clearing it restores the
 * default. Debian's chromium driven by playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage, signIn } from '../helpers/browser.js';

let srv: Svc;
let browser: Browser;
let page: Page;
const problems: string[] = [];

before(async () => {
  if (NO_BROWSER) return;
  srv = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-features.mjs')}`] });
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

const feature = (name: string) => page.locator('li.feature', { has: page.getByText(name, { exact: true }) });

test('override a flag and an experiment\'s weights in the UI, then clear them', { skip: NO_BROWSER }, async () => {
  await signIn(page, srv.url);
  await page.getByRole('link', { name: 'Flags and experiments' }).click();
  await page.getByRole('heading', { name: 'Flags and experiments' }).waitFor();

  assert.equal((await srv.api('GET', '/api/checkout')).body.newCheckout, false);
  await page.getByLabel('Override for new-checkout').selectOption('true');
  await page.getByText('Flag new-checkout updated.').waitFor();
  assert.equal((await srv.api('GET', '/api/settings/flag:new-checkout', { token: srv.suToken })).body.value, 'true');
  assert.equal((await srv.api('GET', '/api/checkout')).body.newCheckout, true, 'the app sees the override');

  const pricing = feature('pricing');
  await pricing.getByLabel('Weights override for pricing').fill('[0, 1]');
  await pricing.getByRole('button', { name: 'Apply' }).click();
  await page.getByText('Experiment pricing updated.').waitFor();
  const features = await srv.api('GET', '/api/features', { token: srv.suToken });
  assert.equal(features.body.experiments.find((x: any) => x.name === 'pricing').weight_override, '[0, 1]');

  await page.getByLabel('Override for new-checkout').selectOption('');
  await page.getByText('Flag new-checkout updated.').first().waitFor();
  await pricing.getByLabel('Weights override for pricing').fill('');
  await pricing.getByRole('button', { name: 'Apply' }).click();
  const cleared = async () => (await srv.api('GET', '/api/features', { token: srv.suToken })).body;
  for (let i = 0; i < 100; i++) {
    const f = await cleared();
    if (f.flags.find((x: any) => x.name === 'new-checkout').override === null && f.experiments.find((x: any) => x.name === 'pricing').weight_override === null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const f = await cleared();
  assert.equal(f.flags.find((x: any) => x.name === 'new-checkout').override, null);
  assert.equal(f.experiments.find((x: any) => x.name === 'pricing').weight_override, null);
  assert.equal((await srv.api('GET', '/api/checkout')).body.newCheckout, false);
  assert.deepEqual(problems, []);
});
