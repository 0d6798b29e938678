/**
 * A collection's records: the filter box (the API's grammar, its error shown under it), sorting
 * by column, cursor paging (offset paging where the server has cursors off), the total counted
 * on the side, live rows over realtime, bulk delete, and the side panel to create or edit one.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorMessage, isAbort, recordsPath } from '../api';
import { subscribeRecords, onLiveChange, type RecordEvent } from '../realtime';
import { href, linkClick } from '../router';
import { can, useApp } from '../state';
import type { Collection, ListResult, RecordModel } from '../types';
import { plural, visibleFields } from '../format';
import { RecordsTable } from './records-table';
import { RecordPanel } from './record-panel';
import { FilterBar, Pager } from './table-controls';
import { Confirm } from './ui';

const DEFAULT_SORT = '-@rowid';
const NEWEST_FIRST = new Set(['', '-@rowid', '-created', '-id']);
const PAGE_SIZES = [25, 50, 100, 200, 500];

export function RecordsPage({ collection }: { collection: Collection }) {
  const { meta, notify } = useApp();
  const cursorMode = can(meta, 'cursorPaging');
  const [draft, setDraft] = useState('');
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState('');
  const [perPage, setPerPage] = useState(50);
  const [page, setPage] = useState<{ no: number; cursor: string }>({ no: 1, cursor: '' });
  const [result, setResult] = useState<ListResult | null>(null);
  const [rows, setRows] = useState<RecordModel[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [total, setTotal] = useState<number | null>(null);
  const [reload, setReload] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [editing, setEditing] = useState<RecordModel | 'new' | null>(null);
  const [unseen, setUnseen] = useState(0);
  const [flash, setFlash] = useState<Map<string, string>>(new Map());
  const [confirmBulk, setConfirmBulk] = useState(false);
  const [live, setLive] = useState(false);
  /** the filter live events follow: the applied one once the API accepted it (null: none yet) */
  const [liveFilter, setLiveFilter] = useState<string | null>(null);
  /** counts the live subscription's confirmations; each reloads the rows (see the rows effect) */
  const [synced, setSynced] = useState(0);
  const quietLoad = useRef(false);
  const filterRef = useRef<HTMLInputElement>(null);
  const view = useRef({ first: true, newestFirst: true });
  view.current = { first: page.no === 1, newestFirst: NEWEST_FIRST.has(sort) };

  const path = recordsPath(collection.name);
  // relations show their records' labels: one level of expand for the visible relation columns
  const expand = visibleFields(collection).filter((f) => f.type === 'relation').map((f) => f.name).join(',');
  const counted = useRef({ key: '', ctl: null as AbortController | null });

  /**
   * The total, counted on the side so a large table shows its first page at once; once per
   * filter (and refresh), after its first page loaded (a bad filter is not sent twice).
   */
  const count = (key: string) => {
    if (counted.current.key === key) return;
    counted.current.ctl?.abort();
    const ctl = new AbortController();
    counted.current = { key, ctl };
    setTotal(null);
    const query = cursorMode ? { cursor: '', perPage: 1, skipTotal: false, filter: filter || undefined, fields: 'id' } : { page: 1, perPage: 1, skipTotal: false, filter: filter || undefined, fields: 'id' };
    api<ListResult>('GET', path, { query, signal: ctl.signal })
      .then((r) => setTotal(typeof r.totalItems === 'number' && r.totalItems >= 0 ? r.totalItems : null))
      .catch(() => undefined);
  };
  useEffect(() => () => counted.current.ctl?.abort(), []);

  // the page of rows; loaded again, quietly, each time the live subscription is confirmed
  // (`synced`): a change made between a load and that confirmation sent no event here
  useEffect(() => {
    const ctl = new AbortController();
    const quiet = quietLoad.current;
    quietLoad.current = false;
    if (!quiet) setLoading(true);
    const base = { perPage, sort: sort || DEFAULT_SORT, filter: filter || undefined, expand: expand || undefined };
    const query = cursorMode ? { ...base, cursor: page.cursor } : { ...base, page: page.no, skipTotal: true };
    api<ListResult>('GET', path, { query, signal: ctl.signal })
      .then((r) => {
        setResult(r);
        setRows(r.items);
        setError(null);
        if (!quiet) setUnseen(0);
        // a quiet reload keeps the selection of the rows still shown
        setSelected(quiet ? (sel) => new Set(r.items.filter((x) => sel.has(x.id)).map((x) => x.id)) : new Set());
        setLoading(false);
        setLiveFilter(filter);
        count(`${filter}\n${reload}\n${synced}`);
      })
      .catch((err) => {
        if (isAbort(err)) return;
        setError(errorMessage(err));
        setResult(null);
        setRows([]);
        setTotal(null);
        setLiveFilter(null);
        counted.current = { key: '', ctl: null };
        setLoading(false);
      });
    return () => ctl.abort();
  }, [path, filter, sort, perPage, page, reload, synced]);

  const mark = (id: string, kind: string) => {
    setFlash((m) => new Map(m).set(id, kind));
    setTimeout(() => setFlash((m) => {
      const n = new Map(m);
      n.delete(id);
      return n;
    }), 2500);
  };

  // live rows: the events of records matching the applied filter (subscribed once the API took it)
  useEffect(() => {
    if (!can(meta, 'realtime') || liveFilter === null) return undefined;
    const stop = subscribeRecords(collection.name, liveFilter, (ev: RecordEvent) => {
      const r = ev.record;
      if (ev.action === 'update') {
        // an event carries no expand: keep the row's (ids no longer in it show as ids)
        setRows((rs) => rs.map((x) => (x.id === r.id ? { ...r, expand: x.expand } : x)));
        mark(r.id, 'updated');
      } else if (ev.action === 'delete') {
        setRows((rs) => {
          if (rs.some((x) => x.id === r.id)) setTotal((t) => (t === null ? t : Math.max(0, t - 1)));
          return rs.filter((x) => x.id !== r.id);
        });
      } else {
        setTotal((t) => (t === null ? t : t + 1));
        if (view.current.first && view.current.newestFirst) {
          setRows((rs) => (rs.some((x) => x.id === r.id) ? rs : [r, ...rs]));
          mark(r.id, 'new');
        } else setUnseen((n) => n + 1);
      }
    }, () => {
      quietLoad.current = true;
      setSynced((n) => n + 1);
    });
    return stop;
  }, [collection.name, liveFilter]);

  useEffect(() => onLiveChange(setLive), []);

  // "/" focuses the filter
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (e.key === '/' && !editing && !/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && !t.isContentEditable) {
        e.preventDefault();
        filterRef.current?.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [editing]);

  const first = () => setPage({ no: 1, cursor: '' });
  const applyFilter = () => {
    setFilter(draft.trim());
    first();
  };
  const hasPrev = cursorMode ? !!result?.prevCursor : page.no > 1;
  const hasNext = cursorMode ? !!result?.nextCursor : (result?.items.length ?? 0) >= perPage;
  const from = rows.length ? (page.no - 1) * perPage + 1 : 0;

  const deleteSelected = async () => {
    const ids = [...selected];
    let failed = 0;
    for (let i = 0; i < ids.length; i += 8) {
      const res = await Promise.allSettled(ids.slice(i, i + 8).map((id) => api('DELETE', `${path}/${encodeURIComponent(id)}`)));
      failed += res.filter((x) => x.status === 'rejected').length;
    }
    setConfirmBulk(false);
    notify(failed ? `Deleted ${ids.length - failed}; ${failed} could not be deleted.` : `Deleted ${plural(ids.length, 'record')}.`, failed ? 'error' : 'ok');
    setReload((n) => n + 1);
  };

  return (
    <main class="page records-page" id="main">
      <header class="page-head">
        <div>
          <h1>
            {collection.name}
            {collection.type === 'auth' && <span class="badge">auth</span>}
          </h1>
          <p class="muted page-sub">
            {total !== null ? plural(total, 'record') : error ? 'The filter is not valid.' : 'Counting records…'}
            {can(meta, 'realtime') && (
              <span class={`live ${live ? 'live-on' : ''}`} title={live ? 'Rows update live' : 'Not receiving live updates'}>
                {live ? 'live' : 'offline'}
              </span>
            )}
          </p>
        </div>
        <div class="page-actions">
          <a class="btn" href={href(`/collections/${encodeURIComponent(collection.name)}/edit`)} onClick={(e) => linkClick(e, `/collections/${encodeURIComponent(collection.name)}/edit`)}>
            Edit collection
          </a>
          <a class="btn" href={href(`/collections/${encodeURIComponent(collection.name)}/api`)} onClick={(e) => linkClick(e, `/collections/${encodeURIComponent(collection.name)}/api`)}>
            API
          </a>
          <button type="button" class="btn" onClick={() => setReload((n) => n + 1)}>Refresh</button>
          <button type="button" class="btn btn-primary" onClick={() => setEditing('new')}>New record</button>
        </div>
      </header>

      <FilterBar
        inputRef={filterRef}
        draft={draft}
        onDraft={setDraft}
        applied={filter}
        error={error}
        placeholder={`e.g. ${exampleFilter(collection)}`}
        onApply={applyFilter}
        onClear={() => { setDraft(''); setFilter(''); first(); }}
      />

      {selected.size > 0 && (
        <div class="bulk-bar" role="region" aria-label="Selection">
          <span>{plural(selected.size, 'record')} selected</span>
          <button type="button" class="btn" onClick={() => setSelected(new Set())}>Clear selection</button>
          <button type="button" class="btn btn-danger" onClick={() => setConfirmBulk(true)}>Delete selected</button>
        </div>
      )}
      {unseen > 0 && (
        <div class="unseen" role="status">
          {plural(unseen, 'new record')} since this page loaded.{' '}
          <button type="button" class="link-btn" onClick={() => { setSort(''); first(); setReload((n) => n + 1); }}>Show newest</button>
        </div>
      )}

      <RecordsTable
        collection={collection}
        rows={rows}
        sort={sort}
        onSort={(s) => { setSort(s); first(); }}
        selected={selected}
        onSelect={setSelected}
        onOpen={(r) => setEditing(r)}
        flash={flash}
        busy={loading}
      />
      {!loading && rows.length === 0 && !error && (
        <p class="empty-state">{filter ? 'No record matches the filter.' : 'No records yet.'}</p>
      )}

      <Pager
        perPage={perPage}
        sizes={PAGE_SIZES.filter((n) => n <= meta.limits.maxPerPage)}
        onPerPage={(n) => { setPerPage(n); first(); }}
        from={from}
        shown={rows.length}
        total={total}
        pageNo={page.no}
        hasPrev={hasPrev && !loading}
        hasNext={hasNext && !loading}
        onFirst={first}
        onPrev={() => setPage(cursorMode ? { no: page.no - 1, cursor: result?.prevCursor ?? '' } : { no: page.no - 1, cursor: '' })}
        onNext={() => setPage(cursorMode ? { no: page.no + 1, cursor: result?.nextCursor ?? '' } : { no: page.no + 1, cursor: '' })}
      />

      {editing && (
        <RecordPanel
          collection={collection}
          record={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={(r, created) => {
            setEditing(null);
            notify(created ? 'Record created.' : 'Record saved.');
            if (created) {
              if (view.current.first && view.current.newestFirst) {
                setRows((rs) => (rs.some((x) => x.id === r.id) ? rs : [r, ...rs]));
                mark(r.id, 'new');
              }
            } else setRows((rs) => rs.map((x) => (x.id === r.id ? { ...r, expand: x.expand } : x)));
          }}
          onDeleted={(id) => {
            setEditing(null);
            notify('Record deleted.');
            setRows((rs) => rs.filter((x) => x.id !== id));
          }}
        />
      )}
      {confirmBulk && (
        <Confirm
          title="Delete records"
          message={`Delete ${plural(selected.size, 'record')} of ${collection.name}? This cannot be undone.`}
          confirmLabel="Delete"
          onConfirm={deleteSelected}
          onCancel={() => setConfirmBulk(false)}
        />
      )}
    </main>
  );
}

function exampleFilter(c: Collection): string {
  const f = c.schema.find((x) => x.type === 'text' && !x.options.hidden && !x.options.encrypted);
  return f ? `${f.name} ~ 'abc' && created > '2024-01-01'` : `created > '2024-01-01'`;
}


