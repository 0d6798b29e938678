/**
 * A small History API router under `/_/`: the server answers index.html for every path there,
 * so `/_/collections/posts` can be reloaded and bookmarked.
 */
import { useEffect, useState } from 'preact/hooks';

const BASE = '/_';
const listeners = new Set<() => void>();

/** The path inside the app: `/_/collections/x` → `/collections/x`. */
export function currentPath(): string {
  const p = location.pathname.startsWith(`${BASE}/`) ? location.pathname.slice(BASE.length) : '/';
  return p || '/';
}

export function href(path: string): string {
  return BASE + path;
}

export function navigate(path: string, replace = false): void {
  const url = href(path);
  if (url === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
}

addEventListener('popstate', () => {
  for (const l of listeners) l();
});

/** The current app path; re-renders on navigation. */
export function useRoute(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const l = () => setPath(currentPath());
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return path;
}

/** Handles a click on an in-app link: plain left clicks navigate without a page load. */
export function linkClick(e: MouseEvent, path: string): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(path);
}
