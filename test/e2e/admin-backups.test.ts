/**
 * The admin UI's Backups page (docs/admin.md, "What it does"; docs/operations.md, "Backups over
 * HTTP") in Chromium: make a backup (and see a bad name refused; the page passes axe-core's
 * WCAG 2 A/AA rules), download it, upload it back
 * under another name, delete that one after a confirmation, and ask for a restore after typing
 * the backup's name; the server then writes the pending-restore marker and applies it at the
 * next start. Debian's chromium driven by playwright-core; skipped where it is not installed,
 * and on PostgreSQL (backups over HTTP copy the SQLite database).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { list as tarList } from 'tar';
import type { Browser, Page } from 'playwright-core';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage, signIn } from '../helpers/browser.js';
import { TEST_BACKEND } from '../helpers/backend.js';

const SKIP = NO_BROWSER || (TEST_BACKEND === 'postgres' ? 'backups over HTTP copy the embedded SQLite database' : false);
const root = mkdtempSync(join(tmpdir(), 'svc-test-admin-backups-'));
const dataDir = join(root, 'data');
let srv: Svc;
let browser: Browser;
let page: Page;
const problems: string[] = [];

before(async () => {
  if (SKIP) return;
  mkdirSync(dataDir);
  srv = await startSvc({ dataDir });
  await srv.createCollection({ name: 'notes', type: 'base', fields: [{ name: 'text', type: 'text' }] });
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  rmSync(root, { recursive: true, force: true });
});

const row = (key: string) => page.locator('tr', { has: page.getByText(key, { exact: true }) });
const keys = async (): Promise<string[]> => (await srv.api('GET', '/api/backups', { token: srv.suToken })).body.map((b: { key: string }) => b.key);

test('make, download, upload, delete and restore backups from the Backups page', { skip: SKIP, timeout: 120_000 }, async () => {
  const kept = await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { text: 'in the backup' } });
  await signIn(page, srv.url);
  await page.getByRole('link', { name: 'Backups' }).click();
  await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
  await page.getByText('No backups yet.').waitFor();

  // a bad name is refused with the server's reason; then a good one is made
  await page.getByLabel('Name (optional)').fill('bad name.zip');
  await page.getByRole('button', { name: 'Make a backup' }).click();
  await page.getByRole('alert').getByText(/ending in "\.tar"/).waitFor();
  problems.length = 0; // Chromium logs the 400 answer as a console error
  await page.getByLabel('Name (optional)').fill('ui_made.tar');
  await page.getByRole('button', { name: 'Make a backup' }).click();
  await page.getByText('Backup made.').waitFor();
  await row('ui_made.tar').waitFor();
  assert.deepEqual(await keys(), ['ui_made.tar']);
  // the page passes axe-core's WCAG 2 A/AA rules, as the other screens do (admin-a11y.test.ts)
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const found = JSON.parse(await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }).then((r) => JSON.stringify(r.violations.map((v) => v.id)))`) as string);
  assert.deepEqual(found, []);

  // download through the link (the session cookie authorizes it)
  const [download] = await Promise.all([page.waitForEvent('download'), row('ui_made.tar').getByRole('link', { name: 'Download ui_made.tar' }).click()]);
  assert.equal(download.suggestedFilename(), 'ui_made.tar');
  const saved = join(root, 'saved.tar');
  await download.saveAs(saved);
  const names: string[] = [];
  await tarList({ file: saved, onReadEntry: (e) => { names.push(e.path); } });
  assert.ok(names.includes('manifest.json') && names.includes('data.db'), names.join(', '));

  // upload it back under another name, then delete that one after the confirmation
  const renamed = join(root, 'ui_uploaded.tar');
  copyFileSync(saved, renamed);
  await page.locator('input[type=file]').setInputFiles(renamed);
  await page.getByText('Backup ui_uploaded.tar uploaded.').waitFor();
  await row('ui_uploaded.tar').getByRole('button', { name: 'Delete ui_uploaded.tar' }).click();
  const confirmDelete = page.getByRole('alertdialog', { name: 'Delete backup' });
  await confirmDelete.getByRole('button', { name: 'Delete' }).click();
  await page.getByText('Backup ui_uploaded.tar deleted.').waitFor();
  await row('ui_uploaded.tar').waitFor({ state: 'detached' });
  assert.deepEqual(await keys(), ['ui_made.tar']);

  // a restore needs the backup's name typed, then waits for the next start
  const later = await srv.api('POST', '/api/collections/notes/records', { token: srv.suToken, body: { text: 'after the backup' } });
  await row('ui_made.tar').getByRole('button', { name: 'Restore ui_made.tar' }).click();
  const confirmRestore = page.getByRole('alertdialog', { name: 'Restore backup' });
  const go = confirmRestore.getByRole('button', { name: 'Restore at next start' });
  assert.equal(await go.isDisabled(), true);
  await confirmRestore.getByLabel(/to confirm/).fill('ui_made.tar');
  await go.click();
  await page.getByText(/will be restored at the server's next start/).waitFor();
  assert.ok(existsSync(join(dataDir, 'backups', '.restore-pending.json')));
  assert.deepEqual(problems, []);

  assert.equal(await srv.stop(), 0);
  srv = await startSvc({ dataDir, superuser: false });
  const li = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: SU_EMAIL, password: SU_PASSWORD } });
  srv.suToken = li.body.token;
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${kept.body.id}`, { token: srv.suToken })).status, 200);
  assert.equal((await srv.api('GET', `/api/collections/notes/records/${later.body.id}`, { token: srv.suToken })).status, 404);
});
