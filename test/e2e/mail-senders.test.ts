/**
 * Sender identities (2-uploads-and-mail.md "Sender identity", its states, the sender
 * routes, require_verified_sender): a member adds a From address for the active account, the
 * token is mailed to it, verify with the right token (404 otherwise), the 60-second re-send limit,
 * listing in an `items` envelope, 401/403/400 for callers without an account, and account-scoped
 * sends refused (SenderNotVerified) until the From is verified, while a send for no account is not.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { sleep } from '../helpers/auth-helpers.js';

let srv: Svc;
const PW = 'senders-pass-1';
const tokens: Record<string, string> = {};
const ids: Record<string, string> = {};
const as = (who: string, account?: string) => ({ token: tokens[who], headers: account ? { 'X-Account-Id': account } : {} });
const outbox = async (): Promise<any[]> => (await srv.api('GET', '/api/outbox', { token: srv.suToken })).body.items;

before(async () => {
  srv = await startSvc({ args: [`--app=${join(ROOT, 'test', 'fixtures', 'app-senders.mjs')}`], env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  for (const who of ['ann', 'bob']) {
    const made = await srv.api('POST', '/api/collections/people/records', { body: { email: `${who}@example.com`, password: PW, passwordConfirm: PW } });
    ids[who] = made.body.id;
    tokens[who] = (await srv.api('POST', '/api/collections/people/auth-with-password', { body: { identity: `${who}@example.com`, password: PW } })).body.token;
  }
  await srv.api('POST', '/api/collections/memberships/records', { token: srv.suToken, body: { person: ids.ann, account: 'acme' } });
  await srv.api('POST', '/api/collections/memberships/records', { token: srv.suToken, body: { person: ids.bob, account: 'globex' } });
});

after(async () => {
  await srv?.stop();
});

test('add, mail the token, verify, list; re-send limit; wrong tokens and other accounts are 404', async () => {
  const added = await srv.api('POST', '/api/senders', { ...as('ann', 'acme'), body: { email: 'News@Acme.example' } });
  assert.equal(added.status, 201, added.text);
  assert.deepEqual(Object.keys(added.body), ['id', 'email', 'status']);
  assert.equal(added.body.email, 'news@acme.example', 'addresses compare case-insensitively');
  assert.equal(added.body.status, 'pending');
  const again = await srv.api('POST', '/api/senders', { ...as('ann', 'acme'), body: { email: 'news@acme.example' } });
  assert.equal(again.status, 429, 'a repeat within 60 s');

  let mail: any;
  for (let i = 0; i < 200 && !(mail = (await outbox()).find((m) => m.to === 'news@acme.example')); i++) await sleep(50);
  assert.ok(mail, 'the token was mailed to the address');
  const token = /\n\n(\S+)\n\n/.exec(mail.text)![1];

  assert.equal((await srv.api('POST', `/api/senders/${added.body.id}/verify`, { ...as('ann', 'acme'), body: { token: 'wrong' } })).status, 404);
  assert.equal((await srv.api('POST', `/api/senders/${added.body.id}/verify`, { ...as('ann', 'acme'), body: {} })).status, 404);
  assert.equal((await srv.api('POST', `/api/senders/${added.body.id}/verify`, { ...as('bob', 'globex'), body: { token } })).status, 404, "another account's identity");
  const ok = await srv.api('POST', `/api/senders/${added.body.id}/verify`, { ...as('ann', 'acme'), body: { token } });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body, { verified: true });

  const verified = await srv.api('POST', '/api/senders', { ...as('ann', 'acme'), body: { email: 'news@acme.example' } });
  assert.equal(verified.status, 200, 'already verified');
  assert.equal(verified.body.status, 'verified');
  const list = await srv.api('GET', '/api/senders', as('ann', 'acme'));
  assert.equal(list.body.items.length, 1);
  assert.deepEqual(Object.keys(list.body.items[0]), ['id', 'email', 'status', 'verified_at']);
  assert.match(list.body.items[0].verified_at, /^\d{4}-/);
  assert.deepEqual((await srv.api('GET', '/api/senders', as('bob', 'globex'))).body.items, [], 'accounts do not see each other');
  const su = await srv.api('GET', '/api/senders', { token: srv.suToken, headers: { 'X-Account-Id': 'acme' } });
  assert.equal(su.body.items.length, 1, 'a superuser names any account');
});

test('callers: anonymous 401, no account or a foreign one 403, a superuser without X-Account-Id 400; bad addresses 400', async () => {
  assert.equal((await srv.api('GET', '/api/senders', {})).status, 401);
  assert.equal((await srv.api('GET', '/api/senders', as('ann'))).status, 403, 'no active account');
  assert.equal((await srv.api('POST', '/api/senders', { ...as('ann', 'globex'), body: { email: 'x@globex.example' } })).status, 403, 'not a member');
  assert.equal((await srv.api('GET', '/api/senders', { token: srv.suToken })).status, 400);
  const bad = await srv.api('POST', '/api/senders', { ...as('ann', 'acme'), body: { email: 'not an address' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.data.email.code, 'validation_invalid_email');
});

test('require_verified_sender: an account-scoped send needs a verified From of that account; a send for no account does not', async () => {
  const notify = (who: string, account: string, from?: string) => srv.api('POST', '/api/notify', { ...as(who, account), body: { to: 'customer@example.com', subject: 'Hi', text: 'x', ...(from ? { from } : {}) } });
  assert.deepEqual((await notify('ann', 'acme', 'News <news@acme.example>')).body, { ok: true });
  assert.deepEqual((await notify('ann', 'acme', 'other@acme.example')).body, { ok: false, code: 'SenderNotVerified' });
  assert.deepEqual((await notify('ann', 'acme')).body, { ok: false, code: 'SenderNotVerified' }, 'no From at all');
  assert.deepEqual((await notify('bob', 'globex', 'news@acme.example')).body, { ok: false, code: 'SenderNotVerified' }, "another account's verified sender");
  const system = await srv.api('POST', '/api/system-notice', { token: srv.suToken, body: { to: 'customer@example.com', subject: 'System', text: 'x' } });
  assert.deepEqual(system.body, { ok: true });
  const sent = (await outbox()).filter((m) => m.to === 'customer@example.com');
  assert.deepEqual(sent.map((m) => [m.subject, m.from]), [['Hi', 'News <news@acme.example>'], ['System', null]]);
});
