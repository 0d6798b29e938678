/**
 * Choosing related records: the chosen ones as removable chips (labelled by their first
 * name-like field), and a search box (a combobox) over the target collection, by id or label.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, errorMessage, filterString, isAbort, recordsPath } from '../api';
import { useApp } from '../state';
import type { Field, ListResult, RecordModel } from '../types';
import { asList, isMultiple, labelField, recordLabel } from '../format';
import type { FormValue } from './record-form';

interface Props {
  field: Field;
  value: FormValue;
  onValue(v: FormValue): void;
  labelId: string;
}

export function RelationPicker({ field, value, onValue, labelId }: Props) {
  const { collections } = useApp();
  const target = collections.find((c) => c.id === field.options.collectionId);
  const multiple = isMultiple(field);
  const max = Number(field.options.maxSelect ?? 1);
  const chosen = asList(value);
  const [labels, setLabels] = useState<Map<string, string>>(new Map());
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<RecordModel[]>([]);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const listId = useId();
  const inputRef = useRef<HTMLInputElement>(null);
  const lf = labelField(target);

  // labels of the chosen ids
  useEffect(() => {
    const missing = chosen.filter((id) => !labels.has(id));
    if (!target || missing.length === 0) return;
    const filter = missing.slice(0, 100).map((id) => `id = ${filterString(id)}`).join(' || ');
    api<ListResult>('GET', recordsPath(target.name), { query: { filter, perPage: 100, skipTotal: true } })
      .then((r) => setLabels((m) => {
        const n = new Map(m);
        for (const rec of r.items) n.set(rec.id, recordLabel(target, rec));
        return n;
      }))
      .catch(() => undefined);
  }, [chosen.join(','), target?.id]);

  // search as one types
  useEffect(() => {
    if (!target || !open) return undefined;
    const ctl = new AbortController();
    const t = setTimeout(() => {
      const q = query.trim();
      const filter = q ? [`id ~ ${filterString(q)}`, lf && lf !== 'id' ? `${lf} ~ ${filterString(q)}` : ''].filter(Boolean).join(' || ') : undefined;
      api<ListResult>('GET', recordsPath(target.name), { query: { filter, perPage: 10, skipTotal: true, sort: lf ?? undefined }, signal: ctl.signal })
        .then((r) => {
          setResults(r.items);
          setActive(0);
          setError(null);
          setLabels((m) => {
            const n = new Map(m);
            for (const rec of r.items) n.set(rec.id, recordLabel(target, rec));
            return n;
          });
        })
        .catch((err) => {
          if (!isAbort(err)) setError(errorMessage(err));
        });
    }, 150);
    return () => {
      clearTimeout(t);
      ctl.abort();
    };
  }, [query, open, target?.id]);

  if (!target) return <p class="error-text">The related collection ({String(field.options.collectionId)}) does not exist.</p>;

  const pick = (r: RecordModel) => {
    if (multiple) {
      if (!chosen.includes(r.id) && chosen.length < max) onValue([...chosen, r.id]);
    } else onValue(r.id);
    setQuery('');
    if (!multiple) setOpen(false);
    inputRef.current?.focus();
  };
  const remove = (id: string) => onValue(multiple ? chosen.filter((x) => x !== id) : '');
  const full = multiple ? chosen.length >= max : false;

  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setOpen(true);
      setActive((a) => Math.min(a + 1, results.length - 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => Math.max(a - 1, 0));
    } else if (e.key === 'Enter' && open && results[active]) {
      e.preventDefault();
      pick(results[active]);
    } else if (e.key === 'Escape' && open) {
      e.preventDefault();
      e.stopPropagation();
      setOpen(false);
    }
  };

  return (
    <div class="relation">
      <ul class="chips chosen" aria-label={`Chosen ${target.name} records`}>
        {chosen.map((id) => (
          <li key={id} class="chip">
            <span>{labels.get(id) ?? id}</span>
            {labels.get(id) && labels.get(id) !== id && <span class="mono muted"> {id}</span>}
            <button type="button" class="chip-x" aria-label={`Remove ${labels.get(id) ?? id}`} onClick={() => remove(id)}>×</button>
          </li>
        ))}
        {chosen.length === 0 && <li class="muted">None</li>}
      </ul>
      {!full && (
        <div class="combo">
          <input
            ref={inputRef}
            id={labelId}
            type="search"
            {...({ role: 'combobox' } as Record<string, string>)}
            aria-expanded={open}
            aria-controls={listId}
            aria-autocomplete="list"
            aria-label={`${field.name}: search ${target.name}`}
            aria-activedescendant={open && results[active] ? `${listId}-${active}` : undefined}
            placeholder={`Search ${target.name}${lf ? ` by ${lf} or id` : ' by id'}`}
            value={query}
            onInput={(e) => {
              setQuery(e.currentTarget.value);
              setOpen(true);
            }}
            onFocus={() => setOpen(true)}
            onBlur={() => setTimeout(() => setOpen(false), 150)}
            onKeyDown={onKey}
            autoComplete="off"
          />
          {open && (
            <ul class="listbox" role="listbox" id={listId} aria-label={`${target.name} records`}>
              {results.map((r, i) => (
                <li
                  key={r.id}
                  id={`${listId}-${i}`}
                  role="option"
                  aria-selected={i === active}
                  class={`${i === active ? 'active' : ''} ${chosen.includes(r.id) ? 'chosen' : ''}`}
                  onMouseDown={(e) => {
                    e.preventDefault();
                    pick(r);
                  }}
                >
                  <span>{recordLabel(target, r)}</span> <span class="mono muted">{r.id}</span>
                </li>
              ))}
              {results.length === 0 && <li class="muted" role="presentation">{error ?? 'No match.'}</li>}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
