/**
 * Mail from application code (issue 17 `app.mail`; 2-uploads-and-mail.md "Mail message",
 * "Errors", templates): message checks with the spec's conditions, the capture mailer, and the
 * template syntax.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MailError, MailService, PluginTransport, captureMailer, checkMessage } from '../../../src/mail/mail-service.js';
import { TemplateError, renderTemplate } from '../../../src/mail/templates.js';
import { createLogger } from '../../../src/log/logger.js';

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
  assert.throws(() => checkMessage(null), TypeError);
});

test('MailService: send goes through the mailer; enqueue checks first and needs mail configured', async () => {
  const logs: string[] = [];
  const logger = createLogger({ format: 'text', level: 'debug', requests: false, write: (l) => logs.push(l) });
  const outbox = captureMailer();
  const svc = new MailService(new PluginTransport(outbox), true, logger);
  await svc.send({ to: 'ann@example.com', subject: 'Now', text: 'hello' });
  assert.deepEqual(outbox.get(0), { to: 'ann@example.com', subject: 'Now', from: null, text: 'hello' });
  await assert.rejects(svc.send({ to: 'bad', subject: 's', text: 't' }), (e: MailError) => e.code === 'InvalidAddress');
  assert.equal(outbox.count(), 1, 'a refused message reaches no backend');
  svc.enqueue({ to: 'bob@example.com', subject: 'Later', html: '<p>later</p>' }, { queue: 'digest' });
  assert.throws(() => svc.enqueue({ to: 'bob@example.com', subject: 'x' }), (e: MailError) => e.code === 'EmptyBody');
  await svc.close();
  assert.equal(outbox.count(), 2);
  assert.equal(outbox.find('later')?.to, 'bob@example.com');
  outbox.reset();
  assert.equal(outbox.count(), 0);

  const bare = new MailService(new PluginTransport(outbox), false, logger);
  assert.throws(() => bare.enqueue({ to: 'a@example.com', subject: 's', text: 't' }), (e: MailError) => e.code === 'UnknownJobKind');

  // a failing backend: send rejects with its error
  const failing = new MailService(new PluginTransport({ send: () => { throw new Error('backend down'); } }), true, logger);
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
