/**
 * CSV records for the bulk import (docs/operations.md, "Bulk import"), read so that one
 * malformed row cannot take the rest of the file with it.
 *
 * Lines are grouped into records by counting quotes: a record whose quotes do not pair up on its
 * line goes on over the next lines (a quoted cell holding line breaks). Groups of records are
 * then parsed by csv-parse. Recovery: a record that does not parse, or whose quoted cell is still
 * open at the end of the file (or after `MAX_RECORD_BYTES`), is reported as one row's error, and
 * reading resumes at the line after that record's first line, so an unclosed quote costs one row.
 */
import { parse } from 'csv-parse/sync';

/** One record: its first line's number (1-based) and its cells, or why it could not be read. */
export interface CsvRecord {
  line: number;
  cells?: string[];
  error?: string;
}

/** The most a record running over several lines may hold before it counts as malformed. */
export const MAX_RECORD_BYTES = 1 << 20;

/** Records parsed per csv-parse call (a bigger group costs a longer retry when one is bad). */
const GROUP = 256;

/** How many `"` a line holds. */
function quotes(line: string): number {
  let n = 0;
  for (let i = line.indexOf('"'); i !== -1; i = line.indexOf('"', i + 1)) n++;
  return n;
}

/** One record's text as cells, or the reason it is not valid CSV (with csv-parse's error code). */
function parseOne(text: string): string[] | { why: string; code?: string } {
  try {
    const rows = parse(text, { relax_column_count: true }) as string[][];
    return rows.length === 1 ? rows[0] : { why: `not one CSV record (${rows.length} found)` };
  } catch (err) {
    const why = `not valid CSV: ${(err as Error).message.replace(/ at line \d+/g, '').replace(/^[A-Za-z ]+: /, (m) => m.toLowerCase())}`;
    return { why, code: (err as { code?: string }).code };
  }
}

/**
 * The records of CSV text given line by line (line breaks removed; a leading byte-order mark is
 * dropped). Empty lines between records are skipped. Cells are strings; the first record is the
 * header, and a later record with another number of cells is an error (one spanning several
 * lines is malformed: reading resumes at its second line).
 */
export async function* csvRecords(source: AsyncIterable<string>): AsyncGenerator<CsvRecord> {
  const it = source[Symbol.asyncIterator]();
  let read = 0;
  /** lines read again after a malformed record (its lines after the first), before the source's next */
  const again: { no: number; text: string }[] = [];
  const next = async (): Promise<{ no: number; text: string } | null> => {
    if (again.length) return again.shift()!;
    const r = await it.next();
    if (r.done) return null;
    read++;
    return { no: read, text: read === 1 ? r.value.replace(/^\uFEFF/, '') : r.value };
  };
  /** single-line records waiting to be parsed together */
  let group: { no: number; text: string }[] = [];
  let width = -1; // the header's number of cells
  const record = (line: number, cells: string[]): CsvRecord => {
    if (width < 0) width = cells.length;
    else if (cells.length !== width) return { line, error: `${cells.length} cell(s) where the header has ${width}` };
    return { line, cells };
  };
  function* flush(): Generator<CsvRecord> {
    if (!group.length) return;
    const part = group;
    group = [];
    let rows: string[][] | null = null;
    try {
      rows = parse(part.map((l) => l.text).join('\n'), { relax_column_count: true }) as string[][];
    } catch {
      rows = null; // one of them is malformed: parse them one by one below
    }
    if (rows && rows.length === part.length) {
      for (let i = 0; i < part.length; i++) yield record(part[i].no, rows[i]);
      return;
    }
    for (const l of part) {
      const cells = parseOne(l.text);
      yield Array.isArray(cells) ? record(l.no, cells) : { line: l.no, error: cells.why };
    }
  }
  for (let l = await next(); l; l = await next()) {
    if (l.text === '') continue;
    if (quotes(l.text) % 2 === 0) {
      group.push(l);
      if (group.length >= GROUP) yield* flush();
      continue;
    }
    yield* flush();
    const alone = parseOne(l.text);
    if (!Array.isArray(alone) && alone.code !== 'CSV_QUOTE_NOT_CLOSED') {
      yield { line: l.no, error: alone.why }; // malformed on its own line (a stray quote)
      continue;
    }
    // a quoted cell runs over the line: gather lines until the quotes pair up
    const lines = [l];
    let open = true;
    let bytes = l.text.length;
    while (open && bytes <= MAX_RECORD_BYTES) {
      const more = await next();
      if (!more) break;
      lines.push(more);
      bytes += more.text.length + 1;
      if (quotes(more.text) % 2 === 1) open = false;
    }
    const cells = open ? null : parseOne(lines.map((x) => x.text).join('\n'));
    if (Array.isArray(cells) && (width < 0 || cells.length === width)) {
      yield record(l.no, cells);
      continue;
    }
    const why = cells && !Array.isArray(cells) ? cells.why : cells ? `${cells.length} cell(s) where the header has ${width}` : (bytes > MAX_RECORD_BYTES ? `a quoted cell is not closed within ${MAX_RECORD_BYTES} bytes` : 'a quoted cell is not closed by the end of the file');
    yield { line: l.no, error: `${why} (the row is skipped; reading resumes at line ${l.no + 1})` };
    again.unshift(...lines.slice(1));
  }
  yield* flush();
}
