/**
 * Crashes, stale files and unreachable control servers (3-devtool.md, "Session" states, "Background
 * start rules", "Status degradation", `dev stop`): kill -9 of the session, a stale dev.json, a lock
 * held with no lock file (starting), a stopped (SIGSTOP) session, a control server that resets
 * mid-response, the orphan sweep, a child that dies before readiness and one that never gets ready.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CLI } from '../helpers/server.js';
import { alive, cleanEnv, cleanupSites, devtool, lockInfo, makeSite, spawnDevtool, startBackground, until } from '../helpers/devtool.js';

after(cleanupSites);

/** Whether `<site>/.svc/dev.lock` is held by someone (a non-blocking flock(1) attempt fails). */
const lockBusy = (site: string): boolean => spawnSync('flock', ['-x', '-n', join(site, '.svc', 'dev.lock'), 'true']).status === 1;

/**
 * Holds `<site>/.svc/dev.lock` from another process (flock(1)) until killed; resolves once it is
 * held (flock(1) starts in its own time: a loaded machine may take well over 150 ms).
 */
async function holdLock(site: string): Promise<{ pid: number; release(): void }> {
  mkdirSync(join(site, '.svc'), { recursive: true });
  const p = spawn('flock', ['-x', join(site, '.svc', 'dev.lock'), 'sleep', '60'], { stdio: 'ignore', detached: true });
  const release = () => { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } };
  try {
    await until(() => lockBusy(site), 10_000, 'flock(1) to hold dev.lock');
  } catch (err) {
    release();
    throw err;
  }
  return { pid: p.pid!, release };
}

const fakeInfo = (site: string, over: Record<string, unknown>): Record<string, unknown> => ({
  version: 1, pid: 999_999, svc_pid: 999_998, host: '127.0.0.1', port: 1, url: 'http://127.0.0.1:1/', control_port: 1,
  data_dir: join(site, '.svc'), background: true, started_at: new Date().toISOString(), ...over,
});

test('kill -9 of the session: the lock is free, status says not running, a new session starts cleanly', async () => {
  const site = makeSite();
  const { info } = await startBackground(site);
  process.kill(info.pid, 'SIGKILL');
  await until(() => !alive(info.pid), 3000, 'dev gone');
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(st.code, 1);
  assert.equal(st.stdout, 'No dev server is running.\n');
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')), 'the stale lock file is removed');
  await until(() => !alive(info.svc_pid), 8000, 'the service binary terminates once its session is gone');
  const { info: again } = await startBackground(site);
  assert.notEqual(again.pid, info.pid);
  assert.equal((await fetch(again.url)).status, 200);
  assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
});

test('the service binary dying ends the session (no restart)', async () => {
  const site = makeSite();
  const { info } = await startBackground(site);
  process.kill(info.svc_pid, 'SIGKILL');
  await until(() => !alive(info.pid), 8000, 'dev exits after its service died');
  const st = await devtool(['dev', 'status', '--json'], { cwd: site });
  assert.equal(st.code, 1);
  assert.deepEqual(JSON.parse(st.stdout), { running: false });
  assert.match(readFileSync(join(site, '.svc', 'dev.log'), 'utf8'), /the service binary exited/);
});

test('a stale dev.json (lock free) is treated as absent and removed by every verb', async () => {
  const site = makeSite();
  mkdirSync(join(site, '.svc'), { recursive: true });
  const file = join(site, '.svc', 'dev.json');
  writeFileSync(file, JSON.stringify(fakeInfo(site, { pid: process.pid })));
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(st.code, 1, 'a live pid in a stale lock file does not count: only the lock does');
  assert.equal(st.stdout, 'No dev server is running.\n');
  assert.ok(!existsSync(file));
  writeFileSync(file, JSON.stringify(fakeInfo(site, {})));
  const stop = await devtool(['dev', 'stop'], { cwd: site });
  assert.equal(stop.code, 0);
  assert.ok(!existsSync(file));
  writeFileSync(file, JSON.stringify(fakeInfo(site, {})));
  const { info } = await startBackground(site);
  assert.notEqual(info.pid, 999_999, 'a start replaces the stale file');
  assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
});

test('a held lock without dev.json is a starting session: status, stop and dev exit 1', async () => {
  const site = makeSite();
  const holder = await holdLock(site);
  try {
    const st = await devtool(['dev', 'status'], { cwd: site });
    assert.equal(st.code, 1);
    assert.match(st.stdout, /starting/);
    const sj = await devtool(['dev', 'status', '--json'], { cwd: site });
    assert.deepEqual(JSON.parse(sj.stdout), { running: false, starting: true });
    const stop = await devtool(['dev', 'stop'], { cwd: site });
    assert.equal(stop.code, 1);
    assert.match(stop.stdout, /starting/);
    const fg = await devtool(['dev'], { cwd: site });
    assert.equal(fg.code, 1);
    assert.match(fg.stderr, /starting/);
  } finally {
    holder.release();
  }
  // the kernel drops the lock once the killed holder is gone, in its own time
  await until(() => !lockBusy(site), 10_000, 'dev.lock to be released');
  const after = await devtool(['dev', 'status', '--json'], { cwd: site });
  assert.deepEqual(JSON.parse(after.stdout), { running: false });
});

test('an unreachable control server degrades status to the lock file; stop kills after 5 s', async () => {
  const site = makeSite();
  const { info } = await startBackground(site);
  process.kill(info.pid, 'SIGSTOP');
  try {
    const t0 = Date.now();
    const st = await devtool(['dev', 'status'], { cwd: site });
    const took = Date.now() - t0;
    assert.equal(st.code, 0, 'the session holds its lock: running');
    assert.match(st.stdout, new RegExp(`Dev server running at ${info.url.replace(/\./g, '\\.')} \\(pid ${info.pid}, background\\)`));
    assert.match(st.stdout, /Build: unknown \(control server unreachable\)\n$/);
    assert.ok(took >= 1000 && took < 6000, `one-second read budget (took ${took} ms)`);
    const sj = JSON.parse((await devtool(['dev', 'status', '--json'], { cwd: site })).stdout);
    assert.equal(sj.running, true);
    assert.equal(sj.control_reachable, false);
    assert.equal(sj.build, null);
    assert.equal(sj.pid, info.pid);
    const w = await devtool(['dev', 'wait', '--timeout-ms=1200'], { cwd: site });
    assert.equal(w.code, 1, 'wait times out');
    assert.match(w.stderr, /timed out after 1200 ms/);
    // a stopped process ignores SIGTERM until continued: stop escalates to SIGKILL after 5 s
    const t1 = Date.now();
    const stop = await devtool(['dev', 'stop', '--json'], { cwd: site });
    assert.equal(stop.code, 0, stop.stderr);
    const body = JSON.parse(stop.stdout);
    assert.equal(body.stopped, true);
    assert.equal(body.killed, true);
    assert.ok(Date.now() - t1 >= 5000);
    await until(() => !alive(info.pid), 3000, 'dev killed');
    await until(() => !alive(info.svc_pid), 8000, 'service swept or gone');
    assert.ok(!existsSync(join(site, '.svc', 'dev.json')));
  } finally {
    try { process.kill(info.pid, 'SIGCONT'); } catch { /* gone */ }
  }
});

test('a control server that resets after some bytes is treated as unreachable', async () => {
  const site = makeSite();
  const server = createServer((sock) => {
    sock.once('data', () => {
      sock.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"ok":true,"pid":1,');
      setTimeout(() => sock.resetAndDestroy(), 100);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const holder = await holdLock(site);
  try {
    writeFileSync(join(site, '.svc', 'dev.json'), JSON.stringify(fakeInfo(site, { pid: holder.pid, control_port: (server.address() as AddressInfo).port })));
    const t0 = Date.now();
    const st = await devtool(['dev', 'status'], { cwd: site });
    assert.equal(st.code, 0, st.stderr);
    assert.match(st.stdout, /Build: unknown \(control server unreachable\)/);
    assert.ok(Date.now() - t0 < 5000);
  } finally {
    holder.release();
    server.close();
  }
});

test('stop sweeps a service binary its crashed session left, confirmed by the health route only', async () => {
  const site = makeSite();
  const dataDir = join(site, 'svcdata');
  const svc = spawn(process.execPath, [CLI, 'serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, '--json'], { stdio: ['ignore', 'pipe', 'ignore'], env: cleanEnv() });
  let out = '';
  svc.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  const address = (await until(() => /"address":"([^"]+)"/.exec(out), 20_000, 'svc listening'))[1];
  const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    mkdirSync(join(site, '.svc'), { recursive: true });
    // a live pid whose URL is not the service binary is never touched
    writeFileSync(join(site, '.svc', 'dev.json'), JSON.stringify(fakeInfo(site, { svc_pid: bystander.pid, url: 'http://127.0.0.1:1/' })));
    const none = await devtool(['dev', 'stop', '--json'], { cwd: site });
    assert.equal(none.code, 0);
    assert.equal(JSON.parse(none.stdout).orphan_svc_pid, null);
    assert.ok(alive(bystander.pid!));
    writeFileSync(join(site, '.svc', 'dev.json'), JSON.stringify(fakeInfo(site, { svc_pid: svc.pid, url: `http://${address}/` })));
    const swept = await devtool(['dev', 'stop', '--json'], { cwd: site });
    assert.equal(swept.code, 0, swept.stderr);
    assert.equal(JSON.parse(swept.stdout).orphan_svc_pid, svc.pid);
    await until(() => svc.exitCode !== null || svc.signalCode !== null, 8000, 'orphan stopped');
  } finally {
    bystander.kill('SIGKILL');
    svc.kill('SIGKILL');
  }
});

test('a background child that dies before readiness: log tail, exit 1, nothing published', async () => {
  const site = makeSite();
  const bin = join(site, 'dying-service.mjs');
  writeFileSync(bin, "console.error('fake service: cannot start, port exploded'); process.exit(3);\n");
  const r = await devtool(['dev', '--background'], { cwd: site, env: cleanEnv({ DEVTOOL_SERVICE_BIN: bin }) });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /exited before it was ready/);
  assert.match(r.stderr, /fake service: cannot start, port exploded/, 'the log tail is printed');
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')));
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(st.code, 1);
});

test('no readiness in time: the child process group is terminated, exit 1 with the log tail', async () => {
  const site = makeSite();
  const bin = join(site, 'hanging-service.mjs');
  const pids = join(site, 'pids.json');
  writeFileSync(bin, `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(pids)}, JSON.stringify({ pid: process.pid, ppid: process.ppid }));\nconsole.error('fake service: thinking forever');\nsetInterval(() => {}, 1000);\n`);
  const t0 = Date.now();
  const r = await devtool(['dev', '--background'], { cwd: site, env: cleanEnv({ DEVTOOL_SERVICE_BIN: bin, DEVTOOL_READY_TIMEOUT_MS: '2500' }) });
  assert.equal(r.code, 1);
  assert.ok(Date.now() - t0 >= 2500);
  assert.match(r.stderr, /did not become ready within 3 s/);
  assert.match(r.stderr, /fake service: thinking forever/);
  const { pid, ppid } = JSON.parse(readFileSync(pids, 'utf8'));
  await until(() => !alive(ppid), 5000, 'dev child gone');
  await until(() => !alive(pid), 8000, 'service gone');
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')));
  assert.ok(lockInfo(site) === null);
});

test('a signal while the session starts aborts the start cleanly', async () => {
  const site = makeSite();
  const bin = join(site, 'slow-service.mjs');
  const pids = join(site, 'pids.json');
  writeFileSync(bin, `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(pids)}, JSON.stringify({ pid: process.pid }));\nsetInterval(() => {}, 1000);\n`);
  const fg = spawnDevtool(['dev'], { cwd: site, env: cleanEnv({ DEVTOOL_SERVICE_BIN: bin }) });
  await until(() => existsSync(pids), 10_000, 'service spawned');
  await fg.waitOut(/build 1 ok/);
  fg.proc.kill('SIGTERM');
  assert.equal(await fg.exited, 0);
  assert.match(fg.stdout(), /SIGTERM received while starting; stopping/);
  const { pid } = JSON.parse(readFileSync(pids, 'utf8'));
  await until(() => !alive(pid), 8000, 'the booting service ends with its session');
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')));
  const st = await devtool(['dev', 'status', '--json'], { cwd: site });
  assert.deepEqual(JSON.parse(st.stdout), { running: false });
});
