/**
 * Mail from application code (`app.mail`; 2-uploads-and-mail.md "Mail message",
 * "Errors", templates): message checks with the spec's conditions, the capture mailer, and the
 * template syntax.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MailError, MailService, PluginTransport, captureMailer, checkMessage } from '../../../src/mail/mail-service.js';
import { TemplateError, renderNamed, renderTemplate, templateProblems } from '../../../src/mail/templates.js';

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof MailError || err instanceof TemplateError, String(err));
    return err.code;
  }
  assert.fail('accepted');
};

test('checkMessage: addresses, header injection, empty bodies, sizes', () => {
  assert.deepEqual(checkMessage({ to: 'Ann <ann@example.com>', subject: 'Hi', text: 't', html: '<b>h</b>', reply_to: 'help@example.com', from: 'app@example.com' }), {
    to: 'Ann <ann@example.com>', subject: 'Hi', text: 't', html: '<b>h</b>', replyTo: 'help@example.com', from: 'app@example.com',
  });
  assert.deepEqual(checkMessage({ to: 'ann@example.com', subject: '', html: '<p>x</p>', from: null }), { to: 'ann@example.com', subject: '', html: '<p>x</p>' });
  for (const to of ['', 'not an address', 'ann@', 'a@example.com, b@example.com', 'group: a@example.com;', '@example.com']) {
    assert.equal(code(() => checkMessage({ to, subject: 's', text: 't' })), 'InvalidAddress', to);
  }
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', reply_to: 'nope' })), 'InvalidAddress');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', from: 'x@' })), 'InvalidAddress');
  assert.equal(code(() => checkMessage({ to: 'a@example.com\r\nBcc: all@example.com', subject: 's', text: 't' })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 'hi\nBcc: all@example.com', text: 't' })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 'tab\there', text: 't' })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', reply_to: 'b@example.com\nX: y' , text: 't' })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's' })), 'EmptyBody');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: '', html: '' })), 'EmptyBody');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 'x'.repeat(999), text: 't' })), 'MessageTooLarge');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', html: 'x'.repeat(5 * 1024 * 1024 + 1) })), 'MessageTooLarge');
  assert.throws(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', cc: 'b@example.com' }), TypeError);
  // headers and tags
  assert.deepEqual(checkMessage({ to: 'a@example.com', subject: 's', text: 't', headers: { 'X-Campaign': 'spring' }, tags: ['welcome', 'v2'] }), { to: 'a@example.com', subject: 's', text: 't', headers: { 'X-Campaign': 'spring' }, tags: ['welcome', 'v2'] });
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', headers: { 'X-A': 'v\r\nBcc: x@example.com' } })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', headers: { 'Bad Name': 'v' } })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', headers: { Bcc: 'all@example.com' } })), 'HeaderInjection', 'standard headers come from the fields');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', tags: ['has space'] })), 'HeaderInjection');
  assert.equal(code(() => checkMessage({ to: 'a@example.com', subject: 's', text: 't', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })), 'HeaderInjection');
  assert.throws(() => checkMessage(null), TypeError);
});

test('MailService: send goes through the mailer, refused messages reach none; enqueue needs mail configured', async () => {
  const outbox = captureMailer();
  const queued: unknown[] = [];
  const queue = { enqueue: async (msg: unknown) => void queued.push(msg) } as never;
  const svc = new MailService(new PluginTransport(outbox), queue, true);
  await svc.send({ to: 'ann@example.com', subject: 'Now', text: 'hello' });
  assert.deepEqual(outbox.get(0), { to: 'ann@example.com', subject: 'Now', from: null, text: 'hello' });
  await assert.rejects(svc.send({ to: 'bad', subject: 's', text: 't' }), (e: MailError) => e.code === 'InvalidAddress');
  assert.equal(outbox.count(), 1, 'a refused message reaches no backend');
  await svc.enqueue({ to: 'bob@example.com', subject: 'Later', html: '<p>later</p>' }, { queue: 'digest' });
  await assert.rejects(svc.enqueue({ to: 'bob@example.com', subject: 'x' }), (e: MailError) => e.code === 'EmptyBody');
  assert.deepEqual(queued, [{ to: 'bob@example.com', subject: 'Later', html: '<p>later</p>' }]);
  outbox.reset();
  assert.equal(outbox.count(), 0);

  const bare = new MailService(new PluginTransport(outbox), queue, false);
  await assert.rejects(bare.enqueue({ to: 'a@example.com', subject: 's', text: 't' }), (e: MailError) => e.code === 'UnknownJobKind');
  const suppressing = new MailService(new PluginTransport(outbox), queue, true, { suppressed: async (email) => email === 'gone@example.com' });
  await assert.rejects(suppressing.send({ to: 'Gone <GONE@example.com>', subject: 's', text: 't' }), (e: MailError) => e.code === 'RecipientSuppressed');
  await assert.rejects(suppressing.enqueue({ to: 'gone@example.com', subject: 's', text: 't' }), (e: MailError) => e.code === 'RecipientSuppressed');

  // a failing backend: send rejects with its error
  const failing = new MailService(new PluginTransport({ send: () => { throw new Error('backend down'); } }), queue, true);
  await assert.rejects(failing.send({ to: 'a@example.com', subject: 's', text: 't' }), /backend down/);
});

test('renderTemplate: escaped and raw interpolation, partials, layout, text mode, refusals', () => {
  const vars = { name: '<Ann & Co>', link: '<a href="/x">x</a>' };
  assert.equal(renderTemplate('Hi {{ name }}', vars), 'Hi &lt;Ann &amp; Co&gt;');
  assert.equal(renderTemplate('Hi {{{ name }}}', vars), 'Hi <Ann & Co>');
  assert.equal(renderTemplate('Hi {{ name }}', vars, { html: false }), 'Hi <Ann & Co>', 'text rendering does not escape');
  assert.equal(renderTemplate('{{> header }}body', vars, { partials: { header: '[{{ name }}] ' } }), '[&lt;Ann &amp; Co&gt;] body');
  assert.equal(renderTemplate('{{{ link }}}', vars, { layout: '<main>{{{ body }}}</main>' }), '<main><a href="/x">x</a></main>');
  assert.equal(renderTemplate('x{{ missing }}y'), 'xy');
  assert.equal(code(() => renderTemplate('{{#items}}{{.}}{{/items}}', {})), 'UnsupportedTag');
  assert.equal(code(() => renderTemplate('{{^flag}}no{{/flag}}', {})), 'UnsupportedTag');
  assert.equal(code(() => renderTemplate('{{=<% %>=}}', {})), 'UnsupportedTag');
  assert.equal(code(() => renderTemplate('{{> nowhere }}', {})), 'UnknownPartial');
  assert.equal(code(() => renderTemplate('{{> a }}', {}, { partials: { a: '{{> b }}', b: '{{> a }}' } })), 'UnknownPartial');
  assert.equal(code(() => renderTemplate('{{ unclosed', {})), 'TemplateSyntax');
  assert.equal(code(() => renderTemplate('ok', {}, { layout: '{{#x}}{{/x}}' })), 'UnsupportedTag');
});

test('named templates: checked all at once; rendered with the subject and text unescaped, the HTML escaped in the layout', () => {
  const set = {
    templates: { welcome: { subject: 'Welcome, {{ name }}', text: 'Hi {{ name }} {{> sig }}', html: '<p>Hi {{ name }}</p>' } },
    partials: { sig: '-- the team' },
    layout: '<main>{{{ body }}}</main>',
  };
  assert.deepEqual(templateProblems(set), []);
  assert.deepEqual(renderNamed(set, 'welcome', { name: 'Ann & Bo' }), { subject: 'Welcome, Ann & Bo', text: 'Hi Ann & Bo -- the team', html: '<main><p>Hi Ann &amp; Bo</p></main>' });
  assert.equal(code(() => renderNamed(set, 'nope')), 'UnknownTemplate');
  const p = templateProblems({
    templates: { a: { subject: '{{#x}}{{/x}}', text: 'ok' }, b: { subject: 's' }, c: { subject: 's', html: '{{> missing }}', extra: 1 } as never, d: 'x' as never },
    layout: '{{ unclosed',
  });
  for (const e of ['mail.layout', 'mail.templates.a.subject: {{#x}}', 'mail.templates.b: needs a text or an html body', 'mail.templates.c.extra: unknown key', 'mail.templates.c.html: no partial named "missing"', 'mail.templates.d: must be']) {
    assert.ok(p.some((x) => x.includes(e)), `missing "${e}" in:\n${p.join('\n')}`);
  }
});
