/**
 * The admin UI's Mail and Storage pages (docs/admin.md, "Mail" and "Storage") in Chromium against
 * the real server and a real SMTP server (smtp-server): the transport shown read-only without its
 * password, a test message received by the SMTP server for the recipient typed, a bad address
 * shown beside the input, a transport that is down shown with its reason, the storage folder and
 * an S3 bucket (without its keys).
 * Debian's chromium driven by playwright-core; skipped where it is not installed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { startSvc } from '../helpers/server.js';
import { NO_BROWSER, adminSession, signIn, type AdminSession } from '../helpers/browser.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

let smtp: TestSmtp;
let s: AdminSession;

before(async () => {
  if (NO_BROWSER) return;
  smtp = await startSmtp({ users: { mailer: 'smtp-pass-ui' } });
  s = await adminSession({
    env: {
      SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none',
      SERVICE_SMTP_USERNAME: 'mailer', SERVICE_SMTP_PASSWORD: 'smtp-pass-ui', SERVICE_SMTP_FROM: 'Svc Ops <ops@example.test>',
    },
  });
});

after(async () => {
  await s?.stop();
  await smtp?.close();
});

/** A TCP port nothing listens on (taken, then released). */
const closedPort = () => new Promise<number>((resolve) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const p = (srv.address() as { port: number }).port;
    srv.close(() => resolve(p));
  });
});

test('the Mail page shows the SMTP settings read-only and sends a test message', { skip: NO_BROWSER, timeout: 60_000 }, async () => {
  const { page, srv, problems } = s;
  await signIn(page, srv.url);
  await page.getByRole('link', { name: 'Mail', exact: true }).click();
  await page.getByRole('heading', { name: 'Mail', level: 1 }).waitFor();
  const list = page.locator('dl.settings-list');
  await list.getByText('SMTP', { exact: true }).waitFor();
  const text = (await list.textContent()) ?? '';
  for (const want of ['127.0.0.1', String(smtp.port), 'none (plain)', 'mailer', 'set (not shown)', 'Svc Ops <ops@example.test>']) assert.ok(text.includes(want), `${want} in ${text}`);
  assert.doesNotMatch((await page.content()), /smtp-pass-ui/, 'the password is never in the page');
  await page.getByText(/Start-time configuration/).waitFor();
  await page.getByText('SERVICE_SMTP_HOST', { exact: true }).waitFor();

  // a bad address: the server's reason beside the input, nothing sent
  await page.getByLabel('Recipient').fill('not an address');
  await page.getByRole('button', { name: 'Send a test message' }).click();
  await page.getByText('Must be a valid email address.').waitFor();
  assert.equal(await page.getByLabel('Recipient').getAttribute('aria-invalid'), 'true');
  problems.length = 0; // Chromium logs the 400 answer as a console error

  await page.getByLabel('Recipient').fill('reader@example.test');
  await page.getByLabel('Template').selectOption('otp');
  await page.getByRole('button', { name: 'Send a test message' }).click();
  await page.getByText('The transport took the message to reader@example.test.').waitFor();
  const m = await smtp.waitFor((x) => x.to.includes('reader@example.test'));
  assert.deepEqual(m.to, ['reader@example.test']);
  assert.equal(m.from, 'ops@example.test');
  assert.equal(m.user, 'mailer');
  assert.match(m.raw, /Subject: Your sign-in code: 123456/);
  assert.equal(await page.getByLabel('Recipient').getAttribute('aria-invalid'), null);
  assert.deepEqual(problems, []);
});

test('the Storage page shows the local folder', { skip: NO_BROWSER }, async () => {
  const { page, srv } = s;
  await page.getByRole('link', { name: 'Storage', exact: true }).click();
  await page.getByRole('heading', { name: 'Local folder' }).waitFor();
  await page.locator('dl.settings-list').getByText(`${srv.dataDir}/storage`, { exact: true }).waitFor();
});

test('the Storage page shows an S3 bucket without its keys', { skip: NO_BROWSER, timeout: 60_000 }, async () => {
  const s3 = await startSvc({
    env: {
      SERVICE_STORAGE: 's3://svc-files/tenant-a', SERVICE_S3_ENDPOINT: 'http://127.0.0.1:9', SERVICE_S3_REGION: 'eu-west-3',
      SERVICE_S3_ACCESS_KEY_ID: 'AKIDUIKEY', SERVICE_S3_SECRET_ACCESS_KEY: 'ui-secret-s3-key',
    },
  });
  try {
    const { page } = s;
    await signIn(page, s3.url);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${s3.url}/_/settings/storage`);
    await page.getByRole('heading', { name: 'S3-compatible bucket' }).waitFor();
    const text = (await page.locator('dl.settings-list').textContent()) ?? '';
    for (const want of ['http://127.0.0.1:9', 'eu-west-3', 'svc-files', 'tenant-a', 'path-style', 'access key from the environment']) assert.ok(text.includes(want), `${want} in ${text}`);
    assert.doesNotMatch(await page.content(), /ui-secret-s3-key|AKIDUIKEY/);
  } finally {
    await s3.stop();
  }
});

test('a transport that is down: the Mail page shows the failure and its reason', { skip: NO_BROWSER, timeout: 60_000 }, async () => {
  const down = await startSvc({ env: { SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(await closedPort()), SERVICE_SMTP_TRANSPORT: 'none' } });
  try {
    const { page } = s;
    await signIn(page, down.url);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${down.url}/_/settings/mail`);
    await page.getByLabel('Recipient').fill('reader@example.test');
    await page.getByRole('button', { name: 'Send a test message' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The mail transport did not take the message' });
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /ECONNREFUSED|connect/i);
    s.problems.length = 0; // the 502 answer, logged by Chromium
  } finally {
    await down.stop();
  }
});
