/**
 * The rest of the app definition's keys (0-conventions.md "Embedding: the app
 * definition"; spec 1-core-api.md "Command line": migrate; 2-uploads-and-mail.md "Mail send API"),
 * end to end through the real `svc` process serving test/fixtures/app-ops.mjs:
 * - `migrations` (a directory of .sql and .js files): `svc migrate`, `migrate status` (exit 1
 *   while anything is pending or orphaned), `migrate preview` (needs dev-tools), pending ones
 *   applied when the server starts, a failing one rolled back and the start refused, `migrate`
 *   refused while a server holds the data directory;
 * - `mailer` (the capture backend) and `mail`: `app.mail.send`, `enqueue`, `render` and their
 *   errors, auth mail through the app's mailer, `GET /api/mail/config`; without them: SMTP from
 *   SERVICE_SMTP_* (a real smtp-server, text and HTML as multipart/alternative), no
 *   `/api/mail/config`, enqueue refused with UnknownJobKind;
 * - `featureRoutes`, `features` as an object (`/api/meta` devMode), and request ids in the log
 *   lines of failing application code.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { ROOT, runCli, startSvc, type Svc } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { sleep, withDb } from '../helpers/auth-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { createHmac } from 'node:crypto';

const APP = join(ROOT, 'test', 'fixtures', 'app-ops.mjs');
const work = mkdtempSync(join(tmpdir(), 'svc-ops-'));
const migrations = join(work, 'migrations');
const dataDir = join(work, 'data');
const env = { OPS_MIGRATIONS: migrations };
let srv: Svc | undefined;
let smtp: TestSmtp | undefined;

const cli = (...args: string[]) => runCli([...args, `--app=${APP}`, `--data-dir=${dataDir}`], env);
const json = (out: string) => JSON.parse(out.trim().split('\n').pop()!);
/** Rows of a query on the data directory's database (SQLite, or its PostgreSQL database: withDb). */
const rows = (sql: string): unknown[][] => withDb(dataDir, (db) => db.prepare(sql).raw(true).all() as unknown[][]);

before(async () => {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(migrations);
  writeFileSync(join(migrations, '0001_log.sql'), `CREATE TABLE app_log (msg TEXT NOT NULL);\nINSERT INTO app_log VALUES ('one');\n`);
  writeFileSync(join(migrations, '0002_seed.js'), `export default async function up(tx) {
  await tx.exec('INSERT INTO app_log VALUES (?)', ['two']);
  const seen = await tx.query('SELECT count(*) AS n FROM app_log');
  if (seen[0].n !== 2) throw new Error('a migration must see its own writes');
}\n`);
  writeFileSync(join(migrations, 'README.md'), 'Migrations of the ops fixture.\n');
});

after(async () => {
  await srv?.stop();
  await smtp?.close();
  rmSync(work, { recursive: true, force: true });
});

test('migrate status, preview and migrate: pending, applied in order, then ok', () => {
  const pending = cli('migrate', 'status', '--json');
  assert.equal(pending.status, 1, `status exits 1 while migrations are pending: ${pending.stderr}`);
  const s = json(pending.stdout);
  assert.deepEqual(s.migrations, [{ id: '0001_log', applied: false, applied_at: null }, { id: '0002_seed', applied: false, applied_at: null }]);
  assert.deepEqual(s.summary, { declared: 2, applied: 0, pending: 2, orphaned: 0 });
  assert.equal(s.ok, false);
  const text = cli('migrate', 'status');
  assert.equal(text.status, 1, 'text output gates the same way');
  assert.match(text.stdout, /pending\s+0001_log/);

  const preview = cli('migrate', 'preview', '--json');
  assert.equal(preview.status, 0, preview.stderr);
  assert.deepEqual(json(preview.stdout), {
    protocol_version: 1, scope: 'compiled-consumer-migrations',
    items: [{ id: '0001_log', kind: 'sql' }, { id: '0002_seed', kind: 'js' }], unknown: ['README.md'], includes_system_migrations: false,
  });
  const noDevTools = runCli(['migrate', 'preview', '--json', `--app=${APP}`], { ...env, OPS_PLAIN: '1' });
  assert.equal(noDevTools.status, 1);
  assert.equal(json(noDevTools.stdout).error.code, 'unavailable');
  assert.match(noDevTools.stderr, /dev-tools/);

  // without an app nothing is declared: a fresh data directory is ok, preview's lists are empty
  const noApp = runCli(['migrate', 'status', '--json', `--data-dir=${dataDir}`]);
  assert.equal(noApp.status, 0, noApp.stderr);
  assert.deepEqual(json(noApp.stdout), { migrations: [], orphaned: [], summary: { declared: 0, applied: 0, pending: 0, orphaned: 0 }, ok: true });
  const noAppPreview = runCli(['migrate', 'preview', '--json'], { SERVICE_FEATURES: 'dev-tools' });
  assert.equal(noAppPreview.status, 0, noAppPreview.stderr);
  assert.deepEqual(json(noAppPreview.stdout), { protocol_version: 1, scope: 'compiled-consumer-migrations', items: [], unknown: [], includes_system_migrations: false });
  const noAppApply = runCli(['migrate', '--json', `--data-dir=${dataDir}`]);
  assert.equal(noAppApply.status, 1, 'applying still needs the app');
  assert.equal(json(noAppApply.stdout).error.code, 'usage');

  const applied = cli('migrate', '--json');
  assert.equal(applied.status, 0, applied.stderr);
  assert.deepEqual(json(applied.stdout).applied, ['0001_log', '0002_seed']);
  assert.deepEqual(rows('SELECT msg FROM app_log ORDER BY msg'), [['one'], ['two']]);
  const again = cli('migrate', '--json');
  assert.deepEqual(json(again.stdout).applied, [], 'applied once only');

  const ok = cli('migrate', 'status', '--json');
  assert.equal(ok.status, 0, ok.stderr);
  const okBody = json(ok.stdout);
  assert.equal(okBody.ok, true);
  assert.ok(okBody.migrations.every((m: any) => m.applied && /^\d{4}-\d\d-\d\dT/.test(m.applied_at)));
  assert.deepEqual(okBody.summary, { declared: 2, applied: 2, pending: 0, orphaned: 0 });

  // without the app, the applied ones are orphaned (text and JSON gate alike)
  const orphans = runCli(['migrate', 'status', '--json', `--data-dir=${dataDir}`]);
  assert.equal(orphans.status, 1);
  const o = json(orphans.stdout);
  assert.deepEqual(o.orphaned.map((m: any) => m.id), ['0001_log', '0002_seed']);
  assert.deepEqual(o.summary, { declared: 0, applied: 0, pending: 0, orphaned: 2 });
  const orphansText = runCli(['migrate', 'status', `--data-dir=${dataDir}`]);
  assert.equal(orphansText.status, 1);
  assert.match(orphansText.stdout, /orphaned 0001_log/);
});

test('a server applies pending migrations before it serves; a failing one is rolled back and the start refused; migrate is refused while it runs', async () => {
  srv = await startSvc({ args: [`--app=${APP}`], env, dataDir });
  for (const title of ['one two three', 'four']) assert.equal((await srv.api('POST', '/api/collections/notes/records', { body: { title } })).status, 201);
  const busy = cli('migrate', '--json');
  assert.equal(busy.status, 1, 'refused while the server holds the data directory');
  assert.equal(json(busy.stdout).error.code, 'lock');
  await srv.stop();
  srv = undefined;

  // a data migration over a declared collection, picked up by the next start
  writeFileSync(join(migrations, '0003_words.js'), `export function up(tx) {
  tx.exec(\`UPDATE "notes" SET "words" = length("title") - length(replace("title", ' ', '')) + 1 WHERE "words" IS NULL OR "words" = 0\`);
}\n`);
  srv = await startSvc({ args: [`--app=${APP}`], env, dataDir });
  assert.match(srv.stderr(), /applied migration 0003_words/);
  const notes = await srv.api('GET', '/api/collections/notes/records?sort=title', {});
  assert.deepEqual(notes.body.items.map((n: any) => [n.title, n.words]), [['four', 1], ['one two three', 3]]);
  await srv.stop();
  srv = undefined;

  writeFileSync(join(migrations, '0004_bad.sql'), `INSERT INTO app_log VALUES ('bad');\nSELECT nonsense FROM nowhere;\n`);
  const { spawnSync } = await import('node:child_process');
  const failed = spawnSync(process.execPath, [join(ROOT, 'bin', 'svc.js'), 'serve', '--http=127.0.0.1:0', `--data-dir=${dataDir}`, `--app=${APP}`], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
  assert.equal(failed.status, 1, failed.stderr);
  assert.match(failed.stderr, /migration 0004_bad failed and was rolled back: .*nowhere/);
  assert.doesNotMatch(failed.stderr, /serving on/);
  assert.deepEqual(rows(`SELECT count(*) FROM app_log WHERE msg = 'bad'`), [[0]], 'nothing of the failed migration stays');
  const st = json(cli('migrate', 'status', '--json').stdout);
  assert.deepEqual(st.summary, { declared: 4, applied: 3, pending: 1, orphaned: 0 });

  // removed from the app after it was applied: orphaned, and status says not ok
  unlinkSync(join(migrations, '0004_bad.sql'));
  unlinkSync(join(migrations, '0002_seed.js'));
  const orphaned = cli('migrate', 'status', '--json');
  assert.equal(orphaned.status, 1);
  const o = json(orphaned.stdout);
  assert.deepEqual(o.orphaned.map((x: any) => x.id), ['0002_seed']);
  assert.deepEqual(o.summary, { declared: 2, applied: 2, pending: 0, orphaned: 1 });
  assert.equal(o.ok, false);
});

test('app.mail through the app mailer: send, enqueue, render, the spec errors, auth mail; /api/mail/config; featureRoutes; devMode', async () => {
  srv = await startSvc({ args: [`--app=${APP}`], env, dataDir });
  const send = (body: unknown) => srv!.api('POST', '/api/send', { body });
  const outbox = async () => (await srv!.api('GET', '/api/outbox', { token: srv!.suToken })).body.items;

  const ok = await send({ to: 'Ann <ann@example.com>', subject: 'Welcome', text: 'plain', html: '<b>rich</b>', reply_to: 'help@example.com' });
  assert.deepEqual(ok.body, { ok: true, result: null }, ok.text);
  assert.deepEqual((await outbox()).at(-1), { to: 'Ann <ann@example.com>', subject: 'Welcome', from: null, text: 'plain', html: '<b>rich</b>', reply_to: 'help@example.com' });
  const before = (await outbox()).length;
  for (const [body, code] of [
    [{ to: 'not-an-address', subject: 's', text: 't' }, 'InvalidAddress'],
    [{ to: 'a@example.com, b@example.com', subject: 's', text: 't' }, 'InvalidAddress'],
    [{ to: 'a@example.com\r\nBcc: everyone@example.com', subject: 's', text: 't' }, 'HeaderInjection'],
    [{ to: 'a@example.com', subject: 'Hi\r\nBcc: everyone@example.com', text: 't' }, 'HeaderInjection'],
    [{ to: 'a@example.com', subject: 'no body' }, 'EmptyBody'],
  ] as const) {
    const r = await send(body);
    assert.equal(r.body.code, code, JSON.stringify(body));
  }
  assert.equal((await outbox()).length, before, 'refused messages reach no backend');

  const queued = await srv.api('POST', '/api/enqueue', { body: { message: { to: 'bob@example.com', subject: 'Digest', html: '<p>weekly</p>' }, queue: 'digest' } });
  assert.deepEqual(queued.body, { ok: true, result: null });
  const badQueued = await srv.api('POST', '/api/enqueue', { body: { message: { to: 'bob@example.com', subject: 'x' } } });
  assert.equal(badQueued.body.code, 'EmptyBody', 'checked up front');
  for (let i = 0; i < 200 && !(await outbox()).some((m: any) => m.subject === 'Digest'); i++) await sleep(50);
  assert.ok((await outbox()).some((m: any) => m.subject === 'Digest' && m.html === '<p>weekly</p>'), 'the queued message was delivered');

  const rendered = await srv.api('POST', '/api/render', { body: { template: '{{> hi }} {{{ raw }}}', vars: { name: '<Ann>', raw: '<i>x</i>' }, partials: { hi: 'Hi {{ name }}' }, layout: '<main>{{{ body }}}</main>' } });
  assert.deepEqual(rendered.body.result, { html: '<main>Hi &lt;Ann&gt; <i>x</i></main>', text: '<main>Hi <Ann> <i>x</i></main>' });
  assert.equal((await srv.api('POST', '/api/render', { body: { template: '{{> missing }}' } })).body.code, 'UnknownPartial');
  assert.equal((await srv.api('POST', '/api/render', { body: { template: '{{#list}}x{{/list}}' } })).body.code, 'UnsupportedTag');

  // auth mail goes through the app's mailer too
  const PW = 'ops-pass-123';
  assert.equal((await srv.api('POST', '/api/collections/people/records', { body: { email: 'carol@example.com', password: PW, passwordConfirm: PW } })).status, 201);
  assert.equal((await srv.api('POST', '/api/collections/people/request-verification', { body: { email: 'carol@example.com' } })).status, 204);
  for (let i = 0; i < 200 && !(await outbox()).some((m: any) => m.to === 'carol@example.com'); i++) await sleep(50);
  const verification = (await outbox()).find((m: any) => m.to === 'carol@example.com');
  assert.ok(verification && /confirm-verification/.test(verification.text), 'the verification mail reached the app mailer');

  assert.equal((await srv.api('GET', '/api/mail/config', {})).status, 401);
  const carol = (await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: 'carol@example.com', password: PW } })).body.token;
  assert.equal((await srv.api('GET', '/api/mail/config', { token: carol })).status, 403);
  const config = await srv.api('GET', '/api/mail/config', { token: srv.suToken });
  assert.deepEqual(config.body, { require_verified_sender: false, check_suppression: true, webhook_configured: true, unsubscribe_configured: false });

  const welcome = await srv.api('POST', '/api/welcome', { body: { to: 'new@example.com', name: 'Ann <3' } });
  assert.deepEqual(welcome.body, { ok: true, result: null }, welcome.text);
  assert.deepEqual((await outbox()).find((m: any) => m.to === 'new@example.com'), {
    to: 'new@example.com', subject: 'Welcome, Ann <3', from: null, text: 'Hello Ann <3. The team', html: '<div class="mail"><p>Hello Ann &lt;3</p></div>',
  });
  assert.equal((await srv.api('POST', '/api/welcome', { body: { to: 'new@example.com', template: 'nope' } })).body.code, 'UnknownTemplate');

  const box = await srv.api('POST', '/api/outbox-check', {});
  assert.deepEqual(box.body, { outbox: true, count: 2, first: { from: null, to: 'kept@example.com', subject: 'Suppressed one', body: 'only recorded' }, found: 'sent@example.com', afterReset: 0 });
  const delivered = (await outbox()).map((m: any) => m.to);
  assert.ok(delivered.includes('sent@example.com') && !delivered.includes('kept@example.com'), 'enable(true) skips delivery; enable(false) delivers');

  const features = await srv.api('GET', '/api/admin/features', { token: srv.suToken });
  assert.equal(features.status, 200, 'featureRoutes moves the registry route');
  assert.equal(features.body.flags[0].name, 'beta');
  assert.equal((await srv.api('GET', '/api/features', { token: srv.suToken })).status, 404);
  const meta = (await srv.api('GET', '/api/meta', {})).body;
  assert.equal(meta.capabilities.devMode, true, 'features: { devTools: true }');
  assert.equal(meta.capabilities.mail, true);
});

test('bounce webhooks: signed events suppress hard bounces and complaints; bad signatures, stale timestamps and unknown providers are refused; suppressed recipients are refused', async () => {
  const s = srv!;
  const SECRET = 'ops-webhook-secret-0123456789';
  const hook = (provider: string, event: unknown, o: { ts?: number; account?: string; secret?: string; signature?: string } = {}) => {
    const body = JSON.stringify(event);
    const ts = String(o.ts ?? Math.floor(Date.now() / 1000));
    const account = o.account ?? '';
    const signature = o.signature ?? createHmac('sha256', o.secret ?? SECRET).update(`${ts}.${provider}.${account}.${body}`).digest('hex');
    return s.api('POST', `/api/mail/webhooks/${provider}`, { raw: body, headers: { 'content-type': 'application/json', 'X-Webhook-Timestamp': ts, 'X-Webhook-Signature': signature, ...(account ? { 'X-Account-Id': account } : {}) } });
  };
  const ses = { notificationType: 'Bounce', bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: 'Bounced@Example.com' }] } };
  const soft = { notificationType: 'Bounce', bounce: { bounceType: 'Transient', bouncedRecipients: [{ emailAddress: 'soft@example.com' }] } };
  const postmark = [{ RecordType: 'SpamComplaint', Email: 'angry@example.com' }, { RecordType: 'Bounce', Type: 'SoftBounce', Email: 'soft2@example.com' }];
  assert.equal((await hook('ses', ses, { secret: 'not-the-secret-0123456789' })).status, 401, 'a wrong signature');
  assert.equal((await hook('ses', ses, { ts: Math.floor(Date.now() / 1000) - 600 })).status, 401, 'a stale timestamp');
  assert.equal((await hook('ses', ses, { signature: '' })).status, 401, 'no signature');
  assert.equal((await hook('mailgun', ses)).status, 404, 'an unknown provider');
  const before = await s.api('POST', '/api/send', { body: { to: 'bounced@example.com', subject: 'x', text: 'y' } });
  assert.deepEqual(before.body, { ok: true, result: null }, 'not suppressed yet');
  const r1 = await hook('ses', ses);
  assert.equal(r1.status, 200, r1.text);
  assert.deepEqual(r1.body, { suppressed: 1 });
  assert.deepEqual((await hook('ses', soft)).body, { suppressed: 0 }, 'a soft bounce suppresses nothing');
  assert.deepEqual((await hook('postmark', postmark)).body, { suppressed: 1 });
  for (const to of ['bounced@example.com', 'Angry <ANGRY@example.com>']) {
    const r = await s.api('POST', '/api/send', { body: { to, subject: 'x', text: 'y' } });
    assert.equal(r.body.code, 'RecipientSuppressed', to);
    assert.equal((await s.api('POST', '/api/enqueue', { body: { message: { to, subject: 'x', text: 'y' } } })).body.code, 'RecipientSuppressed');
  }
  assert.deepEqual((await s.api('POST', '/api/send', { body: { to: 'soft@example.com', subject: 'x', text: 'y' } })).body, { ok: true, result: null });
});

test('failures of application code are logged with the request id (the caller\'s X-Request-Id, or one made)', async () => {
  const s = srv!;
  const crash = await s.api('POST', '/api/collections/notes/records', { body: { title: 'crash' }, headers: { 'X-Request-Id': 'req-abc-123' } });
  assert.equal(crash.status, 500);
  const after = await s.api('POST', '/api/collections/notes/records', { body: { title: 'after-crash' } });
  assert.equal(after.status, 201, 'an after-hook failure leaves the answer standing');
  const route = await s.api('GET', '/api/route-crash', { headers: { 'X-Request-Id': 'edge-42' } });
  assert.equal(route.status, 500);
  // the server's stderr reaches this process on its own stream, in its own time
  const failures = [
    /record hook notes\.beforeCreate failed \(request req-abc-123\): Error: before-hook crash/,
    /record hook notes\.afterCreate failed after the commit \(request [0-9a-f]{16}\)/,
    /route GET \/api\/route-crash failed \(request edge-42\)/,
  ];
  await waitFor(() => failures.every((re) => re.test(s.stderr())), 10_000);
  const log = s.stderr();
  for (const re of failures) assert.match(log, re);
  assert.deepEqual((await s.api('GET', '/api/rid', { headers: { 'X-Request-Id': 'trace-7' } })).body, { requestId: 'trace-7' });
  assert.match((await s.api('GET', '/api/rid', {})).body.requestId, /^[0-9a-f]{16}$/);
  assert.match((await s.api('GET', '/api/rid', { headers: { 'X-Request-Id': 'bad id with spaces' } })).body.requestId, /^[0-9a-f]{16}$/, 'a malformed id is replaced');
  await s.stop();
  srv = undefined;
});

test('without a mail group or mailer: SMTP from the environment (text and HTML as multipart/alternative), no mail routes, no enqueue', async () => {
  smtp = await startSmtp();
  srv = await startSvc({
    args: [`--app=${APP}`],
    env: { OPS_PLAIN: '1', SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none', SERVICE_SMTP_FROM: 'app@example.com' },
  });
  const r = await srv.api('POST', '/api/send', { body: { to: 'dave@example.com', subject: 'Both bodies', text: 'the plain part', html: '<p>the html part</p>', reply_to: 'help@example.com', from: 'Sales <sales@example.com>', headers: { 'X-Campaign': 'spring' }, tags: ['welcome', 'v2'] } });
  assert.deepEqual(r.body, { ok: true, result: null }, r.text);
  const m = await smtp.waitFor((x) => x.to.includes('dave@example.com'));
  assert.equal(m.from, 'sales@example.com', 'the per-message sender');
  assert.match(m.raw, /Content-Type: multipart\/alternative/i);
  assert.ok(m.raw.indexOf('the plain part') < m.raw.indexOf('the html part'), 'plain text first, HTML last');
  assert.match(m.raw, /Reply-To: help@example\.com/i);
  assert.match(m.raw, /^X-Campaign: spring$/m);
  assert.match(m.raw, /^X-Tags: welcome, v2$/m);
  const q = await srv.api('POST', '/api/enqueue', { body: { message: { to: 'dave@example.com', subject: 's', text: 't' } } });
  assert.equal(q.body.code, 'UnknownJobKind');
  assert.equal((await srv.api('GET', '/api/mail/config', { token: srv.suToken })).status, 404, 'no mail group: the route does not exist');
  assert.equal((await srv.api('GET', '/api/features', { token: srv.suToken })).status, 200, 'the registry route at its default mount');
  assert.equal((await srv.api('GET', '/api/meta', {})).body.capabilities.mail, false);
  assert.deepEqual((await srv.api('POST', '/api/outbox-check', {})).body, { outbox: false }, 'no test outbox without dev-tools');
});
