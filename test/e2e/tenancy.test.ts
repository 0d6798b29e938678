/**
 * Tenancy (0-conventions.md "Embedding": `tenancy`; spec 1-core-api.md
 * `@request.account.id`, `.role`, `.ids`): a two-account app whose members see only their active
 * account's records (X-Account-Id), create only where their role allows, and update in any
 * account they belong to; a non-member naming an account, no account, and anonymous callers all
 * fail closed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';

let srv: Svc;
const PW = 'tenant-pass-1';
const ids: Record<string, string> = {};
const tokens: Record<string, string> = {};

const as = (who: string, account?: string) => ({ token: tokens[who], headers: account ? { 'X-Account-Id': account } : {} });

before(async () => {
  srv = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-tenancy.mjs')}`], env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  for (const who of ['ann', 'bob']) {
    const made = await srv.api('POST', '/api/collections/people/records', { body: { email: `${who}@example.com`, password: PW, passwordConfirm: PW } });
    ids[who] = made.body.id;
    tokens[who] = (await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: `${who}@example.com`, password: PW } })).body.token;
  }
  for (const [person, account, role] of [['ann', 'acme', 'editor'], ['ann', 'globex', 'viewer'], ['bob', 'globex', 'editor']]) {
    await srv.api('POST', '/api/collections/memberships/records', { token: srv.suToken, body: { person: ids[person], account, role } });
  }
  for (const [title, account] of [['acme plan', 'acme'], ['globex plan', 'globex']]) {
    const r = await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title, account } });
    ids[title] = r.body.id;
  }
});

after(async () => {
  await srv?.stop();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('members see only the active account\'s records', async () => {
  const acme = await srv.api('GET', '/api/collections/docs/records', as('ann', 'acme'));
  assert.deepEqual(acme.body.items.map((d: any) => d.title), ['acme plan']);
  const globex = await srv.api('GET', '/api/collections/docs/records', as('ann', 'globex'));
  assert.deepEqual(globex.body.items.map((d: any) => d.title), ['globex plan']);
  assert.equal((await srv.api('GET', `/api/collections/docs/records/${ids['globex plan']}`, as('ann', 'acme'))).status, 404);
  assert.equal((await srv.api('GET', `/api/collections/docs/records/${ids['acme plan']}`, as('ann', 'acme'))).status, 200);
  const bobAcme = await srv.api('GET', '/api/collections/docs/records', as('bob', 'acme'));
  assert.equal(bobAcme.body.items.length, 0, 'naming an account one does not belong to gives nothing');
});

test('no account, an unknown account, a malformed one, and anonymous callers fail closed', async () => {
  for (const [label, opts] of [
    ['no header', as('ann')],
    ['unknown account', as('ann', 'initech')],
    ['malformed', as('ann', '" || 1 = 1 || "')],
    ['anonymous', { token: null, headers: { 'X-Account-Id': 'acme' } }],
  ] as const) {
    const r = await srv.api('GET', '/api/collections/docs/records', opts as never);
    assert.equal(r.status, 200, `${label}: ${r.text}`);
    assert.equal(r.body.items.length, 0, label);
  }
});

test('a record with an empty account is no stranger\'s: @request.account.id without an account matches no row', async () => {
  const orphan = await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title: 'orphan', account: '' } });
  assert.equal(orphan.status, 201, orphan.text);
  try {
    for (const [label, opts] of [
      ['signed in, no account', as('ann')],
      ['non-member naming an account', as('bob', 'acme')],
      ['anonymous', { token: null, headers: {} }],
    ] as const) {
      const list = await srv.api('GET', '/api/collections/docs/records', opts as never);
      assert.deepEqual(list.body.items.map((d: any) => d.title), [], `${label}: list`);
      const one = await srv.api('GET', `/api/collections/docs/records/${orphan.body.id}`, opts as never);
      assert.equal(one.status, 404, `${label}: view`);
    }
    // a member with an active account still sees only that account's records
    const acme = await srv.api('GET', '/api/collections/docs/records', as('ann', 'acme'));
    assert.deepEqual(acme.body.items.map((d: any) => d.title), ['acme plan']);
  } finally {
    await srv.api('DELETE', `/api/collections/docs/records/${orphan.body.id}`, { token: srv.suToken });
  }
});

test('create follows the role in the active account; update any account the member belongs to', async () => {
  const ok = await srv.api('POST', '/api/collections/docs/records', { ...as('ann', 'acme'), body: { title: 'acme memo', account: 'acme' } });
  assert.equal(ok.status, 201, ok.text);
  const viewer = await srv.api('POST', '/api/collections/docs/records', { ...as('ann', 'globex'), body: { title: 'nope', account: 'globex' } });
  assert.equal(viewer.status, 403, 'a viewer cannot create');
  const elsewhere = await srv.api('POST', '/api/collections/docs/records', { ...as('ann', 'acme'), body: { title: 'nope', account: 'globex' } });
  assert.equal(elsewhere.status, 403, 'not into another account');
  // @request.account.ids: ann belongs to acme and globex, bob only to globex
  const annUpdate = await srv.api('PATCH', `/api/collections/docs/records/${ids['globex plan']}`, { ...as('ann'), body: { title: 'globex plan v2' } });
  assert.equal(annUpdate.status, 200, annUpdate.text);
  const bobUpdate = await srv.api('PATCH', `/api/collections/docs/records/${ids['acme plan']}`, { ...as('bob'), body: { title: 'hijack' } });
  assert.equal(bobUpdate.status, 404);
  const check = await srv.api('GET', `/api/collections/docs/records/${ids['acme plan']}`, as('ann', 'acme'));
  assert.equal(check.body.title, 'acme plan');
});

test('realtime: an auth frame names the active account; events follow the account rules', async () => {
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  await new Promise((r) => ws.once('open', r));
  const until = async (pred: () => boolean, ms = 5000) => {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  };
  ws.send(JSON.stringify({ action: 'auth', token: tokens.ann, account: 'acme' }));
  await until(() => frames.some((f) => f.type === 'auth'));
  assert.equal(frames.find((f) => f.type === 'auth').status, 'ok');
  ws.send(JSON.stringify({ action: 'subscribe', topic: 'docs' }));
  await until(() => frames.some((f) => f.type === 'ack'));
  await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title: 'globex secret', account: 'globex' } });
  await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title: 'acme news', account: 'acme' } });
  await until(() => frames.some((f) => f.type === 'event'));
  await new Promise((r) => setTimeout(r, 300));
  ws.close();
  const titles = frames.filter((f) => f.type === 'event').map((f) => f.record.title);
  assert.deepEqual(titles, ['acme news'], 'only the active account\'s record arrives');
});

test('the signed account cookie: PUT /api/account checks membership and sets it; it selects the account; forged or foreign cookies select nothing', async () => {
  const docs = async (token: string, cookie: string, account?: string) => {
    const headers: Record<string, string> = { cookie };
    if (account) headers['X-Account-Id'] = account;
    const r = await srv.api('GET', '/api/collections/docs/records', { token, headers });
    assert.equal(r.status, 200, r.text);
    return r.body.items.map((d: any) => d.title);
  };
  assert.equal((await srv.api('PUT', '/api/account', { token: null, body: { id: 'acme' } })).status, 401);
  const notMember = await srv.api('PUT', '/api/account', { token: tokens.bob, body: { id: 'acme' } });
  assert.equal(notMember.status, 403);
  assert.equal(notMember.headers.get('set-cookie'), null, 'no cookie for a non-member');
  assert.equal((await srv.api('PUT', '/api/account', { token: tokens.ann, body: {} })).status, 400);

  const chosen = await srv.api('PUT', '/api/account', { token: tokens.ann, body: { id: 'acme' } });
  assert.equal(chosen.status, 200, chosen.text);
  assert.deepEqual(chosen.body, { id: 'acme', role: 'editor', ids: ['acme', 'globex'] });
  const setCookie = chosen.headers.get('set-cookie') ?? '';
  assert.match(setCookie, /^svc_account=[^;]+; Path=\/; HttpOnly; SameSite=Strict/);
  const cookie = setCookie.split(';')[0];

  const only = (titles: string[], account: string) => titles.length > 0 && titles.every((t) => t.startsWith(`${account} `));
  assert.ok(only(await docs(tokens.ann, cookie), 'acme'), 'the cookie selects the account');
  assert.ok(only(await docs(tokens.ann, cookie, 'globex'), 'globex'), 'X-Account-Id wins over the cookie');
  const view = await srv.api('GET', '/api/account', { token: tokens.ann, headers: { cookie } });
  assert.deepEqual(view.body, { id: 'acme', role: 'editor', ids: ['acme', 'globex'] });

  // the id part changed to another account: the signature no longer matches
  const [, sig] = cookie.slice('svc_account='.length).split('.');
  const forged = `svc_account=${Buffer.from('globex').toString('base64url')}.${sig}`;
  assert.deepEqual(await docs(tokens.ann, forged), [], 'an altered cookie selects nothing');
  // bob belongs to globex only; ann's acme cookie is bound to ann
  assert.deepEqual(await docs(tokens.bob, cookie), [], "another member's cookie selects nothing");
  const bobGlobex = await srv.api('PUT', '/api/account', { token: tokens.bob, body: { id: 'globex' } });
  const bobCookie = (bobGlobex.headers.get('set-cookie') ?? '').split(';')[0];
  assert.ok(only(await docs(tokens.bob, bobCookie), 'globex'));
  assert.deepEqual(await docs(tokens.ann, bobCookie), [], "bob's cookie does not work for ann either");

  const cleared = await srv.api('DELETE', '/api/account', { token: tokens.ann, headers: { cookie } });
  assert.equal(cleared.status, 204);
  assert.match(cleared.headers.get('set-cookie') ?? '', /^svc_account=; Path=\/; Max-Age=0/);
});

test('realtime: a member removed from an account stops receiving its records (WebSocket and SSE) once REST refuses them', async () => {
  const { openSse } = await import('../helpers/devtool.js');
  const made = await srv.api('POST', '/api/collections/people/records', { body: { email: 'cam@example.com', password: PW, passwordConfirm: PW } });
  const cam = (await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'cam@example.com', password: PW } })).body.token;
  const membership = await srv.api('POST', '/api/collections/memberships/records', { token: srv.suToken, body: { person: made.body.id, account: 'acme', role: 'viewer' } });
  // cam over a WebSocket, cam over SSE, and ann (still a member) as the control
  const open = async (token: string) => {
    const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
    const frames: any[] = [];
    ws.on('message', (m) => frames.push(JSON.parse(String(m))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ action: 'auth', token, account: 'acme' }));
    ws.send(JSON.stringify({ action: 'subscribe', topic: 'docs' }));
    await waitUntil(() => frames.some((f) => f.type === 'ack'));
    assert.equal(frames.find((f) => f.type === 'auth').status, 'ok');
    return { ws, titles: () => frames.filter((f) => f.type === 'event').map((f) => f.record.title) };
  };
  const camWs = await open(cam);
  const annWs = await open(tokens.ann);
  const stream = await openSse(`${srv.url}/api/realtime`);
  const { clientId } = JSON.parse((await stream.next('PB_CONNECT')).data);
  const set = await srv.api('POST', '/api/realtime', { token: cam, headers: { 'X-Account-Id': 'acme' }, body: { clientId, subscriptions: ['docs/*'] } });
  assert.equal(set.status, 204, set.text);
  const sseTitles = () => stream.events.filter((e) => e.event === 'docs/*').map((e) => JSON.parse(e.data).record.title);
  try {
    const before = await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title: 'acme before', account: 'acme' } });
    await waitUntil(() => camWs.titles().includes('acme before') && sseTitles().includes('acme before'));
    assert.ok(camWs.titles().includes('acme before') && sseTitles().includes('acme before'), 'a member hears the account');

    // removed: REST refuses at once
    assert.equal((await srv.api('DELETE', `/api/collections/memberships/records/${membership.body.id}`, { token: srv.suToken })).status, 204);
    assert.equal((await srv.api('GET', `/api/collections/docs/records/${before.body.id}`, { token: cam, headers: { 'X-Account-Id': 'acme' } })).status, 404);
    // and realtime once the account context is older than its cache time (5 s)
    await new Promise((r) => setTimeout(r, 5500));
    await srv.api('POST', '/api/collections/docs/records', { token: srv.suToken, body: { title: 'acme after', account: 'acme' } });
    await waitUntil(() => annWs.titles().includes('acme after'));
    assert.ok(annWs.titles().includes('acme after'), 'a member still hears the account');
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!camWs.titles().includes('acme after'), `the removed member hears nothing more (WebSocket): ${camWs.titles()}`);
    assert.ok(!sseTitles().includes('acme after'), `the removed member hears nothing more (SSE): ${sseTitles()}`);
  } finally {
    camWs.ws.close();
    annWs.ws.close();
    stream.close();
  }
});

async function waitUntil(pred: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}
