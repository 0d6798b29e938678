/**
 * Settings, flags and experiments (spec 1-core-api.md "Settings", "Setting", "Feature
 * flag and experiment", `/api/state`; 0-conventions.md `flags`, `experiments`, `stateRoute`, the
 * realtime `__features` signal): superuser-only settings CRUD, the declared registry with its
 * overrides, deterministic bucketing, sticky assignments persisted on first resolve, override
 * checks, the remapped or disabled state route, and the standalone server's empty registry.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import WebSocket from 'ws';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { withDb } from '../helpers/auth-helpers.js';

let srv: Svc;
let bare: Svc;

before(async () => {
  [srv, bare] = await Promise.all([startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-features.mjs')}`] }), startSvc()]);
  await bare.createCollection({ name: 'users', type: 'auth', fields: [], createRule: '@public' });
});

after(async () => {
  for (const s of [srv, bare]) {
    await s?.stop();
    if (s) rmSync(s.dataDir, { recursive: true, force: true });
  }
});

test('settings: superuser only (401 anonymous, 403 users); put, get, list, delete; bad bodies 400', async () => {
  const P = 'secret-pass-1';
  await bare.api('POST', '/api/collections/users/records', { body: { email: 'u@example.com', password: P, passwordConfirm: P } });
  const user = (await bare.api('POST', '/api/collections/users/auth-with-password', { body: { identity: 'u@example.com', password: P } })).body.token;
  for (const [m, path] of [['GET', '/api/settings'], ['GET', '/api/settings/x'], ['PUT', '/api/settings/x'], ['DELETE', '/api/settings/x'], ['GET', '/api/features']] as const) {
    const body = m === 'PUT' ? { value: 'v' } : undefined;
    assert.equal((await bare.api(m, path, { body })).status, 401, `${m} ${path}`);
    assert.equal((await bare.api(m, path, { token: user, body })).status, 403, `${m} ${path}`);
  }
  const su = bare.suToken;
  const put = await bare.api('PUT', '/api/settings/site.name', { token: su, body: { value: 'Acme' } });
  assert.equal(put.status, 200, put.text);
  assert.deepEqual(put.body, { key: 'site.name', value: 'Acme' });
  assert.deepEqual((await bare.api('GET', '/api/settings/site.name', { token: su })).body, { key: 'site.name', value: 'Acme' });
  await bare.api('PUT', '/api/settings/site.name', { token: su, body: { value: 'Acme Inc' } });
  const list = await bare.api('GET', '/api/settings', { token: su });
  assert.equal(list.body.items.length, 1);
  assert.deepEqual(Object.keys(list.body.items[0]), ['key', 'value', 'created', 'updated']);
  assert.equal(list.body.items[0].value, 'Acme Inc');
  for (const body of [{}, { value: 42 }, { value: null }, []]) assert.equal((await bare.api('PUT', '/api/settings/k', { token: su, body })).status, 400, JSON.stringify(body));
  assert.equal((await bare.api('PUT', '/api/settings/k', { token: su, raw: '{"value":', headers: { 'content-type': 'application/json' } })).status, 400);
  assert.equal((await bare.api('DELETE', '/api/settings/site.name', { token: su })).status, 204);
  assert.equal((await bare.api('DELETE', '/api/settings/site.name', { token: su })).status, 404);
  assert.equal((await bare.api('GET', '/api/settings/site.name', { token: su })).status, 404);
});

test('the standalone server declares nothing: empty registry, empty state maps at /api/state', async () => {
  assert.deepEqual((await bare.api('GET', '/api/features', { token: bare.suToken })).body, { flags: [], experiments: [] });
  assert.deepEqual((await bare.api('GET', '/api/state?subject=x')).body, { flags: {}, experiments: {} });
  assert.equal((await bare.api('GET', '/api/meta')).body.endpoints.state, '/api/state');
});

test('the registry with overrides; flags resolve override over default; the app reads them too', async () => {
  const su = srv.suToken;
  const f = await srv.api('GET', '/api/features', { token: su });
  assert.deepEqual(f.body.flags, [
    { name: 'new-checkout', default: false, description: 'The new checkout flow', override: null },
    { name: 'dark-mode', default: true, description: '', override: null },
  ]);
  assert.deepEqual(f.body.experiments[0], { name: 'pricing', variants: ['a', 'b'], weights: [50, 50], sticky: false, description: 'Price page layout', weight_override: null });
  assert.equal(f.body.experiments[1].sticky, true);

  assert.equal((await srv.api('GET', '/api/state')).status, 404, 'remapped away from /api/state');
  assert.equal((await srv.api('GET', '/api/meta')).body.endpoints.state, '/api/flags-state');
  let s = await srv.api('GET', '/api/flags-state?subject=ann');
  assert.equal(s.body.flags['new-checkout'], false);
  assert.equal(s.body.flags['dark-mode'], true);

  assert.equal((await srv.api('PUT', '/api/settings/flag:new-checkout', { token: su, body: { value: 'maybe' } })).status, 400, 'a flag override is true or false');
  assert.equal((await srv.api('PUT', '/api/settings/flag:new-checkout', { token: su, body: { value: 'true' } })).status, 200);
  s = await srv.api('GET', '/api/flags-state?subject=ann');
  assert.equal(s.body.flags['new-checkout'], true);
  assert.equal((await srv.api('GET', '/api/features', { token: su })).body.flags[0].override, 'true');
  await srv.api('PUT', '/api/settings/greeting', { token: su, body: { value: 'hi' } });
  const viaApp = await srv.api('GET', '/api/checkout?subject=ann');
  assert.equal(viaApp.body.newCheckout, true);
  assert.equal(viaApp.body.greeting, 'hi');
  await srv.api('DELETE', '/api/settings/flag:new-checkout', { token: su });
  assert.equal((await srv.api('GET', '/api/flags-state')).body.flags['new-checkout'], false, 'back to the default');
});

test('experiments: deterministic per subject, split by weight, weight overrides checked and applied', async () => {
  const su = srv.suToken;
  const seen = new Map<string, string>();
  let a = 0;
  for (let i = 0; i < 400; i++) {
    const v = (await srv.api('GET', `/api/flags-state?subject=user-${i}`)).body.experiments.pricing;
    seen.set(`user-${i}`, v);
    if (v === 'a') a++;
  }
  assert.ok(a > 140 && a < 260, `50/50 split: ${a} of 400 got a`);
  for (const [subject, v] of [...seen].slice(0, 20)) assert.equal((await srv.api('GET', `/api/flags-state?subject=${subject}`)).body.experiments.pricing, v, 'stable');
  const anon1 = (await srv.api('GET', '/api/flags-state')).body.experiments.pricing;
  assert.equal((await srv.api('GET', '/api/flags-state?subject=')).body.experiments.pricing, anon1, 'the anonymous assignment is stable');

  for (const bad of ['[1]', '[0,0]', '[-1,2]', 'x', '[1.5,1]']) {
    assert.equal((await srv.api('PUT', '/api/settings/exp:pricing:weights', { token: su, body: { value: bad } })).status, 400, bad);
  }
  assert.equal((await srv.api('PUT', '/api/settings/exp:pricing:weights', { token: su, body: { value: '[0,1]' } })).status, 200);
  for (let i = 0; i < 30; i++) assert.equal((await srv.api('GET', `/api/flags-state?subject=user-${i}`)).body.experiments.pricing, 'b');
  assert.equal((await srv.api('GET', '/api/features', { token: su })).body.experiments[0].weight_override, '[0,1]');
  await srv.api('DELETE', '/api/settings/exp:pricing:weights', { token: su });
});

test('sticky experiments keep the first variant, persisted on first resolve, whatever the weights become', async () => {
  const su = srv.suToken;
  const first = new Map<string, string>();
  for (let i = 0; i < 20; i++) first.set(`s-${i}`, (await srv.api('GET', `/api/flags-state?subject=s-${i}`)).body.experiments.onboarding);
  assert.ok(new Set(first.values()).size === 2, 'both variants handed out');
  await srv.api('PUT', '/api/settings/exp:onboarding:weights', { token: su, body: { value: '[1,0]' } });
  for (const [subject, v] of first) assert.equal((await srv.api('GET', `/api/flags-state?subject=${subject}`)).body.experiments.onboarding, v, 'sticky');
  assert.equal((await srv.api('GET', '/api/flags-state?subject=newcomer')).body.experiments.onboarding, 'short', 'a new subject gets the new weights');
  assert.equal((await srv.api('GET', '/api/checkout?subject=s-3')).body.onboarding, first.get('s-3'), 'the app resolves the same');
  withDb(srv.dataDir, (db) => {
    const rows = db.prepare('SELECT "subject", "variant" FROM "_assignments" WHERE "experiment" = ? AND ("subject" LIKE \'s-%\' OR "subject" = \'newcomer\')').raw(true).all('onboarding') as string[][];
    assert.equal(rows.length, 21, 'one row per subject that resolved');
    assert.equal(rows.find((r) => r[0] === 's-3')?.[1], first.get('s-3'));
  });
});

test('an override change sends the realtime __features signal', async () => {
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/api/realtime`);
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  await new Promise((r) => ws.once('open', r));
  const deadline = Date.now() + 5000;
  while (!frames.some((f) => f.type === 'connect') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await srv.api('PUT', '/api/settings/plain-setting', { token: srv.suToken, body: { value: 'x' } });
  await srv.api('PUT', '/api/settings/flag:dark-mode', { token: srv.suToken, body: { value: 'false' } });
  while (!frames.some((f) => f.type === 'signal') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  ws.close();
  assert.deepEqual(frames.filter((f) => f.type === 'signal'), [{ type: 'signal', topic: '__features' }], 'one signal: the plain setting sent none');
});

test('stateRoute false: no state route, endpoints.state null', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-nostate-'));
  try {
    const { defineApp } = await import('svc');
    const running = await defineApp({ stateRoute: false, flags: [{ name: 'x', default: true }] }).start({ http: '127.0.0.1:0', dataDir: dir });
    try {
      assert.equal((await fetch(`${running.url}/api/state`)).status, 404);
      assert.equal((await (await fetch(`${running.url}/api/meta`)).json()).endpoints.state, null);
    } finally {
      await running.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('settings and a flag override an app migration wrote are read at once by the server that applied it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-migrated-settings-'));
  try {
    const { defineApp } = await import('svc');
    const at = '2026-01-01 00:00:00.000Z';
    const running = await defineApp({
      flags: [{ name: 'beta', default: false }],
      migrations: [{ id: '0001_settings', up(tx: { exec(sql: string, params?: unknown[]): unknown }) {
        tx.exec('INSERT INTO "_settings" ("key","value","created","updated") VALUES (?,?,?,?), (?,?,?,?)', ['from-migration', 'yes', at, at, 'flag:beta', 'true', at, at]);
      } }],
    } as never).start({ http: '127.0.0.1:0', dataDir: dir });
    try {
      assert.deepEqual(await (await fetch(`${running.url}/api/state`)).json(), { flags: { beta: true }, experiments: {} });
    } finally {
      await running.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
