/**
 * How `devtool dev` runs (3-devtool.md, "Authentication" precedence, dev options, URL prefix):
 * foreground sessions, `--host`, `--no-live-reload`, `--ignore-lock`, `--force`, `--ready-path`,
 * agent detection and the two variables, prefixed sites with their staged served root, the logs
 * read cap, and the starter site served in one command.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/server.js';
import {
  alive, cleanEnv, cleanupSites, controlStatus, devtool, lockInfo, makeSite, nextGeneration, openSse, sleep, spawnDevtool, startBackground, STARTER, until, writeSite,
} from '../helpers/devtool.js';

after(cleanupSites);

/** Starts `dev` and reports whether it ran in the foreground (the spawned process is the session). */
async function modeOf(env: Record<string, string>, args: string[] = []): Promise<{ background: boolean; stderr: string; lock: any }> {
  const site = makeSite();
  const proc = spawnDevtool(['dev', ...args], { cwd: site, env: cleanEnv(env) });
  const lock = await until(() => lockInfo(site) ?? (args.includes('--ignore-lock') && /serving http/.test(proc.stdout()) ? { untracked: true } : null), 20_000, 'a session');
  const foreground = lock.untracked || lock.pid === proc.proc.pid;
  if (foreground) {
    proc.proc.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  } else {
    assert.equal(await proc.exited, 0, 'the background parent exits 0');
    assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
  }
  return { background: !foreground, stderr: proc.stderr(), lock };
}

test('a foreground session: --host, --no-live-reload, logs points at the terminal, SIGINT stops it', async () => {
  const site = makeSite();
  const fg = spawnDevtool(['dev', '--host=127.0.0.2', '--no-live-reload'], { cwd: site });
  const url = (await fg.waitOut(/serving (http:\/\/\S+) /))[1];
  const info = lockInfo(site);
  assert.equal(info.pid, fg.proc.pid);
  assert.equal(info.background, false);
  assert.equal(info.host, '127.0.0.2');
  assert.equal(info.url, url);
  assert.match(url, /^http:\/\/127\.0\.0\.2:\d+\/$/);
  const html = await (await fetch(url)).text();
  assert.doesNotMatch(html, /data-devtool-live-reload/, 'no snippet under --no-live-reload');
  const sse = await openSse(`http://127.0.0.2:${info.control_port}/_devtool/reload`);
  await sse.next('ready');
  const g = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/index.md', '# changed in the foreground\n');
  const s = await nextGeneration(info, g);
  assert.equal(s.build.status, 'ok', 'the status endpoint stays on');
  assert.match(await (await fetch(url)).text(), /changed in the foreground/);
  await sleep(200);
  assert.equal(sse.events.filter((e) => e.event === 'reload').length, 0, 'no reload events under --no-live-reload');
  sse.close();
  const logs = await devtool(['dev', 'logs'], { cwd: site });
  assert.equal(logs.code, 1);
  assert.match(logs.stderr, /foreground.*terminal/);
  const events = await devtool(['dev', 'logs', '--json'], { cwd: site });
  assert.equal(events.code, 0, 'build events exist for foreground sessions too');
  assert.ok(events.stdout.trim().split('\n').map((l) => JSON.parse(l)).some((e) => e.generation === s.build.generation && e.status === 'ok'));
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.match(st.stdout, /\(pid \d+, foreground\)/);
  fg.proc.kill('SIGINT');
  assert.equal(await fg.exited, 0);
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')));
  await until(() => !alive(info.svc_pid), 5000, 'service stopped with the session');
});

test('--ignore-lock: an untracked instance beside a tracked one; never with --background or --force', async () => {
  const site = makeSite();
  const { info } = await startBackground(site);
  for (const extra of ['--background', '--force']) {
    const bad = await devtool(['dev', '--ignore-lock', extra], { cwd: site });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--ignore-lock cannot be combined with --background or --force/);
  }
  const untracked = spawnDevtool(['dev', '--ignore-lock'], { cwd: site });
  const url = (await untracked.waitOut(/serving (http:\/\/\S+) /))[1];
  assert.match(untracked.stderr(), /untracked instance/);
  assert.notEqual(url, info.url);
  assert.equal((await fetch(url)).status, 200);
  assert.equal(lockInfo(site).pid, info.pid, 'dev.json still names the tracked session');
  untracked.proc.kill('SIGTERM');
  assert.equal(await untracked.exited, 0);
  assert.equal(lockInfo(site).pid, info.pid);

  const forced = await devtool(['dev', '--background', '--force'], { cwd: site });
  assert.equal(forced.code, 0, forced.stderr);
  const next = lockInfo(site);
  assert.notEqual(next.pid, info.pid, '--force replaced the session');
  await until(() => !alive(info.pid), 5000, 'old session gone');
  const plain = await devtool(['dev'], { cwd: site });
  assert.equal(plain.code, 1, 'a second tracked foreground session is refused');
  assert.match(plain.stderr, /already running/);
  assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
});

test('agent detection and the variables follow the precedence', async () => {
  const claude = await modeOf({ CLAUDECODE: '1' });
  assert.equal(claude.background, true);
  assert.match(claude.stderr, /detected a coding agent \(Claude Code, from CLAUDECODE\).*DEVTOOL_DEV_BACKGROUND=0/);
  assert.equal(claude.lock.background, true);

  const optOut = await modeOf({ CLAUDECODE: '1', DEVTOOL_DEV_BACKGROUND: '0' });
  assert.equal(optOut.background, false, 'the opt-out variable beats detection');
  assert.equal(optOut.lock.background, false);
  assert.doesNotMatch(optOut.stderr, /detected/);

  const forced = await modeOf({ DEVTOOL_DEV_BACKGROUND: '1' });
  assert.equal(forced.background, true);
  assert.doesNotMatch(forced.stderr, /detected/, 'no provider attribution without detection');

  assert.equal((await modeOf({ CURSOR_TRACE_ID: 'abc' })).background, false, 'a trace id alone is an interactive terminal');
  const cursor = await modeOf({ CURSOR_TRACE_ID: 'abc', PAGER: 'head -n 10000 | cat' });
  assert.equal(cursor.background, true);
  assert.match(cursor.stderr, /Cursor/);
  assert.equal((await modeOf({ AGENT: '' })).background, false, 'an empty value never counts');

  const ignore = await modeOf({ CLAUDECODE: '1' }, ['--ignore-lock']);
  assert.equal(ignore.background, false, '--ignore-lock suppresses detection');

  const child = await modeOf({ DEVTOOL_DEV_BACKGROUND_CHILD: '1', CLAUDECODE: '1' }, ['--background']);
  assert.equal(child.background, false, 'the recursion guard forces the foreground');
  assert.equal(child.lock.background, true, 'and marks the lock file as a background session');

  const sub = await devtool(['dev', 'status'], { cwd: makeSite(), env: cleanEnv({ AI_AGENT: 'x' }) });
  assert.equal(sub.code, 1, 'sub-verbs never detect or start anything');
  assert.equal(sub.stdout, 'No dev server is running.\n');
});

test('a prefixed site: staged served root, prefixed URL and links, GET / is 404, --ready-path=/', async () => {
  const site = makeSite({ ...STARTER, 'site.json': '{"title": "Docs", "base": "/docs/"}' });
  const { run, info } = await startBackground(site, ['--ready-path=/']);
  assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/docs\/$/);
  assert.match(run.stdout, /running at http:\/\/127\.0\.0\.1:\d+\/docs\/ /);
  const origin = new URL(info.url).origin;
  const root = await fetch(`${origin}/`);
  assert.equal(root.status, 404, 'no index at the served root');
  const html = await (await fetch(info.url)).text();
  assert.match(html, /<a href="\/docs\/about\/">about<\/a>/);
  assert.match(html, /href="\/docs\/assets\/app.css"/);
  assert.equal(await (await fetch(`${info.url}assets/app.css`)).text(), STARTER['assets/app.css']);
  assert.ok(existsSync(join(site, '.svc', '.served-root', 'docs', 'index.html')));
  assert.ok(!existsSync(join(site, '.svc', 'site', 'docs')), 'the build output has no prefix folder');
  const g = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/about.md', '---\ntitle: About\n---\nrestaged\n');
  await nextGeneration(info, g);
  assert.match(await (await fetch(`${info.url}about/`)).text(), /restaged/, 'the served root is refreshed after a rebuild');
  assert.equal((await devtool(['dev', 'stop'], { cwd: site })).code, 0);
  assert.ok(existsSync(join(site, '.svc', '.served-root', 'docs', 'index.html')), 'the served root is kept for the next session');
});

test('logs past 16 MiB fail and point at the file; --follow and --json share the cap', async () => {
  const site = makeSite();
  mkdirSync(join(site, '.svc'), { recursive: true });
  writeFileSync(join(site, '.svc', 'dev.log'), Buffer.alloc(16 * 1024 * 1024 + 1, 'x'));
  const r = await devtool(['dev', 'logs'], { cwd: site });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /16 MiB read cap; read the file directly/);
  assert.equal(r.stdout, '');
  const f = await devtool(['dev', 'logs', '--follow'], { cwd: site });
  assert.equal(f.code, 1);
  const none = await devtool(['dev', 'logs', '--json'], { cwd: site });
  assert.equal(none.code, 1, 'no events file yet');
  writeFileSync(join(site, '.svc', 'dev.log'), 'short log\n');
  const ok = await devtool(['dev', 'logs', '-f'], { cwd: site });
  assert.equal(ok.code, 0, 'follow with no session prints and ends');
  assert.equal(ok.stdout, 'short log\n');
});

test('the starter site builds and serves in one command, ready quickly', async () => {
  const data = join(makeSite({}), 'data');
  const t0 = Date.now();
  const r = await devtool(['dev', join(ROOT, 'examples', 'site'), '--background', `--data-dir=${data}`]);
  const took = Date.now() - t0;
  assert.equal(r.code, 0, r.stderr);
  const info = JSON.parse(readFileSync(join(data, 'dev.json'), 'utf8'));
  try {
    assert.match(await (await fetch(info.url)).text(), /A site beside your backend/);
    assert.equal((await fetch(`${info.url}guide/`)).status, 200);
    assert.ok(took < 10_000, `ready in ${took} ms`);
  } finally {
    const stop = await devtool(['dev', 'stop', `--data-dir=${data}`], { cwd: join(ROOT, 'examples', 'site') });
    assert.equal(stop.code, 0, stop.stderr);
  }
});
