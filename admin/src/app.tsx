/**
 * The app: reads `/api/meta`, restores the session from the cookies (or shows the sign-in), then
 * the shell with the page the path names.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, beginSessionRequests, endSessionRequests, errorMessage, setUnauthorizedHandler } from './api';
import { disconnect } from './realtime';
import { currentPath, navigate, useRoute } from './router';
import { restoreSession, signOut } from './session';
import { AppContext, useApp, type AppState } from './state';
import type { Collection, Meta, SuperuserRecord } from './types';
import { SignIn } from './components/sign-in';
import { Install } from './components/install';
import { Shell } from './components/shell';
import { Loading } from './components/ui';
import { RecordsPage } from './components/records-page';
import { CollectionEditor } from './components/collection-editor';
import { ApiPage } from './components/api-page';
import { SettingsPage } from './components/settings-page';
import { FeaturesPage } from './components/features-page';
import { BackupsPage } from './components/backups-page';
import { MailPage } from './components/mail-page';
import { StoragePage } from './components/storage-page';
import { LogsPage } from './components/logs-page';

interface Toast {
  id: number;
  message: string;
  kind: 'ok' | 'error';
}

type Boot = { phase: 'loading' } | { phase: 'failed'; message: string } | { phase: 'ready'; meta: Meta; user: SuperuserRecord | null };

export function App() {
  const [boot, setBoot] = useState<Boot>({ phase: 'loading' });
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    void (async () => {
      try {
        const [meta, user] = await Promise.all([api<Meta>('GET', '/api/meta', { session: false }), restoreSession()]);
        setBoot({ phase: 'ready', meta, user });
      } catch (err) {
        setBoot({ phase: 'failed', message: errorMessage(err) });
      }
    })();
  }, []);

  const signedOut = useCallback((message: string | null) => {
    endSessionRequests();
    void disconnect();
    setNotice(message);
    setBoot((b) => (b.phase === 'ready' ? { ...b, user: null } : b));
  }, []);

  useEffect(() => {
    setUnauthorizedHandler(() => signedOut('Your session ended. Sign in again.'));
    return () => setUnauthorizedHandler(null);
  }, [signedOut]);

  if (boot.phase === 'loading') return <Loading label="Loading the admin UI…" />;
  if (boot.phase === 'failed') return <main class="signin"><div class="alert" role="alert">Cannot load the admin UI: {boot.message}</div></main>;
  if (!boot.user && currentPath() === '/install') {
    const done = (message: string | null) => {
      history.replaceState(null, '', '/_/');
      setNotice(message);
    };
    return (
      <Install
        token={location.hash.slice(1)}
        onSignedIn={(user) => { done(null); void disconnect(); beginSessionRequests(); setBoot({ ...boot, user }); }}
        onDone={(message) => { done(message); setBoot({ ...boot }); }}
      />
    );
  }
  if (!boot.user) {
    // a stream left from before the sign-in (e.g. one the browser reopened without a cookie after the
    // sign-out) would mix two authorizations on one realtime client (403): start from none
    return <SignIn notice={notice} onSignedIn={(user) => { void disconnect(); beginSessionRequests(); setNotice(null); setBoot({ ...boot, user }); }} />;
  }
  return (
    <SignedIn
      meta={boot.meta}
      user={boot.user}
      onSignOut={async () => {
        // the stream goes first: the logout ends the session's streams, and a browser that
        // reopened one without the cookie would subscribe anonymously (403 on locked collections);
        // a subscription POST under way is answered before the stream closes
        await disconnect();
        // the page's other requests under way are dropped before the session ends
        endSessionRequests();
        await signOut();
        signedOut('You are signed out.');
      }}
    />
  );
}

function SignedIn({ meta, user, onSignOut }: { meta: Meta; user: SuperuserRecord; onSignOut(): Promise<void> }) {
  const [collections, setCollections] = useState<Collection[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [toasts, setToasts] = useState<Toast[]>([]);
  const [hasFeatures, setHasFeatures] = useState(false);
  const toastId = useRef(0);

  const reloadCollections = useCallback(async () => {
    const r = await api<{ items: Collection[] }>('GET', '/api/collections');
    setCollections(r.items);
    return r.items;
  }, []);

  useEffect(() => {
    reloadCollections().catch((err) => setLoadError(errorMessage(err)));
    api<{ flags: unknown[]; experiments: unknown[] }>('GET', '/api/features')
      .then((f) => setHasFeatures(f.flags.length + f.experiments.length > 0))
      .catch(() => setHasFeatures(false));
  }, [reloadCollections]);

  const notify = useCallback((message: string, kind: 'ok' | 'error' = 'ok') => {
    const id = ++toastId.current;
    setToasts((t) => [...t, { id, message, kind }]);
    setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), kind === 'error' ? 8000 : 4000);
  }, []);

  const state = useMemo<AppState | null>(
    () => (collections ? { meta, user, collections, reloadCollections, notify, hasFeatures } : null),
    [meta, user, collections, reloadCollections, notify, hasFeatures],
  );

  return (
    <>
      {state ? (
        <AppContext.Provider value={state}>
          <Shell onSignOut={onSignOut}>
            <Page />
          </Shell>
        </AppContext.Provider>
      ) : loadError ? (
        <main class="signin"><div class="alert" role="alert">Cannot load the collections: {loadError}</div></main>
      ) : (
        <Loading />
      )}
      <div class="toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} class={`toast toast-${t.kind}`}>{t.message}</div>
        ))}
      </div>
    </>
  );
}

/** The page for the current path. */
function Page() {
  const path = useRoute();
  const { collections, hasFeatures } = useApp();
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  useEffect(() => {
    if (parts.length === 0) {
      const first = collections.find((c) => !c.system) ?? collections[0];
      navigate(first ? `/collections/${encodeURIComponent(first.name)}` : '/collections/new', true);
    }
  }, [path, collections]);

  if (parts[0] === 'collections' && parts[1] === 'new') return <CollectionEditor key="new" collection={null} />;
  if (parts[0] === 'collections' && parts[1]) {
    const c = collections.find((x) => x.name === parts[1] || x.id === parts[1]);
    if (!c) return <NotFound what={`The collection “${parts[1]}” does not exist.`} />;
    if (parts[2] === 'edit') return <CollectionEditor key={c.id} collection={c} />;
    if (parts[2] === 'api') return <ApiPage key={c.id} collection={c} />;
    return <RecordsPage key={c.id} collection={c} />;
  }
  if (parts[0] === 'settings' && parts[1] === 'mail') return <MailPage />;
  if (parts[0] === 'settings' && parts[1] === 'storage') return <StoragePage />;
  if (parts[0] === 'settings' && !parts[1]) return <SettingsPage />;
  if (parts[0] === 'backups') return <BackupsPage />;
  if (parts[0] === 'logs') return <LogsPage />;
  if (parts[0] === 'features' && hasFeatures) return <FeaturesPage />;
  if (parts.length === 0) return <Loading />;
  return <NotFound what="There is no such page." />;
}

function NotFound({ what }: { what: string }) {
  return (
    <main class="page" id="main">
      <h1>Not found</h1>
      <p>{what}</p>
    </main>
  );
}
