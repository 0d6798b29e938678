/**
 * The two HTTP-API mail backends (docs/framework.md, "Mail": one
 * constructed with region, access_key, secret_key, from, using the v2 send-email API with request
 * signing; one constructed with server_token, from, using its /email API;
 * their identifiers are `ses` and `postmark`). Each is a `mailer` for the app
 * definition.
 *
 * - `sesMailer`: `POST /v2/email/outbound-emails` on `email.<region>.amazonaws.com`, signed with
 *   AWS Signature Version 4 (the `aws4` library), service `ses`.
 * - `postmarkMailer`: `POST /email` on `api.postmarkapp.com` with the `X-Postmark-Server-Token`
 *   header; an answer whose `ErrorCode` is not 0 is a failure.
 * `endpoint` (an origin such as `http://127.0.0.1:4566`) points either at another host (a local
 * emulator, a test server). A non-2xx answer or a network error rejects `send`, so the queue
 * retries the message.
 */
import aws4 from 'aws4';
import type { Mailer } from './mail-service.js';

type Outgoing = Parameters<Mailer['send']>[0];

/** Milliseconds a provider request may take. */
const TIMEOUT_MS = 15_000;

async function post(url: URL, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
  return { status: res.status, text: await res.text() };
}

function providerError(name: string, status: number, text: string): Error {
  return new Error(`${name} answered ${status}: ${text.slice(0, 300)}`);
}

/** Amazon SES (API v2) as a mailer. */
export function sesMailer(o: { region: string; access_key: string; secret_key: string; from: string; endpoint?: string }): Mailer {
  for (const k of ['region', 'access_key', 'secret_key', 'from'] as const) if (typeof o[k] !== 'string' || !o[k]) throw new TypeError(`sesMailer: ${k} is required`);
  const base = new URL(o.endpoint ?? `https://email.${o.region}.amazonaws.com`);
  const url = new URL('/v2/email/outbound-emails', base);
  return {
    async send(m: Outgoing) {
      const body: Record<string, unknown> = {
        FromEmailAddress: m.from ?? o.from,
        Destination: { ToAddresses: [m.to] },
        Content: {
          Simple: {
            Subject: { Data: m.subject, Charset: 'UTF-8' },
            Body: {
              ...(m.text !== undefined ? { Text: { Data: m.text, Charset: 'UTF-8' } } : {}),
              ...(m.html !== undefined ? { Html: { Data: m.html, Charset: 'UTF-8' } } : {}),
            },
          },
        },
      };
      if (m.reply_to) body.ReplyToAddresses = [m.reply_to];
      if (m.headers) ((body.Content as { Simple: Record<string, unknown> }).Simple).Headers = Object.entries(m.headers).map(([Name, Value]) => ({ Name, Value }));
      if (m.tags?.length) body.EmailTags = m.tags.map((t) => ({ Name: t, Value: 'true' }));
      const text = JSON.stringify(body);
      const signed = aws4.sign(
        { host: url.host, path: url.pathname, method: 'POST', service: 'ses', region: o.region, headers: { 'Content-Type': 'application/json' }, body: text },
        { accessKeyId: o.access_key, secretAccessKey: o.secret_key },
      );
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(signed.headers ?? {})) if (k.toLowerCase() !== 'host' && k.toLowerCase() !== 'content-length') headers[k] = String(v);
      const res = await post(url, headers, text);
      if (res.status < 200 || res.status > 299) throw providerError('SES', res.status, res.text);
    },
  };
}

/** Postmark as a mailer. */
export function postmarkMailer(o: { server_token: string; from: string; endpoint?: string; message_stream?: string }): Mailer {
  for (const k of ['server_token', 'from'] as const) if (typeof o[k] !== 'string' || !o[k]) throw new TypeError(`postmarkMailer: ${k} is required`);
  const url = new URL('/email', o.endpoint ?? 'https://api.postmarkapp.com');
  return {
    async send(m: Outgoing) {
      const body: Record<string, unknown> = { From: m.from ?? o.from, To: m.to, Subject: m.subject };
      if (m.text !== undefined) body.TextBody = m.text;
      if (m.html !== undefined) body.HtmlBody = m.html;
      if (m.reply_to) body.ReplyTo = m.reply_to;
      if (m.headers) body.Headers = Object.entries(m.headers).map(([Name, Value]) => ({ Name, Value }));
      // Postmark takes one tag per message: the first; all of them go in Metadata
      if (m.tags?.length) {
        body.Tag = m.tags[0];
        body.Metadata = { tags: m.tags.join(',') };
      }
      if (o.message_stream) body.MessageStream = o.message_stream;
      const res = await post(url, { Accept: 'application/json', 'Content-Type': 'application/json', 'X-Postmark-Server-Token': o.server_token }, JSON.stringify(body));
      let code = -1;
      try {
        code = Number((JSON.parse(res.text) as { ErrorCode?: unknown }).ErrorCode ?? -1);
      } catch {
        code = -1;
      }
      if (res.status !== 200 || code !== 0) throw providerError('Postmark', res.status, res.text);
    },
  };
}
