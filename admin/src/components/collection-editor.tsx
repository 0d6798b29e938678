/**
 * Creating and editing a collection: name and type, every field with its options, the five
 * access rules, indexes, expiry and auth options; the API's validation errors appear beside the
 * input they name. Deleting asks for the name to be typed.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, errorMessage, recordsPath } from '../api';
import { plural } from '../format';
import { href, linkClick, navigate } from '../router';
import { can, useApp } from '../state';
import type { Collection, Field, FieldType, ListResult, RuleName } from '../types';
import { FIELD_TYPES, RULE_NAMES } from '../types';
import { newField, newKey, toBody, toDraft, type CollectionDraft, type FieldDraft, type IndexDraft } from './collection-draft';
import { FieldCard } from './field-card';
import { AuthOptionsEditor } from './auth-options';
import { Alert, Checkbox, Confirm, Select, TextArea, TextInput } from './ui';

const RULE_HELP: Record<RuleName, string> = {
  listRule: 'Who may list and search records',
  viewRule: 'Who may view one record',
  createRule: 'Who may create records',
  updateRule: 'Who may update records',
  deleteRule: 'Who may delete records',
};

export function CollectionEditor({ collection }: { collection: Collection | null }) {
  const { collections, reloadCollections, notify, meta } = useApp();
  const [draft, setDraft] = useState<CollectionDraft>(() => toDraft(collection));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [newType, setNewType] = useState<FieldType>('text');
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [confirmLoss, setConfirmLoss] = useState<{ lost: Loss[]; body: Record<string, unknown> } | null>(null);
  const frozen = can(meta, 'collectionsFrozen');
  const isNew = collection === null;
  const system = draft.system;

  const patch = (p: Partial<CollectionDraft>) => setDraft((d) => ({ ...d, ...p }));
  const setField = (i: number, f: FieldDraft) => setDraft((d) => ({ ...d, fields: d.fields.map((x, j) => (j === i ? f : x)) }));
  const moveField = (i: number, delta: number) =>
    setDraft((d) => {
      const fields = [...d.fields];
      const j = i + delta;
      if (j < 0 || j >= fields.length) return d;
      [fields[i], fields[j]] = [fields[j], fields[i]];
      return { ...d, fields };
    });
  const setIndex = (i: number, ix: IndexDraft) => setDraft((d) => ({ ...d, indexes: d.indexes.map((x, j) => (j === i ? ix : x)) }));

  /** errors under `fields.<i>.` for the field at i of the draft */
  const fieldErrors = (i: number) => {
    const out: Record<string, string> = {};
    const prefix = `fields.${i}.`;
    for (const [k, m] of Object.entries(errors)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = m;
    return out;
  };

  const save = async (e: Event) => {
    e.preventDefault();
    if (saving) return;
    const { body, errors: local } = toBody(draft);
    if (Object.keys(local).length) {
      setErrors(local);
      setFormError('Some values are not valid.');
      return;
    }
    if (!isNew) {
      // data the save would drop: confirmed first (docs/admin.md, "Collections")
      setSaving(true);
      const lost = await dataLoss(collection, draft);
      setSaving(false);
      if (lost.length) {
        setConfirmLoss({ lost, body });
        return;
      }
    }
    await send(body);
  };

  /** Sends the create or update; the API's errors go beside their inputs. */
  const send = async (body: Record<string, unknown>) => {
    setSaving(true);
    setErrors({});
    setFormError(null);
    try {
      const saved = isNew
        ? await api<Collection>('POST', '/api/collections', { json: body })
        : await api<Collection>('PATCH', `/api/collections/${encodeURIComponent(collection.id)}`, { json: body });
      await reloadCollections();
      notify(isNew ? `Collection ${saved.name} created.` : `Collection ${saved.name} saved.`);
      if (isNew) navigate(`/collections/${encodeURIComponent(saved.name)}`);
      else {
        setDraft(toDraft(saved));
        if (saved.name !== collection.name) navigate(`/collections/${encodeURIComponent(saved.name)}/edit`, true);
      }
    } catch (err) {
      if (err instanceof ApiError) {
        const byPath: Record<string, string> = {};
        for (const [k, v] of Object.entries(err.data)) byPath[k] = v.message;
        setErrors(byPath);
      }
      setFormError(errorMessage(err));
    } finally {
      setSaving(false);
    }
  };

  const known = (k: string) => k === 'name' || k === 'type' || k.startsWith('fields.') || k.startsWith('indexes.') || (RULE_NAMES as readonly string[]).includes(k) || k.startsWith('options.');
  const unplaced = Object.entries(errors).filter(([k]) => !known(k));
  const others = collections.filter((c) => c.id !== collection?.id);
  const relTargets = isNew ? [...others, { id: draft.id, name: draft.name || 'this collection' } as Collection] : collections;
  const dateFields = draft.fields.filter((f) => f.type === 'date' || f.type === 'autodate');
  const title = isNew ? 'New collection' : `Edit ${collection.name}`;

  return (
    <main class="page editor-page" id="main">
      <header class="page-head">
        <div>
          <h1>{title}</h1>
          {!isNew && (
            <p class="page-sub">
              <a href={href(`/collections/${encodeURIComponent(collection.name)}`)} onClick={(e) => linkClick(e, `/collections/${encodeURIComponent(collection.name)}`)}>
                ← Back to the records
              </a>
            </p>
          )}
        </div>
      </header>
      {frozen && <p class="notice" role="status">Collections are frozen on this server (<code>--freeze-collections</code>): schema changes are refused.</p>}
      {system && <p class="notice">A system collection: only its auth options can change.</p>}
      <form onSubmit={save} noValidate class="editor-form">
        <fieldset disabled={frozen} class="plain">
          <section class="card" aria-labelledby="general-title">
            <h2 id="general-title">General</h2>
            <div class="row">
              <TextInput class="grow" label="Name" value={draft.name} onValue={(v) => patch({ name: v })} error={errors.name} required disabled={system} hint="Letters, digits and underscores; used in API paths." spellcheck={false} autoComplete="off" />
              <Select
                label="Type"
                value={draft.type}
                onValue={(v) => patch({ type: v as 'base' | 'auth' })}
                disabled={!isNew}
                error={errors.type}
                hint={isNew ? 'Auth collections have email, password and sign-in.' : 'The type cannot change.'}
                options={[{ value: 'base', label: 'base' }, { value: 'auth', label: 'auth' }]}
              />
            </div>
          </section>

          <section class="card" aria-labelledby="fields-title">
            <h2 id="fields-title">Fields</h2>
            {draft.systemFields.length > 0 && (
              <p class="muted">Built-in: {draft.systemFields.map((f) => f.name).join(', ')}{draft.type === 'auth' ? ', password' : ''}; and every record has id, created and updated.</p>
            )}
            {errors.fields && <div class="error-text">{errors.fields}</div>}
            {!system && (
              <>
                <ol class="field-cards">
                  {draft.fields.map((f, i) => (
                    <FieldCard
                      key={f.key}
                      draft={f}
                      index={i}
                      count={draft.fields.length}
                      collections={relTargets}
                      selfName={draft.name}
                      errors={fieldErrors(i)}
                      onChange={(nf) => setField(i, nf)}
                      onMove={(d) => moveField(i, d)}
                      onRemove={() => setDraft((d) => ({ ...d, fields: d.fields.filter((_, j) => j !== i) }))}
                    />
                  ))}
                </ol>
                {draft.fields.length === 0 && <p class="muted">No fields yet.</p>}
                <div class="add-row">
                  <Select label="New field type" value={newType} onValue={(v) => setNewType(v as FieldType)} options={FIELD_TYPES.map((t) => ({ value: t, label: t }))} />
                  <button type="button" class="btn" onClick={() => setDraft((d) => ({ ...d, fields: [...d.fields, newField(newType)] }))}>
                    + Add field
                  </button>
                </div>
              </>
            )}
          </section>

          {!system && (
            <section class="card" aria-labelledby="rules-title">
              <h2 id="rules-title">Access rules</h2>
              <p class="muted">Superusers pass every rule. A filter expression uses the filter grammar with <code>@request.auth.*</code>, <code>@request.data.*</code> and the record's fields.</p>
              {RULE_NAMES.map((r) => (
                <RuleInput key={r} name={r} help={RULE_HELP[r]} value={draft.rules[r]} error={errors[r]} onChange={(v) => patch({ rules: { ...draft.rules, [r]: v } })} />
              ))}
            </section>
          )}

          {!system && (
            <section class="card" aria-labelledby="indexes-title">
              <h2 id="indexes-title">Indexes</h2>
              <p class="muted">Speed up filters and sorts on large tables. Fields: {['id', 'created', 'updated', ...draft.fields.map((f) => f.name)].filter(Boolean).join(', ')}.</p>
              {draft.indexes.length > 0 && (
                <ul class="index-list">
                  {draft.indexes.map((ix, i) => (
                    <li key={ix.key} class="index-row">
                      <TextInput label="Index name" value={ix.name} onValue={(v) => setIndex(i, { ...ix, name: v })} error={errors[`indexes.${i}`]} spellcheck={false} autoComplete="off" />
                      <TextInput class="grow" label="Fields (comma-separated)" value={ix.fields} onValue={(v) => setIndex(i, { ...ix, fields: v })} spellcheck={false} autoComplete="off" />
                      <Checkbox label="Unique" checked={ix.unique} onValue={(v) => setIndex(i, { ...ix, unique: v })} />
                      <button type="button" class="icon-btn danger" aria-label={`Remove index ${ix.name || i + 1}`} onClick={() => setDraft((d) => ({ ...d, indexes: d.indexes.filter((_, j) => j !== i) }))}>×</button>
                    </li>
                  ))}
                </ul>
              )}
              <button
                type="button"
                class="btn"
                onClick={() => setDraft((d) => ({ ...d, indexes: [...d.indexes, { key: newKey(), name: `idx_${d.name || 'c'}_${d.indexes.length + 1}`, fields: '', unique: false }] }))}
              >
                + Add index
              </button>
            </section>
          )}

          <section class="card" aria-labelledby="options-title">
            <h2 id="options-title">Options</h2>
            {!system && (
              <Select
                label="Expiry field (TTL)"
                value={draft.ttlField}
                onValue={(v) => patch({ ttlField: v })}
                error={errors['options.ttl_field']}
                hint="Rows whose date in this field has passed are hidden and then deleted."
                options={[{ value: '', label: 'none' }, ...dateFields.filter((f) => f.name).map((f) => ({ value: f.name, label: f.name }))]}
              />
            )}
            {draft.type === 'auth' && <AuthOptionsEditor draft={draft.auth} fields={draft.fields} errors={errors} onChange={(a) => patch({ auth: a })} />}
          </section>
        </fieldset>

        <div class="form-foot">
          <Alert message={formError} />
          {unplaced.length > 0 && (
            <ul class="error-list">
              {unplaced.map(([k, m]) => <li key={k}><code>{k}</code>: {m}</li>)}
            </ul>
          )}
          <div class="actions">
            {!isNew && !system && !frozen && (
              <button type="button" class="btn btn-danger-outline" onClick={() => setConfirmDelete(true)}>Delete collection</button>
            )}
            <span class="spacer" />
            <a class="btn" href={href(isNew ? '/' : `/collections/${encodeURIComponent(collection.name)}`)} onClick={(e) => linkClick(e, isNew ? '/' : `/collections/${encodeURIComponent(collection.name)}`)}>
              Cancel
            </a>
            <button type="submit" class="btn btn-primary" disabled={saving || frozen}>{saving ? 'Saving…' : isNew ? 'Create collection' : 'Save changes'}</button>
          </div>
        </div>
      </form>
      {confirmLoss && (
        <Confirm
          title="Drop data?"
          message={
            <>
              <p>Saving drops data of <strong>{collection?.name}</strong>; this cannot be undone:</p>
              <ul class="loss-list">
                {confirmLoss.lost.map((l) => <li key={l.field}>{l.text}</li>)}
              </ul>
            </>
          }
          confirmLabel="Save and drop the data"
          onConfirm={async () => {
            const body = confirmLoss.body;
            setConfirmLoss(null);
            await send(body);
          }}
          onCancel={() => setConfirmLoss(null)}
        />
      )}
      {confirmDelete && collection && (
        <Confirm
          title="Delete collection"
          message={<>Delete the collection <strong>{collection.name}</strong> with all its records and files? This cannot be undone.</>}
          confirmLabel="Delete collection"
          requireText={collection.name}
          onConfirm={async () => {
            await api('DELETE', `/api/collections/${encodeURIComponent(collection.id)}`);
            setConfirmDelete(false);
            await reloadCollections();
            notify(`Collection ${collection.name} deleted.`);
            navigate('/', true);
          }}
          onCancel={() => setConfirmDelete(false)}
        />
      )}
    </main>
  );
}

/** One loss a save would cause: the field and a sentence naming it and the records concerned. */
interface Loss {
  field: string;
  text: string;
}

/**
 * A filter matching the records where `f` holds a value (what dropping it loses): a bool holds one
 * when true, a number or json one when not null (0, false and "" are values there), the other
 * types when neither null nor empty.
 */
function holdsValue(f: Field): string {
  if (f.type === 'bool') return `${f.name} = true`;
  if (f.type === 'number' || f.type === 'json') return `${f.name} != null`;
  return `${f.name} != null && ${f.name} != ''`;
}

const MULTI_TYPES = new Set(['select', 'relation', 'file']);

/**
 * What saving `draft` over `c` would drop (the server keeps data by field id): every removed
 * field's values, with the number of records holding one (counted through the list API), and the
 * extra values of a select, relation or file field going from several to one (the last is kept).
 */
async function dataLoss(c: Collection, draft: CollectionDraft): Promise<Loss[]> {
  const kept = new Map(draft.fields.filter((f) => f.id).map((f) => [f.id, f]));
  const out: Loss[] = [];
  for (const f of c.schema) {
    if (f.system) continue;
    const next = kept.get(f.id);
    if (!next) {
      let held: string;
      try {
        const r = await api<ListResult>('GET', recordsPath(c.name), { query: { page: 1, perPage: 1, skipTotal: false, filter: holdsValue(f), fields: 'id' } });
        const n = r.totalItems;
        if (typeof n !== 'number' || n < 0) throw new Error('not counted');
        held = n === 0 ? 'no record holds a value' : `${plural(n, 'record')} ${n === 1 ? 'holds a value' : 'hold a value'}`;
      } catch {
        held = 'the records holding a value could not be counted';
      }
      out.push({ field: f.name, text: `the field ${f.name} (${f.type}) is removed: ${held}${f.type === 'file' ? ', and their files are deleted' : ''}` });
    } else if (MULTI_TYPES.has(f.type) && Number(f.options.maxSelect ?? 1) > 1 && Number(next.opts.maxSelect || 1) <= 1) {
      out.push({ field: f.name, text: `the field ${f.name} takes one value instead of several: records holding several keep only the last` });
    }
  }
  return out;
}

function RuleInput({ name, help, value, error, onChange }: { name: RuleName; help: string; value: CollectionDraft['rules'][RuleName]; error?: string; onChange(v: CollectionDraft['rules'][RuleName]): void }) {
  return (
    <fieldset class={`rule ${error ? 'has-error' : ''}`}>
      <legend>
        <code>{name}</code> <span class="muted">{help}</span>
      </legend>
      <div class="rule-modes" role="radiogroup" aria-label={`${name} mode`}>
        {(['locked', 'public', 'expr'] as const).map((m) => (
          <label key={m} class="check-inline">
            <input type="radio" name={`${name}-mode`} checked={value.mode === m} onChange={() => onChange({ ...value, mode: m })} />
            {m === 'locked' ? 'Superusers only' : m === 'public' ? 'Anyone (@public)' : 'Filter expression'}
          </label>
        ))}
      </div>
      {value.mode === 'expr' && (
        <TextArea
          label={`${name} expression`}
          class="mono-field"
          rows={2}
          value={value.expr}
          onValue={(v) => onChange({ ...value, expr: v })}
          error={error}
          placeholder={'@request.auth.id != ""'}
          spellcheck={false}
        />
      )}
      {value.mode !== 'expr' && error && <div class="error-text">{error}</div>}
    </fieldset>
  );
}
