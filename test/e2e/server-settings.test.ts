/**
 * The start-time settings the admin UI shows and the test message (src/api/server-settings.ts;
 * docs/api.md, "Mail and storage settings"), against the real server and a real SMTP server
 * (smtp-server): the message arrives for the right recipient (plain and from a template); a bad
 * address, an unknown template, an anonymous caller, a non-superuser and a transport that is down
 * are answered in the error envelope; the mail and storage views never carry a secret.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { startSvc, type Svc } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { assertError, login } from '../helpers/auth-helpers.js';

let smtp: TestSmtp;
let srv: Svc;
let userToken: string;

before(async () => {
  smtp = await startSmtp({ users: { mailer: 'smtp-pass-1' } });
  srv = await startSvc({
    env: {
      SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(smtp.port), SERVICE_SMTP_TRANSPORT: 'none',
      SERVICE_SMTP_USERNAME: 'mailer', SERVICE_SMTP_PASSWORD: 'smtp-pass-1', SERVICE_SMTP_FROM: 'svc@example.test',
    },
  });
  await srv.createCollection({ name: 'members', type: 'auth', fields: [] });
  await srv.api('POST', '/api/collections/members/records', { token: srv.suToken, body: { email: 'm@example.test', password: 'memberpass1', passwordConfirm: 'memberpass1' } });
  userToken = (await login(srv, 'members', 'm@example.test', 'memberpass1')).body.token;
});

after(async () => {
  await srv?.stop();
  await smtp?.close();
});

test('a test message goes through the configured SMTP transport to the given recipient', async () => {
  const r = await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: { email: 'ops@example.test' } });
  assert.equal(r.status, 204, JSON.stringify(r.body));
  const m = await smtp.waitFor((x) => x.to.includes('ops@example.test'));
  assert.deepEqual(m.to, ['ops@example.test']);
  assert.equal(m.from, 'svc@example.test');
  assert.equal(m.user, 'mailer');
  assert.match(m.raw, /Subject: Test message from svc/);

  const t = await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: { email: 'ops2@example.test', template: 'password-reset' } });
  assert.equal(t.status, 204);
  const m2 = await smtp.waitFor((x) => x.to.includes('ops2@example.test'));
  assert.match(m2.raw, /Subject: Reset your password/);
});

test('bad bodies answer 400 with the field named', async () => {
  const bad = await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: { email: 'not an address' } });
  assertError(bad, 400, 'validation_failed', 'bad address');
  assert.equal(bad.body.data.email.code, 'validation_invalid_email');
  const missing = await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: {} });
  assertError(missing, 400, 'validation_failed', 'no address');
  assert.equal(missing.body.data.email.code, 'validation_required');
  const tpl = await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: { email: 'a@example.test', template: 'nope' } });
  assertError(tpl, 400, 'validation_failed', 'unknown template');
  assert.ok(tpl.body.data.template);
  assertError(await srv.api('POST', '/api/settings/test/email', { token: srv.suToken, body: [1] }), 400, 'bad_request', 'array body');
});

test('only superusers: 401 anonymous, 403 a signed-in record', async () => {
  for (const [method, path] of [['POST', '/api/settings/test/email'], ['GET', '/api/_/mail'], ['GET', '/api/_/storage']] as const) {
    assertError(await srv.api(method, path, { body: method === 'POST' ? { email: 'x@example.test' } : undefined }), 401, 'unauthorized', `${path} anonymous`);
    assertError(await srv.api(method, path, { token: userToken, body: method === 'POST' ? { email: 'x@example.test' } : undefined }), 403, 'forbidden', `${path} record`);
  }
  assert.equal(smtp.messages.filter((m) => m.to.includes('x@example.test')).length, 0);
});

test('the mail view names the transport and its variables, never the password', async () => {
  const r = await srv.api('GET', '/api/_/mail', { token: srv.suToken });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.smtp, { host: '127.0.0.1', port: smtp.port, tls: 'none', username: 'mailer', passwordSet: true });
  assert.equal(r.body.transport, 'smtp');
  assert.equal(r.body.source, 'environment');
  assert.equal(r.body.from, 'svc@example.test');
  assert.ok(r.body.variables.includes('SERVICE_SMTP_HOST'));
  assert.doesNotMatch(JSON.stringify(r.body), /smtp-pass-1/);
});

test('the storage view shows the local folder', async () => {
  const r = await srv.api('GET', '/api/_/storage', { token: srv.suToken });
  assert.equal(r.status, 200);
  assert.equal(r.body.kind, 'local');
  assert.equal(r.body.path, `${srv.dataDir}/storage`);
});

test('an S3 bucket is shown with its endpoint, bucket and prefix, never its keys', async () => {
  const s3 = await startSvc({
    env: {
      SERVICE_STORAGE: 's3://svc-files/tenant-a', SERVICE_S3_ENDPOINT: 'http://127.0.0.1:9', SERVICE_S3_REGION: 'eu-west-3',
      SERVICE_S3_ACCESS_KEY_ID: 'AKIDTESTKEY', SERVICE_S3_SECRET_ACCESS_KEY: 'very-secret-s3-key',
    },
  });
  try {
    const r = await s3.api('GET', '/api/_/storage', { token: s3.suToken });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      kind: 's3', bucket: 'svc-files', prefix: 'tenant-a', endpoint: 'http://127.0.0.1:9', region: 'eu-west-3', forcePathStyle: true, credentials: 'keys',
      variables: r.body.variables,
    });
    assert.doesNotMatch(JSON.stringify(r.body), /very-secret-s3-key|AKIDTESTKEY/);
  } finally {
    await s3.stop();
  }
});

test('a transport that is down answers 502 bad_gateway with its reason', async () => {
  // a port nothing listens on: taken, then released
  const port = await new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const down = await startSvc({ env: { SERVICE_SMTP_HOST: '127.0.0.1', SERVICE_SMTP_PORT: String(port), SERVICE_SMTP_TRANSPORT: 'none' } });
  try {
    const r = await down.api('POST', '/api/settings/test/email', { token: down.suToken, body: { email: 'ops@example.test' } });
    assertError(r, 502, 'bad_gateway', 'transport down');
    assert.match(r.body.message, /ECONNREFUSED|connect/i);
    assert.deepEqual(r.body.data, {});
  } finally {
    await down.stop();
  }
});

test('without a transport the message is written to the log (204)', async () => {
  const plain = await startSvc();
  try {
    const r = await plain.api('POST', '/api/settings/test/email', { token: plain.suToken, body: { email: 'log@example.test' } });
    assert.equal(r.status, 204);
    const v = await plain.api('GET', '/api/_/mail', { token: plain.suToken });
    assert.equal(v.body.transport, 'log');
    assert.equal(v.body.smtp, null);
  } finally {
    await plain.stop();
  }
});
