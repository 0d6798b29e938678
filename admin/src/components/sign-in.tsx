/**
 * Superuser sign-in: email and password, then, when the `_superusers` policy asks, a TOTP or
 * recovery code (or a first TOTP enrollment, whose recovery codes are shown once).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { beginTotpEnrollment, completeFactor, completeTotpEnrollment, signIn, type SignInResult, type TotpEnrollment } from '../session';
import type { SuperuserRecord } from '../types';
import { Alert, SignInFrame, TextInput } from './ui';

type Step =
  | { kind: 'password' }
  | { kind: 'factor'; pendingToken: string }
  | { kind: 'enroll'; pendingToken: string; enrollment: TotpEnrollment | null }
  | { kind: 'codes'; record: SuperuserRecord; codes: string[] };

export function SignIn({ onSignedIn, notice }: { onSignedIn(u: SuperuserRecord): void; notice?: string | null }) {
  const [step, setStep] = useState<Step>({ kind: 'password' });
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [useRecovery, setUseRecovery] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** false: the server says no superuser exists yet (docs/admin.md, "First start") */
  const [installed, setInstalled] = useState(true);
  useEffect(() => {
    api<{ installed: boolean }>('GET', '/api/_/install', { session: false })
      .then((r) => setInstalled(r.installed !== false))
      .catch(() => undefined);
  }, []);

  const advance = async (r: SignInResult) => {
    setCode('');
    if (r.status === 'authenticated') {
      if (r.recoveryCodes?.length) setStep({ kind: 'codes', record: r.record, codes: r.recoveryCodes });
      else onSignedIn(r.record);
    } else if (r.status === 'factor_required') {
      setStep({ kind: 'factor', pendingToken: r.pendingToken });
    } else {
      setStep({ kind: 'enroll', pendingToken: r.pendingToken, enrollment: await beginTotpEnrollment(r.pendingToken) });
    }
  };

  const submit = (work: () => Promise<void>) => async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <SignInFrame>
      {notice && step.kind === 'password' && <p class="notice" role="status">{notice}</p>}
      {!installed && step.kind === 'password' && (
        <p class="notice" role="status">
          No superuser yet: see the install link in the server's output, or run <code>npx svc superuser create</code>.
        </p>
      )}
      {step.kind === 'password' && (
        <form onSubmit={submit(async () => advance(await signIn(email.trim(), password)))} aria-labelledby="signin-title">
          <h2 id="signin-title">Sign in as a superuser</h2>
          <TextInput label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} autofocus />
          <TextInput label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
          <Alert message={error} />
          <button class="btn btn-primary btn-block" type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        </form>
      )}
      {step.kind === 'factor' && (
        <form onSubmit={submit(async () => advance(await completeFactor(step.pendingToken, useRecovery ? 'recovery' : 'totp', code.trim())))} aria-labelledby="factor-title">
          <h2 id="factor-title">Second factor</h2>
          <p>{useRecovery ? 'Enter one of your recovery codes.' : 'Enter the 6-digit code from your authenticator app.'}</p>
          <TextInput
            label={useRecovery ? 'Recovery code' : 'Authentication code'}
            autoComplete="one-time-code"
            inputMode={useRecovery ? 'text' : 'numeric'}
            required
            value={code}
            onValue={setCode}
            autofocus
          />
          <Alert message={error} />
          <button class="btn btn-primary btn-block" type="submit" disabled={busy}>Verify</button>
          <button class="btn btn-link" type="button" onClick={() => setUseRecovery(!useRecovery)}>
            {useRecovery ? 'Use an authenticator code' : 'Use a recovery code'}
          </button>
        </form>
      )}
      {step.kind === 'enroll' && step.enrollment && (
        <form
          onSubmit={submit(async () => advance(await completeTotpEnrollment(step.pendingToken, step.enrollment!.ceremonyId, code.trim())))}
          aria-labelledby="enroll-title"
        >
          <h2 id="enroll-title">Set up two-factor sign-in</h2>
          <p>Superusers need a second factor. Add this key to an authenticator app, then enter the code it shows.</p>
          <p class="secret">
            Key: <code>{step.enrollment.secret}</code>
          </p>
          <p class="hint">
            Or open <a href={step.enrollment.uri}>the otpauth link</a> on a device with an authenticator app.
          </p>
          <TextInput label="Authentication code" autoComplete="one-time-code" inputMode="numeric" required value={code} onValue={setCode} autofocus />
          <Alert message={error} />
          <button class="btn btn-primary btn-block" type="submit" disabled={busy}>Activate and sign in</button>
        </form>
      )}
      {step.kind === 'codes' && (
        <section aria-labelledby="codes-title">
          <h2 id="codes-title">Recovery codes</h2>
          <p>Keep these codes somewhere safe: each one signs you in once without your authenticator. They are shown only now.</p>
          <ul class="codes">
            {step.codes.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
          <button class="btn btn-primary btn-block" type="button" onClick={() => onSignedIn(step.record)} autofocus>
            I saved them, continue
          </button>
        </section>
      )}
      {step.kind !== 'password' && step.kind !== 'codes' && (
        <button class="btn btn-link" type="button" onClick={() => { setStep({ kind: 'password' }); setError(null); }}>
          Back to the password
        </button>
      )}
    </SignInFrame>
  );
}
