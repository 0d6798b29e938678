/**
 * Mail (docs/admin.md, "Mail"): how the server delivers mail, read-only (start-time
 * configuration: environment variables, `GET /api/_/mail`, never the password), and a test
 * message sent through it (`POST /api/settings/test/email`): a bad address is shown beside the
 * input, a transport failure (502) with the transport's reason.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, errorMessage } from '../api';
import { useApp } from '../state';
import { Alert, ReadOnlyPage, Select, TextInput, VariableList } from './ui';

interface MailSettings {
  transport: 'smtp' | 'command' | 'log' | 'plugin';
  source: 'environment' | 'app';
  from: string;
  smtp: { host: string; port: number; tls: string; username: string; passwordSet: boolean } | null;
  variables: string[];
}

const TRANSPORTS: Record<MailSettings['transport'], string> = {
  smtp: 'SMTP',
  command: 'A mail command (SERVICE_SENDMAIL_COMMAND)',
  log: 'None: messages are written to the server log',
  plugin: "The app's mailer",
};

const TLS: Record<string, string> = {
  none: 'none (plain)',
  starttls: 'STARTTLS (required)',
  implicit: 'implicit TLS',
  auto: 'auto (implicit on 465, else STARTTLS when offered)',
};

const TEMPLATES = [
  { value: '', label: 'A plain test message' },
  { value: 'verification', label: 'Verification' },
  { value: 'password-reset', label: 'Password reset' },
  { value: 'email-change', label: 'Email change' },
  { value: 'otp', label: 'One-time code' },
];

export function MailPage() {
  return (
    <ReadOnlyPage<MailSettings> title="Mail" sub="How the server sends its mail (verification, password reset, sign-in codes and links, an app's own mail)." path="/api/_/mail" show={(m) => <TransportCard m={m} />}>
      <TestMessage />
    </ReadOnlyPage>
  );
}

/** The transport, read-only, and where its settings come from. */
function TransportCard({ m }: { m: MailSettings }) {
  return (
    <section class="card" aria-labelledby="mail-transport">
      <h2 id="mail-transport">Transport</h2>
      <p class="notice">
        {m.source === 'app'
          ? <>Set by the app definition's <code>mailer</code>: change it in the app's code.</>
          : <>Start-time configuration: environment variables read when the server starts. To change them, set the variables below and restart the server.</>}
      </p>
      <dl class="settings-list">
        <dt>Transport</dt>
        <dd>{TRANSPORTS[m.transport]}</dd>
        {m.smtp && (
          <>
            <dt>Host</dt>
            <dd class="mono">{m.smtp.host}</dd>
            <dt>Port</dt>
            <dd class="mono">{m.smtp.port}</dd>
            <dt>TLS</dt>
            <dd>{TLS[m.smtp.tls] ?? m.smtp.tls}</dd>
            <dt>User</dt>
            <dd class="mono">{m.smtp.username || <span class="muted">none (no authentication)</span>}</dd>
            <dt>Password</dt>
            <dd>{m.smtp.passwordSet ? 'set (not shown)' : <span class="muted">not set</span>}</dd>
          </>
        )}
        {m.transport !== 'plugin' && (
          <>
            <dt>Sender</dt>
            <dd class="mono">{m.from}</dd>
          </>
        )}
      </dl>
      {m.source === 'environment' && (
        <VariableList names={m.variables} doc="docs/mail.md" />
      )}
    </section>
  );
}

/** The test message form: recipient and template; the answer shown under it. */
function TestMessage() {
  const { user, notify } = useApp();
  const [to, setTo] = useState(user.email);
  const [template, setTemplate] = useState('');
  const [sending, setSending] = useState(false);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [sendError, setSendError] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);

  const send = async (e: Event) => {
    e.preventDefault();
    setSending(true);
    setFieldErrors({});
    setSendError(null);
    setSent(null);
    try {
      await api('POST', '/api/settings/test/email', { json: { email: to.trim(), ...(template ? { template } : {}) } });
      setSent(`The transport took the message to ${to.trim()}.`);
      notify(`Test message sent to ${to.trim()}.`);
    } catch (err) {
      if (err instanceof ApiError && Object.keys(err.data).length) {
        setFieldErrors(Object.fromEntries(Object.entries(err.data).map(([k, v]) => [k, v.message])));
      } else setSendError(errorMessage(err));
    } finally {
      setSending(false);
    }
  };

  return (
    <section class="card" aria-labelledby="mail-test">
      <h2 id="mail-test">Send a test message</h2>
      <p class="muted">Sent now through the transport above, not queued: a failure is shown here.</p>
      <form class="row" onSubmit={send} noValidate>
        <TextInput class="grow" label="Recipient" type="email" value={to} onValue={setTo} error={fieldErrors.email} required autoComplete="email" spellcheck={false} />
        <Select label="Template" value={template} onValue={setTemplate} error={fieldErrors.template} options={TEMPLATES} />
        <button type="submit" class="btn btn-primary align-end" disabled={sending || !to.trim()}>{sending ? 'Sending…' : 'Send a test message'}</button>
      </form>
      <Alert message={sendError} />
      {sent && <p class="ok-text" role="status">{sent}</p>}
    </section>
  );
}
