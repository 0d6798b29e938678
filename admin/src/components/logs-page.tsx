/**
 * The request logs (docs/operations.md, "Request logs"): a table of the newest entries (level,
 * time, method, URL, status, duration), the filter box in the API's grammar over the log's
 * fields (its error shown under it), paging, and an entry's details in a side panel.
 */
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { Alert, Dialog, Loading } from './ui';
import { FilterBar, Pager } from './table-controls';

interface LogEntry {
  id: string;
  created: string;
  level: number;
  message: string;
  data: {
    type?: string;
    method?: string;
    url?: string;
    status?: number;
    execTime?: number;
    auth?: string;
    ip?: string;
    userAgent?: string;
    scope?: string;
  };
}

interface LogList {
  page: number;
  perPage: number;
  totalItems: number;
  items: LogEntry[];
}

const SIZES = [20, 50, 100];

/** PocketBase's level numbers as words. */
export function levelName(level: number): string {
  if (level >= 8) return 'error';
  if (level >= 4) return 'warn';
  if (level >= 0) return 'info';
  return 'debug';
}

export function LogsPage() {
  const [draft, setDraft] = useState('');
  const [filter, setFilter] = useState('');
  const [page, setPage] = useState(1);
  const [perPage, setPerPage] = useState(SIZES[0]);
  const [reload, setReload] = useState(0);
  const [list, setList] = useState<LogList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filterError, setFilterError] = useState<string | null>(null);
  const [open, setOpen] = useState<LogEntry | null>(null);
  const filterRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    let live = true;
    api<LogList>('GET', '/api/logs', { query: { page, perPage, sort: '-created', filter: filter || undefined } })
      .then((r) => {
        if (!live) return;
        setList(r);
        setError(null);
        setFilterError(null);
      })
      .catch((err) => {
        if (!live) return;
        // a refused filter: the API's message under the box, the last rows kept
        if ((err as { status?: number }).status === 400 && filter) setFilterError(errorMessage(err));
        else setError(errorMessage(err));
      });
    return () => {
      live = false;
    };
  }, [filter, page, perPage, reload]);

  const total = list?.totalItems ?? null;
  return (
    <main class="page" id="main">
      <header class="page-head">
        <div>
          <h1>Logs</h1>
          <p class="muted page-sub">Requests this server answered, and its warnings and errors, newest first.</p>
        </div>
        <div class="page-actions">
          <button type="button" class="btn" onClick={() => setReload((n) => n + 1)}>Refresh</button>
        </div>
      </header>
      <FilterBar
        inputRef={filterRef}
        draft={draft}
        onDraft={setDraft}
        applied={filter}
        error={filterError}
        placeholder='e.g. data.status >= 400 && data.method = "POST"'
        onApply={() => {
          setFilter(draft.trim());
          setPage(1);
        }}
        onClear={() => {
          setDraft('');
          setFilter('');
          setFilterError(null);
          setPage(1);
        }}
      />
      <Alert message={error} />
      {list === null && !error && <Loading />}
      {list && (
        <>
          <div class="table-wrap" role="region" aria-label="Log entries" tabIndex={0}>
            <table class="records logs">
              <thead>
                <tr>
                  <th scope="col">level</th>
                  <th scope="col">time (UTC)</th>
                  <th scope="col">method</th>
                  <th scope="col">URL or message</th>
                  <th scope="col">status</th>
                  <th scope="col">duration</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((e) => (
                  <tr key={e.id} class="clickable" onClick={() => setOpen(e)}>
                    <td><span class={`badge level-${levelName(e.level)}`}>{levelName(e.level)}</span></td>
                    <td class="mono">{e.created.slice(0, 19)}</td>
                    <td class="mono">{e.data.method ?? ''}</td>
                    <td class="mono cell-text">
                      <button type="button" class="link-btn" onClick={(ev) => { ev.stopPropagation(); setOpen(e); }}>
                        {e.data.url ?? e.message}
                      </button>
                    </td>
                    <td class="mono">{e.data.status ?? ''}</td>
                    <td class="mono">{e.data.execTime !== undefined ? `${e.data.execTime.toFixed(1)} ms` : ''}</td>
                  </tr>
                ))}
                {list.items.length === 0 && (
                  <tr>
                    <td colSpan={6} class="muted">{filter ? 'No entry matches the filter.' : 'No entries yet.'}</td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
          <Pager
            perPage={perPage}
            sizes={SIZES}
            onPerPage={(n) => { setPerPage(n); setPage(1); }}
            from={list.items.length ? (page - 1) * perPage + 1 : 0}
            shown={list.items.length}
            total={total}
            pageNo={page}
            hasPrev={page > 1}
            hasNext={total !== null && page * perPage < total}
            onFirst={() => setPage(1)}
            onPrev={() => setPage((p) => Math.max(1, p - 1))}
            onNext={() => setPage((p) => p + 1)}
          />
        </>
      )}
      <Dialog open={open !== null} title="Log entry" variant="panel" onClose={() => setOpen(null)}>
        {open && (
          <dl class="log-detail">
            <dt>id</dt>
            <dd class="mono">{open.id}</dd>
            <dt>time</dt>
            <dd class="mono">{open.created}</dd>
            <dt>level</dt>
            <dd>{levelName(open.level)} ({open.level})</dd>
            <dt>message</dt>
            <dd class="mono">{open.message}</dd>
            {Object.entries(open.data).map(([k, v]) => (
              <Fragment key={k}>
                <dt>{k}</dt>
                <dd class="mono">{String(v)}</dd>
              </Fragment>
            ))}
          </dl>
        )}
      </Dialog>
    </main>
  );
}
