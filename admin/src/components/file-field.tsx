/** A file field: stored files with previews (removable, undoable), and new files to upload. */
import { useEffect, useMemo } from 'preact/hooks';
import type { Collection, Field } from '../types';
import { fileUrl } from '../api';
import { formatBytes, isImageName } from '../format';
import type { FileState } from './record-form';

interface Props {
  collection: Collection;
  recordId: string | null;
  field: Field;
  state: FileState;
  onChange(s: FileState): void;
  inputId: string;
}

export function FileField({ collection, recordId, field, state, onChange, inputId }: Props) {
  const max = Number(field.options.maxSelect ?? 1);
  const previews = useMemo(() => state.added.map((f) => (f.type.startsWith('image/') ? URL.createObjectURL(f) : null)), [state.added]);
  useEffect(() => () => previews.forEach((u) => u && URL.revokeObjectURL(u)), [previews]);
  const original = useMemo(() => [...state.kept], []);
  const removedNames = original.filter((n) => !state.kept.includes(n));
  const accept = (field.options.mimeTypes ?? []).join(',') || undefined;
  const room = max > 1 ? max - state.kept.length - state.added.length : 1;

  const remove = (name: string) => onChange({ ...state, kept: state.kept.filter((n) => n !== name), removed: true });
  const restore = (name: string) => {
    const kept = original.filter((n) => state.kept.includes(n) || n === name);
    onChange({ ...state, kept, removed: kept.length !== original.length });
  };
  const add = (list: FileList | null) => {
    if (!list) return;
    const files = [...list];
    if (max <= 1) onChange({ ...state, added: files.slice(0, 1) });
    else onChange({ ...state, added: [...state.added, ...files].slice(0, Math.max(0, max - state.kept.length)) });
  };

  return (
    <div class="files">
      {(state.kept.length > 0 || removedNames.length > 0 || state.added.length > 0) && (
        <ul class="file-list">
          {state.kept.map((name) => (
            <li key={name} class="file-item">
              {recordId && isImageName(name) ? (
                <img class="thumb" src={fileUrl(collection.name, recordId, name)} alt={`Preview of ${name}`} loading="lazy" />
              ) : (
                <FileBadge name={name} />
              )}
              {recordId ? (
                <a href={fileUrl(collection.name, recordId, name)} target="_blank" rel="noopener" class="file-name">{name}</a>
              ) : (
                <span class="file-name">{name}</span>
              )}
              {max <= 1 && state.added.length > 0 ? (
                <span class="muted">replaced on save</span>
              ) : (
                <button type="button" class="btn btn-small" onClick={() => remove(name)} aria-label={`Remove ${name}`}>Remove</button>
              )}
            </li>
          ))}
          {removedNames.map((name) => (
            <li key={name} class="file-item removed">
              <FileBadge name={name} />
              <s class="file-name">{name}</s>
              <span class="muted">removed on save</span>
              <button type="button" class="btn btn-small" onClick={() => restore(name)} aria-label={`Keep ${name}`}>Undo</button>
            </li>
          ))}
          {state.added.map((f, i) => (
            <li key={`${f.name}-${i}`} class="file-item added">
              {previews[i] ? <img class="thumb" src={previews[i]!} alt={`Preview of ${f.name}`} /> : <FileBadge name={f.name} />}
              <span class="file-name">{f.name}</span>
              <span class="muted">{formatBytes(f.size)}, new</span>
              <button type="button" class="btn btn-small" aria-label={`Do not upload ${f.name}`} onClick={() => onChange({ ...state, added: state.added.filter((_, j) => j !== i) })}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {room > 0 && (
        <div class="file-pick">
          <label class="btn btn-small" for={inputId}>{max > 1 ? 'Add files' : state.kept.length ? 'Replace file' : 'Choose a file'}</label>
          <input
            class="visually-hidden"
            id={inputId}
            type="file"
            multiple={max > 1}
            accept={accept}
            onChange={(e) => {
              add(e.currentTarget.files);
              e.currentTarget.value = '';
            }}
          />
          <span class="hint">
            {max > 1 ? `Up to ${max} files` : 'One file'}
            {field.options.maxSize ? `, ${formatBytes(Number(field.options.maxSize))} each at most` : ''}
            {accept ? `; ${accept}` : ''}.
          </span>
        </div>
      )}
    </div>
  );
}

/** A file's extension in a tile, where there is no image to preview. */
function FileBadge({ name }: { name: string }) {
  const ext = /\.([a-z0-9]{1,5})$/i.exec(name)?.[1] ?? 'file';
  return <span class="thumb thumb-doc" aria-hidden="true">{ext.toUpperCase()}</span>;
}
