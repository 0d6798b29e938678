/**
 * The backups of the data directory (docs/operations.md, "Backups over HTTP"): the list, making
 * one (an optional name), uploading one, downloading (a link the session cookie authorizes),
 * deleting and restoring, each with a confirmation. A restore is applied at the server's next
 * start, which the page says. On PostgreSQL the list answers the server's 400, shown as is.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { formatBytes } from '../format';
import { useApp } from '../state';
import { Alert, Confirm, Loading, TextInput } from './ui';

interface Backup {
  key: string;
  size: number;
  modified: string;
}

const backupPath = (key: string): string => `/api/backups/${encodeURIComponent(key)}`;

export function BackupsPage() {
  const { notify } = useApp();
  const [items, setItems] = useState<Backup[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [making, setMaking] = useState(false);
  const [formError, setFormError] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [restoring, setRestoring] = useState<string | null>(null);
  const [pending, setPending] = useState<string | null>(null);

  const load = () =>
    api<Backup[]>('GET', '/api/backups')
      .then((r) => { setItems(r); setError(null); })
      .catch((err) => setError(errorMessage(err)));
  useEffect(() => void load(), []);

  const make = async (e: Event) => {
    e.preventDefault();
    setFormError(null);
    setMaking(true);
    try {
      await api('POST', '/api/backups', { json: name.trim() ? { name: name.trim() } : {} });
      notify('Backup made.');
      setName('');
      await load();
    } catch (err) {
      setFormError(errorMessage(err));
    } finally {
      setMaking(false);
    }
  };

  const upload = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    setFormError(null);
    const form = new FormData();
    form.append('file', file, file.name);
    try {
      await api('POST', '/api/backups/upload', { form });
      notify(`Backup ${file.name} uploaded.`);
      await load();
    } catch (err) {
      setFormError(errorMessage(err));
    } finally {
      input.value = '';
    }
  };

  return (
    <main class="page" id="main">
      <header class="page-head">
        <div>
          <h1>Backups</h1>
          <p class="muted page-sub">Tar archives of the database, the stored files and the keys, kept in the data directory's <code>backups/</code> folder.</p>
        </div>
      </header>
      <Alert message={error} />
      {pending && (
        <div class="alert" role="status">
          Backup <code>{pending}</code> will be restored at the server's next start. Restart the server to apply it.
        </div>
      )}
      <section class="card" aria-labelledby="make-backup">
        <h2 id="make-backup">Make a backup</h2>
        <form class="row" onSubmit={make}>
          <TextInput label="Name (optional)" value={name} onValue={setName} placeholder="svc_backup_<time>.tar" hint="Letters, digits, _ - and . ending in .tar" spellcheck={false} autoComplete="off" class="grow" />
          <button type="submit" class="btn btn-primary align-end" disabled={making}>{making ? 'Making a backup…' : 'Make a backup'}</button>
        </form>
        <div class="row">
          <label class="btn align-end">
            Upload a backup…
            <input type="file" accept=".tar,application/x-tar" class="visually-hidden" onChange={(e) => void upload(e.currentTarget)} />
          </label>
        </div>
        <Alert message={formError} />
      </section>
      {items === null && !error && <Loading />}
      {items && (
        <div class="table-wrap" role="region" aria-label="Backups" tabIndex={0}>
          <table class="records">
            <thead>
              <tr>
                <th scope="col">key</th>
                <th scope="col">size</th>
                <th scope="col">modified</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {items.map((b) => (
                <tr key={b.key}>
                  <td class="mono">{b.key}</td>
                  <td>{formatBytes(b.size)}</td>
                  <td class="mono">{b.modified}</td>
                  <td class="row-actions">
                    <a class="btn btn-small" href={backupPath(b.key)} download={b.key} aria-label={`Download ${b.key}`}>Download</a>
                    <button type="button" class="btn btn-small" onClick={() => setRestoring(b.key)} aria-label={`Restore ${b.key}`}>Restore</button>
                    <button type="button" class="btn btn-small btn-danger-outline" onClick={() => setDeleting(b.key)} aria-label={`Delete ${b.key}`}>Delete</button>
                  </td>
                </tr>
              ))}
              {items.length === 0 && (
                <tr>
                  <td colSpan={4} class="muted">No backups yet.</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      {deleting && (
        <Confirm
          title="Delete backup"
          message={<>Delete the backup <code>{deleting}</code>? It cannot be recovered.</>}
          confirmLabel="Delete"
          onConfirm={async () => {
            await api('DELETE', backupPath(deleting));
            setDeleting(null);
            notify(`Backup ${deleting} deleted.`);
            await load();
          }}
          onCancel={() => setDeleting(null)}
        />
      )}
      {restoring && (
        <Confirm
          title="Restore backup"
          message={<>Replace all data with the backup <code>{restoring}</code> at the server's next start? Every change made since the backup is lost.</>}
          confirmLabel="Restore at next start"
          requireText={restoring}
          onConfirm={async () => {
            await api('POST', `${backupPath(restoring)}/restore`);
            setPending(restoring);
            setRestoring(null);
            notify(`Backup ${restoring} will be restored at the next start.`);
          }}
          onCancel={() => setRestoring(null)}
        />
      )}
    </main>
  );
}
