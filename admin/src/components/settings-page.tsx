/** The settings store: every key with its value, add, edit and delete. */
import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { useApp } from '../state';
import { Alert, Confirm, Dialog, Loading, TextArea, TextInput } from './ui';

interface Setting {
  key: string;
  value: string;
  created: string;
  updated: string;
}

export function SettingsPage() {
  const { notify } = useApp();
  const [items, setItems] = useState<Setting[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [formError, setFormError] = useState<string | null>(null);
  const [editing, setEditing] = useState<{ key: string; value: string; error: string | null } | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);

  const load = () =>
    api<{ items: Setting[] }>('GET', '/api/settings')
      .then((r) => setItems(r.items))
      .catch((err) => setError(errorMessage(err)));
  useEffect(() => void load(), []);

  const put = (k: string, v: string) => api('PUT', `/api/settings/${encodeURIComponent(k)}`, { json: { value: v } });

  return (
    <main class="page" id="main">
      <header class="page-head">
        <div>
          <h1>Settings</h1>
          <p class="muted page-sub">The server's key/value store. Keys <code>flag:&lt;name&gt;</code> and <code>exp:&lt;name&gt;:weights</code> override declared flags and experiments.</p>
        </div>
      </header>
      <Alert message={error} />
      <section class="card" aria-labelledby="add-setting">
        <h2 id="add-setting">Add a setting</h2>
        <form
          class="row"
          onSubmit={async (e) => {
            e.preventDefault();
            setFormError(null);
            try {
              await put(key.trim(), value);
              notify(`Setting ${key.trim()} saved.`);
              setKey('');
              setValue('');
              await load();
            } catch (err) {
              setFormError(errorMessage(err));
            }
          }}
        >
          <TextInput label="Key" value={key} onValue={setKey} required spellcheck={false} autoComplete="off" class="narrow-wide" />
          <TextInput label="Value" value={value} onValue={setValue} class="grow" spellcheck={false} autoComplete="off" />
          <button type="submit" class="btn btn-primary align-end" disabled={!key.trim()}>Save</button>
        </form>
        <Alert message={formError} />
      </section>
      {items === null && !error && <Loading />}
      {items && (
        <div class="table-wrap" role="region" aria-label="Settings" tabIndex={0}>
          <table class="records">
            <thead>
              <tr>
                <th scope="col">key</th>
                <th scope="col">value</th>
                <th scope="col">updated</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => (
                <tr key={s.key}>
                  <td class="mono">{s.key}</td>
                  <td><span class="cell-text mono">{s.value}</span></td>
                  <td class="mono">{s.updated}</td>
                  <td class="row-actions">
                    <button type="button" class="btn btn-small" onClick={() => setEditing({ key: s.key, value: s.value, error: null })} aria-label={`Edit ${s.key}`}>Edit</button>
                    <button type="button" class="btn btn-small btn-danger-outline" onClick={() => setDeleting(s.key)} aria-label={`Delete ${s.key}`}>Delete</button>
                  </td>
                </tr>
              ))}
              {items.length === 0 && (
                <tr>
                  <td colSpan={4} class="muted">No settings yet.</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {editing && (
        <EditSetting
          setting={editing}
          onCancel={() => setEditing(null)}
          onSave={async (v) => {
            try {
              await put(editing.key, v);
              setEditing(null);
              notify(`Setting ${editing.key} saved.`);
              await load();
            } catch (err) {
              setEditing({ ...editing, value: v, error: errorMessage(err) });
            }
          }}
        />
      )}
      {deleting && (
        <Confirm
          title="Delete setting"
          message={<>Delete the setting <code>{deleting}</code>?</>}
          confirmLabel="Delete"
          onConfirm={async () => {
            await api('DELETE', `/api/settings/${encodeURIComponent(deleting)}`);
            setDeleting(null);
            notify(`Setting ${deleting} deleted.`);
            await load();
          }}
          onCancel={() => setDeleting(null)}
        />
      )}
    </main>
  );
}


function EditSetting({ setting, onCancel, onSave }: { setting: { key: string; value: string; error: string | null }; onCancel(): void; onSave(v: string): Promise<void> }) {
  const [v, setV] = useState(setting.value);
  return (
    <Dialog open title={`Edit ${setting.key}`} onClose={onCancel}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void onSave(v);
        }}
      >
        <TextArea label="Value" rows={6} value={v} onValue={setV} class="mono-field" spellcheck={false} />
        <Alert message={setting.error} />
        <div class="actions">
          <button type="button" class="btn" onClick={onCancel}>Cancel</button>
          <button type="submit" class="btn btn-primary">Save</button>
        </div>
      </form>
    </Dialog>
  );
}
