/**
 * E2E: process lifecycle (spec 1-core-api.md "Command line": serve --ignore-lock, the process lock;
 * 0-conventions.md "Serving defaults": the no-superuser hint; graceful shutdown without losing an
 * acknowledged write).
 *
 * Server A holds a data directory for the lock scenarios. Server B starts with no superuser, gets
 * one from the CLI while running, takes a burst of writes, is SIGTERMed mid-burst and restarted on
 * the same directory to prove every acknowledged write survived and the lock was released.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { spawnSvc, runCliAsync, oneJsonObject, jsonRecordsSince } from '../helpers/proc.js';

const dirA = mkdtempSync(join(tmpdir(), 'svc-test-lockA-'));
const dirB = mkdtempSync(join(tmpdir(), 'svc-test-shutB-'));
const OPS_EMAIL = 'ops@lifecycle.local';
const OPS_PASSWORD = 'lifecycle-pass-1';

let A: Svc;
let B: Svc;
let B2: Svc | undefined;
let opsToken = '';

/** A `serve` on `dir` that is expected to exit on its own; resolves with its outcome. */
async function serveExpectingExit(dir: string, extra: string[] = []) {
  const p = spawnSvc(['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, '--insecure-cookies', ...extra], { SERVICE_LOG_FORMAT: 'json' });
  const timer = setTimeout(() => p.proc.kill('SIGKILL'), 20_000);
  const ex = await p.exited;
  clearTimeout(timer);
  return { ...ex, stdout: p.stdout(), stderr: p.stderr() };
}

before(async () => {
  [A, B] = await Promise.all([startSvc({ dataDir: dirA }), startSvc({ dataDir: dirB, superuser: false })]);
});

after(async () => {
  await Promise.all([A?.stop(), B?.stop(), B2?.stop()]);
  rmSync(dirA, { recursive: true, force: true });
  rmSync(dirB, { recursive: true, force: true });
});

test('a second serve on a data directory in use exits 1 with a message about the lock / other process', async () => {
  const [plain, json] = await Promise.all([serveExpectingExit(dirA), serveExpectingExit(dirA, ['--json'])]);
  for (const [label, r] of [['text', plain], ['--json', json]] as const) {
    assert.equal(r.code, 1, `${label}: exit code (stderr: ${r.stderr})`);
    assert.match(r.stderr, /lock|another (svc )?process|in use/i, `${label}: clear message: ${r.stderr}`);
    assert.ok(!/serving on/.test(r.stderr), `${label}: never served`);
  }
  assert.equal(plain.stdout, '', 'without --json nothing on stdout');
  assert.deepEqual(Object.keys(oneJsonObject(json.stdout)), ['error'], '--json: one {error} object on stdout');

  const h = await A.api('GET', '/api/health');
  assert.equal(h.status, 200, 'the first server is unaffected');
  const c = await A.api('GET', '/api/collections', { token: A.suToken });
  assert.equal(c.status, 200);
});

test('--ignore-lock gets past the lock and serves the same data; stopping it leaves the holder\'s lock intact', async () => {
  await A.createCollection({ name: 'shared', type: 'base', fields: [{ name: 't', type: 'text' }], listRule: '@public', createRule: '@public' });
  const made = await A.api('POST', '/api/collections/shared/records', { body: { t: 'from A' } });
  assert.equal(made.status, 201, made.text);

  const p = spawnSvc(['serve', '--http=127.0.0.1:0', `--data-dir=${dirA}`, '--insecure-cookies', '--ignore-lock'], { SERVICE_LOG_FORMAT: 'json' });
  try {
    const m = await p.waitForStderr(/serving on (http:\/\/[^\s"]+)/);
    const url = m[1];
    const h = await fetch(`${url}/api/health`);
    assert.equal(h.status, 200);
    const l = await fetch(`${url}/api/collections/shared/records/${made.body.id}`, { headers: { authorization: `Bearer ${A.suToken}` } });
    assert.equal(l.status, 200, 'same database and token secret: A\'s record and A\'s token work');
    assert.equal((await l.json()).t, 'from A');
  } finally {
    const ex = await p.stop('SIGINT');
    assert.equal(ex.code, 0, `SIGINT stops the --ignore-lock server cleanly: ${p.stderr()}`);
  }
  const again = await serveExpectingExit(dirA);
  assert.equal(again.code, 1, 'A still holds the lock after the --ignore-lock server stopped');
  assert.match(again.stderr, /lock|another (svc )?process|in use/i);
});

test('a server with a superuser does not print the "create a superuser" hint', () => {
  assert.ok(!/superuser create/.test(A.stderr()), A.stderr());
});

test('a server started with no superuser logs one line telling how to create one; a CLI-created superuser works at once', async () => {
  const hints = jsonRecordsSince(B.stderr(), 0).filter((r) => /superuser create/.test(r.msg));
  assert.equal(hints.length, 1, `one hint line: ${B.stderr()}`);
  assert.ok(['info', 'warn'].includes(hints[0].level));

  const r = await runCliAsync(['superuser', 'create', `--email=${OPS_EMAIL}`, `--password=${OPS_PASSWORD}`, `--data-dir=${dirB}`, '--json']);
  assert.equal(r.status, 0, `superuser create while the server runs: ${r.stderr}`);
  assert.equal(oneJsonObject(r.stdout).created, true);
  const login = await B.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: OPS_EMAIL, password: OPS_PASSWORD } });
  assert.equal(login.status, 200, login.text);
  opsToken = login.body.token;
});

test('graceful shutdown: SIGTERM during ~300 concurrent creates exits 0, loses no acknowledged write and releases the lock', async (t) => {
  assert.ok(opsToken, 'superuser from the previous test');
  const col = await B.api('POST', '/api/collections', {
    token: opsToken,
    body: { name: 'ledger', type: 'base', fields: [{ name: 'n', type: 'number' }, { name: 'note', type: 'text' }], createRule: '@public' },
  });
  assert.equal(col.status, 201, col.text);

  const N = 300;
  const acked: string[] = [];
  const statuses = new Map<number | string, number>();
  let settled = 0;
  let signalled = false;
  let inFlightAtSignal = -1;
  const exit = new Promise<number | null>((resolve) => B.proc.once('exit', (code) => resolve(code)));
  const sigterm = () => {
    if (signalled) return;
    signalled = true;
    inFlightAtSignal = N - settled;
    B.proc.kill('SIGTERM');
  };
  const posts = Array.from({ length: N }, (_, i) => (async () => {
    try {
      const res = await fetch(`${B.url}/api/collections/ledger/records`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i, note: `write ${i}` }),
      });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 201) {
        const body = JSON.parse(text);
        assert.equal(body.n, i, 'the acknowledged record is the one sent');
        acked.push(body.id);
      }
    } catch {
      statuses.set('network error', (statuses.get('network error') ?? 0) + 1);
    } finally {
      settled++;
      if (acked.length >= 10) sigterm();
    }
  })());
  const safety = setTimeout(sigterm, 5000);
  await Promise.all(posts);
  clearTimeout(safety);
  const code = await exit;
  t.diagnostic(`acked ${acked.length}/${N}; in flight at SIGTERM ${inFlightAtSignal}; outcomes ${JSON.stringify([...statuses])}`);
  assert.ok(inFlightAtSignal > 0, `test precondition: requests were in flight at SIGTERM (statuses ${JSON.stringify([...statuses])})`);
  assert.equal(code, 0, `exit code after SIGTERM: ${B.stderr().slice(-2000)}`);
  assert.ok(acked.length >= 10, 'some writes were acknowledged');
  for (const k of statuses.keys()) assert.ok(k === 201 || k === 'network error' || (typeof k === 'number' && k >= 500 && k !== 500), `no 500 during shutdown: ${JSON.stringify([...statuses])}`);

  // The lock was released: a new serve on the same directory starts.
  B2 = await startSvc({ dataDir: dirB, superuser: false });
  const login = await B2.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity: OPS_EMAIL, password: OPS_PASSWORD } });
  assert.equal(login.status, 200, login.text);
  const list = await B2.api('GET', '/api/collections/ledger/records?perPage=500', { token: login.body.token });
  assert.equal(list.status, 200, list.text);
  const stored = new Set<string>(list.body.items.map((r: any) => r.id));
  const lost = acked.filter((id) => !stored.has(id));
  assert.deepEqual(lost, [], `acknowledged writes lost after restart (${acked.length} acked, ${stored.size} stored)`);
  assert.ok(stored.size <= N);
  assert.equal(list.body.totalItems, stored.size);
  for (const r of list.body.items) assert.equal(r.note, `write ${r.n}`, 'stored rows are intact');
});
