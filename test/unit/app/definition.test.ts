/**
 * defineApp's checks (0-conventions.md "Embedding: the app definition"): every problem
 * of a definition in one AppDefinitionError, synchronously; and JobRunner's pool (no overlap
 * beyond poolSize, failures logged, idle waits for running jobs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { AppDefinitionError, appDatabaseUrl, defineApp, featureNames, isCronExpression } from '../../../src/app/definition.js';
import { defineApp as defineRunnable, isApp } from '../../../src/app/app.js';
import { JobRunner } from '../../../src/app/runtime.js';
import type { Logger } from '../../../src/log/logger.js';

function problems(def: unknown): string[] {
  try {
    defineApp(def as never);
  } catch (err) {
    assert.ok(err instanceof AppDefinitionError, String(err));
    return err.problems;
  }
  assert.fail('accepted');
}

const noop = () => {};

test('a valid definition is accepted and frozen; defineApp from the package root adds start()', () => {
  const def = defineApp({
    features: ['vector'],
    pagination: { offset: true, cursor: false, cursorToken: 'signed' },
    hooks: { records: { posts: { beforeCreate: noop, afterDelete: noop } }, auth: { beforeRefresh: noop } },
    onAuthSuccess: noop,
    routes: [{ method: 'GET', path: '/api/things/:id', auth: 'authed', handler: noop }, { method: 'get', path: '/api/things', handler: noop }],
    jobs: [{ name: 'nightly', schedule: '0 3 * * *', poolSize: 2, handler: noop }],
    authMethods: [{ slug: 'pin', complete: () => 'id' }],
  });
  assert.ok(Object.isFrozen(def));
  const app = defineRunnable({ routes: [{ method: 'POST', path: '/api/x', handler: noop }] });
  assert.ok(isApp(app));
  assert.equal(typeof app.start, 'function');
  assert.ok(!isApp({ routes: [] }));
});

test('every problem is listed at once', () => {
  const p = problems({
    colections: [],
    migrations: [{ id: '', up: 1 }],
    features: ['warp-drive'],
    pagination: { offset: false, cursor: false, extra: 1 },
    hooks: { records: { posts: { beforeSave: noop, afterCreate: 'nope' } }, auth: { onLogin: noop }, other: {} },
    onAuthSuccess: 42,
    routes: [
      { method: 'FETCH', path: '/api/a', handler: noop },
      { method: 'GET', path: 'api/b', handler: noop },
      { method: 'GET', path: '/api/c/:id/:id', handler: noop },
      { method: 'GET', path: '/api/collections/x', handler: noop },
      { method: 'GET', path: '/api/d?x=1', handler: noop },
      { method: 'GET', path: '/api/e', auth: 'admin', handler: noop },
      { method: 'GET', path: '/api/f' },
      { method: 'GET', path: '/api/g/:id', handler: noop },
      { method: 'get', path: '/api/g/:other', handler: noop },
      { method: 'GET', path: '/api/h', rateLimit: { max: 0, windowS: 1 }, handler: noop },
    ],
    jobs: [
      { name: 'a', schedule: '* * * *', handler: noop },
      { name: 'b', schedule: '61 * * * *', handler: noop },
      { name: 'c', schedule: '* * * * *', poolSize: 0, handler: noop },
      { name: 'c', schedule: '* * * * *', handler: noop },
      { name: 'bad name!', schedule: '* * * * *' },
    ],
    authMethods: [{ slug: 'password', complete: noop }, { slug: 'Bad-Slug', complete: noop }, { slug: 'x' }, { slug: 'y', complete: noop }, { slug: 'y', complete: noop }],
  });
  const expect = [
    'colections: unknown key', 'migrations[0].id: must be a string', 'migrations[0].up: must be a function', 'features: unknown feature "warp-drive"',
    'pagination.extra: unknown key', 'pagination: offset and cursor cannot both be off',
    'hooks.other: unknown key', 'hooks.records.posts.beforeSave: unknown hook', 'hooks.records.posts.afterCreate: must be a function', 'hooks.auth.onLogin: unknown hook',
    'onAuthSuccess: must be a function',
    'routes[0].method', 'routes[1].path: must start with /api/', 'routes[2].path: a parameter name appears twice', 'routes[3].path: /api/collections/x is under a path the server owns',
    'routes[4].path: must be a plain path', 'routes[5].auth', 'routes[6].handler', 'routes[8]: GET /api/g/:other is defined twice', 'routes[9].rateLimit',
    'jobs[0].schedule', 'jobs[1].schedule', 'jobs[2].poolSize', 'jobs[3].name: the job name "c" is used twice', 'jobs[4].name', 'jobs[4].handler',
    'authMethods[0].slug: "password" is a built-in method', 'authMethods[1].slug', 'authMethods[2].complete', 'authMethods[4].slug: "y" is used twice',
  ];
  for (const e of expect) assert.ok(p.some((x) => x.includes(e)), `missing "${e}" in:\n${p.join('\n')}`);
  assert.equal(p.length, expect.length, p.join('\n'));
});

test('flags, experiments and stateRoute are checked', () => {
  const p = problems({
    flags: [{ name: 'Bad Name', default: true }, { name: 'a', default: 'yes' }, { name: 'a', default: true }, { name: 'b', default: true, extra: 1 }],
    experiments: [
      { name: 'e1', variants: [] },
      { name: 'e2', variants: [{ name: 'x', weight: 0 }, { name: 'y', weight: 0 }] },
      { name: 'e3', variants: [{ name: 'x', weight: 1 }, { name: 'x', weight: 1.5 }], sticky: 'yes' },
      { name: 'e3', variants: [{ name: 'z', weight: 1 }] },
    ],
    stateRoute: '/api/collections/state',
  });
  const expect = [
    'flags[0].name', 'flags[1].default', 'flags[2].name: the flag "a" is declared twice', 'flags[3].extra: unknown key',
    'experiments[0].variants', 'experiments[1].variants: the weights must add up', 'experiments[2].variants[1].name: "x" appears twice',
    'experiments[2].variants[1].weight', 'experiments[2].sticky', 'experiments[3].name: the experiment "e3" is declared twice', 'stateRoute:',
  ];
  for (const e of expect) assert.ok(p.some((x) => x.includes(e)), `missing "${e}" in:\n${p.join('\n')}`);
  assert.equal(p.length, expect.length, p.join('\n'));
  assert.doesNotThrow(() => defineApp({ stateRoute: false }));
  assert.doesNotThrow(() => defineApp({ stateRoute: '/api/my-state' }));
  assert.doesNotThrow(() => defineApp({ stateRoute: '/api/state' }));
});

test('migrations, mail, mailer, featureRoutes and the features object are checked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  try {
    writeFileSync(join(dir, '0001_first.sql'), 'SELECT 1;');
    writeFileSync(join(dir, 'README.md'), 'notes');
    assert.doesNotThrow(() => defineApp({ migrations: dir }), 'a directory of migration files');
    assert.doesNotThrow(() => defineApp({ migrations: pathToFileURL(dir) }), 'a file: URL');
    writeFileSync(join(dir, 'second.sql'), 'SELECT 2;');
    writeFileSync(join(dir, '0002_x.sql'), '');
    writeFileSync(join(dir, '0002_x.js'), '');
    const p = problems({
      migrations: dir,
      features: { vector: true, warp: true, fts5: 'no' },
      mail: { require_verified_sender: 1, check_suppression: 'yes', webhook_secret: 'short', bounce: 1 },
      mailer: { deliver: noop },
      featureRoutes: '/api/admin/',
    });
    const expect = [
      'migrations: second.sql is not a migration file name', 'migrations: two files are named 0002_x',
      'features.warp: unknown feature', 'features.fts5: must be a boolean',
      'mail.require_verified_sender: must be a boolean', 'mail.check_suppression: must be a boolean',
      'mail.webhook_secret: must be a string of at least 16 characters', 'mail.bounce: unknown key',
      'mailer: must be a mail backend', 'featureRoutes: must be a path prefix',
    ];
    for (const e of expect) assert.ok(p.some((x) => x.includes(e)), `missing "${e}" in:\n${p.join('\n')}`);
    assert.equal(p.length, expect.length, p.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const more = problems({
    migrations: [{ id: 'a', up: noop }, { id: 'a', up: noop, down: noop }],
    featureRoutes: '/api/collections',
    features: 'vector',
    mail: { webhook_secret: 'a-secret-of-enough-length', check_suppression: true },
  });
  assert.equal(more.length, 4, more.join('\n'));
  assert.deepEqual(problems({ mail: { templates: { hi: { subject: '{{#loop}}x{{/loop}}', text: 't' } } } }), ['mail.templates.hi.subject: {{#loop}}: templates have no loops or conditionals']);
  for (const e of ['migrations[1].id: "a" is used twice', 'migrations[1].down: unknown key', 'featureRoutes: /api/collections is under a path the server owns', 'features: must be an object']) {
    assert.ok(more.some((x) => x.includes(e)), `missing "${e}" in:\n${more.join('\n')}`);
  }
  assert.deepEqual(problems({ migrations: '/no/such/dir' }), ['migrations: the directory /no/such/dir does not exist']);
  assert.deepEqual(problems({ migrations: 42 }), ['migrations: must be an array of {id, up(tx)} or a directory path']);
  assert.doesNotThrow(() => defineApp({ features: { devTools: true, fts5: false }, mail: {}, mailer: { send: noop }, featureRoutes: '/api/admin', migrations: [{ id: '0001', up: noop }] }));
  assert.deepEqual(featureNames({ vector: true, fts5: false, devTools: true, resumableUploads: false }), ['vector', 'fts5-off', 'dev-tools']);
  assert.deepEqual(featureNames({ fts5: true, vector: false }), []);
});

test('database: a postgres:// URL, or left out / empty for the embedded database', () => {
  for (const ok of ['postgres://svc@db:5432/app', 'postgresql://u:p@127.0.0.1/x?sslmode=disable', '', undefined]) {
    assert.doesNotThrow(() => defineApp({ database: ok }), String(ok));
  }
  assert.equal(appDatabaseUrl(defineApp({ database: ' postgres://svc@db/app ' })), 'postgres://svc@db/app');
  assert.equal(appDatabaseUrl(defineApp({ database: '' })), undefined);
  assert.equal(appDatabaseUrl(defineApp({})), undefined);
  for (const bad of ['mysql://u@h/db', 'svc_data/data.db', 42, { url: 'postgres://h/db' }]) {
    assert.deepEqual(problems({ database: bad }), ['database: must be a postgres:// or postgresql:// URL (or left out for the embedded database)'], String(bad));
  }
});

test('declared collections are checked for shape', () => {
  const p = problems({ collections: [{ name: 'posts' }, { name: 'Posts' }, { name: '_secret' }, { name: '1x' }, { name: 'ok', type: 'view' }, { name: 'f', fields: 'x' }, { name: 'r', listRule: 5 }, 'nope'] });
  const expect = ['collections[1].name: "Posts" is declared twice', 'collections[2].name: system collections', 'collections[3].name', 'collections[4].type', 'collections[5].fields', 'collections[6].listRule', 'collections[7]: must be an object'];
  for (const e of expect) assert.ok(p.some((x) => x.includes(e)), `missing "${e}" in:\n${p.join('\n')}`);
  assert.equal(p.length, expect.length, p.join('\n'));
});

test('not an object; cron expressions are five fields', () => {
  assert.throws(() => defineApp(null as never), AppDefinitionError);
  assert.ok(isCronExpression('*/5 * * * *'));
  assert.ok(isCronExpression('0 9 * * 1-5'));
  assert.ok(!isCronExpression('* * * * * *'), 'six fields');
  assert.ok(!isCronExpression('0 25 * * *'));
  assert.ok(!isCronExpression(5));
});

test('JobRunner: at most poolSize runs at once, extra ticks skipped, failures logged, idle waits', async () => {
  const lines: string[] = [];
  const logger = { debug: noop, info: noop, warn: (m: string) => lines.push(`warn ${m}`), error: (m: string) => lines.push(`error ${m}`) } as unknown as Logger;
  let release: () => void = noop;
  let runs = 0;
  const runner = new JobRunner({ name: 'slow', schedule: '* * * * *', poolSize: 2, handler: async () => { runs++; await new Promise<void>((r) => (release = r)); } }, {} as never, logger);
  assert.equal(runner.tick(), true);
  const firstRelease = release;
  assert.equal(runner.tick(), true);
  assert.equal(runner.tick(), false, 'the pool of 2 is full');
  assert.ok(lines.some((l) => l.includes('skipped a tick')));
  let idle = false;
  const waiting = runner.idle().then(() => (idle = true));
  firstRelease();
  await new Promise((r) => setImmediate(r));
  assert.equal(idle, false, 'one run still going');
  release();
  await waiting;
  assert.equal(runs, 2);
  const failing = new JobRunner({ name: 'broken', schedule: '* * * * *', handler: () => { throw new Error('nope'); } }, {} as never, logger);
  failing.tick();
  await failing.idle();
  assert.ok(lines.some((l) => l.startsWith('error job broken failed')));
});
