/**
 * A build failure that points at its source: `file` (relative to the site directory) and a 1-based
 * `line`. Its message reads `file:line: what went wrong` (docs/devtool.md: a failed rebuild's
 * output fills `build.error`, and a build error names the file and line).
 */
export class BuildError extends Error {
  constructor(readonly file: string, readonly line: number, readonly reason: string) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'BuildError';
  }
}

/** The 1-based line of character `offset` in `text`. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
