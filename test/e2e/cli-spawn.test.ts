import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSvc } from '../helpers/server.js';
import { ACTIVE_CODES } from '../../src/errors/codes.js';

// Spawns the built CLI (`node dist/cli/main.js …`). `npm test` builds first (pretest); when dist is
// missing, ensureBuilt() builds once.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const mainJs = path.join(root, 'dist', 'cli', 'main.js');

function ensureBuilt(): void {
  if (fs.existsSync(mainJs)) return;
  const r = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0 && !fs.existsSync(mainJs)) throw new Error('npm run build failed');
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A clean environment: no SERVICE_* variables leak in from the developer's shell. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_')) env[k] = v;
  return { ...env, ...extra };
}

/** Runs the CLI to completion (10 s cap). */
function runSvc(args: string[], env: Record<string, string> = {}, cwd: string = root): RunResult {
  const r = spawnSync(process.execPath, [mainJs, ...args], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 10_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs `svc serve …` until it exits, or until it logs that it is serving, in which case it is
 * sent SIGTERM and expected to exit. Works whether or not the server module exists yet.
 */
function runServe(args: string[], env: Record<string, string> = {}): Promise<RunResult & { listened: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mainJs, 'serve', ...args], { cwd: root, env: cleanEnv(env) });
    let stdout = '';
    let stderr = '';
    let listened = false;
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`serve did not exit:\n${stderr}`)); }, 15_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (!listened && /serving on|listening on/.test(stderr)) {
        listened = true;
        child.kill('SIGTERM');
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, listened });
    });
  });
}

before(ensureBuilt);

function oneJson(stdout: string): Record<string, any> {
  const lines = stdout.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `stdout should hold exactly one line: ${JSON.stringify(stdout)}`);
  return JSON.parse(lines[0]);
}

test('version --json: key order, components, exit 0 despite a malformed SERVICE_LOG_FORMAT', () => {
  const r = runSvc(['version', '--json'], { SERVICE_LOG_FORMAT: 'xml', SERVICE_LOG_LEVEL: 'loud' });
  assert.equal(r.code, 0, r.stderr);
  const v = oneJson(r.stdout);
  assert.deepEqual(Object.keys(v), ['svc', 'commit', 'build', 'target', 'node', 'components', 'http']);
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.equal(v.svc, pkg.version);
  assert.equal(v.node, process.versions.node);
  assert.equal(v.target, `${process.platform}-${process.arch}`);
  assert.match(v.build, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  for (const k of ['libsql', 'sqlite', 'uWebSockets.js', '@node-rs/argon2', '@node-rs/xxhash', 'jose', 'fast-json-stringify', 'piscina']) {
    assert.equal(typeof v.components[k], 'string', k);
    assert.notEqual(v.components[k], 'unknown', k);
  }
  assert.match(v.components.sqlite, /^3\.\d+\.\d+$/);
});

test('version text matches the JSON', () => {
  const json = oneJson(runSvc(['version', '--json']).stdout);
  const r = runSvc(['version'], { SERVICE_LOG_LEVEL: 'nonsense' });
  assert.equal(r.code, 0);
  assert.ok(r.stdout.startsWith(`svc ${json.svc} (commit ${json.commit}, node ${json.node}, ${json.target})\n`), r.stdout);
  for (const [name, version] of Object.entries(json.components)) assert.match(r.stdout, new RegExp(`${name.replace(/[.]/g, '\\.')}\\s+${String(version).replace(/[.()]/g, '\\$&')}`));
});

test('explain-code: known, unknown and listing, in text and JSON', () => {
  const env = { SERVICE_LOG_FORMAT: 'xml' }; // must be ignored
  let r = runSvc(['explain-code', 'validation_min', '--json'], env);
  assert.equal(r.code, 0);
  const known = oneJson(r.stdout);
  assert.deepEqual(Object.keys(known), ['code', 'known', 'summary', 'explanation']);
  assert.equal(known.code, 'validation_min');
  assert.equal(known.known, true);

  r = runSvc(['explain-code', 'validation_min'], env);
  assert.equal(r.code, 0);
  assert.ok(r.stdout.startsWith(`validation_min: ${known.summary}\n`));

  r = runSvc(['explain-code', 'no_such_code', '--json'], env);
  assert.equal(r.code, 1);
  assert.deepEqual(oneJson(r.stdout), { code: 'no_such_code', known: false });
  r = runSvc(['explain-code', 'no_such_code'], env);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /unknown error code "no_such_code"/);

  r = runSvc(['explain-code', '--json'], env);
  assert.equal(r.code, 0);
  const list = oneJson(r.stdout);
  assert.deepEqual(Object.keys(list), ['codes']);
  // every code of the ledger, one each (test/unit/errors/codes-ledger.test.ts checks the ledger)
  assert.equal(list.codes.length, ACTIVE_CODES.length);
  assert.ok(list.codes.some((c: { code: string }) => c.code === 'reauthentication_required'));
  assert.deepEqual(Object.keys(list.codes[0]), ['code', 'summary']);
  r = runSvc(['explain-code'], env);
  assert.equal(r.code, 0);
  assert.equal(r.stdout.trim().split('\n').length, ACTIVE_CODES.length);
  assert.match(r.stdout, /^bad_request\s+The request/m);
  assert.match(r.stdout, /^bad_gateway\s+An outside service/m);
});

test('usage errors exit 1; under --json stdout holds exactly one usage error object', () => {
  const cases = [
    ['no-such-command'],
    ['serve', '--no-such-option'],
    ['version', 'extra-positional'],
    ['superuser'],
    ['superuser', 'create', '--email=a@example.com'], // --password missing
  ];
  for (const args of cases) {
    const text = runSvc(args);
    assert.equal(text.code, 1, args.join(' '));
    assert.equal(text.stdout, '', args.join(' '));
    assert.ok(text.stderr.length > 0);
    const json = runSvc([...args, '--json']);
    assert.equal(json.code, 1, args.join(' '));
    const body = oneJson(json.stdout);
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal(body.error.code, 'usage');
    assert.equal(typeof body.error.message, 'string');
  }
  assert.equal(runSvc([]).code, 1);
  assert.equal(runSvc(['--help']).code, 0);
});

test('serve with SERVICE_LOG_FORMAT=xml exits 1 naming the variable, the value and what was expected', async () => {
  const r = await runServe([], { SERVICE_LOG_FORMAT: 'xml' });
  assert.equal(r.code, 1);
  assert.equal(r.listened, false);
  assert.match(r.stderr, /invalid SERVICE_LOG_FORMAT "xml": expected one of text, json/);
  const j = await runServe(['--json'], { SERVICE_LOG_LEVEL: 'chatty' });
  assert.equal(j.code, 1);
  const body = oneJson(j.stdout);
  assert.equal(body.error.code, 'config');
  assert.equal(body.error.variable, 'SERVICE_LOG_LEVEL');
  assert.equal(body.error.value, 'chatty');
});

test('superuser commands validate SERVICE_LOG_* before anything else', () => {
  const r = runSvc(['superuser', 'create', '--email=a@example.com', '--password=longenough1'], { SERVICE_LOG_REQUESTS: 'perhaps' });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /invalid SERVICE_LOG_REQUESTS "perhaps"/);
});

test('serve with a bad --http exits 1', async () => {
  for (const http of ['nohost', '127.0.0.1:99999', '127.0.0.1:http']) {
    const r = await runServe([`--http=${http}`]);
    assert.equal(r.code, 1, http);
    assert.match(r.stderr, /invalid --http/);
  }
});

/** A port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

for (const engine of [{ name: 'uWS', env: {} as Record<string, string> }, { name: 'node:http', env: { SERVICE_HTTP_ENGINE: 'node' } }]) {
  test(`${engine.name}: serve on an address another svc already listens on exits 1 with one line naming it; the first keeps serving`, async () => {
    // an explicit port, as an operator gives it (a socket opened with port reuse takes one too)
    const port = await freePort();
    const first = await startSvc({ superuser: false, env: { ...engine.env, SERVICE_HTTP: `127.0.0.1:${port}` }, args: [`--http=127.0.0.1:${port}`] });
    assert.equal(new URL(first.url).port, String(port));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-port-'));
    try {
      const address = new URL(first.url).host; // 127.0.0.1:<port>
      const second = await runServe([`--data-dir=${dir}`, `--http=${address}`], engine.env);
      assert.equal(second.listened, false, `the second server started on the taken address:\n${second.stderr}`);
      assert.equal(second.code, 1, second.stderr);
      const lines = second.stderr.split('\n').filter((l) => l.includes(`cannot listen on ${address}`));
      assert.equal(lines.length, 1, second.stderr);
      assert.match(lines[0], /\(address in use( or not available)?\)$/);
      // the first answers every request (nothing alternates with a second listener)
      for (let i = 0; i < 20; i++) {
        const r = await fetch(`${first.url}/api/health`);
        assert.equal(r.status, 200);
        await r.text();
      }
    } finally {
      await first.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('serve refuses a data directory locked by a live process; --ignore-lock gets past the lock', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-lock-'));
  fs.writeFileSync(path.join(dir, 'svc.lock'), `${process.pid}\n`); // this test process: alive
  const r = await runServe([`--data-dir=${dir}`, '--http=127.0.0.1:0']);
  assert.equal(r.code, 1);
  assert.equal(r.listened, false);
  assert.ok(r.stderr.includes(`data directory ${dir} is in use by another svc process (pid ${process.pid}); stop it or pass --ignore-lock`), r.stderr);

  const ignored = await runServe([`--data-dir=${dir}`, '--http=127.0.0.1:0', '--ignore-lock']);
  assert.ok(!ignored.stderr.includes('is in use by another svc process'), ignored.stderr);
  // Without the server module yet, serve stops at "cannot start the server"; with it, it listens
  // and then exits 0 on SIGTERM.
  if (ignored.listened) assert.equal(ignored.code, 0, ignored.stderr);
  else assert.match(ignored.stderr, /cannot start the server/);
  assert.equal(fs.readFileSync(path.join(dir, 'svc.lock'), 'utf8'), `${process.pid}\n`, 'the foreign lock is untouched');
});

test('superuser create / upsert against the real domain module', (t) => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'auth', 'superuser-admin.js'))) {
    t.skip('src/auth/superuser-admin.ts not built yet');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-su-'));
  const args = ['--email=Admin@Example.com', '--password=correct-horse', `--data-dir=${dir}`, '--json'];
  let r = runSvc(['superuser', 'create', ...args]);
  assert.equal(r.code, 0, r.stderr);
  const created = oneJson(r.stdout);
  assert.deepEqual(Object.keys(created), ['id', 'email', 'created']);
  assert.equal(created.created, true);

  r = runSvc(['superuser', 'create', ...args]);
  assert.equal(r.code, 1, 'creating the same superuser twice fails');
  const err = oneJson(r.stdout);
  assert.deepEqual(Object.keys(err.error), ['code', 'message', 'data']);
  assert.equal(err.error.code, 'validation_failed');

  r = runSvc(['superuser', 'upsert', ...args]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(oneJson(r.stdout), { id: created.id, email: created.email, created: false });

  r = runSvc(['superuser', 'create', '--email=x@example.com', '--password=short', `--data-dir=${dir}`]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /password: .*\(validation_min\)/);
});
