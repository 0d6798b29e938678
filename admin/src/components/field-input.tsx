/** One record field's control, by type, labelled with its name and type. */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import type { Collection, Field } from '../types';
import { isMultiple } from '../format';
import type { FileState, FormValue } from './record-form';
import { RelationPicker } from './relation-picker';
import { FileField } from './file-field';

interface Props {
  collection: Collection;
  recordId: string | null;
  field: Field;
  value: FormValue;
  files?: FileState;
  error?: string;
  onValue(v: FormValue): void;
  onFiles(s: FileState): void;
}

/** The label: the field name, its type and whether it is required. */
export function FieldLabel({ field }: { field: Field }) {
  return (
    <>
      <span class="field-name">{field.name}</span>
      {field.options.required && <span class="req"> *<span class="visually-hidden"> (required)</span></span>}{' '}
      <span class="type-tag">{field.type}{isMultiple(field) ? ', multiple' : ''}</span>
    </>
  );
}

function Wrap({ id, field, error, hint, children, group }: { id: string; field: Field; error?: string; hint?: ComponentChildren; children: ComponentChildren; group?: boolean }) {
  if (group) {
    return (
      <fieldset class={`field ${error ? 'has-error' : ''}`} aria-describedby={error ? `${id}-err` : undefined}>
        <legend><FieldLabel field={field} /></legend>
        {children}
        {hint && <div class="hint">{hint}</div>}
        {error && <div class="error-text" id={`${id}-err`}>{error}</div>}
      </fieldset>
    );
  }
  return (
    <div class={`field ${error ? 'has-error' : ''}`}>
      <label for={id}><FieldLabel field={field} /></label>
      {children}
      {hint && <div class="hint" id={`${id}-hint`}>{hint}</div>}
      {error && <div class="error-text" id={`${id}-err`}>{error}</div>}
    </div>
  );
}

export function FieldInput({ collection, recordId, field, value, files, error, onValue, onFiles }: Props) {
  const id = useId();
  const o = field.options;
  const str = typeof value === 'string' ? value : '';
  const hiddenNote = o.hidden ? 'Hidden field: never returned by the API, so it shows empty; type to replace it.' : undefined;
  const hint = hintFor(field, hiddenNote);
  const a11y = {
    id,
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': [error ? `${id}-err` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ') || undefined,
    required: !!o.required && field.type !== 'bool',
    // record data, not the signed-in superuser's own credentials
    autoComplete: 'off',
  };

  switch (field.type) {
    case 'bool':
      return (
        <div class={`check field ${error ? 'has-error' : ''}`}>
          <input type="checkbox" id={id} checked={value === true} onChange={(e) => onValue(e.currentTarget.checked)} aria-describedby={error ? `${id}-err` : undefined} />
          <label for={id}><FieldLabel field={field} /></label>
          {error && <div class="error-text" id={`${id}-err`}>{error}</div>}
        </div>
      );
    case 'editor':
      return (
        <Wrap id={id} field={field} error={error} hint={hint}>
          <textarea {...a11y} rows={6} value={str} onInput={(e) => onValue(e.currentTarget.value)} />
        </Wrap>
      );
    case 'json':
      return (
        <Wrap id={id} field={field} error={error} hint={hint}>
          <textarea {...a11y} class="mono" rows={6} spellcheck={false} value={str} onInput={(e) => onValue(e.currentTarget.value)} />
        </Wrap>
      );
    case 'number': {
      const fixed = o.mode === 'fixed';
      return (
        <Wrap id={id} field={field} error={error} hint={hint}>
          {fixed ? (
            <input {...a11y} type="text" inputMode="decimal" value={str} onInput={(e) => onValue(e.currentTarget.value)} />
          ) : (
            <input {...a11y} type="number" step="any" value={str} onInput={(e) => onValue(e.currentTarget.value)} />
          )}
        </Wrap>
      );
    }
    case 'date':
      return (
        <Wrap id={id} field={field} error={error} hint={hint}>
          <input {...a11y} type="datetime-local" step="1" value={str} onInput={(e) => onValue(e.currentTarget.value)} />
        </Wrap>
      );
    case 'select': {
      const values = (o.values as string[] | undefined) ?? [];
      if (isMultiple(field)) {
        const chosen = Array.isArray(value) ? value : [];
        return (
          <Wrap id={id} field={field} error={error} group hint={hint}>
            <div class="check-group">
              {values.map((v) => (
                <label key={v} class="check-inline">
                  <input
                    type="checkbox"
                    checked={chosen.includes(v)}
                    onChange={(e) => onValue(e.currentTarget.checked ? [...chosen, v] : chosen.filter((x) => x !== v))}
                  />
                  {v}
                </label>
              ))}
            </div>
          </Wrap>
        );
      }
      return (
        <Wrap id={id} field={field} error={error}>
          <select {...a11y} value={str} onChange={(e) => onValue(e.currentTarget.value)}>
            <option value="">—</option>
            {values.map((v) => <option key={v} value={v}>{v}</option>)}
          </select>
        </Wrap>
      );
    }
    case 'relation':
      return (
        <Wrap id={id} field={field} error={error} group>
          <RelationPicker field={field} value={value} onValue={onValue} labelId={id} />
        </Wrap>
      );
    case 'file':
      return (
        <Wrap id={id} field={field} error={error} group>
          <FileField collection={collection} recordId={recordId} field={field} state={files ?? { kept: [], added: [], removed: false }} onChange={onFiles} inputId={id} />
        </Wrap>
      );
    default: {
      const type = field.type === 'email' ? 'email' : field.type === 'url' ? 'url' : 'text';
      return (
        <Wrap id={id} field={field} error={error} hint={hint}>
          <input {...a11y} type={type as 'text'} value={str} onInput={(e) => onValue(e.currentTarget.value)} />
        </Wrap>
      );
    }
  }
}

/** The help under a control: what the API accepts there. */
function hintFor(field: Field, hiddenNote: string | undefined): string | undefined {
  if (hiddenNote) return hiddenNote;
  const o = field.options;
  switch (field.type) {
    case 'editor':
      return 'HTML.';
    case 'json':
      return 'Any JSON value; empty for null.';
    case 'number':
      return o.mode === 'fixed' ? `An exact decimal, up to ${o.scale ?? ''} decimals.` : rangeHint(o.min, o.max);
    case 'date':
      return 'In UTC.';
    case 'select':
      return isMultiple(field) ? `Up to ${o.maxSelect}.` : undefined;
    case 'text':
      return rangeHint(o.min, o.max, ' characters');
    default:
      return undefined;
  }
}

function rangeHint(min: unknown, max: unknown, unit = ''): string | undefined {
  const lo = min !== null && min !== undefined && min !== '' ? String(min) : null;
  const hi = max !== null && max !== undefined && max !== '' ? String(max) : null;
  if (lo && hi) return `From ${lo} to ${hi}${unit}.`;
  if (lo) return `At least ${lo}${unit}.`;
  if (hi) return `At most ${hi}${unit}.`;
  return undefined;
}
