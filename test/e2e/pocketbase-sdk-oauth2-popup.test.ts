/**
 * PocketBase's popup OAuth2 flow (docs/pocketbase.md, "The popup OAuth2 flow"): the real JS SDK
 * in Chromium calls `authWithOAuth2({provider, urlCallback})`, which subscribes an SSE stream to
 * `@oauth2`, opens the provider (a real OpenID provider, test/helpers/oidc.ts) in a popup with
 * `state=<clientId>` and `redirect_uri=<svc>/api/oauth2-redirect`, and ends signed in. Failure
 * paths: a provider error rejects the SDK's promise; an unknown, used, unsubscribed or WebSocket
 * state delivers nothing and answers the failure page; a redirect reaches only the stream its
 * state names; form_post (POST) delivers as GET does.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { Browser, BrowserContext } from 'playwright-core';
import { startSvc, type Svc } from '../helpers/server.js';
import { startOidc, type TestOidc } from '../helpers/oidc.js';
import { NO_BROWSER, launchBrowser } from '../helpers/browser.js';
import { openSse } from '../helpers/devtool.js';

// the SDK's browser build, beside its package entry (the package exports no path to it)
const SDK_SCRIPT = join(dirname(createRequire(import.meta.url).resolve('pocketbase')), 'pocketbase.iife.js');

let idp: TestOidc;
let srv: Svc;
let browser: Browser | null = null;

/** A port free right now (the provider must know svc's redirect URI before svc starts). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

before(async () => {
  const port = await freePort();
  const redirect = `http://127.0.0.1:${port}/api/oauth2-redirect`;
  idp = await startOidc({ redirectUris: [redirect] });
  idp.accounts.set('ann-sub', { email: 'ann@example.com', email_verified: true, name: 'Ann' });
  srv = await startSvc({ args: [`--http=127.0.0.1:${port}`], env: { NODE_EXTRA_CA_CERTS: idp.caFile, SERVICE_RATE_LIMIT_MAX: '0' } });
  assert.equal(srv.url, `http://127.0.0.1:${port}`);
  await srv.createCollection({
    name: 'users', type: 'auth', fields: [{ name: 'name', type: 'text' }],
    createRule: '@public', viewRule: 'id = @request.auth.id',
    options: { auth: { methods: { oauth2: { enabled: true, providers: [{ name: 'oidc', kind: 'generic', clientId: idp.clientId, clientSecret: idp.clientSecret, discoveryUrl: `${idp.issuer}/.well-known/openid-configuration`, redirectUrls: [redirect] }] } } } },
  });
  if (!NO_BROWSER) browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
  await idp?.close();
});

/** A browser context (trusting the provider's test certificate) with a page on svc's origin holding the SDK as `PocketBase`. */
async function sdkPage(): Promise<{ context: BrowserContext; page: import('playwright-core').Page }> {
  const context = await browser!.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${srv.url}/api/health`);
  await page.addScriptTag({ path: SDK_SCRIPT });
  return { context, page };
}

/** An SSE stream subscribed to `@oauth2` (as the SDK's one-off realtime service is); its client id. */
async function oauth2Stream(subscriptions = ['@oauth2']) {
  const stream = await openSse(`${srv.url}/api/realtime`);
  const { clientId } = JSON.parse((await stream.next('PB_CONNECT')).data) as { clientId: string };
  const r = await srv.api('POST', '/api/realtime', { body: { clientId, subscriptions } });
  assert.equal(r.status, 204, r.text);
  return { stream, clientId };
}

test('authWithOAuth2({provider, urlCallback}) in a popup ends signed in', { skip: NO_BROWSER }, async () => {
  idp.signInAs('ann-sub');
  const { context, page } = await sdkPage();
  try {
    const popup = context.waitForEvent('page');
    const redirects: number[] = [];
    context.on('response', (r) => {
      if (r.url().startsWith(`${srv.url}/api/oauth2-redirect`)) redirects.push(r.status());
    });
    // the page's code as text: tsx would wrap a function's inner closures in a helper the page lacks
    const result = page.evaluate(`(async () => {
      const pb = new PocketBase(${JSON.stringify(srv.url)});
      try {
        const auth = await pb.collection('users').authWithOAuth2({
          provider: 'oidc',
          createData: { name: 'Ann from the popup' },
          urlCallback: (u) => { window.authURL = u; window.open(u, 'oauth2', 'width=600,height=600'); },
        });
        return { ok: true, email: auth.record.email, name: auth.record.name, valid: pb.authStore.isValid, storeId: pb.authStore.record?.id, id: auth.record.id, provider: auth.meta?.provider };
      } catch (err) {
        return { ok: false, status: err.status, message: err.message };
      }
    })()`) as Promise<Record<string, any>>;
    const win = await popup;
    const out = await result;
    assert.equal(out.ok, true, JSON.stringify(out));
    assert.equal(out.email, 'ann@example.com');
    assert.equal(out.name, 'Ann from the popup', 'createData reached the new record');
    assert.equal(out.valid, true);
    assert.equal(out.storeId, out.id);
    assert.equal(out.provider, 'oidc');
    // the SDK sent the provider its stream's id as the state and svc's redirect route
    const authURL = new URL(await page.evaluate('window.authURL') as string);
    assert.match(authURL.searchParams.get('state')!, /^[a-z0-9]{15}$/);
    assert.equal(authURL.searchParams.get('redirect_uri'), `${srv.url}/api/oauth2-redirect`);
    // the success page closed the popup
    if (!win.isClosed()) await win.waitForEvent('close', { timeout: 10_000 });
    assert.deepEqual(redirects, [200], 'the provider sent the popup to svc\'s redirect route once');
    const me = await srv.api('GET', `/api/collections/users/records/${out.id}`, { token: await page.evaluate(`JSON.parse(localStorage.getItem('pocketbase_auth')).token`) as string });
    assert.equal(me.status, 200, me.text);
  } finally {
    await context.close();
  }
});

test('a provider error rejects the SDK\'s promise and answers the failure page', { skip: NO_BROWSER }, async () => {
  const { context, page } = await sdkPage();
  try {
    const out = await page.evaluate(`(async () => {
      const url = ${JSON.stringify(srv.url)};
      const pb = new PocketBase(url);
      let page = null;
      try {
        await pb.collection('users').authWithOAuth2({
          provider: 'oidc',
          // the provider refused: it sends the browser back with \`error\` and the state
          urlCallback: (u) => {
            const state = new URL(u).searchParams.get('state');
            page = fetch(url + '/api/oauth2-redirect?state=' + state + '&error=access_denied').then(async (r) => ({ status: r.status, text: await r.text() }));
          },
        });
        return { ok: true, page: await page };
      } catch (err) {
        // the SDK wraps the Error it threw: its message is the original's
        return { ok: false, message: err.originalError?.message, page: await page, valid: pb.authStore.isValid };
      }
    })()`) as Record<string, any>;
    assert.equal(out.ok, false);
    assert.match(out.message!, /OAuth2 redirect error or missing code: access_denied/);
    assert.equal(out.valid, false);
    assert.equal(out.page.status, 400);
    assert.match(out.page.text, /Sign-in failed/);
  } finally {
    await context.close();
  }
});

test('a redirect reaches only the stream its state names, once; unknown states deliver nothing', async () => {
  const a = await oauth2Stream();
  const b = await oauth2Stream();
  const plain = await oauth2Stream([]);
  const seen: string[] = [];
  try {
    const ok = await fetch(`${srv.url}/api/oauth2-redirect?state=${a.clientId}&code=the-code`);
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get('content-type')!, /^text\/html/);
    assert.equal(ok.headers.get('cache-control'), 'no-store');
    assert.equal(ok.headers.get('referrer-policy'), 'no-referrer');
    assert.match(ok.headers.get('content-security-policy')!, /default-src 'none'; script-src 'sha256-/);
    assert.match(await ok.text(), /window\.close\(\)/);
    const ev = await a.stream.next('@oauth2');
    assert.deepEqual(JSON.parse(ev.data), { state: a.clientId, code: 'the-code' });
    // one message per subscription: a second redirect with the same state finds nobody
    const again = await fetch(`${srv.url}/api/oauth2-redirect?state=${a.clientId}&code=other`);
    assert.equal(again.status, 400);
    assert.match(await again.text(), /Sign-in failed/);
    // unknown, malformed, missing and unsubscribed states: failure page, nothing delivered
    for (const q of ['state=zzzzzzzzzzzzzzz&code=x', 'state=..%2F&code=x', 'code=x', `state=${plain.clientId}&code=x`]) {
      const r = await fetch(`${srv.url}/api/oauth2-redirect?${q}`);
      assert.equal(r.status, 400, q);
    }
    // a WebSocket client's id is no `@oauth2` stream either
    const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
    const wsId = await new Promise<string>((res, rej) => {
      ws.once('message', (m) => res(JSON.parse(String(m)).clientId));
      ws.once('error', rej);
    });
    ws.on('message', (m) => seen.push(String(m)));
    assert.equal((await fetch(`${srv.url}/api/oauth2-redirect?state=${wsId}&code=x`)).status, 400);
    ws.close();
    // b never heard a's code (nor anything): its own redirect is the first event it gets
    const mine = await fetch(`${srv.url}/api/oauth2-redirect?state=${b.clientId}&code=bs-code`);
    assert.equal(mine.status, 200);
    assert.deepEqual(JSON.parse((await b.stream.next('@oauth2')).data), { state: b.clientId, code: 'bs-code' });
    assert.deepEqual(seen, []);
    // resubscribing without `@oauth2` drops it
    const c = await oauth2Stream();
    assert.equal((await srv.api('POST', '/api/realtime', { body: { clientId: c.clientId, subscriptions: [] } })).status, 204);
    assert.equal((await fetch(`${srv.url}/api/oauth2-redirect?state=${c.clientId}&code=x`)).status, 400);
    c.stream.close();
  } finally {
    a.stream.close();
    b.stream.close();
    plain.stream.close();
  }
});

test('form_post: POST /api/oauth2-redirect delivers as GET does', async () => {
  const s = await oauth2Stream();
  try {
    const r = await fetch(`${srv.url}/api/oauth2-redirect`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ state: s.clientId, code: 'posted-code' }).toString(),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse((await s.stream.next('@oauth2')).data), { state: s.clientId, code: 'posted-code' });
    // an error posted by the provider is delivered (the SDK rejects) and answers the failure page
    const t = await oauth2Stream();
    const e = await fetch(`${srv.url}/api/oauth2-redirect`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `state=${t.clientId}&error=access_denied`,
    });
    assert.equal(e.status, 400);
    assert.deepEqual(JSON.parse((await t.stream.next('@oauth2')).data), { state: t.clientId, code: '', error: 'access_denied' });
    t.stream.close();
    // an unreadable body is a failure, delivering nothing
    const bad = await fetch(`${srv.url}/api/oauth2-redirect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    assert.equal(bad.status, 400);
  } finally {
    s.stream.close();
  }
});
