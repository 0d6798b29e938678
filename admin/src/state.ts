/** What every page reads: the server's capabilities, the collections, the signed-in superuser. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Collection, Meta, SuperuserRecord } from './types';

export interface AppState {
  meta: Meta;
  user: SuperuserRecord;
  collections: Collection[];
  /** reloads the collection list (after a create, edit or delete) */
  reloadCollections(): Promise<Collection[]>;
  /** a short message in the status region */
  notify(message: string, kind?: 'ok' | 'error'): void;
  /** whether the superuser may see the flags page (the registry declares any) */
  hasFeatures: boolean;
}

export const AppContext = createContext<AppState | null>(null);

export function useApp(): AppState {
  const s = useContext(AppContext);
  if (!s) throw new Error('useApp outside the signed-in app');
  return s;
}

export const can = (meta: Meta, capability: string): boolean => meta.capabilities[capability] === true;
