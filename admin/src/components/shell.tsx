/**
 * The signed-in frame: a header (menu button on narrow windows, the superuser, sign-out), the
 * sidebar (collections with a quick filter, settings, mail, storage, backups, logs and flags), and the page.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { href, linkClick, useRoute } from '../router';
import { can, useApp } from '../state';

export function Shell({ children, onSignOut }: { children: ComponentChildren; onSignOut(): Promise<void> }) {
  const { user, meta, collections, hasFeatures } = useApp();
  const path = useRoute();
  const [menuOpen, setMenuOpen] = useState(false);
  const [query, setQuery] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => setMenuOpen(false), [path]);
  useEffect(() => {
    if (!menuOpen) return undefined;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        setMenuOpen(false);
        document.querySelector<HTMLElement>('.menu-btn')?.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [menuOpen]);

  const q = query.trim().toLowerCase();
  const shown = collections.filter((c) => !q || c.name.toLowerCase().includes(q));
  const current = decodeURIComponent(path.split('/')[2] ?? '');
  const link = (to: string, label: ComponentChildren, active: boolean, extra?: ComponentChildren) => (
    <a href={href(to)} onClick={(e) => linkClick(e, to)} class={active ? 'active' : ''} aria-current={active ? 'page' : undefined}>
      {label}
      {extra}
    </a>
  );

  return (
    <div class={`shell ${menuOpen ? 'menu-open' : ''}`}>
      <a class="skip-link" href="#main">Skip to content</a>
      <header class="topbar">
        <button type="button" class="icon-btn menu-btn" aria-expanded={menuOpen} aria-controls="sidebar" onClick={() => setMenuOpen(!menuOpen)}>
          <span aria-hidden="true">☰</span>
          <span class="visually-hidden">Menu</span>
        </button>
        <a class="brand" href={href('/')} onClick={(e) => linkClick(e, '/')}>
          <span class="logo" aria-hidden="true">s</span>
          <span>svc admin</span>
        </a>
        <span class="version" title={`commit ${meta.commit}`}>v{meta.svc}</span>
        <div class="topbar-end">
          <span class="user" title="Signed in as">{user.email}</span>
          <button
            type="button"
            class="btn btn-small"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              await onSignOut();
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <nav class="sidebar" id="sidebar" aria-label="Collections and settings">
        <div class="sidebar-section">
          <h2 class="sidebar-title" id="collections-title">Collections</h2>
          <label class="visually-hidden" for="collection-search">Find a collection</label>
          <input id="collection-search" type="search" placeholder="Find a collection" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
          <ul class="nav-list" aria-labelledby="collections-title">
            {shown.map((c) => (
              <li key={c.id}>
                {link(
                  `/collections/${encodeURIComponent(c.name)}`,
                  <span class="nav-name">{c.name}</span>,
                  path.startsWith('/collections/') && current === c.name,
                  c.type === 'auth' ? <span class="badge" title="auth collection">auth</span> : c.system ? <span class="badge">system</span> : null,
                )}
              </li>
            ))}
            {shown.length === 0 && <li class="muted">No collection matches.</li>}
          </ul>
          {!can(meta, 'collectionsFrozen') && (
            <a class="btn btn-block new-collection" href={href('/collections/new')} onClick={(e) => linkClick(e, '/collections/new')}>
              + New collection
            </a>
          )}
        </div>
        <div class="sidebar-section">
          <h2 class="sidebar-title">Server</h2>
          <ul class="nav-list">
            <li>{link('/settings', 'Settings', path === '/settings')}</li>
            <li>{link('/settings/mail', 'Mail', path === '/settings/mail')}</li>
            <li>{link('/settings/storage', 'Storage', path === '/settings/storage')}</li>
            <li>{link('/backups', 'Backups', path === '/backups')}</li>
            <li>{link('/logs', 'Logs', path === '/logs')}</li>
            {hasFeatures && <li>{link('/features', 'Flags and experiments', path === '/features')}</li>}
          </ul>
        </div>
      </nav>
      {menuOpen && <div class="scrim" aria-hidden="true" onClick={() => setMenuOpen(false)} />}
      <div class="content">{children}</div>
    </div>
  );
}
