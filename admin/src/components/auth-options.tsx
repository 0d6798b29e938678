/**
 * Options of an auth collection as a form (docs/admin.md, "Sign-in methods"): identity fields,
 * password length, each sign-in method of `options.auth.methods` (password, one-time code, magic
 * link, passkeys, OAuth2 providers), the second factor and sessions. The API's validation errors
 * appear beside the input their path names (`options.auth.methods.otp.ttl_s`,
 * `options.auth.methods.oauth2.providers.0.clientId`, …); those no input shows are listed below.
 */
import { PROVIDER_KINDS, newProvider, type AuthDraft, type ProviderDraft } from './auth-draft';
import type { FieldDraft } from './collection-draft';
import { Checkbox, Select, TextArea, TextInput } from './ui';

interface Props {
  draft: AuthDraft;
  fields: FieldDraft[];
  errors: Record<string, string>;
  onChange(a: AuthDraft): void;
}

const M = 'options.auth.methods';
/** error paths the form places beside an input */
const PLACED = [
  /^options\.auth\.methods\.password\.enabled$/,
  /^options\.auth\.methods\.(otp|magic_link)\.(enabled|ttl_s)$/,
  /^options\.auth\.methods\.webauthn\.(enabled|rpId|rpName|origins)$/,
  /^options\.auth\.methods\.oauth2\.(enabled|providers)$/,
  /^options\.auth\.methods\.oauth2\.providers\.\d+\.(name|kind|clientId|clientSecret|authUrl|tokenUrl|userInfoUrl|discoveryUrl|scopes|redirectUrls)$/,
];

export function AuthOptionsEditor({ draft, fields, errors, onChange }: Props) {
  const set = (p: Partial<AuthDraft>) => onChange({ ...draft, ...p });
  const e = (k: string) => errors[`options.auth.${k}`];
  const candidates = ['email', ...fields.filter((f) => f.type === 'text' && f.unique && f.name).map((f) => f.name)];
  const unplaced = Object.entries(errors).filter(([k]) => k.startsWith(M) && !PLACED.some((re) => re.test(k)));
  const providers = draft.oauth2.providers;
  const setProvider = (i: number, p: ProviderDraft) => set({ oauth2: { ...draft.oauth2, providers: providers.map((x, j) => (j === i ? p : x)) } });
  return (
    <div class="auth-options">
      <h3>Sign-in</h3>
      <div class="row">
        <TextInput
          class="grow"
          label="Identity fields"
          value={draft.identityFields}
          onValue={(v) => set({ identityFields: v })}
          error={e('identityFields')}
          hint={`Comma-separated; may be: ${candidates.join(', ')}.`}
          spellcheck={false}
        />
        <TextInput label="Minimum password length" type="number" min={1} max={256} value={draft.minPasswordLength} onValue={(v) => set({ minPasswordLength: v })} error={e('minPasswordLength')} class="narrow" />
      </div>
      <Checkbox label="Require a verified email to sign in" checked={draft.require_verified} onValue={(v) => set({ require_verified: v })} error={e('require_verified')} />

      <fieldset class="method">
        <legend>Password</legend>
        <Checkbox label="Sign in with a password" checked={draft.password} onValue={(v) => set({ password: v })} error={e('methods.password.enabled')} hint="With an identity field and the password." />
      </fieldset>

      <fieldset class="method">
        <legend>One-time code</legend>
        <Checkbox label="Sign in with a mailed code" checked={draft.otp.enabled} onValue={(v) => set({ otp: { ...draft.otp, enabled: v } })} error={e('methods.otp.enabled')} />
        <TextInput label="Code lifetime (seconds)" class="narrow" type="number" min={30} max={604800} placeholder="600" value={draft.otp.ttl} onValue={(v) => set({ otp: { ...draft.otp, ttl: v } })} error={e('methods.otp.ttl_s')} hint="30 to 604800; empty: 600." />
      </fieldset>

      <fieldset class="method">
        <legend>Magic link</legend>
        <Checkbox label="Sign in with a mailed link" checked={draft.magicLink.enabled} onValue={(v) => set({ magicLink: { ...draft.magicLink, enabled: v } })} error={e('methods.magic_link.enabled')} />
        <TextInput label="Link lifetime (seconds)" class="narrow" type="number" min={30} max={604800} placeholder="900" value={draft.magicLink.ttl} onValue={(v) => set({ magicLink: { ...draft.magicLink, ttl: v } })} error={e('methods.magic_link.ttl_s')} hint="30 to 604800; empty: 900." />
      </fieldset>

      <fieldset class="method">
        <legend>Passkeys</legend>
        <Checkbox label="Sign in with a passkey (WebAuthn)" checked={draft.webauthn.enabled} onValue={(v) => set({ webauthn: { ...draft.webauthn, enabled: v } })} error={e('methods.webauthn.enabled')} />
        <div class="row">
          <TextInput class="grow" label="Relying party id (rpId)" value={draft.webauthn.rpId} onValue={(v) => set({ webauthn: { ...draft.webauthn, rpId: v } })} error={e('methods.webauthn.rpId')} hint="The site's host name, e.g. example.com." spellcheck={false} autoComplete="off" />
          <TextInput class="grow" label="Relying party name (rpName)" value={draft.webauthn.rpName} onValue={(v) => set({ webauthn: { ...draft.webauthn, rpName: v } })} error={e('methods.webauthn.rpName')} hint="Shown by the authenticator; empty: the rpId." autoComplete="off" />
        </div>
        <TextArea label="Origins" rows={2} class="mono-field" value={draft.webauthn.origins} onValue={(v) => set({ webauthn: { ...draft.webauthn, origins: v } })} error={e('methods.webauthn.origins')} hint="One per line, e.g. https://app.example.com (http only on localhost)." spellcheck={false} />
      </fieldset>

      <fieldset class="method">
        <legend>OAuth2</legend>
        <Checkbox label="Sign in with an OAuth2 provider" checked={draft.oauth2.enabled} onValue={(v) => set({ oauth2: { ...draft.oauth2, enabled: v } })} error={e('methods.oauth2.enabled')} />
        {e('methods.oauth2.providers') && <div class="error-text">{e('methods.oauth2.providers')}</div>}
        {providers.length === 0 && <p class="muted">No providers yet.</p>}
        {providers.map((p, i) => (
          <ProviderEditor
            key={p.key}
            index={i}
            draft={p}
            error={(k) => e(`methods.oauth2.providers.${i}.${k}`)}
            onChange={(np) => setProvider(i, np)}
            onRemove={() => set({ oauth2: { ...draft.oauth2, providers: providers.filter((_, j) => j !== i) } })}
          />
        ))}
        <button type="button" class="btn" onClick={() => set({ oauth2: { ...draft.oauth2, providers: [...providers, newProvider()] } })}>+ Add provider</button>
      </fieldset>

      <h3>Second factor and sessions</h3>
      <div class="row">
        <Select
          label="Second factor"
          value={draft.two_factor}
          onValue={(v) => set({ two_factor: v })}
          error={e('two_factor')}
          hint="Required: every sign-in needs a TOTP code, passkey or recovery code."
          options={[{ value: 'disabled', label: 'disabled' }, { value: 'optional', label: 'optional' }, { value: 'required', label: 'required' }]}
        />
        <Select
          label="Session store"
          value={draft.sessionStore}
          onValue={(v) => set({ sessionStore: v })}
          error={e('session')}
          hint="table: per-device sessions that can be listed and ended."
          options={[{ value: 'epoch', label: 'epoch' }, { value: 'table', label: 'table' }]}
        />
      </div>
      {unplaced.length > 0 && (
        <ul class="error-list">
          {unplaced.map(([k, m]) => <li key={k}><code>{k.replace(`${M}.`, '')}</code>: {m}</li>)}
        </ul>
      )}
    </div>
  );
}

/** One OAuth2 provider: name, kind, client id and write-only secret, endpoints, scopes, redirects. */
function ProviderEditor({ index, draft: p, error, onChange, onRemove }: { index: number; draft: ProviderDraft; error(k: string): string | undefined; onChange(p: ProviderDraft): void; onRemove(): void }) {
  const set = (x: Partial<ProviderDraft>) => onChange({ ...p, ...x });
  const title = `Provider ${index + 1}${p.name ? `: ${p.name}` : ''}`;
  const generic = p.kind === 'generic';
  return (
    <fieldset class="provider">
      <legend>{title}</legend>
      <div class="row">
        <TextInput label="Name" value={p.name} onValue={(v) => set({ name: v })} error={error('name')} hint="Lowercase letters, digits, - and _." spellcheck={false} autoComplete="off" />
        <Select label="Kind" value={p.kind} onValue={(v) => set({ kind: v })} error={error('kind')} options={PROVIDER_KINDS.map((k) => ({ value: k, label: k === 'generic' ? 'generic (OpenID Connect)' : k }))} />
      </div>
      <div class="row">
        <TextInput class="grow" label="Client id" value={p.clientId} onValue={(v) => set({ clientId: v })} error={error('clientId')} spellcheck={false} autoComplete="off" />
        <TextInput
          class="grow"
          label="Client secret"
          type="password"
          value={p.clientSecret}
          onValue={(v) => set({ clientSecret: v })}
          error={error('clientSecret')}
          placeholder={p.storedSecret !== null ? '••••••••' : ''}
          hint={p.storedSecret !== null ? 'Set. Write-only: leave blank to keep it, or type a new one.' : 'Write-only: not shown once saved.'}
          autoComplete="new-password"
        />
      </div>
      <div class="row">
        <TextInput class="grow" label="Issuer discovery URL" type="url" value={p.discoveryUrl} onValue={(v) => set({ discoveryUrl: v })} error={error('discoveryUrl')} placeholder="https://issuer.example.com/.well-known/openid-configuration" hint={generic ? 'Or give the three endpoint URLs below.' : 'Optional: the kind has its endpoints built in.'} spellcheck={false} />
      </div>
      <div class="row">
        <TextInput class="grow" label="Authorization URL" type="url" value={p.authUrl} onValue={(v) => set({ authUrl: v })} error={error('authUrl')} spellcheck={false} />
        <TextInput class="grow" label="Token URL" type="url" value={p.tokenUrl} onValue={(v) => set({ tokenUrl: v })} error={error('tokenUrl')} spellcheck={false} />
        <TextInput class="grow" label="User info URL" type="url" value={p.userInfoUrl} onValue={(v) => set({ userInfoUrl: v })} error={error('userInfoUrl')} spellcheck={false} />
      </div>
      <TextInput label="Scopes" value={p.scopes} onValue={(v) => set({ scopes: v })} error={error('scopes')} hint="Space-separated; empty: the kind's defaults." spellcheck={false} autoComplete="off" />
      <TextArea label="Redirect URLs" rows={2} class="mono-field" value={p.redirectUrls} onValue={(v) => set({ redirectUrls: v })} error={error('redirectUrls')} hint="One per line: the only redirectUrl values a sign-in may complete with." spellcheck={false} />
      <button type="button" class="btn btn-danger-outline btn-small" onClick={onRemove} aria-label={`Remove ${title}`}>Remove provider</button>
    </fieldset>
  );
}
