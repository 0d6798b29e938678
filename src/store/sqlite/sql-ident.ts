/** Quotes an identifier for SQLite (names are validated identifiers already; this is defence). */
export function q(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
