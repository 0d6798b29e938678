/**
 * The admin UI at /_/ (0-conventions.md "Admin UI"), end to end in a real browser:
 * Debian's chromium driven by playwright-core against the built server. A wrong password, sign-in
 * (an HttpOnly cookie, nothing in storage, kept across a reload), creating a collection with
 * several field types (a bad rule's API error shown inline first), adding, editing, filtering
 * (the API's error under the filter box) and deleting records, uploading a file and seeing its
 * preview, a record made over REST appearing live, settings, a narrow window, and sign-out; no
 * console errors. The HTTP side (caching headers, client routes, /api/meta) runs without a browser.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startSvc, SU_EMAIL, SU_PASSWORD, type Svc } from '../helpers/server.js';
import { NO_BROWSER, launchBrowser, watchedPage } from '../helpers/browser.js';

let srv: Svc;
let browser: Browser;
let page: Page;
/** console errors and uncaught page errors seen in the browser */
const problems: string[] = [];
/**
 * The console errors Chromium logs for the 4xx answers the tests ask for on purpose (a wrong
 * password, a bad rule, a missing required value, a bad filter), as URL patterns.
 */
const expectedNetwork: RegExp[] = [];
let authorId = '';

/** A 2×2 PNG (red, green, blue, white). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
);

before(async () => {
  srv = await startSvc();
  const authors = await srv.createCollection({ name: 'authors', fields: [{ name: 'name', type: 'text', options: { required: true } }], listRule: '@public', viewRule: '@public' });
  for (const name of ['Ada Lovelace', 'Grace Hopper']) {
    const r = await srv.api('POST', '/api/collections/authors/records', { token: srv.suToken, body: { name } });
    assert.equal(r.status, 201, r.text);
    if (name.startsWith('Ada')) authorId = r.body.id;
  }
  assert.ok(authors.id);
  if (NO_BROWSER) return;
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
});

test('/api/meta says admin; /_/ serves index.html uncached, hashed assets immutable, client routes, 404 for a missing asset', async () => {
  const meta = await srv.api('GET', '/api/meta');
  assert.equal(meta.body.capabilities.admin, true);

  const index = await fetch(`${srv.url}/_/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  assert.match(index.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  const html = await index.text();
  const js = /src="(\/_\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
  const css = /href="(\/_\/assets\/app-[A-Z0-9]+\.css)"/.exec(html)?.[1];
  assert.ok(js && css, `hashed asset names in index.html: ${html}`);

  const etag = index.headers.get('etag')!;
  const again = await fetch(`${srv.url}/_/`, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);

  for (const [path, type] of [[js, /^text\/javascript/], [css, /^text\/css/]] as const) {
    const r = await fetch(srv.url + path);
    assert.equal(r.status, 200, path);
    assert.match(r.headers.get('content-type') ?? '', type);
    assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.ok((await r.arrayBuffer()).byteLength > 1000);
    assert.equal(r.headers.get('content-encoding'), 'gzip', 'compressed for a client that takes gzip');
    assert.equal(r.headers.get('vary'), 'Accept-Encoding');
  }
  // the same asset raw and gzip-compressed: the compressed one is smaller and unpacks to the raw bytes
  const { request } = await import('node:http');
  const { gunzipSync } = await import('node:zlib');
  const get = (path: string, headers: Record<string, string>) => new Promise<{ encoding?: string; body: Buffer }>((resolve, reject) => {
    request(srv.url + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
    }).on('error', reject).end();
  });
  const plain = await get(js, {});
  const packed = await get(js, { 'accept-encoding': 'gzip, deflate' });
  assert.equal(plain.encoding, undefined);
  assert.equal(packed.encoding, 'gzip');
  assert.ok(packed.body.length < plain.body.length / 2, `${packed.body.length} vs ${plain.body.length}`);
  assert.deepEqual(gunzipSync(packed.body), plain.body);

  const deep = await fetch(`${srv.url}/_/collections/authors`);
  assert.equal(deep.status, 200, 'a client-side route answers index.html');
  assert.equal(deep.headers.get('cache-control'), 'no-cache');
  assert.equal(await deep.text(), html);
  assert.equal((await fetch(`${srv.url}/_/index.html`)).status, 200);

  const missing = await fetch(`${srv.url}/_/assets/app-NOPE.js`);
  assert.equal(missing.status, 404);
  await missing.arrayBuffer();

  const bare = await fetch(`${srv.url}/_`, { redirect: 'manual' });
  assert.equal(bare.status, 302);
  assert.equal(bare.headers.get('location'), '/_/');

  // the API is untouched by the UI's routes
  assert.equal((await srv.api('GET', '/api/nope')).status, 404);
});

test('a wrong password shows the API\'s error and leaves no session', { skip: NO_BROWSER }, async () => {
  await page.goto(`${srv.url}/_/`);
  await page.getByLabel('Email').fill(SU_EMAIL);
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.equal((await alert.textContent())?.trim(), 'Invalid credentials.');
  expectedNetwork.push(/\/api\/collections\/_superusers\/auth-with-password$/);
  const cookies = await page.context().cookies();
  assert.equal(cookies.find((c) => c.name === 'svc_auth'), undefined);
});

test('sign in: the session is an HttpOnly cookie (nothing in storage) and survives a reload', { skip: NO_BROWSER }, async () => {
  await page.getByLabel('Password').fill(SU_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.getByRole('navigation', { name: 'Collections and settings' }).getByRole('link', { name: 'authors' }).waitFor();

  const cookies = await page.context().cookies();
  const auth = cookies.find((c) => c.name === 'svc_auth');
  assert.ok(auth, 'svc_auth is set');
  assert.equal(auth.httpOnly, true);
  assert.equal(auth.sameSite, 'Strict');
  assert.equal(cookies.find((c) => c.name === 'svc_csrf')?.httpOnly, false);
  const storage = await page.evaluate('JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage)])');
  assert.equal(storage, '[[],[]]', 'no token in localStorage or sessionStorage');

  await page.reload();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  assert.equal(await page.getByLabel('Password').count(), 0, 'no sign-in form after a reload');
  // /api/meta and the registry decide the pages: the standalone server declares no flags
  await page.getByRole('link', { name: 'Settings' }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Flags and experiments' }).count(), 0);
});

/** The field card at `index` of the collection editor. */
const card = (index: number) => page.locator('li.field-card').nth(index);

async function addField(type: string, name: string): Promise<ReturnType<typeof card>> {
  await page.getByLabel('New field type').selectOption(type);
  await page.getByRole('button', { name: '+ Add field' }).click();
  const c = page.locator('li.field-card').last();
  await c.getByLabel('Name', { exact: true }).fill(name);
  return c;
}

test('create a collection with several field types; a bad rule shows the API\'s error inline', { skip: NO_BROWSER }, async () => {
  await page.getByRole('link', { name: '+ New collection' }).click();
  await page.getByRole('heading', { name: 'New collection' }).waitFor();
  await page.getByLabel('Name', { exact: true }).first().fill('posts');

  const title = await addField('text', 'title');
  await title.getByLabel('Required').check();
  await addField('number', 'views');
  await addField('bool', 'published');
  await addField('date', 'published_at');
  const status = await addField('select', 'status');
  await status.getByLabel('Values').fill('draft, live');
  const author = await addField('relation', 'author');
  await author.getByLabel('Related collection').selectOption({ label: 'authors' });
  await addField('json', 'meta');
  const cover = await addField('file', 'cover');
  await cover.getByLabel('Allowed types').fill('image/png, image/jpeg');
  await cover.getByLabel('Thumb sizes').fill('100x100, 0x50');

  // a rule naming a field that does not exist: the API's message under that rule
  const listRule = page.locator('fieldset.rule').filter({ hasText: 'listRule' });
  await listRule.getByLabel('Filter expression').check();
  await listRule.getByLabel('listRule expression').fill('nope = 1');
  await page.getByRole('button', { name: 'Create collection' }).click();
  const err = listRule.locator('.error-text');
  await err.waitFor();
  assert.match((await err.textContent()) ?? '', /nope/);
  assert.equal(await page.getByRole('alert').count(), 1, 'the form-level alert says the request failed');
  expectedNetwork.push(/\/api\/collections$/);

  await listRule.getByLabel('Anyone (@public)').check();
  await page.getByRole('button', { name: 'Create collection' }).click();
  await page.getByRole('heading', { name: 'posts', exact: true }).waitFor();
  await page.getByText('No records yet.').waitFor();

  const c = await srv.api('GET', '/api/collections/posts', { token: srv.suToken });
  assert.equal(c.status, 200, c.text);
  assert.deepEqual(c.body.schema.map((f: any) => `${f.name}:${f.type}`), ['title:text', 'views:number', 'published:bool', 'published_at:date', 'status:select', 'author:relation', 'meta:json', 'cover:file']);
  assert.equal(c.body.schema[0].options.required, true);
  assert.deepEqual(c.body.schema[4].options.values, ['draft', 'live']);
  assert.equal(c.body.schema[5].options.collectionId, (await srv.api('GET', '/api/collections/authors', { token: srv.suToken })).body.id);
  assert.deepEqual(c.body.schema[7].options.mimeTypes, ['image/png', 'image/jpeg']);
  assert.deepEqual(c.body.schema[7].options.thumbs, ['100x100', '0x50']);
  assert.equal(c.body.listRule, '@public');
});

const panel = () => page.getByRole('dialog');
const rowCount = () => page.locator('table.records tbody tr').count();

/**
 * Polls `check` until it holds (page.waitForFunction cannot run here: the UI's Content-Security-
 * Policy forbids the string evaluation it uses, which is the point of the policy).
 */
async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Text of the first row's cell `n` (1-based, the checkbox is 1, the id 2). */
const firstCell = (n: number) => page.locator(`table.records tbody tr:first-child td:nth-child(${n})`).textContent();
const rowsText = async () => (await page.locator('table.records tbody tr').allTextContents()).join('\n');

test('add a record with every kind of field and a file upload; a missing required value shows the API\'s error', { skip: NO_BROWSER }, async () => {
  await page.getByRole('button', { name: 'New record' }).click();
  await panel().waitFor();
  // nothing filled: the API says title is required, under the title input
  await panel().getByRole('button', { name: 'Create' }).click();
  const titleErr = panel().locator('.field.has-error .error-text').first();
  await titleErr.waitFor();
  assert.match((await titleErr.textContent()) ?? '', /blank|required/i);
  expectedNetwork.push(/\/api\/collections\/posts\/records$/);

  await panel().getByLabel(/^title/).fill('First post');
  await panel().getByLabel(/^views/).fill('42');
  await panel().getByLabel(/^published\b/).check();
  await panel().getByLabel(/^published_at/).fill('2024-05-06T07:08:09');
  await panel().getByLabel(/^status/).selectOption('live');
  const combo = panel().getByRole('combobox', { name: /author/ });
  await combo.fill('Ada');
  await panel().getByRole('option', { name: /Ada Lovelace/ }).click();
  await panel().getByText('Ada Lovelace').first().waitFor();
  await panel().getByLabel(/^meta/).fill('{"tags": ["a", "b"], "n": 1}');
  await panel().locator('input[type=file]').setInputFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: PNG });
  await panel().getByAltText('Preview of pixel.png').waitFor();
  await panel().getByRole('button', { name: 'Create' }).click();
  await panel().waitFor({ state: 'detached' });
  await page.locator('table.records tbody tr', { hasText: 'First post' }).waitFor();

  const list = await srv.api('GET', '/api/collections/posts/records?filter=' + encodeURIComponent("title = 'First post'"), { token: srv.suToken });
  assert.equal(list.body.items.length, 1, list.text);
  const r = list.body.items[0];
  assert.equal(r.views, 42);
  assert.equal(r.published, true);
  assert.equal(r.published_at, '2024-05-06 07:08:09.000Z');
  assert.equal(r.status, 'live');
  assert.equal(r.author, authorId);
  assert.deepEqual(r.meta, { tags: ['a', 'b'], n: 1 });
  assert.match(r.cover, /^pixel_\w+\.png$/);
  const file = await fetch(`${srv.url}/api/files/posts/${r.id}/${r.cover}`, { headers: { Authorization: srv.suToken } });
  assert.equal(file.status, 200);
  assert.deepEqual(Buffer.from(await file.arrayBuffer()), PNG);
});

test('edit a record: the stored image shows as a preview, a change is saved and shown in the table', { skip: NO_BROWSER }, async () => {
  await page.getByRole('button', { name: /Open record/ }).first().click();
  await panel().waitFor();
  const img = panel().locator('img.thumb').first();
  await img.waitFor();
  await until('the image preview to load', async () => (await page.evaluate(`(() => { const i = document.querySelector('dialog img.thumb'); return !!i && i.complete && i.naturalWidth === 2; })()`)) === true);
  assert.match((await img.getAttribute('src')) ?? '', /^\/api\/files\/posts\/\w+\/pixel_\w+\.png$/);
  await panel().getByLabel(/^title/).fill('First post, edited');
  await panel().getByLabel(/^views/).fill('43');
  await panel().getByRole('button', { name: 'Save changes' }).click();
  await panel().waitFor({ state: 'detached' });
  await page.locator('table.records tbody tr', { hasText: 'First post, edited' }).waitFor();
  const list = await srv.api('GET', '/api/collections/posts/records', { token: srv.suToken });
  assert.equal(list.body.items[0].title, 'First post, edited');
  assert.equal(list.body.items[0].views, 43);
  assert.equal(list.body.items[0].author, authorId, 'fields left alone keep their values');
  assert.match(list.body.items[0].cover, /^pixel_/, 'the file is kept');
});

test('filter the table; a bad filter shows the API\'s error under the box; sort by a column', { skip: NO_BROWSER }, async () => {
  for (const [title, views] of [['Second post', 5], ['Third post', 7]] as const) {
    const r = await srv.api('POST', '/api/collections/posts/records', { token: srv.suToken, body: { title, views } });
    assert.equal(r.status, 201, r.text);
  }
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.locator('table.records tbody tr', { hasText: 'Third post' }).waitFor();
  assert.equal(await rowCount(), 3);

  const box = page.getByLabel('Filter', { exact: true });
  await box.fill("views < 10 && title ~ 'Second'");
  await box.press('Enter');
  await until('one row', async () => (await rowCount()) === 1);
  assert.match(await rowsText(), /Second post/);

  await box.fill('title ==');
  await page.getByRole('button', { name: 'Apply' }).click();
  const err = page.locator('#filter-error');
  await err.waitFor();
  const api = await srv.api('GET', `/api/collections/posts/records?filter=${encodeURIComponent('title ==')}`, { token: srv.suToken });
  assert.equal(api.status, 400);
  assert.equal((await err.textContent())?.trim(), api.body.message, 'the API\'s own message');
  assert.equal(await box.getAttribute('aria-invalid'), 'true');
  expectedNetwork.push(/\/api\/collections\/posts\/records\?.*filter=title\+%3D%3D/);

  await page.getByRole('button', { name: 'Clear' }).click();
  await until('three rows', async () => (await rowCount()) === 3);
  assert.equal(await err.count(), 0);

  // sort by views, ascending then descending
  await page.getByRole('button', { name: 'views', exact: true }).click();
  await page.locator('th[aria-sort=ascending]', { hasText: 'views' }).waitFor();
  await until('ascending views', async () => (await firstCell(3)) === 'Second post');
  await page.getByRole('button', { name: 'views', exact: true }).click();
  await page.locator('th[aria-sort=descending]', { hasText: 'views' }).waitFor();
  await until('descending views', async () => (await firstCell(3)) === 'First post, edited');
  await page.getByRole('button', { name: 'views', exact: true }).click(); // back to newest first
  await until('the default order', async () => (await page.locator('th[aria-sort]').count()) === 0);
});

test('a record created over REST appears live in the open table; REST updates and deletes show too', { skip: NO_BROWSER }, async () => {
  await page.locator('.live-on').waitFor();
  const made = await srv.api('POST', '/api/collections/posts/records', { token: srv.suToken, body: { title: 'Made over REST', views: 1 } });
  assert.equal(made.status, 201, made.text);
  const row = page.locator('table.records tbody tr', { hasText: 'Made over REST' });
  await row.waitFor({ timeout: 5000 });
  assert.equal(await page.locator('table.records tbody tr').first().textContent().then((t) => t?.includes('Made over REST')), true, 'newest first: at the top');

  await srv.api('PATCH', `/api/collections/posts/records/${made.body.id}`, { token: srv.suToken, body: { title: 'Changed over REST' } });
  await page.locator('table.records tbody tr', { hasText: 'Changed over REST' }).waitFor({ timeout: 5000 });

  await srv.api('DELETE', `/api/collections/posts/records/${made.body.id}`, { token: srv.suToken });
  await page.locator('table.records tbody tr', { hasText: 'Changed over REST' }).waitFor({ state: 'detached', timeout: 5000 });
});

test('delete a record from its panel after confirming', { skip: NO_BROWSER }, async () => {
  const row = page.locator('table.records tbody tr', { hasText: 'Third post' });
  const id = (await row.locator('button.link-btn').textContent())!.trim();
  await row.locator('td', { hasText: 'Third post' }).click();
  await panel().getByRole('button', { name: 'Delete' }).click();
  const confirm = page.getByRole('alertdialog');
  await confirm.waitFor();
  await confirm.getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  assert.equal((await srv.api('GET', `/api/collections/posts/records/${id}`, { token: srv.suToken })).status, 404);

  // several at once: select, delete, confirm
  const ids: string[] = [];
  for (const title of ['Bulk A', 'Bulk B']) ids.push((await srv.api('POST', '/api/collections/posts/records', { token: srv.suToken, body: { title } })).body.id);
  for (const title of ['Bulk A', 'Bulk B']) await page.locator('table.records tbody tr', { hasText: title }).getByRole('checkbox').check();
  await page.getByText('2 records selected').waitFor();
  await page.getByRole('button', { name: 'Delete selected' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('Deleted 2 records.').waitFor();
  for (const bulkId of ids) assert.equal((await srv.api('GET', `/api/collections/posts/records/${bulkId}`, { token: srv.suToken })).status, 404);
  await page.locator('table.records tbody tr', { hasText: 'Bulk' }).first().waitFor({ state: 'detached' });
});

test('keyboard: "/" focuses the filter, Enter opens a record, focus stays in the panel, Escape closes it and returns focus', { skip: NO_BROWSER }, async () => {
  await page.locator('body').click({ position: { x: 5, y: 795 } });
  await page.keyboard.press('/');
  await until('the filter to have focus', () => page.evaluate("!!document.activeElement && document.activeElement.id === 'filter-input'"), 5000);
  const open = page.getByRole('button', { name: /Open record/ }).first();
  await open.focus();
  await page.keyboard.press('Enter');
  await panel().waitFor();
  await until('focus in the panel', () => page.evaluate("!!(document.activeElement && document.activeElement.closest('dialog'))"), 5000); // focus moved into the panel
  for (let i = 0; i < 25; i++) await page.keyboard.press('Tab');
  assert.equal(await page.evaluate("!!document.activeElement.closest('dialog')"), true, 'Tab stays inside the modal panel');
  await page.keyboard.press('Escape');
  await panel().waitFor({ state: 'detached' });
  const label = await open.getAttribute('aria-label');
  // focus returns to the row that opened the panel (it may land a frame after the panel closes)
  await until('focus back on the row', () => page.evaluate(`((document.activeElement && document.activeElement.getAttribute('aria-label')) || '') === ${JSON.stringify(label ?? '')}`), 5000);
});

test('edit a collection (add a field) and delete one after typing its name', { skip: NO_BROWSER }, async () => {
  await page.getByRole('link', { name: 'Edit collection' }).click();
  await page.getByRole('heading', { name: 'Edit posts' }).waitFor();
  await addField('editor', 'body');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Collection posts saved.').waitFor();
  const c = await srv.api('GET', '/api/collections/posts', { token: srv.suToken });
  assert.equal(c.body.schema.at(-1).name, 'body');
  assert.equal(c.body.schema.at(-1).type, 'editor');
  const kept = await srv.api('GET', '/api/collections/posts/records?filter=' + encodeURIComponent("title = 'First post, edited'"), { token: srv.suToken });
  assert.equal(kept.body.items.length, 1, 'records keep their data');

  // a system collection: only its auth options change
  await page.getByRole('link', { name: '_superusers' }).click();
  await page.getByRole('link', { name: 'Edit collection' }).click();
  await page.getByText('A system collection: only its auth options can change.').waitFor();
  await page.getByLabel('Minimum password length').fill('10');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Collection _superusers saved.').waitFor();
  const su = await srv.api('GET', '/api/collections/_superusers', { token: srv.suToken });
  assert.equal(su.body.options.auth.minPasswordLength, 10);

  await srv.createCollection({ name: 'scratch', fields: [{ name: 'x', type: 'text' }] });
  await page.goto(`${srv.url}/_/collections/scratch/edit`);
  await page.getByRole('button', { name: 'Delete collection' }).click();
  const confirm = page.getByRole('alertdialog');
  const go = confirm.getByRole('button', { name: 'Delete collection' });
  assert.equal(await go.isDisabled(), true, 'disabled until the name is typed');
  await confirm.getByLabel(/Type scratch to confirm/).fill('scratch');
  await go.click();
  await confirm.waitFor({ state: 'detached' });
  assert.equal((await srv.api('GET', '/api/collections/scratch', { token: srv.suToken })).status, 404);
  await page.getByRole('link', { name: 'scratch' }).waitFor({ state: 'detached', timeout: 5000 }); // gone from the sidebar
});

test('settings: add one and see it listed', { skip: NO_BROWSER }, async () => {
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  await page.getByLabel('Key').fill('site.title');
  await page.getByLabel('Value', { exact: true }).fill('My site');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('cell', { name: 'site.title', exact: true }).waitFor();
  const s = await srv.api('GET', '/api/settings/site.title', { token: srv.suToken });
  assert.equal(s.body.value, 'My site');
});

test('a narrow window: the menu opens the collections; the page does not scroll sideways', { skip: NO_BROWSER }, async () => {
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${srv.url}/_/collections/posts`);
  await page.locator('table.records tbody tr').first().waitFor();
  const nav = page.getByRole('navigation', { name: 'Collections and settings' });
  assert.equal(await nav.isVisible(), false, 'the sidebar is folded away');
  const menu = page.getByRole('button', { name: 'Menu' });
  await menu.click();
  assert.equal(await menu.getAttribute('aria-expanded'), 'true');
  await nav.getByRole('link', { name: 'authors' }).click();
  await page.getByRole('heading', { name: 'authors', exact: true }).waitFor();
  await nav.waitFor({ state: 'hidden', timeout: 5000 }); // navigating closes the menu
  const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
  assert.ok(Number(overflow) <= 0, `no sideways scroll (${overflow}px)`);
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('sign out: back to the sign-in form, the cookie is gone, and a reload stays signed out', { skip: NO_BROWSER }, async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  const cookies = await page.context().cookies();
  assert.equal(cookies.find((c) => c.name === 'svc_auth'), undefined);
  await page.reload();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
});

test('no console errors or uncaught exceptions in the browser', { skip: NO_BROWSER }, () => {
  // Chromium logs every 4xx answer to fetch as a console error: only the ones asked for above, once each
  const left = [...expectedNetwork];
  const unexpected = problems.filter((p) => {
    if (!p.startsWith('Failed to load resource: the server responded with a status of 400')) return true;
    const i = left.findIndex((re) => re.test(p.slice(p.lastIndexOf(' at ') + 4)));
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
  assert.deepEqual(unexpected, []);
  assert.deepEqual(left, [], 'each deliberate failure was seen');
});
