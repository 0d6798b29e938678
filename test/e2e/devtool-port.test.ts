/**
 * `devtool dev --port N --host H` (docs/devtool.md, "Where it listens"): the site is served on
 * that host and port (the lock file and the printed URL say so; the control port stays a free
 * one), a taken port is a clear error with exit 1 in the foreground and the background, and a
 * port that is not a number is a usage error.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { cleanupSites, devtool, lockInfo, makeSite, startBackground } from '../helpers/devtool.js';

/** A port free right now on `host` (listen on 0, close). */
async function freePort(host = '127.0.0.1'): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Holds a port on `host` until closed. */
async function holdPort(host = '127.0.0.1'): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  return { port: (server.address() as { port: number }).port, server };
}

after(cleanupSites);

test('--port and --host choose where the site listens; the lock file and the URL follow', async () => {
  const site = makeSite();
  const port = await freePort('127.0.0.2');
  const { run, info } = await startBackground(site, [`--port=${port}`, '--host=127.0.0.2']);
  assert.equal(info.host, '127.0.0.2');
  assert.equal(info.port, port);
  assert.equal(info.url, `http://127.0.0.2:${port}/`);
  assert.notEqual(info.control_port, port);
  assert.match(run.stdout, new RegExp(`^Dev server running at http://127\\.0\\.0\\.2:${port}/ \\(pid \\d+\\)$`, 'm'));
  const page = await fetch(info.url);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Welcome/);
  const status = await (await fetch(`http://127.0.0.2:${info.control_port}/_devtool/status`)).json();
  assert.equal(status.url, info.url);
  // --json keeps its shape, with the chosen port
  const again = await devtool(['dev', '--background', `--port=${port}`, '--host=127.0.0.2', '--json'], { cwd: site });
  assert.equal(again.code, 0, again.stderr);
  const j = JSON.parse(again.stdout);
  assert.equal(j.already_running, true);
  assert.equal(j.port, port);
  assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
});

test('a port in use: a clear error and exit 1, in the foreground and the background', async () => {
  const held = await holdPort();
  try {
    const site = makeSite();
    const message = `devtool: port ${held.port} on 127.0.0.1 is already in use; choose another with --port (or leave --port out for a free one)`;
    const fg = await devtool(['dev', `--port=${held.port}`], { cwd: site });
    assert.equal(fg.code, 1, fg.stdout + fg.stderr);
    assert.ok(fg.stderr.includes(message), fg.stderr);
    assert.equal(lockInfo(site), null, 'no lock file');
    const bg = await devtool(['dev', '--background', `--port=${held.port}`], { cwd: site });
    assert.equal(bg.code, 1, bg.stdout + bg.stderr);
    assert.match(bg.stderr, /the dev server exited before it was ready \(1\)/);
    assert.ok(bg.stderr.includes(message), bg.stderr);
    assert.equal(lockInfo(site), null);
  } finally {
    held.server.close();
  }
});

test('--port must be an integer from 0 to 65535', async () => {
  const site = makeSite();
  for (const bad of ['abc', '-1', '65536', '80.5']) {
    const r = await devtool(['dev', `--port=${bad}`, '--json'], { cwd: site });
    assert.equal(r.code, 1, bad);
    assert.deepEqual(JSON.parse(r.stdout), { error: { code: 'usage', message: '--port must be an integer from 0 to 65535 (0: a free one)' } });
  }
});
