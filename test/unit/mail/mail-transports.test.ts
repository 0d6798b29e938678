/**
 * The mail transports against a real SMTP server in the test process (spec 1-core-api.md, "Auth
 * endpoints": SMTP transport none, starttls, implicit or auto; a local mail command; otherwise
 * the log).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMailTransport, SmtpTransport, CommandTransport, LogTransport } from '../../../src/mail/transports.js';
import { createLogger } from '../../../src/log/logger.js';
import type { SmtpConfig } from '../../../src/config/config.js';
import { makeCert, startSmtp, type TestSmtp } from '../../helpers/smtp.js';

let cert: { key: string; cert: string };
let plain: TestSmtp;
let starttls: TestSmtp;
let implicit: TestSmtp;
let authed: TestSmtp;
const lines: string[] = [];
const logger = createLogger({ format: 'json', level: 'info', requests: false, write: (l) => lines.push(l) });
const msg = (to: string) => ({ to, subject: 'Subject line', text: 'Hello\ntoken: abc.def' });

before(async () => {
  cert = makeCert();
  [plain, starttls, implicit, authed] = await Promise.all([
    startSmtp(),
    startSmtp({ starttls: true, tls: cert }),
    startSmtp({ secure: true, tls: cert }),
    startSmtp({ starttls: true, tls: cert, users: { mailer: 's3cret' } }),
  ]);
});

after(async () => {
  await Promise.all([plain, starttls, implicit, authed].map((s) => s?.close()));
});

const smtp = (port: number, transport: SmtpConfig['transport'], extra: Partial<SmtpConfig> = {}): SmtpConfig => ({ host: '127.0.0.1', port, transport, from: 'svc@example.com', ...extra });

test('transport none: plain SMTP, STARTTLS ignored even when offered', async () => {
  for (const [srv, label] of [[plain, 'no STARTTLS offered'], [starttls, 'STARTTLS offered']] as const) {
    const t = new SmtpTransport(smtp(srv.port, 'none'), { ca: cert.cert });
    await t.send(msg(`none-${srv.port}@example.com`));
    t.close();
    const m = await srv.waitFor((x) => x.to.includes(`none-${srv.port}@example.com`));
    assert.equal(m.secure, false, label);
    assert.equal(m.from, 'svc@example.com');
    assert.match(m.raw, /^Subject: Subject line\r?$/m);
    assert.match(m.raw, /token: abc\.def/);
  }
});

test('transport starttls: upgrades, and refuses a server without STARTTLS', async () => {
  const t = new SmtpTransport(smtp(starttls.port, 'starttls'), { ca: cert.cert });
  await t.send(msg('tls@example.com'));
  t.close();
  assert.equal((await starttls.waitFor((x) => x.to.includes('tls@example.com'))).secure, true);
  const bad = new SmtpTransport(smtp(plain.port, 'starttls'), { ca: cert.cert });
  await assert.rejects(bad.send(msg('never@example.com')));
  bad.close();
  assert.ok(!plain.messages.some((x) => x.to.includes('never@example.com')));
});

test('transport implicit: TLS from the first byte; an untrusted certificate fails', async () => {
  const t = new SmtpTransport(smtp(implicit.port, 'implicit'), { ca: cert.cert });
  await t.send(msg('implicit@example.com'));
  t.close();
  assert.equal((await implicit.waitFor((x) => x.to.includes('implicit@example.com'))).secure, true);
  const untrusted = new SmtpTransport(smtp(implicit.port, 'implicit'));
  await assert.rejects(untrusted.send(msg('untrusted@example.com')));
  untrusted.close();
});

test('transport auto: STARTTLS when offered, plain when not; credentials are sent', async () => {
  const a = new SmtpTransport(smtp(starttls.port, 'auto'), { ca: cert.cert });
  await a.send(msg('auto-tls@example.com'));
  a.close();
  assert.equal((await starttls.waitFor((x) => x.to.includes('auto-tls@example.com'))).secure, true);
  const b = new SmtpTransport(smtp(plain.port, 'auto'));
  await b.send(msg('auto-plain@example.com'));
  b.close();
  assert.equal((await plain.waitFor((x) => x.to.includes('auto-plain@example.com'))).secure, false);

  const ok = new SmtpTransport(smtp(authed.port, 'auto', { username: 'mailer', password: 's3cret' }), { ca: cert.cert });
  await ok.send(msg('authed@example.com'));
  ok.close();
  assert.equal((await authed.waitFor((x) => x.to.includes('authed@example.com'))).user, 'mailer');
  const wrong = new SmtpTransport(smtp(authed.port, 'auto', { username: 'mailer', password: 'wrong' }), { ca: cert.cert });
  await assert.rejects(wrong.send(msg('denied@example.com')));
  wrong.close();
});

test('selection: command wins over SMTP, SMTP over the log', () => {
  assert.equal(createMailTransport({ smtp: smtp(1, 'none'), sendmailCommand: 'cat' }, logger).kind, 'command');
  assert.equal(createMailTransport({ smtp: smtp(1, 'none') }, logger).kind, 'smtp');
  assert.equal(createMailTransport({}, logger).kind, 'log');
});

test('command transport: the message on stdin, recipients only in the headers; a failing command rejects', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sendmail-'));
  try {
    const t = new CommandTransport(`cat > "${dir}/mail-$$.eml"`, 'svc@example.com');
    await t.send(msg('cmd@example.com'));
    const files = readdirSync(dir);
    assert.equal(files.length, 1);
    const raw = readFileSync(join(dir, files[0]), 'utf8');
    assert.match(raw, /^To: cmd@example\.com$/m);
    assert.match(raw, /^From: svc@example\.com$/m);
    assert.match(raw, /token: abc\.def/);
    await assert.rejects(new CommandTransport('echo boom >&2; exit 3', 'svc@example.com').send(msg('x@example.com')), /exited with 3: boom/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('log transport: one info line with scope mail carrying the text', async () => {
  lines.length = 0;
  await new LogTransport(logger).send(msg('log@example.com'));
  assert.equal(lines.length, 1);
  const rec = JSON.parse(lines[0]);
  assert.equal(rec.level, 'info');
  assert.equal(rec.scope, 'mail');
  assert.match(rec.msg, /to=log@example\.com /);
  assert.match(rec.msg, /abc\.def/);
});
