/**
 * In-process CLI tests: runCli() with captured streams and stub app modules (the context loaders),
 * covering what the spawned tests cannot without the real domain and server modules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runCli } from '../../../cli/cli.js';
import type { SvcContext } from '../../../cli/base-command.js';
import type { ServerModule, SuperuserAdmin } from '../../../cli/app-modules.js';
import { ApiError } from '../../../src/errors/api-error.js';
import type { ServeConfig } from '../../../src/config/config.js';

class Sink extends Writable {
  text = '';
  _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

async function run(argv: string[], extra: Partial<SvcContext> = {}, env: Record<string, string> = {}) {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(argv, { stdout, stderr, env, ...extra });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'));
}

const calls: Array<[string, string, string, string]> = [];
const stubAdmin: SuperuserAdmin = {
  async createSuperuser(dataDir, email, password) {
    calls.push(['create', dataDir, email, password]);
    if (!email.includes('@')) {
      throw ApiError.validation({ email: { code: 'validation_invalid_email', message: 'Must be a valid email address.' } });
    }
    return { id: 'abc123', email, created: true };
  },
  async upsertSuperuser(dataDir, email, password) {
    calls.push(['upsert', dataDir, email, password]);
    return { id: 'abc123', email, created: false };
  },
};
const loadSuperuserAdmin = async () => stubAdmin;

test('superuser create/upsert pass the resolved data dir and print {id, email, created}', async () => {
  const dir = tempDir();
  let r = await run(['superuser', 'create', '--email=a@example.com', '--password=secret123', `--data-dir=${dir}`, '--json'], { loadSuperuserAdmin });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '{"id":"abc123","email":"a@example.com","created":true}\n');
  assert.deepEqual(calls.at(-1), ['create', dir, 'a@example.com', 'secret123']);

  r = await run(['superuser', 'upsert', '--email=a@example.com', '--password=secret456'], { loadSuperuserAdmin }, { SERVICE_DATA_DIR: 'rel/dir' });
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^superuser a@example.com updated \(id abc123\)/);
  assert.deepEqual(calls.at(-1), ['upsert', path.resolve('rel/dir'), 'a@example.com', 'secret456']);

  await run(['superuser', 'create', '--email=b@example.com', '--password=x'], { loadSuperuserAdmin });
  assert.equal(calls.at(-1)?.[1], path.resolve('svc_data'));
});

test('superuser: ApiError exits 1 with its message; --json gives {error: {code, message, data}}', async () => {
  let r = await run(['superuser', 'create', '--email=nope', '--password=secret123', '--json'], { loadSuperuserAdmin });
  assert.equal(r.code, 1);
  assert.deepEqual(JSON.parse(r.stdout), {
    error: {
      code: 'validation_failed',
      message: 'Failed to validate the submitted data.',
      data: { email: { code: 'validation_invalid_email', message: 'Must be a valid email address.' } },
    },
  });
  r = await run(['superuser', 'create', '--email=nope', '--password=secret123'], { loadSuperuserAdmin });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /Failed to validate the submitted data/);
  assert.match(r.stderr, /email: Must be a valid email address\. \(validation_invalid_email\)/);
});

test('superuser: an invalid SERVICE_LOG_* value is reported before the domain is touched', async () => {
  const before = calls.length;
  const r = await run(['superuser', 'create', '--email=a@example.com', '--password=secret123', '--json'], { loadSuperuserAdmin }, { SERVICE_LOG_FORMAT: 'yaml' });
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.variable, 'SERVICE_LOG_FORMAT');
  assert.match(r.stderr, /invalid SERVICE_LOG_FORMAT "yaml": expected one of text, json/);
  assert.equal(calls.length, before);
});

test('serve: starts with the loaded config and logger, stops once on SIGTERM, releases the lock', async () => {
  const dir = tempDir();
  let seen: ServeConfig | undefined;
  let stops = 0;
  let listening!: () => void;
  const started = new Promise<void>((resolve) => { listening = resolve; });
  const loadServer = async (): Promise<ServerModule> => ({
    async startServer(config, logger) {
      seen = config;
      logger.request('GET', '/x', 200, 1);
      logger.info('serving on http://127.0.0.1:4321');
      setImmediate(listening);
      return { address: '127.0.0.1:4321', async stop() { stops++; } };
    },
  });
  const done = run(
    ['serve', '--http=127.0.0.1:0', `--data-dir=${dir}`, '--log-format=json', '--no-request-log', '--features=vector', '--json'],
    { loadServer },
  );
  await started;
  assert.equal(fs.readFileSync(path.join(dir, 'svc.lock'), 'utf8').trim(), String(process.pid));
  process.emit('SIGTERM', 'SIGTERM');
  const r = await done;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(stops, 1);
  assert.equal(fs.existsSync(path.join(dir, 'svc.lock')), false);
  assert.deepEqual(JSON.parse(r.stdout), { address: '127.0.0.1:4321', pid: process.pid, data_dir: dir });
  assert.equal(seen?.port, 0);
  assert.equal(seen?.requestLog, false);
  assert.deepEqual([...(seen?.features ?? [])], ['vector']);
  const records = r.stderr.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(records.some((x) => x.msg === 'serving on http://127.0.0.1:4321'), 'the server logs through our logger');
  assert.ok(!records.some((x) => x.scope === 'http'), 'request records are off');
  assert.equal(process.listenerCount('SIGTERM'), 0);
});

test('serve: a server that fails to start exits 1 and releases the lock', async () => {
  const dir = tempDir();
  const loadServer = async (): Promise<ServerModule> => ({
    async startServer() { throw new Error('address in use'); },
  });
  const r = await run(['serve', `--data-dir=${dir}`, '--http=127.0.0.1:0'], { loadServer });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot start the server: address in use/);
  assert.equal(fs.existsSync(path.join(dir, 'svc.lock')), false);
});

test('serve: a held lock stops before the server module is loaded', async () => {
  const dir = tempDir();
  // a live process other than this one (this process's own pid would be a stale lock of a previous incarnation)
  fs.writeFileSync(path.join(dir, 'svc.lock'), `${process.ppid}\n`);
  let loaded = false;
  const loadServer = async (): Promise<ServerModule> => { loaded = true; throw new Error('unreachable'); };
  const r = await run(['serve', `--data-dir=${dir}`, '--json'], { loadServer });
  assert.equal(r.code, 1);
  assert.equal(loaded, false);
  const body = JSON.parse(r.stdout);
  assert.equal(body.error.code, 'lock');
  assert.equal(body.error.pid, process.ppid);
});
