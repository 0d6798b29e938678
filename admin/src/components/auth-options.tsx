/** Options of an auth collection: identity fields, password length, second factor, sessions, methods. */
import type { AuthDraft, FieldDraft } from './collection-draft';
import { Checkbox, Select, TextArea, TextInput } from './ui';

interface Props {
  draft: AuthDraft;
  fields: FieldDraft[];
  errors: Record<string, string>;
  onChange(a: AuthDraft): void;
}

export function AuthOptionsEditor({ draft, fields, errors, onChange }: Props) {
  const set = (p: Partial<AuthDraft>) => onChange({ ...draft, ...p });
  const e = (k: string) => errors[`options.auth.${k}`];
  const methodErrors = Object.entries(errors).filter(([k]) => k.startsWith('options.auth.methods'));
  const candidates = ['email', ...fields.filter((f) => f.type === 'text' && f.unique && f.name).map((f) => f.name)];
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
      <Checkbox label="Require a verified email to sign in" checked={draft.require_verified} onValue={(v) => set({ require_verified: v })} error={e('require_verified')} />
      <TextArea
        label="Sign-in methods (JSON)"
        class="mono-field"
        rows={6}
        value={draft.methods}
        onValue={(v) => set({ methods: v })}
        error={methodErrors.map(([k, m]) => `${k.replace('options.auth.methods.', '') || 'methods'}: ${m}`).join(' ') || null}
        hint={<>By slug: <code>password</code>, <code>magic_link</code>, <code>otp</code>, <code>oauth2</code>, <code>webauthn</code>; e.g. <code>{'{"otp": {"enabled": true, "ttl_s": 600}}'}</code>. See docs/api.md.</>}
        spellcheck={false}
      />
    </div>
  );
}
