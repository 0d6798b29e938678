/**
 * "Create the first superuser": the page the server's one-time install link opens
 * (`/_/install#<token>`, docs/admin.md "First start"). Email and the password twice; the server
 * creates the superuser (`POST /api/_/install`), then the page signs in with it.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, errorMessage } from '../api';
import { signIn } from '../session';
import type { SuperuserRecord } from '../types';
import { Alert, SignInFrame, TextInput } from './ui';

export function Install({ token, onSignedIn, onDone }: { token: string; onSignedIn(u: SuperuserRecord): void; onDone(notice: string): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setError(null);
    if (password !== again) {
      setErrors({ again: 'The two passwords differ.' });
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      await api('POST', '/api/_/install', { json: { token, email: email.trim(), password }, session: false });
    } catch (err) {
      if (err instanceof ApiError) setErrors(Object.fromEntries(Object.entries(err.data).map(([k, v]) => [k, v.message])));
      setError(errorMessage(err));
      setBusy(false);
      return;
    }
    try {
      const r = await signIn(email.trim(), password);
      if (r.status === 'authenticated') onSignedIn(r.record);
      else onDone('The superuser is created: sign in to finish.');
    } catch (err) {
      onDone(`The superuser is created, but signing in failed: ${errorMessage(err)}`);
    }
  };

  return (
    <SignInFrame>
      <form onSubmit={submit} aria-labelledby="install-title">
        <h2 id="install-title">Create the first superuser</h2>
        <p class="muted">Superusers manage collections, records and settings. This link works once.</p>
        <TextInput label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} error={errors.email} autofocus />
        <TextInput label="Password" type="password" autoComplete="new-password" required value={password} onValue={setPassword} error={errors.password} hint="At least 8 characters." />
        <TextInput label="Password again" type="password" autoComplete="new-password" required value={again} onValue={setAgain} error={errors.again} />
        <Alert message={error} />
        <button class="btn btn-primary btn-block" type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create and sign in'}</button>
      </form>
    </SignInFrame>
  );
}
