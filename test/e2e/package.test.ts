/**
 * The npm package installs and runs outside this repository (README.md, "Embedding").
 *
 * 1. The repository's files (no node_modules/, dist/ or .git) are copied to a temporary folder
 *    with node_modules linked in, and `npm pack` runs there: its prepack (scripts/prepack.mjs)
 *    builds dist/ from scratch, as it would before a publish, without touching this checkout's
 *    dist/ that other tests run.
 * 2. The tarball is installed into a fresh project under the system's temporary folder, where no
 *    node_modules of this repository is reachable, offline from the npm cache: the project gets a
 *    lockfile made of the repository's package-lock.json production entries (the versions the
 *    suite tests), so npm needs only the cached tarballs, not the registry's metadata. A
 *    dependency missing from the cache skips the test with a message that says so.
 * 3. From that project: the README's embedding example runs as written, `npx svc version --json`
 *    answers, `devtool` builds a site and runs a dev session (which spawns the installed
 *    bin/svc.js), and `svc serve` (the command npx runs) serves the API, the admin UI and a
 *    superuser sign-in (argon2 on its worker thread) on the test backend.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { ROOT } from '../helpers/server.js';
import { backendEnv } from '../helpers/backend.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};

/** Top-level entries of the repository the packing copy leaves out (outputs and local state). */
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', 'svc_data', '.scratch']);

/**
 * The environment of the commands run here: no SERVICE_* or DEVTOOL_* variable of the
 * developer's shell, no npm lifecycle variables of an enclosing `npm test` (they name this
 * repository's package), no NODE_PATH (it could reach this repository's node_modules), no
 * test-runner context.
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('SERVICE_') || k.startsWith('DEVTOOL_') || k === 'NODE_PATH' || k === 'NODE_TEST_CONTEXT') continue;
    if (/^npm_/i.test(k) && !/^npm_config_(cache|registry|userconfig)$/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number, env: Record<string, string> = {}): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: timeoutMs });
  if (r.error) throw r.error;
  return r;
}

const show = (r: SpawnSyncReturns<string>): string => `exit ${r.status}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** The ```js block under the README's "## Embedding" heading. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Embedding\n'));
  assert.ok(section, 'README.md has an "## Embedding" section');
  const m = /^```js\n([\s\S]*?)^```$/m.exec(section);
  assert.ok(m, 'the Embedding section has a ```js block');
  return m[1];
}

let work = '';
let tarball = '';
let packedFiles: string[] = [];

before(() => {
  work = mkdtempSync(join(tmpdir(), 'svc-package-'));
  const copy = join(work, 'repo');
  cpSync(ROOT, copy, {
    recursive: true,
    filter: (src) => {
      const rel = relative(ROOT, src);
      if (rel === '') return true;
      const top = rel.split(sep)[0];
      return !NOT_COPIED.has(top) && !rel.split(sep).includes('node_modules') && !rel.endsWith('.tgz') && !rel.startsWith(join('bench', 'results'));
    },
  });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const out = join(work, 'out');
  mkdirSync(out);
  const r = run('npm', ['pack', '--json', `--pack-destination=${out}`], copy, 30_000);
  assert.equal(r.status, 0, `npm pack failed:\n${show(r)}`);
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  tarball = join(out, info.filename);
  packedFiles = info.files.map((f) => f.path);
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the tarball holds the compiled code, the admin UI and the launchers, and no sources', () => {
  for (const f of ['package.json', 'README.md', 'bin/svc.js', 'bin/devtool.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/cli/main.js', 'dist/devtool/main.js',
    'dist/workers/writer.js', 'dist/workers/reader.js', 'dist/workers/hash.js', 'dist/build-info.json', 'admin-dist/index.html', 'docs/framework.md']) {
    assert.ok(packedFiles.includes(f), `${f} is in the tarball`);
  }
  const sources = packedFiles.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  assert.deepEqual(sources, [], 'no TypeScript sources');
  assert.deepEqual(packedFiles.filter((f) => /^(test|bench|src|admin\/src|node_modules)\//.test(f)), [], 'no tests, benchmarks or sources');
});

/**
 * A project depending on the tarball, with a lockfile that pins every dependency to this
 * repository's locked version and registry address (`resolved`; this repository's lockfile
 * leaves it out), so an offline install needs the cached tarballs only.
 */
function writeProject(dir: string): void {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
  const reg = run('npm', ['config', 'get', 'registry'], dir, 10_000).stdout.trim().replace(/\/?$/, '/');
  const spec = `file:${relative(dir, tarball)}`;
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const packages: Record<string, Record<string, unknown>> = {
    '': { name: 'svc-package-test', dependencies: { [pkg.name]: spec } },
    [`node_modules/${pkg.name}`]: {
      version: pkg.version, resolved: spec, integrity, dependencies: pkg.dependencies, optionalDependencies: pkg.optionalDependencies, bin: pkg.bin,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev === true || entry.link === true) continue;
    const e = { ...entry };
    if (e.devOptional) {
      delete e.devOptional;
      e.optional = true;
    }
    if (!e.resolved) {
      const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      e.resolved = `${reg}${name}/-/${name.split('/').pop()}-${String(e.version)}.tgz`;
    }
    packages[path] = e;
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'svc-package-test', private: true, type: 'module', dependencies: { [pkg.name]: spec } }, null, 2));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: 'svc-package-test', lockfileVersion: 3, requires: true, packages }, null, 2));
}

/** Starts `svc serve` of the installed package; resolves with its URL and a stop function. */
function serve(bin: string, cwd: string, dataDir: string, env: Record<string, string>): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = spawn(bin, ['serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, '--insecure-cookies'], { cwd, env: cleanEnv({ SERVICE_LOG_FORMAT: 'json', ...env }), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`svc serve did not start in 20 s:\n${err}`)); }, 20_000);
    const onExit = (code: number | null) => { clearTimeout(timer); reject(new Error(`svc serve exited with ${code}:\n${err}`)); };
    proc.once('exit', onExit);
    proc.stderr.on('data', (d: string) => {
      err += d;
      const m = /serving on (http:\/\/[^\s"]+)/.exec(err);
      if (!m) return;
      clearTimeout(timer);
      proc.off('exit', onExit);
      resolve({ url: m[1], stop: () => new Promise<void>((done) => { proc.once('exit', () => done()); proc.kill('SIGTERM'); }) });
    });
  });
}

test('the tarball installs into a fresh project and runs from there', { timeout: 90_000 }, async (t) => {
  const app = join(work, 'app');
  mkdirSync(app);
  for (let dir = app; ; dir = dirname(dir)) {
    assert.ok(!existsSync(join(dir, 'node_modules')) || dir === app, `${join(dir, 'node_modules')} would be reachable from the fresh project`);
    if (dirname(dir) === dir) break;
  }
  writeProject(app);
  const install = run('npm', ['install', '--offline', '--no-audit', '--no-fund'], app, 60_000);
  if (install.status !== 0 && /ENOTCACHED/.test(install.stderr)) {
    const url = /request to (\S+) failed/.exec(install.stderr)?.[1] ?? 'a dependency';
    const cache = run('npm', ['config', 'get', 'cache'], app, 10_000).stdout.trim();
    t.skip(`${url} is not in the npm cache (${cache}): the offline install of the tarball's dependencies needs it (run npm ci in the repository with the network once)`);
    return;
  }
  assert.equal(install.status, 0, `npm install of the tarball failed:\n${show(install)}`);
  assert.ok(existsSync(join(app, 'node_modules', pkg.name, 'dist', 'src', 'index.js')));
  for (const dev of ['tsx', 'typescript', 'esbuild']) assert.ok(!existsSync(join(app, 'node_modules', dev)), `the devDependency ${dev} was not installed`);

  await t.test('the README embedding example runs as written', () => {
    writeFileSync(join(app, 'server.mjs'), readmeExample());
    const r = run(process.execPath, ['server.mjs'], app, 30_000);
    assert.equal(r.status, 0, show(r));
    const [first, second] = r.stdout.trim().split('\n');
    assert.match(first, /^http:\/\/127\.0\.0\.1:\d+ ok$/, show(r));
    assert.equal(second, '{"hello":"world"}');
  });

  await t.test('npx svc version --json', () => {
    const r = run('npx', ['--offline', 'svc', 'version', '--json'], app, 20_000);
    assert.equal(r.status, 0, show(r));
    const v = JSON.parse(r.stdout) as { svc: string; components: Record<string, string> };
    assert.equal(v.svc, pkg.version);
    assert.match(v.components.libsql, /^\d+\.\d+/);
  });

  await t.test('devtool build and a background devtool dev session', async () => {
    const site = join(app, 'site');
    mkdirSync(join(site, 'content'), { recursive: true });
    writeFileSync(join(site, 'content', 'index.md'), '---\ntitle: Home\n---\n# Installed\n');
    const build = run('npx', ['--offline', 'devtool', 'build', '--json'], site, 20_000);
    assert.equal(build.status, 0, show(build));
    assert.equal((JSON.parse(build.stdout) as { pages: number }).pages, 1);
    // the session spawns the installed package's bin/svc.js (devtool/service.ts)
    const devtool = join(app, 'node_modules', '.bin', 'devtool');
    const dev = run(devtool, ['dev', '--background', '--json'], site, 40_000);
    try {
      assert.equal(dev.status, 0, show(dev));
      const page = await fetch((JSON.parse(dev.stdout) as { url: string }).url);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<h1[^>]*>Installed<\/h1>[\s\S]*data-devtool-live-reload/);
    } finally {
      const stop = run(devtool, ['dev', 'stop'], site, 20_000);
      assert.equal(stop.status, 0, show(stop));
    }
  });

  await t.test('svc serve: the API, the admin UI and a superuser sign-in', async () => {
    const bin = join(app, 'node_modules', '.bin', 'svc'); // what `npx svc` runs
    const dataDir = join(app, 'svc_data_serve');
    const env = await backendEnv(dataDir);
    const su = run(bin, ['superuser', 'upsert', '--email=admin@example.com', '--password=a long password', `--data-dir=${dataDir}`], app, 20_000, env);
    assert.equal(su.status, 0, show(su));
    const srv = await serve(bin, app, dataDir, env);
    try {
      const health = await fetch(`${srv.url}/api/health`);
      assert.equal(health.status, 200);
      assert.equal(((await health.json()) as { status: string }).status, 'ok');
      const admin = await fetch(`${srv.url}/_/`);
      assert.equal(admin.status, 200, 'the admin UI is found beside the installed package');
      assert.match(await admin.text(), /<html/i);
      const auth = await fetch(`${srv.url}/api/collections/_superusers/auth-with-password`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: 'admin@example.com', password: 'a long password' }),
      });
      assert.equal(auth.status, 200, await auth.text());
    } finally {
      await srv.stop();
    }
  });
});
