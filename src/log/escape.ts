/**
 * String escaping for log lines (docs/configuration.md, "Logging").
 *
 * A log stream is one record per line, so nothing a client controls (a URL path, a header echoed in
 * a message) may put a line break into it. Each function has a fast path: one regex test, and the
 * input is returned untouched when it needs nothing, which is the common case.
 */

// C0 controls, DEL and the two Unicode line separators some viewers honour.
const TEXT_UNSAFE = /[\u0000-\u001f\u007f\u2028\u2029]/;
const TEXT_UNSAFE_ALL = /[\u0000-\u001f\u007f\u2028\u2029]/g;
// The same plus the two characters JSON string syntax reserves.
const JSON_UNSAFE = /["\\\u0000-\u001f\u007f\u2028\u2029]/;
const JSON_UNSAFE_ALL = /["\\\u0000-\u001f\u007f\u2028\u2029]/g;

const SHORT: Record<string, string> = {
  '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f',
};

function escapeChar(ch: string): string {
  return SHORT[ch] ?? '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0');
}

/**
 * Escapes control characters and line separators of a text-mode message (`\n` → `\\n`,
 * others → `\\uXXXX`). Quotes and backslashes are left alone so ordinary messages read naturally.
 */
export function escapeTextMessage(s: string): string {
  return TEXT_UNSAFE.test(s) ? s.replace(TEXT_UNSAFE_ALL, escapeChar) : s;
}

/**
 * JSON string escaping without the surrounding quotes: the body of `JSON.stringify(s)`, plus DEL
 * and U+2028/U+2029 as `\\uXXXX` so the result is also safe on a terminal. Used for request paths
 * and methods in the text encoding, where the path is written JSON-escaped.
 */
export function escapeJsonFragment(s: string): string {
  return JSON_UNSAFE.test(s) ? s.replace(JSON_UNSAFE_ALL, escapeChar) : s;
}

/**
 * Clamps `s` to at most `max` UTF-16 code units of original text, never splitting a surrogate
 * pair, and appends a marker saying how much was cut. Applied before a record is encoded so a
 * clamped JSON line is still one complete object.
 */
export function clampText(s: string, max: number): string {
  if (s.length <= max) return s;
  let cut = max;
  const last = s.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return `${s.slice(0, cut)}…[truncated ${s.length - cut} chars]`;
}
