/**
 * Record events fire on every write path, not only on REST (docs/framework.md, "Hooks";
 * src/records/lifecycle.ts): a first OAuth2 sign-in (against a real OpenID provider) runs the
 * auth collection's beforeCreate and afterCreate, and `svc import --app` runs them for every row
 * (a refusing beforeCreate refuses that row). The auth-success handler fires with its method tag
 * for magic links and one-time codes (mail through a real SMTP server), OAuth2 and passkeys (a
 * real browser's virtual authenticator). Fixture: test/fixtures/app-events.mjs.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ROOT, runCli, startSvc, type Svc } from '../helpers/server.js';
import { oauthDance, startOidc, type TestOidc } from '../helpers/oidc.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { MAIL_TOKEN_RE } from '../helpers/auth-helpers.js';
import { NO_BROWSER, createInPage, getInPage, launchBrowser, pageWithAuthenticator } from '../helpers/browser.js';
import { waitFor } from '../helpers/wait.js';

const APP = join(ROOT, 'test', 'fixtures', 'app-events.mjs');
const PW = 'events-pass-1';
let idp: TestOidc;
let smtp: TestSmtp;
let srv: Svc;
let origin: string;
// this test's own directory: a server's stop() keeps it (the import test stops and restarts)
const dataDir = mkdtempSync(join(tmpdir(), 'svc-events-data-'));

const audit = async (): Promise<Array<{ action: string; target: string }>> => {
  const r = await srv.api('GET', '/api/collections/audit/records?perPage=500&sort=created', { token: srv.suToken });
  return r.body.items.map((i: any) => ({ action: i.action, target: i.target }));
};
const audited = (action: string, target: string) => waitFor(async () => (await audit()).some((a) => a.action === action && a.target === target), { timeoutMs: 10_000, what: `${action} of ${target} in the audit` });

async function signup(email: string): Promise<string> {
  const r = await srv.api('POST', '/api/collections/people/records', { token: srv.suToken, body: { email, password: PW, passwordConfirm: PW } });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

/** The text of the next mail to `addr` after the `count` it had. */
async function nextMail(addr: string, count: number): Promise<string> {
  const mine = () => smtp.messages.filter((m) => m.to.includes(addr));
  await waitFor(() => mine().length > count, { timeoutMs: 10_000, what: `a mail to ${addr}` });
  return mine()[count].raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
}

before(async () => {
  [idp, smtp] = await Promise.all([startOidc(), startSmtp()]);
  idp.accounts.set('olive-sub', { email: 'olive@example.com', email_verified: true, name: 'Olive' });
  srv = await startSvc({
    dataDir,
    args: [`--app=${APP}`],
    env: { NODE_EXTRA_CA_CERTS: idp.caFile, SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'accounts@svc.test', SERVICE_RATE_LIMIT_MAX: '0' },
  });
  // WebAuthn needs a secure context and a domain RP id: http://localhost is both
  origin = srv.url.replace('127.0.0.1', 'localhost');
  await srv.createCollection({ name: 'audit', type: 'base', fields: [{ name: 'action', type: 'text' }, { name: 'target', type: 'text' }] });
  await srv.createCollection({ name: 'posts', type: 'base', fields: [{ name: 'title', type: 'text' }, { name: 'slug', type: 'text' }] });
  await srv.createCollection({
    name: 'people', type: 'auth', fields: [{ name: 'name', type: 'text' }], createRule: '@public', viewRule: 'id = @request.auth.id',
    options: { auth: { methods: {
      oauth2: { enabled: true, providers: [{ name: 'idp', kind: 'generic', clientId: idp.clientId, clientSecret: idp.clientSecret, discoveryUrl: `${idp.issuer}/.well-known/openid-configuration`, redirectUrls: [idp.redirectUris[0]] }] },
      magic_link: { enabled: true },
      otp: { enabled: true },
      webauthn: { enabled: true, rpId: 'localhost', rpName: 'svc test', origins: [origin] },
    } } },
  });
});

after(async () => {
  await srv?.stop();
  await idp?.close();
  await smtp?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a first OAuth2 sign-in runs the auth collection\'s record events and the auth-success handler', async () => {
  const d = await oauthDance(srv, idp, 'olive-sub');
  const r = await srv.api('POST', '/api/collections/people/auth/oauth2/complete', {
    body: { provider: 'idp', code: d.code, codeVerifier: d.codeVerifier, redirectUrl: idp.redirectUris[0], state: d.state },
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.meta.isNew, true);
  assert.equal(r.body.record.name, 'hooked Olive', 'beforeCreate changed the record the sign-up stores');
  await audited('create:people', r.body.record.id);
  await audited('auth:oauth2', r.body.record.id);
});

test('the auth-success handler fires for magic links and one-time codes with their method tags', async () => {
  const id = await signup('mail-methods@example.com');
  let n = smtp.messages.filter((m) => m.to.includes('mail-methods@example.com')).length;
  assert.equal((await srv.api('POST', '/api/collections/people/auth/magic_link/initiate', { body: { identity: 'mail-methods@example.com' } })).status, 204);
  const token = MAIL_TOKEN_RE.exec(await nextMail('mail-methods@example.com', n++))![0];
  const magic = await srv.api('POST', '/api/collections/people/auth/magic_link/complete', { body: { token } });
  assert.equal(magic.status, 200, magic.text);
  await audited('auth:magic_link', id);

  assert.equal((await srv.api('POST', '/api/collections/people/auth/otp/initiate', { body: { identity: 'mail-methods@example.com' } })).status, 204);
  const code = /sign-in code is (\d{6})/.exec(await nextMail('mail-methods@example.com', n++));
  assert.ok(code, 'the mail carries a code');
  const otp = await srv.api('POST', '/api/collections/people/auth/otp/complete', { body: { identity: 'mail-methods@example.com', code: code[1] } });
  assert.equal(otp.status, 200, otp.text);
  await audited('auth:otp', id);
});

test('the auth-success handler fires for a passkey sign-in', { skip: NO_BROWSER }, async () => {
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const { page } = await pageWithAuthenticator(browser) as { page: Page };
    await page.goto(`${origin}/api/health`);
    const id = await signup('passkey-events@example.com');
    const login = await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'passkey-events@example.com', password: PW } });
    const begin = await srv.api('POST', '/api/collections/people/auth/webauthn/register/begin', { token: login.body.token, body: {} });
    assert.equal(begin.status, 200, begin.text);
    const finish = await srv.api('POST', '/api/collections/people/auth/webauthn/register/finish', { token: login.body.token, body: { ceremonyId: begin.body.ceremonyId, ...(await createInPage(page, begin.body)) } });
    assert.equal(finish.status, 200, finish.text);
    const init = await srv.api('POST', '/api/collections/people/auth/webauthn/initiate', { body: {} });
    assert.equal(init.status, 200, init.text);
    const signed = await srv.api('POST', '/api/collections/people/auth/webauthn/complete', { body: { ceremonyId: init.body.ceremonyId, ...(await getInPage(page, init.body)) } });
    assert.equal(signed.status, 200, signed.text);
    assert.equal(signed.body.record.id, id);
    await audited('auth:webauthn', id);
  } finally {
    await browser?.close();
  }
});

test('svc import --app runs the record events for every row: beforeCreate changes or refuses it, afterCreate sees the commit; --upsert runs the update events', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-events-'));
  try {
    const file = join(dir, 'posts.ndjson');
    writeFileSync(file, ['{"title":"Imported One"}', '{"title":"forbidden"}', '{"title":"Imported Two"}'].join('\n'));
    await srv.stop(); // the import holds the data directory alone
    const out = runCli(['import', `--data-dir=${dataDir}`, `--app=${APP}`, '--collection=posts', '--on-error=skip', '--json', file]);
    assert.equal(out.status, 3, `one row refused: exit 3\n${out.stdout}\n${out.stderr}`);
    const summary = JSON.parse(out.stdout);
    assert.equal(summary.imported, 2);
    assert.equal(summary.errors.length, 1);
    assert.match(summary.errors[0].message, /No forbidden posts/);
    // and without the app nothing runs: the row is stored as given
    writeFileSync(file, '{"title":"Plain Row"}');
    assert.equal(runCli(['import', `--data-dir=${dataDir}`, '--collection=posts', '--json', file]).status, 0);
    // --upsert: a row whose id exists is updated through the writer, so the update events run
    writeFileSync(file, '{"id":"upsertedpost001","title":"Upsert Me"}');
    assert.equal(runCli(['import', `--data-dir=${dataDir}`, `--app=${APP}`, '--collection=posts', '--json', file]).status, 0);
    writeFileSync(file, '{"id":"upsertedpost001","title":"Upserted"}');
    const up = runCli(['import', `--data-dir=${dataDir}`, `--app=${APP}`, '--collection=posts', '--upsert', '--json', file]);
    assert.equal(up.status, 0, up.stderr);
    assert.deepEqual([JSON.parse(up.stdout).imported, JSON.parse(up.stdout).updated], [1, 1]);

    srv = await startSvc({ args: [`--app=${APP}`], dataDir, env: { NODE_EXTRA_CA_CERTS: idp.caFile } });
    const posts = (await srv.api('GET', '/api/collections/posts/records?perPage=50&sort=created', { token: srv.suToken })).body.items;
    const bySlug = Object.fromEntries(posts.map((p: any) => [p.title, p.slug]));
    assert.deepEqual(bySlug, { 'Imported One': 'imported-one', 'Imported Two': 'imported-two', 'Plain Row': null, Upserted: 'upsert-me' });
    for (const p of posts.filter((x: any) => x.title.startsWith('Imported'))) await audited('create:posts', p.id);
    await audited('update:posts', 'upsertedpost001');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
