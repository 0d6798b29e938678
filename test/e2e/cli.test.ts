/**
 * E2E: the `svc` command line against real data directories (spec 1-core-api.md, "Command line",
 * "Errors"; 0-conventions.md "Names and commands", "Serving defaults", "Error codes").
 *
 * One server, started on the data directory that `svc superuser create` made, proves the CLI wrote
 * real data and gives the /api/health versions to compare `svc version` with.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSvc, type Svc } from '../helpers/server.js';
import { runCliAsync, oneJsonObject } from '../helpers/proc.js';

const CLEAN_ENV = { SERVICE_LOG_LEVEL: undefined, SERVICE_LOG_FORMAT: undefined, SERVICE_LOG_REQUESTS: undefined, SERVICE_DATA_DIR: undefined };
const cli = (args: string[], env: Record<string, string | undefined> = {}) => runCliAsync(args, { ...CLEAN_ENV, ...env });

const root = mkdtempSync(join(tmpdir(), 'svc-test-cli-'));
const dataDir = join(root, 'data'); // does not exist yet: the CLI creates it
const EMAIL = 'ops@example.com';
const PASSWORD = 'ops-password-1';
let created: any;
let srv: Svc | undefined;

before(async () => {
  const r = await cli(['superuser', 'create', `--email=${EMAIL}`, `--password=${PASSWORD}`, `--data-dir=${dataDir}`, '--json']);
  assert.equal(r.status, 0, `superuser create: ${r.stderr}`);
  created = oneJsonObject(r.stdout);
});

after(async () => {
  await srv?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('superuser create --json: exactly one object {id, email, created: true} on stdout, exit 0', () => {
  assert.deepEqual(Object.keys(created), ['id', 'email', 'created']);
  assert.equal(typeof created.id, 'string');
  assert.ok(created.id.length > 0);
  assert.equal(created.email, EMAIL);
  assert.equal(created.created, true);
});

test('superuser create/upsert outcomes (scenario table)', async () => {
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; exit: number; json?: (o: any) => void; stdoutEmpty?: boolean; stderrHas?: string[] }> = [
    {
      name: 'create again with the same email', exit: 1,
      args: ['superuser', 'create', `--email=${EMAIL}`, `--password=${PASSWORD}`, `--data-dir=${dataDir}`, '--json'],
      json: (o) => { assert.deepEqual(Object.keys(o), ['error']); assert.equal(typeof o.error.code, 'string'); assert.equal(typeof o.error.message, 'string'); assert.ok(o.error.message.length > 0); },
    },
    {
      name: 'create with a short password', exit: 1,
      args: ['superuser', 'create', '--email=short@example.com', '--password=short7x', `--data-dir=${dataDir}`, '--json'],
      json: (o) => { assert.deepEqual(Object.keys(o), ['error']); assert.equal(typeof o.error.code, 'string'); assert.equal(typeof o.error.message, 'string'); },
    },
    {
      name: 'create with a short password, text mode: nothing on stdout', exit: 1, stdoutEmpty: true,
      args: ['superuser', 'create', '--email=short2@example.com', '--password=abc', `--data-dir=${dataDir}`],
    },
    {
      name: 'create with an invalid email', exit: 1,
      args: ['superuser', 'create', '--email=not-an-email', `--password=${PASSWORD}`, `--data-dir=${dataDir}`, '--json'],
      json: (o) => { assert.deepEqual(Object.keys(o), ['error']); assert.equal(typeof o.error.code, 'string'); },
    },
    {
      name: 'create without --password (usage error)', exit: 1,
      args: ['superuser', 'create', '--email=x@example.com', `--data-dir=${dataDir}`, '--json'],
      json: (o) => { assert.deepEqual(Object.keys(o), ['error']); assert.equal(typeof o.error.message, 'string'); },
    },
    {
      name: 'upsert the existing superuser', exit: 0,
      args: ['superuser', 'upsert', `--email=${EMAIL}`, `--password=${PASSWORD}`, `--data-dir=${dataDir}`, '--json'],
      json: (o) => assert.deepEqual(o, { id: created.id, email: EMAIL, created: false }),
    },
    {
      name: 'upsert a new email', exit: 0,
      args: ['superuser', 'upsert', '--email=second@example.com', '--password=second-pass-2', `--data-dir=${dataDir}`, '--json'],
      json: (o) => { assert.deepEqual(Object.keys(o), ['id', 'email', 'created']); assert.equal(o.created, true); assert.equal(o.email, 'second@example.com'); assert.notEqual(o.id, created.id); },
    },
    {
      name: 'upsert with a short password', exit: 1,
      args: ['superuser', 'upsert', `--email=${EMAIL}`, '--password=tiny', `--data-dir=${dataDir}`, '--json'],
      json: (o) => assert.deepEqual(Object.keys(o), ['error']),
    },
    {
      name: 'create with SERVICE_LOG_LEVEL=loud (config is validated)', exit: 1, env: { SERVICE_LOG_LEVEL: 'loud' },
      args: ['superuser', 'create', '--email=loud@example.com', `--password=${PASSWORD}`, `--data-dir=${dataDir}`],
      stdoutEmpty: true, stderrHas: ['SERVICE_LOG_LEVEL', 'loud'],
    },
  ];
  // Writers to one database run one after another; each is a real process.
  for (const c of cases) {
    const r = await cli(c.args, c.env);
    assert.equal(r.status, c.exit, `${c.name}: exit code (stderr: ${r.stderr})`);
    if (c.json) {
      let o: any;
      assert.doesNotThrow(() => { o = oneJsonObject(r.stdout); }, `${c.name}: stdout is exactly one JSON object: ${JSON.stringify(r.stdout)}`);
      c.json(o);
    }
    if (c.stdoutEmpty) assert.equal(r.stdout, '', `${c.name}: stdout empty`);
    for (const s of c.stderrHas ?? []) assert.ok(r.stderr.includes(s), `${c.name}: stderr mentions ${s}: ${r.stderr}`);
    if (c.exit !== 0) assert.ok(r.stderr.trim().length > 0, `${c.name}: the failure is explained on stderr`);
  }
});

test('the CLI-written superusers can log in to a server on that data directory', async () => {
  srv = await startSvc({ dataDir, superuser: false });
  for (const [identity, password, ok] of [
    [EMAIL, PASSWORD, true],
    ['second@example.com', 'second-pass-2', true],
    ['short@example.com', 'short7x', false],
    ['loud@example.com', PASSWORD, false],
  ] as const) {
    const r = await srv.api('POST', '/api/collections/_superusers/auth-with-password', { body: { identity, password } });
    assert.equal(r.status, ok ? 200 : 400, `${identity}: ${r.text}`);
    if (ok) {
      assert.equal(r.body.record.email, identity);
      const c = await srv.api('GET', '/api/collections', { token: r.body.token });
      assert.equal(c.status, 200, `${identity} is a superuser`);
    }
  }
  assert.ok(!srv.stderr().includes('superuser create --email'), 'no "create a superuser" hint when one exists');
});

test('version --json: one object, first key svc, then commit, build, target, node, components; equals text output and /api/health', async () => {
  const [j, t, loud] = await Promise.all([
    cli(['version', '--json']),
    cli(['version']),
    cli(['version', '--json'], { SERVICE_LOG_LEVEL: 'loud', SERVICE_LOG_FORMAT: 'xml' }),
  ]);
  assert.equal(j.status, 0, j.stderr);
  const v = oneJsonObject(j.stdout);
  assert.deepEqual(Object.keys(v), ['svc', 'commit', 'build', 'target', 'node', 'components', 'http']);
  // the HTTP engine and why: native uWS where a build loads, else node:http with the reasons
  if (v.http.engine === 'uws') assert.match(`${v.http.package} ${v.http.version}`, /uws/i);
  else assert.ok(v.http.engine === 'node:http' && v.http.reason.length > 0 && !v.http.reason.includes('/node_modules/'), JSON.stringify(v.http));
  assert.ok(t.stdout.includes('http engine: '), 'the text output names the engine');
  assert.equal(typeof v.svc, 'string');
  assert.match(v.svc, /^\d+\.\d+\.\d+/);
  assert.equal(typeof v.components, 'object');
  const names = Object.keys(v.components).map((k) => k.toLowerCase());
  for (const want of ['libsql', 'sqlite', 'uwebsockets.js']) assert.ok(names.includes(want), `components list ${want}: ${names}`);
  for (const val of Object.values(v.components)) assert.ok(typeof val === 'string' && val.length > 0);

  assert.equal(t.status, 0);
  for (const s of [v.svc, v.commit, ...Object.values(v.components) as string[]]) assert.ok(t.stdout.includes(s), `text output carries ${s}`);

  assert.equal(loud.status, 0, 'version ignores malformed SERVICE_LOG_* values');
  assert.deepEqual(oneJsonObject(loud.stdout), v);

  assert.ok(srv, 'server from the previous test');
  const h = await srv!.api('GET', '/api/health');
  assert.equal(h.status, 200);
  assert.equal(h.body.status, 'ok');
  assert.equal(h.body.svc, v.svc, 'health reports the same product version');
  assert.equal(h.body.commit, v.commit, 'health reports the same commit');
  assert.deepEqual(h.body.components, v.components, 'health reports the same component versions');
  assert.equal(h.body.http.engine, v.http.engine, 'health reports the engine');
});

test('explain-code: known code, unknown code, listing (scenario table)', async () => {
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; exit: number; check: (r: { stdout: string; stderr: string }) => void }> = [
    {
      name: 'known code --json', args: ['explain-code', 'validation_min', '--json'], exit: 0,
      check: (r) => {
        const o = oneJsonObject(r.stdout);
        assert.deepEqual(Object.keys(o), ['code', 'known', 'summary', 'explanation']);
        assert.equal(o.code, 'validation_min');
        assert.equal(o.known, true);
        assert.ok(o.summary.length > 0 && o.explanation.length > 0);
      },
    },
    { name: 'known code, text', args: ['explain-code', 'payload_too_large'], exit: 0, check: (r) => assert.ok(r.stdout.includes('payload_too_large')) },
    { name: 'unknown code --json', args: ['explain-code', 'nope', '--json'], exit: 1, check: (r) => assert.deepEqual(oneJsonObject(r.stdout), { code: 'nope', known: false }) },
    { name: 'unknown code, text', args: ['explain-code', 'nope'], exit: 1, check: (r) => assert.ok(r.stderr.length > 0) },
    { name: 'a diagnostic-style dash-case id is not a code', args: ['explain-code', 'not-found', '--json'], exit: 1, check: (r) => assert.equal(oneJsonObject(r.stdout).known, false) },
    {
      name: 'known code with SERVICE_LOG_LEVEL=loud', args: ['explain-code', 'not_found', '--json'], env: { SERVICE_LOG_LEVEL: 'loud' }, exit: 0,
      check: (r) => assert.equal(oneJsonObject(r.stdout).known, true),
    },
    {
      name: 'listing --json', args: ['explain-code', '--json'], exit: 0,
      check: (r) => {
        const o = oneJsonObject(r.stdout);
        assert.deepEqual(Object.keys(o), ['codes']);
        const codes: string[] = o.codes.map((c: any) => c.code);
        for (const c of o.codes) {
          assert.deepEqual(Object.keys(c), ['code', 'summary']);
          assert.match(c.code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, 'snake_case');
          assert.ok(c.summary.length > 0);
        }
        assert.deepEqual(codes, [...codes].sort(), 'alphabetical');
        assert.equal(new Set(codes).size, codes.length, 'no duplicates');
        for (const general of ['bad_request', 'collections_frozen', 'conflict', 'email_not_verified', 'forbidden', 'gone', 'internal', 'not_found', 'not_implemented', 'overloaded', 'payload_too_large', 'too_many_requests', 'unauthorized', 'validation_failed']) {
          assert.ok(codes.includes(general), `listing has ${general}`);
        }
        assert.equal(codes.filter((c) => c.startsWith('validation_') && c !== 'validation_failed').length, 27, 'there are 27 validation_* codes');
      },
    },
  ];
  const results = await Promise.all(cases.map((c) => cli(c.args, c.env)));
  cases.forEach((c, i) => {
    const r = results[i];
    assert.equal(r.status, c.exit, `${c.name}: exit code (stderr ${r.stderr})`);
    c.check(r);
  });
});

test('usage errors exit 1; under --json stdout is one {error} object', async () => {
  const [unknownJson, unknownText, bare] = await Promise.all([
    cli(['frobnicate', '--json']),
    cli(['frobnicate']),
    cli([]),
  ]);
  assert.equal(unknownJson.status, 1);
  assert.deepEqual(Object.keys(oneJsonObject(unknownJson.stdout)), ['error']);
  assert.equal(unknownText.status, 1);
  assert.equal(unknownText.stdout, '', 'usage prose goes to stderr');
  assert.equal(bare.status, 1);
});
