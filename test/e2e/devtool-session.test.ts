/**
 * A background dev session end to end (3-devtool.md): the four printed lines, the lock file, the
 * status endpoint, rebuilds on every kind of source edit, failures, generation counting, the
 * reload stream read by a real SSE client, `wait`, `logs`, `stop`, build events and pending.
 * Real processes, real file edits; nothing mocked.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  alive, cleanupSites, controlStatus, devtool, lockInfo, makeSite, nextGeneration, openSse, sleep, spawnDevtool, startBackground, STARTER, until, writeSite,
} from '../helpers/devtool.js';

let site: string;
let info: any;
let firstRun: { stdout: string; stderr: string };
let control: string;

before(async () => {
  site = makeSite();
  const started = Date.now();
  const r = await startBackground(site);
  firstRun = r.run;
  info = r.info;
  control = `http://${info.host}:${info.control_port}`;
  assert.ok(Date.now() - started < 15_000);
});
after(cleanupSites);

const page = async (path = ''): Promise<string> => (await fetch(info.url + path)).text();
const events = (): any[] => readFileSync(join(site, '.svc', 'dev.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));

test('dev --background prints the four lines and publishes dev.json after readiness', async () => {
  const lines = firstRun.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 4, firstRun.stdout);
  assert.match(lines[0], new RegExp(`^Dev server running at http://127\\.0\\.0\\.1:\\d+/ \\(pid ${info.pid}\\)$`));
  assert.equal(lines[1], `Control: ${control}/_devtool/status`);
  assert.equal(lines[2], `Log: ${join(site, '.svc', 'dev.log')}`);
  assert.match(lines[3], /^Manage: devtool dev status/);
  assert.deepEqual(Object.keys(info), ['version', 'pid', 'svc_pid', 'host', 'port', 'url', 'control_port', 'data_dir', 'background', 'started_at']);
  assert.equal(info.version, 1);
  assert.equal(info.host, '127.0.0.1');
  assert.equal(info.url, `http://127.0.0.1:${info.port}/`);
  assert.equal(info.data_dir, join(site, '.svc'));
  assert.equal(info.background, true);
  assert.match(info.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(alive(info.pid) && alive(info.svc_pid));
  assert.ok(existsSync(join(site, '.svc', 'dev.lock')));
  assert.equal(readFileSync(join(site, '.svc', 'dev.lock'), 'utf8'), '', 'dev.lock is an empty file');
  assert.ok(!existsSync(join(site, '.svc', 'last-build.log')), 'the initial build is never captured');
  const log = readFileSync(join(site, '.svc', 'dev.log'), 'utf8');
  assert.match(log, /build 1 ok/);
  assert.match(log, /serving on http:\/\/127\.0\.0\.1/, 'the service binary logs into dev.log');
  const ev = events();
  assert.deepEqual(ev.map((e) => [e.kind, e.generation, e.status]), [['build', 0, 'building'], ['build', 1, 'ok']]);
  for (const e of ev) assert.deepEqual(Object.keys(e).sort(), ['duration_ms', 'error', 'generation', 'kind', 'status', 'timestamp_ms', 'version']);
});

test('the site is served through svc with the live-reload snippet; the API answers beside it', async () => {
  const html = await page();
  assert.match(html, /<h1>Welcome<\/h1>/);
  assert.ok(html.includes(`new EventSource("${control}/_devtool/reload")`), 'snippet points at the control server');
  assert.match(html, /<script data-devtool-live-reload>.*<\/script>\n<\/body>/s);
  assert.equal((await fetch(`${info.url}assets/app.css`)).headers.get('content-type'), 'text/css; charset=utf-8');
  assert.equal((await (await fetch(`${info.url}api/health`)).json()).status, 'ok');
  assert.equal((await fetch(`${info.url}missing`)).status, 404);
});

test('the status endpoint answers the status object to any origin', async () => {
  const r = await fetch(`${control}/_devtool/status`, { headers: { origin: 'http://elsewhere.example' } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), '*');
  const s = await r.json();
  assert.deepEqual(Object.keys(s), ['ok', 'pid', 'url', 'started_at', 'build']);
  assert.deepEqual(s, { ok: true, pid: info.pid, url: info.url, started_at: info.started_at, build: { generation: 1, status: 'ok', duration_ms: s.build.duration_ms, error: null, pending: false } });
  assert.ok(Number.isInteger(s.build.duration_ms));
  const pre = await fetch(`${control}/_devtool/status`, { method: 'OPTIONS' });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), '*');
});

test('a second background start is idempotent: same session, exit 0', async () => {
  const r = await devtool(['dev', '--background'], { cwd: site });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^Dev server already running at ${info.url.replace(/\./g, '\\.')} \\(pid ${info.pid}\\)`));
  assert.equal(r.stdout.trimEnd().split('\n').length, 4);
  assert.equal(lockInfo(site).pid, info.pid);
  const j = await devtool(['dev', '--background', '--json'], { cwd: site });
  assert.equal(j.code, 0);
  const body = JSON.parse(j.stdout);
  assert.equal(body.already_running, true);
  assert.equal(body.pid, info.pid);
});

test('status prints the facts and the build line; --json the same facts', async () => {
  const r = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^Dev server running at ${info.url.replace(/\./g, '\\.')} \\(pid ${info.pid}, background\\)\n`));
  assert.match(r.stdout, /\nBuild: ok, generation \d+, \d+ ms\n$/);
  const j = await devtool(['dev', 'status', '--json'], { cwd: site });
  assert.equal(j.code, 0);
  const s = JSON.parse(j.stdout);
  assert.equal(s.running, true);
  assert.equal(s.pid, info.pid);
  assert.equal(s.svc_pid, info.svc_pid);
  assert.equal(s.control_reachable, true);
  assert.equal(s.build.status, 'ok');
  const other = await devtool(['dev', 'status'], { cwd: makeSite({}) });
  assert.equal(other.code, 1);
  assert.equal(other.stdout, 'No dev server is running.\n');
  const otherJson = await devtool(['dev', 'status', '--json'], { cwd: makeSite({}) });
  assert.deepEqual(JSON.parse(otherJson.stdout), { running: false });
});

test('a content edit: new generation, reload event with the next cursor, fresh page, captured log', async () => {
  const sse = await openSse(`${control}/_devtool/reload`);
  assert.equal(sse.status, 200);
  assert.match(sse.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.equal(sse.headers.get('access-control-allow-origin'), '*');
  const ready = await sse.next('ready');
  const hello = JSON.parse(ready.data);
  assert.equal(hello.refresh, false);
  assert.equal(ready.id, `${hello.session}.${hello.cursor}`);
  const before = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/index.md', '---\ntitle: Home\n---\n# Edited heading\n');
  const s = await nextGeneration(info, before);
  assert.equal(s.build.generation, before + 1);
  assert.equal(s.build.status, 'ok');
  const reload = await sse.next('reload');
  const data = JSON.parse(reload.data);
  assert.equal(data.cursor, hello.cursor + 1);
  assert.equal(data.generation, s.build.generation);
  assert.equal(reload.id, `${hello.session}.${hello.cursor + 1}`);
  assert.match(await page(), /<h1>Edited heading<\/h1>/);
  assert.match(readFileSync(join(site, '.svc', 'last-build.log'), 'utf8'), /^built 2 pages and 1 asset/);
  sse.close();
});

test('layout, asset and referenced component edits rebuild; an unreferenced component does not', async () => {
  let g = (await controlStatus(info)).build.generation;
  writeSite(site, 'layouts/default.html', STARTER['layouts/default.html'].replace('<main>', '<main class="v2">'));
  g = (await nextGeneration(info, g)).build.generation;
  assert.match(await page(), /<main class="v2">/);
  writeSite(site, 'assets/app.css', 'body { color: red; }\n');
  g = (await nextGeneration(info, g)).build.generation;
  assert.equal(await page('assets/app.css'), 'body { color: red; }\n');
  writeSite(site, 'assets/new/img.txt', 'new asset');
  g = (await nextGeneration(info, g)).build.generation;
  assert.equal(await page('assets/new/img.txt'), 'new asset');
  writeSite(site, 'components/nav.html', '<nav>navigation v2</nav>\n');
  g = (await nextGeneration(info, g)).build.generation;
  assert.match(await page(), /navigation v2/);
  writeSite(site, 'content/new-page.md', '# Brand new\n');
  g = (await nextGeneration(info, g)).build.generation;
  assert.match(await page('new-page/'), /Brand new/);
  writeSite(site, 'components/unused.html', '<p>changed but unreferenced</p>\n');
  writeSite(site, 'site.json', '{"title": "Renamed, but only at the next start"}\n');
  await sleep(600);
  const s = await controlStatus(info);
  assert.equal(s.build.generation, g, 'no rebuild for a component no layout references, nor for site.json');
  assert.equal(s.build.status, 'ok');
});

test('a failed rebuild keeps the error tail, sends no reload; the next success clears it and reloads', async () => {
  const sse = await openSse(`${control}/_devtool/reload`);
  await sse.next('ready');
  const g = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/broken.md', '---\ntitle: Broken\nlayout: nowhere\n---\nx\n');
  const failed = await nextGeneration(info, g);
  assert.equal(failed.build.status, 'failed');
  assert.equal(failed.build.generation, g + 1, 'a failure bumps the generation too');
  assert.match(failed.build.error, /content\/broken\.md:3: unknown layout "nowhere"/);
  assert.match(readFileSync(join(site, '.svc', 'last-build.log'), 'utf8'), /content\/broken\.md:3/);
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(st.code, 0);
  assert.match(st.stdout, /Build: failed, generation \d+, \d+ ms\n {2}build failed: content\/broken\.md:3/);
  const w = await devtool(['dev', 'wait'], { cwd: site });
  assert.equal(w.code, 1, 'wait exits 1 for a failed build');
  assert.equal(JSON.parse(w.stdout).build.status, 'failed');
  await sleep(200);
  assert.equal(sse.events.filter((e) => e.event === 'reload').length, 0, 'no reload broadcast for a failure');
  writeSite(site, 'content/broken.md', '---\ntitle: Fixed\n---\nfixed\n');
  const fixed = await nextGeneration(info, g + 1);
  assert.equal(fixed.build.status, 'ok');
  assert.equal(fixed.build.error, null);
  await sse.next('reload');
  assert.match(await page('broken/'), /fixed/);
  const ev = events();
  const finishes = ev.filter((e) => e.status !== 'building');
  assert.deepEqual(finishes.map((e) => e.generation), finishes.map((_, i) => i + 1), 'generations count completed builds');
  const failedEvent = finishes.find((e) => e.status === 'failed');
  assert.match(failedEvent.error, /unknown layout "nowhere"/);
  for (let i = 0; i < ev.length; i += 2) {
    assert.equal(ev[i].status, 'building', 'starts and finishes alternate');
    assert.equal(ev[i].generation, ev[i + 1].generation - 1);
    assert.ok(ev[i].timestamp_ms <= ev[i + 1].timestamp_ms);
  }
  sse.close();
});

test('the reload stream: Last-Event-ID decides whether a reconnecting browser refreshes', async () => {
  const first = await openSse(`${control}/_devtool/reload`);
  const hello = JSON.parse((await first.next('ready')).data);
  first.close();
  const current = await openSse(`${control}/_devtool/reload`, { 'last-event-id': `${hello.session}.${hello.cursor}` });
  assert.equal(JSON.parse((await current.next('ready')).data).refresh, false, 'nothing missed: the page is left alone');
  current.close();
  const stale = await openSse(`${control}/_devtool/reload`, { 'last-event-id': `${hello.session}.${hello.cursor - 1}` });
  assert.equal(JSON.parse((await stale.next('ready')).data).refresh, true, 'missed notices: one full refresh');
  stale.close();
  const restarted = await openSse(`${control}/_devtool/reload`, { 'last-event-id': `0123456789abcdef.${hello.cursor}` });
  assert.equal(JSON.parse((await restarted.next('ready')).data).refresh, true, 'another session (restarted server): refresh');
  restarted.close();
  const garbage = await openSse(`${control}/_devtool/reload?last_event_id=nonsense`);
  assert.equal(JSON.parse((await garbage.next('ready')).data).refresh, true);
  garbage.close();
  // a missed notice while disconnected, then a reconnect with the old id
  const g = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/about.md', '---\ntitle: About\n---\nAbout, while nobody listened.\n');
  await nextGeneration(info, g);
  const back = await openSse(`${control}/_devtool/reload`, { 'last-event-id': `${hello.session}.${hello.cursor}` });
  const again = JSON.parse((await back.next('ready')).data);
  assert.equal(again.refresh, true);
  assert.equal(again.cursor, hello.cursor + 1);
  back.close();
});

test('wait returns once an edit is built and prints the status JSON', async () => {
  const g = (await controlStatus(info)).build.generation;
  writeSite(site, 'content/about.md', '---\ntitle: About\n---\nwaited for\n');
  await until(async () => (await controlStatus(info)).build.status === 'building' || (await controlStatus(info)).build.generation > g, 5000, 'edit observed');
  const w = await devtool(['dev', 'wait', '--timeout-ms=20000'], { cwd: site });
  assert.equal(w.code, 0, w.stderr);
  const s = JSON.parse(w.stdout);
  assert.equal(s.build.status, 'ok');
  assert.ok(s.build.generation > g);
  assert.equal(s.build.pending, false);
  assert.match(await page('about/'), /waited for/);
  const bad = await devtool(['dev', 'wait', '--timeout-ms=soon'], { cwd: site });
  assert.equal(bad.code, 1);
});

test('logs prints dev.log; --json prints the build events', async () => {
  const r = await devtool(['dev', 'logs'], { cwd: site });
  assert.equal(r.code, 0);
  assert.equal(r.stdout, readFileSync(join(site, '.svc', 'dev.log'), 'utf8'));
  const j = await devtool(['dev', 'logs', '--json'], { cwd: site });
  assert.equal(j.code, 0);
  const lines = j.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length >= 4);
  assert.ok(lines.every((e) => e.kind === 'build' && e.version === 1));
});

test('logs --follow streams new output and ends when the session stops; stop is idempotent', async () => {
  const follow = spawnDevtool(['dev', 'logs', '-f'], { cwd: site });
  await follow.waitOut(/build 1 ok/);
  writeSite(site, 'content/about.md', '---\ntitle: About\n---\nfollowed\n');
  await follow.waitOut(/build \d+ ok[^\n]*\n(?:.|\n)*$/);
  const g = (await controlStatus(info)).build.generation;
  await follow.waitOut(new RegExp(`build ${g} ok`));
  const stop = await devtool(['dev', 'stop'], { cwd: site });
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(stop.stdout, `Stopped the dev server (pid ${info.pid}).\n`);
  assert.equal(await follow.exited, 0, 'follow ends once the lock is released');
  assert.match(follow.stdout(), /\[devtool\] stopped\n/);
  await until(() => !alive(info.pid), 3000, 'dev process gone');
  await until(() => !alive(info.svc_pid), 5000, 'service gone');
  assert.ok(!existsSync(join(site, '.svc', 'dev.json')), 'dev.json removed');
  assert.ok(existsSync(join(site, '.svc', 'dev.lock')), 'dev.lock is never deleted');
  const again = await devtool(['dev', 'stop', '--json'], { cwd: site });
  assert.equal(again.code, 0);
  assert.equal(JSON.parse(again.stdout).stopped, false);
  const st = await devtool(['dev', 'status'], { cwd: site });
  assert.equal(st.code, 1);
  assert.equal(st.stdout, 'No dev server is running.\n');
  const w = await devtool(['dev', 'wait'], { cwd: site });
  assert.equal(w.code, 1, 'wait on a stopped session exits 1');
  const logs = await devtool(['dev', 'logs'], { cwd: site });
  assert.equal(logs.code, 0, 'the last background log stays readable');
});

test('pending stays true while edits arrive during a rebuild; one more build follows', async () => {
  const files: Record<string, string> = { ...STARTER };
  for (let i = 0; i < 2500; i++) files[`content/p/${i}.md`] = `---\ntitle: Page ${i}\n---\n# Page ${i}\n\nSome *text* for page ${i}.\n`;
  const big = makeSite(files);
  const { info: bi } = await startBackground(big);
  const g = (await controlStatus(bi)).build.generation;
  // a layout edit rewrites every page: a build long enough to edit during it
  writeSite(big, 'layouts/default.html', STARTER['layouts/default.html'].replace('<main>', '<main class="slow">'));
  const evFile = join(big, '.svc', 'dev.ndjson');
  await until(() => readFileSync(evFile, 'utf8').split('\n').filter(Boolean).length > 2 * g, 10_000, 'rebuild started');
  writeSite(big, 'content/p/0.md', '---\ntitle: Page 0\n---\n# Page zero, edited mid-build\n');
  const seen = await until(async () => {
    const s = await controlStatus(bi);
    return s.build.pending || s.build.generation > g + 1 ? s : null;
  }, 10_000, 'pending or the follow-up build');
  assert.equal(seen.build.pending, true, `pending was never observed: ${JSON.stringify(seen)}`);
  assert.equal(seen.build.status, 'building');
  const w = await devtool(['dev', 'wait'], { cwd: big });
  assert.equal(w.code, 0, w.stderr);
  const final = JSON.parse(w.stdout);
  assert.equal(final.build.generation, g + 2, 'the edit during the build caused exactly one more build');
  assert.equal(final.build.pending, false);
  assert.match(await (await fetch(`${bi.url}p/0/`)).text(), /Page zero, edited mid-build/);
  assert.match(await (await fetch(`${bi.url}p/7/`)).text(), /<main class="slow">/);
  const stop = await devtool(['dev', 'stop'], { cwd: big });
  assert.equal(stop.code, 0);
  writeFileSync(join(big, 'done'), '');
});
