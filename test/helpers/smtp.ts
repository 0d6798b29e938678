/**
 * A real SMTP server (smtp-server) inside the test process that captures every message, plus a
 * throw-away self-signed certificate (openssl) for the TLS transports.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';

export interface Captured {
  from: string;
  to: string[];
  raw: string;
  /** the connection was TLS (implicit or after STARTTLS) when the message arrived */
  secure: boolean;
  /** the authenticated user name, if any */
  user?: string;
}

export interface TestSmtp {
  port: number;
  messages: Captured[];
  /** resolves with the first captured message matching `pred` (waits up to `timeoutMs`) */
  waitFor(pred: (m: Captured) => boolean, timeoutMs?: number): Promise<Captured>;
  close(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 / localhost. */
export function makeCert(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cert-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Starts a capturing SMTP server on 127.0.0.1.
 * @param o.secure    implicit TLS from the first byte
 * @param o.starttls  offer STARTTLS (needs o.tls)
 * @param o.users     when given, AUTH is required and checked against it
 * @param o.delayMs   answer each message this much later (a slow server; the message is captured at once)
 * @param o.port      listen on this port (default: a free one)
 */
export async function startSmtp(o: { secure?: boolean; starttls?: boolean; tls?: { key: string; cert: string }; users?: Record<string, string>; delayMs?: number; port?: number } = {}): Promise<TestSmtp> {
  const messages: Captured[] = [];
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    secure: !!o.secure,
    ...(o.tls ?? {}),
    hideSTARTTLS: !o.starttls,
    disabledCommands: o.starttls || o.secure ? [] : ['STARTTLS'],
    authOptional: !o.users,
    allowInsecureAuth: true,
    logger: false,
    disableReverseLookup: true,
    onAuth(auth, _session, cb) {
      if (o.users && o.users[auth.username ?? ''] === auth.password) cb(null, { user: auth.username });
      else cb(new Error('Invalid username or password'));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (d: Buffer) => chunks.push(d));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : undefined,
        });
        for (const w of waiters.splice(0)) w();
        if (o.delayMs) setTimeout(() => cb(), o.delayMs);
        else cb();
      });
    },
  });
  // Connection errors (a client refusing our certificate, a dropped socket) are part of the tests.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(o.port ?? 0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    messages,
    async waitFor(pred, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = messages.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`no matching SMTP message; got ${messages.length}: ${messages.map((m) => m.to.join(',')).join(' | ')}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, 100);
          waiters.push(() => {
            clearTimeout(t);
            r();
          });
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
