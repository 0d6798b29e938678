/** One field in the collection editor: name, type, the common flags and its type's options. */
import { useId } from 'preact/hooks';
import type { Collection, FieldType } from '../types';
import { FIELD_TYPES } from '../types';
import { can, useApp } from '../state';
import { OPTION_SPECS, newField, type FieldDraft, type OptionSpec } from './collection-draft';
import { Checkbox, Select, TextInput } from './ui';

interface Props {
  draft: FieldDraft;
  index: number;
  count: number;
  collections: Collection[];
  selfName: string;
  errors: Record<string, string>;
  onChange(f: FieldDraft): void;
  onMove(delta: number): void;
  onRemove(): void;
}

export function FieldCard({ draft, index, count, collections, selfName, errors, onChange, onMove, onRemove }: Props) {
  const { meta } = useApp();
  const headId = useId();
  const label = draft.name || `field ${index + 1}`;
  const set = (patch: Partial<FieldDraft>) => onChange({ ...draft, ...patch });
  const setOpt = (key: string, v: string | boolean) => onChange({ ...draft, opts: { ...draft.opts, [key]: v } });
  const specs = OPTION_SPECS[draft.type].filter((s) => !s.capability || can(meta, s.capability));
  const handled = new Set(['name', 'type', 'required', 'unique', 'hidden', ...specs.map((s) => s.key)]);
  const other = Object.entries(errors).filter(([k]) => !handled.has(k));

  return (
    <li class={`field-card ${Object.keys(errors).length ? 'has-error' : ''}`} aria-labelledby={headId}>
      <div class="field-card-head">
        <h3 id={headId} class="visually-hidden">Field {index + 1}: {label}</h3>
        <TextInput class="grow" label="Name" value={draft.name} onValue={(v) => set({ name: v })} error={errors.name} required autoComplete="off" spellcheck={false} />
        <Select
          label="Type"
          value={draft.type}
          disabled={!!draft.id}
          error={errors.type}
          onValue={(v) => onChange({ ...newField(v as FieldType, draft.name), key: draft.key, required: draft.required, unique: draft.unique, hidden: draft.hidden })}
          options={FIELD_TYPES.map((t) => ({ value: t, label: t }))}
        />
        <div class="field-card-tools">
          <button type="button" class="icon-btn" onClick={() => onMove(-1)} disabled={index === 0} aria-label={`Move ${label} up`}>↑</button>
          <button type="button" class="icon-btn" onClick={() => onMove(1)} disabled={index === count - 1} aria-label={`Move ${label} down`}>↓</button>
          <button type="button" class="icon-btn danger" onClick={onRemove} aria-label={`Remove ${label}`}>×</button>
        </div>
      </div>
      <div class="field-card-flags">
        <Checkbox label="Required" checked={draft.required} onValue={(v) => set({ required: v })} error={errors.required} />
        <Checkbox label="Unique" checked={draft.unique} onValue={(v) => set({ unique: v })} error={errors.unique} />
        <Checkbox label="Hidden" checked={draft.hidden} onValue={(v) => set({ hidden: v })} hint="never returned" error={errors.hidden} />
        {specs.filter((s) => s.kind === 'bool' || s.kind === 'fixed').map((s) => (
          <Checkbox key={s.key} label={s.label} checked={draft.opts[s.key] === true} onValue={(v) => setOpt(s.key, v)} hint={s.hint} error={errors[s.key]} />
        ))}
      </div>
      {specs.some((s) => s.kind !== 'bool' && s.kind !== 'fixed') && (
        <div class="field-card-options">
          {specs.filter((s) => s.kind !== 'bool' && s.kind !== 'fixed').map((s) => (
            <OptionInput key={s.key} spec={s} value={draft.opts[s.key]} onValue={(v) => setOpt(s.key, v)} error={errors[s.key]} collections={collections} selfName={selfName} />
          ))}
        </div>
      )}
      {other.map(([k, m]) => (
        <div key={k} class="error-text">{k}: {m}</div>
      ))}
    </li>
  );
}

function OptionInput({ spec, value, onValue, error, collections, selfName }: { spec: OptionSpec; value: string | boolean | undefined; onValue(v: string): void; error?: string; collections: Collection[]; selfName: string }) {
  const v = typeof value === 'string' ? value : '';
  if (spec.kind === 'collection') {
    const options = [{ value: '', label: '— choose —' }, ...collections.map((c) => ({ value: c.id, label: c.name === selfName ? `${c.name} (this collection)` : c.name }))];
    return <Select label={spec.label} value={v} onValue={onValue} options={options} error={error} hint={collections.length === 0 ? 'Create the related collection first.' : undefined} />;
  }
  return (
    <TextInput
      label={spec.label}
      value={v}
      onValue={onValue}
      error={error}
      hint={spec.hint}
      type={spec.kind === 'num' ? 'number' : 'text'}
      class={spec.kind === 'list' || spec.key === 'pattern' ? 'wide' : 'narrow'}
      spellcheck={false}
      autoComplete="off"
    />
  );
}
