/**
 * The one way the UI talks to the API: fetch with the session cookies (never a token in
 * storage), the CSRF header on unsafe methods, JSON in and out, and errors as ApiError carrying
 * the API's envelope (status, code, message, data).
 */

export interface FieldError {
  code: string;
  message: string;
}

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly data: Record<string, FieldError> = {}) {
    super(message);
  }
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The readable CSRF cookie set at sign-in ('' when signed out). */
export function csrfToken(): string {
  const m = /(?:^|;\s*)svc_csrf=([^;]*)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : '';
}

/** Called on a 401 from any request made with `session: true` (the default): the session ended. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: (() => void) | null): void {
  onUnauthorized = fn;
}

/**
 * The requests made with the session (`session: true`, the default) share this controller: a
 * sign-out aborts those under way before the logout is sent (one the server authorized after the
 * logout would answer 403 to a page being left) and refuses new ones until the next sign-in.
 */
let sessionRequests = new AbortController();

/** Aborts the session's requests under way and refuses new ones (sign-out, a lost session). */
export function endSessionRequests(): void {
  sessionRequests.abort();
}

/** Lets the session's requests through again (a sign-in). */
export function beginSessionRequests(): void {
  if (sessionRequests.signal.aborted) sessionRequests = new AbortController();
}

/** The signal a request listens to: the caller's and, for a session request, the session's. */
function requestSignal(opts: RequestOptions): AbortSignal | undefined {
  if (opts.session === false) return opts.signal;
  const own = opts.signal;
  if (!own) return sessionRequests.signal;
  const both = new AbortController();
  const abort = () => both.abort();
  for (const s of [own, sessionRequests.signal]) {
    if (s.aborted) both.abort();
    else s.addEventListener('abort', abort, { once: true });
  }
  return both.signal;
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface RequestOptions {
  json?: unknown;
  form?: FormData;
  query?: Query;
  signal?: AbortSignal;
  /** false: a 401 is an answer (sign-in), not a lost session */
  session?: boolean;
}

/** A path with its query string (null and undefined values left out). */
export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== null && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** Calls the API; resolves with the parsed JSON body (null for 204), rejects with ApiError. */
export async function api<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  let body: BodyInit | undefined;
  if (opts.form) body = opts.form;
  else if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['Content-Type'] = 'application/json';
  }
  if (UNSAFE.has(method)) {
    const csrf = csrfToken();
    if (csrf) headers['X-CSRF-Token'] = csrf;
  }
  const signal = requestSignal(opts);
  if (signal?.aborted) throw new DOMException('The request was aborted.', 'AbortError');
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), { method, headers, body, credentials: 'same-origin', signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'Cannot reach the server. Check that it is running.');
  }
  const text = res.status === 204 ? '' : await res.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!res.ok) {
    const e = (parsed ?? {}) as { code?: string; message?: string; data?: Record<string, FieldError> };
    const err = new ApiError(res.status, e.code ?? 'error', e.message ?? `The server answered ${res.status}.`, e.data ?? {});
    if (res.status === 401 && opts.session !== false) onUnauthorized?.();
    throw err;
  }
  return parsed as T;
}

/** The message to show for any failure. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

export const isAbort = (err: unknown): boolean => err instanceof Error && err.name === 'AbortError';

/** A quoted string literal of the filter grammar. */
export function filterString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export const recordsPath = (collection: string): string => `/api/collections/${encodeURIComponent(collection)}/records`;

export const fileUrl = (collection: string, recordId: string, name: string): string =>
  `/api/files/${encodeURIComponent(collection)}/${encodeURIComponent(recordId)}/${encodeURIComponent(name)}`;
