/**
 * Where magic-link consume may send the browser (docs/auth.md, "Magic links and one-time codes"):
 * only same-origin relative paths. Refused: anything with a scheme or host, a protocol-relative
 * start (`//`), a backslash, a `.` or `..` segment, an encoded dot, slash or backslash (`%2e`,
 * `%2f`, `%5c`), a control byte (CR and LF included). With a non-empty allow-list the path must
 * match an entry (one ending in `/` is a prefix, any other an exact path); a refused or absent
 * target falls back to `redirect_default`, and an unsafe default to `/`.
 */

/** Whether `target` is a safe same-origin relative path (query and fragment allowed). */
export function isSafeRelativePath(target: unknown): target is string {
  if (typeof target !== 'string' || target === '' || target.length > 2048) return false;
  if (target[0] !== '/' || target.startsWith('//')) return false;
  if (target.includes('\\')) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(target)) return false;
  if (/%(2e|2f|5c)/i.test(target)) return false;
  const path = pathOf(target);
  for (const seg of path.split('/')) if (seg === '.' || seg === '..') return false;
  return true;
}

/** The path part of a relative target (before `?` or `#`). */
function pathOf(target: string): string {
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}

/** Whether a safe `target` is allowed by `allow` (empty: any safe path). */
function allowed(target: string, allow: readonly string[]): boolean {
  if (allow.length === 0) return true;
  const path = pathOf(target);
  return allow.some((entry) => (entry.endsWith('/') ? path.startsWith(entry) : path === entry));
}

/** The redirect a consume answers with: `requested` when safe and allowed, else the default, else `/`. */
export function magicLinkRedirect(requested: unknown, allow: readonly string[], redirectDefault: unknown): string {
  if (isSafeRelativePath(requested) && allowed(requested, allow)) return requested;
  return isSafeRelativePath(redirectDefault) ? redirectDefault : '/';
}
