/**
 * The side panel that creates or edits one record: a control per field (see field-input.tsx),
 * the API's validation errors under each, delete with confirmation.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, errorMessage, recordsPath } from '../api';
import type { Collection, RecordModel } from '../types';
import { editableFields } from '../format';
import { FieldInput } from './field-input';
import { initialForm, saveBody, type FileState, type FormValue } from './record-form';
import { Alert, Confirm, Dialog, TextInput } from './ui';

interface Props {
  collection: Collection;
  record: RecordModel | null;
  onClose(): void;
  onSaved(r: RecordModel, created: boolean): void;
  onDeleted(id: string): void;
}

export function RecordPanel({ collection, record, onClose, onSaved, onDeleted }: Props) {
  const isNew = record === null;
  const [form, setForm] = useState(() => initialForm(collection, record));
  const [dirty, setDirty] = useState<Set<string>>(new Set());
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const path = recordsPath(collection.name);

  const setValue = (name: string, v: FormValue) => {
    setForm((f) => ({ ...f, values: { ...f.values, [name]: v } }));
    setDirty((d) => new Set(d).add(name));
  };
  const setFiles = (name: string, s: FileState) => setForm((f) => ({ ...f, files: { ...f.files, [name]: s } }));

  const save = async (e: Event) => {
    e.preventDefault();
    if (saving) return;
    const { body, errors: local } = saveBody(collection, isNew, form.values, form.files, dirty);
    if (Object.keys(local).length) {
      setErrors(local);
      setFormError('Some values are not valid.');
      return;
    }
    setSaving(true);
    setErrors({});
    setFormError(null);
    try {
      const opts = body instanceof FormData ? { form: body } : { json: body };
      const saved = isNew
        ? await api<RecordModel>('POST', path, opts)
        : await api<RecordModel>('PATCH', `${path}/${encodeURIComponent(record.id)}`, opts);
      onSaved(saved, isNew);
    } catch (err) {
      setSaving(false);
      if (err instanceof ApiError && Object.keys(err.data).length) {
        const byField: Record<string, string> = {};
        for (const [k, v] of Object.entries(err.data)) byField[k.replace(/[+-]$/, '')] = v.message;
        setErrors(byField);
      }
      setFormError(errorMessage(err));
    }
  };

  const known = new Set([...editableFields(collection).map((f) => f.name), 'password', 'passwordConfirm']);
  const other = Object.entries(errors).filter(([k]) => !known.has(k));
  const title = isNew ? `New ${collection.name} record` : `Edit ${collection.name} record`;

  return (
    <Dialog
      open
      variant="panel"
      title={title}
      onClose={onClose}
      footer={
        <>
          {!isNew && (
            <button type="button" class="btn btn-danger-outline" onClick={() => setConfirmDelete(true)} disabled={saving}>Delete</button>
          )}
          <span class="spacer" />
          <button type="button" class="btn" onClick={onClose}>Cancel</button>
          <button type="submit" class="btn btn-primary" form="record-form" disabled={saving}>
            {saving ? 'Saving…' : isNew ? 'Create' : 'Save changes'}
          </button>
        </>
      }
    >
      <form id="record-form" onSubmit={save} noValidate>
        {!isNew && (
          <dl class="meta-list">
            <div><dt>id</dt><dd class="mono">{record.id}</dd></div>
            {record.created && <div><dt>created</dt><dd class="mono">{String(record.created)}</dd></div>}
            {record.updated && <div><dt>updated</dt><dd class="mono">{String(record.updated)}</dd></div>}
          </dl>
        )}
        <Alert message={formError} />
        {other.length > 0 && (
          <ul class="error-list">
            {other.map(([k, m]) => <li key={k}><code>{k}</code>: {m}</li>)}
          </ul>
        )}
        {editableFields(collection).map((f) => (
          <FieldInput
            key={f.id}
            collection={collection}
            recordId={record?.id ?? null}
            field={f}
            value={form.values[f.name]}
            files={form.files[f.name]}
            error={errors[f.name]}
            onValue={(v) => setValue(f.name, v)}
            onFiles={(s) => setFiles(f.name, s)}
          />
        ))}
        {collection.type === 'auth' && (
          <fieldset class="field password-set">
            <legend>{isNew ? 'Password' : 'Change the password'}</legend>
            <TextInput
              label="Password"
              type="password"
              autoComplete="new-password"
              value={String(form.values.password ?? '')}
              onValue={(v) => setValue('password', v)}
              error={errors.password}
              hint={`At least ${collection.options.auth?.minPasswordLength ?? 8} characters.${isNew ? '' : ' Leave empty to keep the current one.'}`}
            />
            <TextInput
              label="Confirm the password"
              type="password"
              autoComplete="new-password"
              value={String(form.values.passwordConfirm ?? '')}
              onValue={(v) => setValue('passwordConfirm', v)}
              error={errors.passwordConfirm}
            />
          </fieldset>
        )}
        {editableFields(collection).length === 0 && collection.type !== 'auth' && <p class="muted">This collection has no fields yet; add some in “Edit collection”.</p>}
      </form>
      {confirmDelete && record && (
        <Confirm
          title="Delete record"
          message={<>Delete the record <code>{record.id}</code> of {collection.name}? Its files are removed too. This cannot be undone.</>}
          confirmLabel="Delete"
          onConfirm={async () => {
            await api('DELETE', `${path}/${encodeURIComponent(record.id)}`);
            setConfirmDelete(false);
            onDeleted(record.id);
          }}
          onCancel={() => setConfirmDelete(false)}
        />
      )}
    </Dialog>
  );
}
