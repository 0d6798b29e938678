/** The records table: the collection's columns, sortable headers, selection, live highlights. */
import type { Collection, Field, RecordModel } from '../types';
import { cellText, isImageName, isMultiple, recordLabel, visibleFields } from '../format';
import { fileUrl } from '../api';
import { useApp } from '../state';

const SORTABLE = new Set(['text', 'number', 'bool', 'email', 'url', 'date', 'autodate', 'select', 'relation']);

interface Column {
  name: string;
  field: Field | null;
  sortable: boolean;
}

/** The table's columns: id, the visible fields, created and updated. */
export function columnsOf(c: Collection): Column[] {
  const cols: Column[] = [{ name: 'id', field: null, sortable: true }];
  for (const f of visibleFields(c)) cols.push({ name: f.name, field: f, sortable: SORTABLE.has(f.type) && !f.options.encrypted && !isMultiple(f) });
  cols.push({ name: 'created', field: null, sortable: true }, { name: 'updated', field: null, sortable: true });
  return cols;
}

interface Props {
  collection: Collection;
  rows: RecordModel[];
  sort: string;
  onSort(sort: string): void;
  selected: Set<string>;
  onSelect(ids: Set<string>): void;
  onOpen(r: RecordModel): void;
  flash: Map<string, string>;
  busy: boolean;
}

export function RecordsTable({ collection, rows, sort, onSort, selected, onSelect, onOpen, flash, busy }: Props) {
  const cols = columnsOf(collection);
  const allSelected = rows.length > 0 && rows.every((r) => selected.has(r.id));
  const toggleAll = () => onSelect(allSelected ? new Set() : new Set(rows.map((r) => r.id)));
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    onSelect(next);
  };
  const nextSort = (name: string) => (sort === name ? `-${name}` : sort === `-${name}` ? '' : name);
  const ariaSort = (name: string) => (sort === name ? 'ascending' : sort === `-${name}` ? 'descending' : undefined);

  return (
    <div class="table-wrap" role="region" aria-label={`Records of ${collection.name}`} tabIndex={0} aria-busy={busy}>
      <table class="records">
        <thead>
          <tr>
            <th class="col-select" scope="col">
              <input type="checkbox" aria-label="Select every record on this page" checked={allSelected} onChange={toggleAll} disabled={rows.length === 0} />
            </th>
            {cols.map((col) => (
              <th key={col.name} scope="col" aria-sort={ariaSort(col.name)} class={`col-${col.field?.type ?? 'system'}`}>
                {col.sortable ? (
                  <button type="button" class="sort-btn" onClick={() => onSort(nextSort(col.name))} title={`Sort by ${col.name}`}>
                    {col.name}
                    <span class="sort-mark" aria-hidden="true">{sort === col.name ? '▲' : sort === `-${col.name}` ? '▼' : ''}</span>
                  </button>
                ) : (
                  <span class="th-text">{col.name}</span>
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} class={flash.get(r.id) ? `flash-${flash.get(r.id)}` : ''} onClick={(e) => {
              const t = e.target as HTMLElement;
              if (t.closest('button, input, a')) return;
              onOpen(r);
            }}>
              <td class="col-select">
                <input type="checkbox" aria-label={`Select record ${r.id}`} checked={selected.has(r.id)} onChange={() => toggle(r.id)} />
              </td>
              {cols.map((col) => (
                <td key={col.name} class={`col-${col.field?.type ?? 'system'}`}>
                  {col.name === 'id' ? (
                    <button type="button" class="link-btn mono" onClick={() => onOpen(r)} aria-label={`Open record ${r.id}`}>
                      {r.id}
                    </button>
                  ) : (
                    <Cell field={col.field} value={r[col.name]} record={r} expanded={(r.expand as Record<string, unknown> | undefined)?.[col.name]} />
                  )}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Cell({ field, value, record, expanded }: { field: Field | null; value: unknown; record: RecordModel; expanded?: unknown }) {
  const { collections } = useApp();
  if (value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) return <span class="empty">—</span>;
  if (field?.type === 'bool') return <span class={`bool bool-${value ? 'yes' : 'no'}`}>{value ? 'true' : 'false'}</span>;
  const text = cellText(field, value);
  if (field?.type === 'file') {
    const names = Array.isArray(value) ? value.map(String) : [String(value)];
    return (
      <span class="chips">
        {names.slice(0, 3).map((n) =>
          isImageName(n) ? (
            <img key={n} class="cell-thumb" src={fileUrl(record.collectionName, record.id, n)} alt={n} title={n} loading="lazy" />
          ) : (
            <span key={n} class="chip">{n}</span>
          ),
        )}
        {names.length > 3 && <span class="chip">+{names.length - 3}</span>}
      </span>
    );
  }
  if (field?.type === 'relation' || field?.type === 'select') {
    let items = Array.isArray(value) ? value.map(String) : [String(value)];
    if (field.type === 'relation' && expanded) {
      // the related records' labels, in the order of the ids (an id whose record is gone stays an id)
      const target = collections.find((c) => c.id === field.options.collectionId);
      const byId = new Map((Array.isArray(expanded) ? expanded : [expanded]).map((x) => [(x as RecordModel).id, x as RecordModel]));
      items = items.map((id) => (byId.has(id) ? recordLabel(target, byId.get(id)!) : id));
    }
    return (
      <span class="chips">
        {items.slice(0, 3).map((x) => (
          <span key={x} class="chip">{x}</span>
        ))}
        {items.length > 3 && <span class="chip">+{items.length - 3}</span>}
      </span>
    );
  }
  return <span class="cell-text" title={text.length > 40 ? text.slice(0, 500) : undefined}>{text.length > 200 ? `${text.slice(0, 200)}…` : text}</span>;
}
