/**
 * The admin UI's API view of a collection (docs/admin.md, "API"): the record routes read from
 * `GET /api/openapi.json`, with each route's rule, body fields and a curl example, and the
 * examples run as shown (bash, with a superuser token in $TOKEN). Debian's chromium driven by
 * playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { Page } from 'playwright-core';
import { NO_BROWSER, adminSession, signIn, type AdminSession } from '../helpers/browser.js';

let session: AdminSession;
let page: Page;

before(async () => {
  if (NO_BROWSER) return;
  session = await adminSession({}, (srv) => srv.createCollection({
    name: 'posts', type: 'base', listRule: '@public', viewRule: '@public', createRule: '@request.auth.id != ""', updateRule: null, deleteRule: null,
    fields: [
      { name: 'title', type: 'text', options: { required: true } },
      { name: 'status', type: 'select', options: { values: ['draft', 'live'], required: true } },
      { name: 'cover', type: 'file' },
    ],
  }));
  page = session.page;
});
after(() => session?.stop());

const op = (label: string) => page.getByRole('listitem', { name: label, exact: true });

/** Runs a curl example of the page with the superuser's token: its output, parsed. */
function runExample(cmd: string): any {
  const r = spawnSync('bash', ['-c', cmd], { encoding: 'utf8', env: { ...process.env, TOKEN: session.srv.suToken }, timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout ? JSON.parse(r.stdout) : null;
}

test('a collection\'s API view shows its record routes, rules and curl examples that run', { skip: NO_BROWSER }, async () => {
  const { srv, problems } = session;
  await signIn(page, srv.url);
  await page.getByRole('link', { name: 'posts' }).first().click();
  await page.getByRole('heading', { name: 'posts' }).waitFor();
  await page.getByRole('link', { name: 'API', exact: true }).click();
  await page.getByRole('heading', { name: 'posts API' }).waitFor();
  assert.match(page.url(), /\/_\/collections\/posts\/api$/);

  const list = op('GET /api/collections/posts/records');
  await list.waitFor();
  assert.match(await list.locator('.api-who').innerText(), /Anyone \(@public\)/);
  const create = op('POST /api/collections/posts/records');
  assert.equal(await create.locator('.api-who').innerText(), '@request.auth.id != ""');
  assert.match(await create.locator('.api-body').innerText(), /title \(required\), status \(required\)/);
  assert.match(await create.locator('.api-body').innerText(), /multipart form/);
  assert.equal(await op('DELETE /api/collections/posts/records/{id}').locator('.api-who').innerText(), 'Superusers only');
  assert.equal(await page.locator('.api-op').count(), 5, 'list, create, view, update, delete');

  // the examples run as shown
  const created = runExample(await create.locator('pre').innerText());
  assert.equal(created.title, '…');
  assert.equal(created.status, 'draft');
  const listed = runExample(await list.locator('pre').innerText());
  assert.equal(listed.items[0].id, created.id);
  const view = (await op('GET /api/collections/posts/records/{id}').locator('pre').innerText()).replace('RECORD_ID', created.id);
  assert.equal(runExample(view).id, created.id);

  // the view follows the schema: a new field shows in the body after a collection change
  const r = await srv.api('PATCH', '/api/collections/posts', { token: srv.suToken, body: { updateRule: '@public' } });
  assert.equal(r.status, 200, r.text);
  await page.reload();
  await op('PATCH /api/collections/posts/records/{id}').locator('.api-who').getByText('Anyone').waitFor();
  await page.getByRole('link', { name: 'Records', exact: true }).click();
  await page.getByRole('button', { name: 'New record' }).waitFor();
  assert.deepEqual(problems, []);
});
