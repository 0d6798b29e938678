/**
 * Accessibility of the admin UI ("labels, roles, keyboard"): axe-core's WCAG 2 A and
 * AA rules on every main screen (sign-in, the records table, the record panel, the collection
 * editor with its sign-in methods form, settings, mail, storage), light and dark, wide and narrow. Debian's chromium driven by
 * playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser } from '../helpers/browser.js';

let srv: Svc;
let browser: Browser;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

before(async () => {
  if (NO_BROWSER) return;
  srv = await startSvc();
  const authors = await srv.createCollection({ name: 'authors', fields: [{ name: 'name', type: 'text' }] });
  await srv.createCollection({
    name: 'posts',
    fields: [
      { name: 'title', type: 'text', options: { required: true } },
      { name: 'author', type: 'relation', options: { collectionId: authors.id } },
      { name: 'status', type: 'select', options: { values: ['draft', 'live'] } },
      { name: 'tags', type: 'select', options: { values: ['a', 'b', 'c'], maxSelect: 2 } },
      { name: 'published', type: 'bool' },
      { name: 'at', type: 'date' },
      { name: 'meta', type: 'json' },
      { name: 'cover', type: 'file' },
      { name: 'body', type: 'editor' },
    ],
  });
  await srv.createCollection({ name: 'members', type: 'auth', fields: [{ name: 'nick', type: 'text' }] });
  const a = await srv.api('POST', '/api/collections/authors/records', { token: srv.suToken, body: { name: 'Ada' } });
  for (let i = 0; i < 3; i++) {
    await srv.api('POST', '/api/collections/posts/records', { token: srv.suToken, body: { title: `Post ${i}`, author: a.body.id, status: 'live', tags: ['a'], published: true, meta: { i } } });
  }
  await srv.api('PUT', '/api/settings/site', { token: srv.suToken, body: { value: 'x' } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

/** axe-core's WCAG 2 A/AA violations on the page as it is, one line each. */
async function violations(page: Page): Promise<string[]> {
  // evaluated through the DevTools protocol: the page's own CSP forbids loading it as a script
  await page.evaluate(AXE);
  const json = await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }).then((r) => JSON.stringify(r.violations.map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '))))`);
  return JSON.parse(json as string);
}

for (const [label, opts] of [
  ['light, 1280×800', { viewport: { width: 1280, height: 800 }, colorScheme: 'light' as const }],
  ['dark, 390×844', { viewport: { width: 390, height: 844 }, colorScheme: 'dark' as const }],
] as const) {
  test(`no WCAG 2 A/AA violations on the main screens (${label})`, { skip: NO_BROWSER }, async () => {
    const context = await browser.newContext(opts);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const found: Record<string, string[]> = {};
    const check = async (screen: string) => {
      const v = await violations(page);
      if (v.length) found[screen] = v;
    };

    await page.goto(`${srv.url}/_/`);
    await page.getByLabel('Email').waitFor();
    await check('sign-in');
    await page.getByLabel('Email').fill(SU_EMAIL);
    await page.getByLabel('Password').fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await check('sign-in with an error');
    await page.getByLabel('Password').fill(SU_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    await page.goto(`${srv.url}/_/collections/posts`);
    await page.locator('table.records tbody tr').first().waitFor();
    await check('records');
    await page.getByRole('button', { name: /Open record/ }).first().click();
    await page.getByRole('dialog').waitFor();
    await check('record panel');
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'New record' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
    await page.getByRole('dialog').locator('.error-text').first().waitFor();
    await check('record panel with errors');
    await page.keyboard.press('Escape');

    await page.goto(`${srv.url}/_/collections/posts/edit`);
    await page.getByRole('heading', { name: 'Edit posts' }).waitFor();
    await check('collection editor');
    await page.goto(`${srv.url}/_/collections/members/edit`);
    await page.getByRole('heading', { name: 'Edit members' }).waitFor();
    await check('auth collection editor');
    // the sign-in methods form with an OAuth2 provider and the server's errors beside its inputs
    await page.getByRole('group', { name: 'OAuth2', exact: true }).getByLabel('Sign in with an OAuth2 provider').check();
    await page.getByRole('button', { name: '+ Add provider' }).click();
    await page.getByRole('group', { name: 'Magic link', exact: true }).getByLabel('Link lifetime (seconds)').fill('5');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('fieldset.provider .error-text').first().waitFor();
    await check('auth collection editor with sign-in method errors');
    await page.goto(`${srv.url}/_/collections/posts/api`);
    await page.locator('.api-op').first().waitFor();
    await check('collection API');
    await page.goto(`${srv.url}/_/settings`);
    await page.getByRole('cell', { name: 'site', exact: true }).waitFor();
    await check('settings');
    await page.goto(`${srv.url}/_/settings/mail`);
    await page.getByRole('heading', { name: 'Transport' }).waitFor();
    await check('mail');
    await page.getByLabel('Recipient').fill('not an address');
    await page.getByRole('button', { name: 'Send a test message' }).click();
    await page.locator('.field.has-error').waitFor();
    await check('mail with an error');
    await page.goto(`${srv.url}/_/settings/storage`);
    await page.getByRole('heading', { name: 'Local folder' }).waitFor();
    await check('storage');
    await context.close();
    assert.deepEqual(found, {});
  });
}
