/**
 * The HTTP-API mail backends (2-uploads-and-mail.md "Mail send API": provider A, the
 * SES v2 send-email API with request signing; provider B, Postmark's /email API), end to end:
 * the real `svc` with an app whose `mailer` is `sesMailer` or `postmarkMailer`, pointed at local
 * HTTP servers that check each request as the provider would (SES: an AWS Signature Version 4
 * recomputed here from the AWS specification, the JSON shape; Postmark: the server token and the
 * JSON shape) and refuse what the provider would refuse. A refusal fails `send` and makes the
 * queue retry.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createHash, createHmac } from 'node:crypto';
import { join } from 'node:path';
import { ROOT, startSvc, type Svc } from '../helpers/server.js';
import { sleep } from '../helpers/auth-helpers.js';

const APP = join(ROOT, 'test', 'fixtures', 'app-providers.mjs');
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const servers: Server[] = [];
const svcs: Svc[] = [];

after(async () => {
  for (const s of svcs) await s.stop();
  for (const s of servers) s.close();
});

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const hmac = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest();

/** Checks an AWS SigV4 Authorization header the way AWS does; answers why it is wrong, or null. */
function sigV4Problem(req: IncomingMessage, body: Buffer): string | null {
  const auth = String(req.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return `malformed Authorization: ${auth}`;
  const [, key, date, region, service, signedHeaders, signature] = m;
  if (key !== 'AKIDEXAMPLE' || region !== 'eu-west-1' || service !== 'ses') return 'wrong credential scope';
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (!amzDate.startsWith(date)) return 'x-amz-date does not match the scope';
  const names = signedHeaders.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  const canonicalHeaders = names.map((n) => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const [path, query = ''] = (req.url ?? '').split('?');
  const canonical = [req.method, path, query, canonicalHeaders, signedHeaders, sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/${service}/aws4_request`, sha256(canonical)].join('\n');
  const kSigning = hmac(hmac(hmac(hmac(`AWS4${SECRET}`, date), region), service), 'aws4_request');
  return createHmac('sha256', kSigning).update(toSign).digest('hex') === signature ? null : 'signature does not match';
}

interface Got { body: any; headers: IncomingMessage['headers'] }

async function fakeProvider(check: (req: IncomingMessage, body: Buffer) => { status: number; json: unknown }): Promise<{ url: string; got: Got[]; failNext: number }> {
  const state = { url: '', got: [] as Got[], failNext: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let out = check(req, body);
      if (out.status === 200 && state.failNext > 0) {
        state.failNext--;
        out = { status: 503, json: { message: 'try later' } };
      }
      if (out.status === 200) state.got.push({ body: JSON.parse(body.toString()), headers: req.headers });
      res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.json));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}

test('SES (provider A): v2 outbound-emails, SigV4-signed, text and HTML, reply-to, the per-message sender; a refusal fails send and the queue retries', { timeout: 60_000 }, async () => {
  const ses = await fakeProvider((req, body) => {
    if (req.method !== 'POST' || req.url !== '/v2/email/outbound-emails') return { status: 404, json: { message: 'no such API' } };
    if (!String(req.headers['content-type']).startsWith('application/json')) return { status: 415, json: {} };
    const problem = sigV4Problem(req, body);
    if (problem) return { status: 403, json: { message: `SignatureDoesNotMatch: ${problem}` } };
    return { status: 200, json: { MessageId: 'ses-1' } };
  });
  const srv = await startSvc({ args: [`--app=${APP}`], env: { PROVIDER: 'ses', PROVIDER_URL: ses.url } });
  svcs.push(srv);
  const r = await srv.api('POST', '/api/send', { body: { to: 'ann@example.com', subject: 'Hello', text: 'plain', html: '<b>rich</b>', reply_to: 'help@example.com' } });
  assert.deepEqual(r.body, { ok: true }, r.text);
  assert.equal(ses.got.length, 1);
  assert.deepEqual(ses.got[0].body, {
    FromEmailAddress: 'App <app@example.com>',
    Destination: { ToAddresses: ['ann@example.com'] },
    Content: { Simple: { Subject: { Data: 'Hello', Charset: 'UTF-8' }, Body: { Text: { Data: 'plain', Charset: 'UTF-8' }, Html: { Data: '<b>rich</b>', Charset: 'UTF-8' } } } },
    ReplyToAddresses: ['help@example.com'],
  });
  const own = await srv.api('POST', '/api/send', { body: { to: 'bob@example.com', subject: 'From sales', html: '<p>x</p>', from: 'sales@example.com', headers: { 'X-Campaign': 'spring' }, tags: ['promo'] } });
  assert.deepEqual(own.body, { ok: true });
  assert.equal(ses.got[1].body.FromEmailAddress, 'sales@example.com');
  assert.deepEqual(ses.got[1].body.Content.Simple.Headers, [{ Name: 'X-Campaign', Value: 'spring' }]);
  assert.deepEqual(ses.got[1].body.EmailTags, [{ Name: 'promo', Value: 'true' }]);
  assert.equal(ses.got[1].body.Content.Simple.Body.Text, undefined, 'no text part when there is no text');

  ses.failNext = 1;
  const refused = await srv.api('POST', '/api/send', { body: { to: 'carol@example.com', subject: 'Refused', text: 'x' } });
  assert.equal(refused.body.ok, false);
  assert.match(refused.body.error, /SES answered 503/);
  ses.failNext = 1;
  assert.deepEqual((await srv.api('POST', '/api/enqueue', { body: { to: 'dave@example.com', subject: 'Queued', text: 'y' } })).body, { ok: true });
  for (let i = 0; i < 100 && !ses.got.some((g) => g.body.Destination.ToAddresses[0] === 'dave@example.com'); i++) await sleep(50);
  assert.ok(ses.got.some((g) => g.body.Destination.ToAddresses[0] === 'dave@example.com'), 'delivered on the retry');
  assert.match(srv.stderr(), /mail to dave@example\.com failed \(attempt 1\)/);
});

test('Postmark (provider B): /email with the server token; a non-zero ErrorCode is a failure', async () => {
  const pm = await fakeProvider((req) => {
    if (req.method !== 'POST' || req.url !== '/email') return { status: 404, json: { ErrorCode: 404, Message: 'no such API' } };
    if (req.headers['x-postmark-server-token'] !== 'pm-server-token-123') return { status: 401, json: { ErrorCode: 10, Message: 'Bad or missing Server API token.' } };
    if (req.headers.accept !== 'application/json') return { status: 406, json: { ErrorCode: 406, Message: 'Accept application/json' } };
    return { status: 200, json: { ErrorCode: 0, Message: 'OK', MessageID: 'pm-1' } };
  });
  const srv = await startSvc({ args: [`--app=${APP}`], env: { PROVIDER: 'postmark', PROVIDER_URL: pm.url } });
  svcs.push(srv);
  const r = await srv.api('POST', '/api/send', { body: { to: 'Ann <ann@example.com>', subject: 'Hi', text: 'plain', html: '<i>x</i>', reply_to: 'help@example.com' } });
  assert.deepEqual(r.body, { ok: true }, r.text);
  assert.deepEqual(pm.got[0].body, { From: 'app@example.com', To: 'Ann <ann@example.com>', Subject: 'Hi', TextBody: 'plain', HtmlBody: '<i>x</i>', ReplyTo: 'help@example.com' });
  const tagged = await srv.api('POST', '/api/send', { body: { to: 'bob@example.com', subject: 'Tagged', text: 'x', headers: { 'X-Campaign': 'spring' }, tags: ['welcome', 'v2'] } });
  assert.deepEqual(tagged.body, { ok: true });
  assert.deepEqual(pm.got[1].body.Headers, [{ Name: 'X-Campaign', Value: 'spring' }]);
  assert.equal(pm.got[1].body.Tag, 'welcome');
  assert.deepEqual(pm.got[1].body.Metadata, { tags: 'welcome,v2' });
  const bad = await srv.api('POST', '/api/send', { body: { to: 'bad', subject: 'Hi', text: 'x' } });
  assert.deepEqual(bad.body, { ok: false, code: 'InvalidAddress' }, 'checked before the provider is called');
  assert.equal(pm.got.length, 2);
});
