/**
 * The import's CSV reader (src/ops/csv-records.ts; docs/operations.md, "Bulk import"): quoted
 * cells over several lines, and recovery from a malformed row: it is that row's error and
 * reading resumes at the line after its first, so one unclosed quote costs one row.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvRecords, type CsvRecord } from '../../../src/ops/csv-records.js';

async function read(text: string): Promise<CsvRecord[]> {
  async function* lines() {
    yield* text.split('\n');
  }
  const out: CsvRecord[] = [];
  for await (const r of csvRecords(lines())) out.push(r);
  return out;
}

test('plain records, quoted cells, escaped quotes, a cell over two lines, a BOM and empty lines', async () => {
  const out = await read('\uFEFFname,note\na,"b, c"\n\n"d ""e""",x\n"f","two\nlines"\n');
  assert.deepEqual(out, [
    { line: 1, cells: ['name', 'note'] },
    { line: 2, cells: ['a', 'b, c'] },
    { line: 4, cells: ['d "e"', 'x'] },
    { line: 5, cells: ['f', 'two\nlines'] },
  ]);
});

test('an unclosed quote is one row\'s error; the rows after it are read', async () => {
  const out = await read('name,note\na,1\nb,"unclosed\nc,3\nd,4\n');
  assert.deepEqual(out.map((r) => r.cells ?? r.line), [['name', 'note'], ['a', '1'], 3, ['c', '3'], ['d', '4']]);
  assert.match(out[2].error!, /quoted cell is not closed by the end of the file.*resumes at line 4/);
});

test('a quote that pairs up with a later row\'s does not swallow the rows between', async () => {
  // line 3 opens a quote, line 5 closes it: the joined record does not parse, so line 3 alone fails
  const out = await read('name,note\na,1\nb,"x\nc,3\nd,"y"z\ne,5\n');
  assert.deepEqual(out.map((r) => (r.cells ? r.cells[0] : `error@${r.line}`)), ['name', 'a', 'error@3', 'c', 'error@5', 'e']);
});

test('a row with the wrong number of cells, or a bad quote, fails alone', async () => {
  const rows = ['name,note', ...Array.from({ length: 600 }, (_, i) => (i === 300 ? 'only-one' : i === 400 ? 'x"y,z' : `r${i},${i}`))];
  const out = await read(rows.join('\n'));
  assert.equal(out.length, 601);
  const errors = out.filter((r) => r.error);
  assert.deepEqual(errors.map((r) => r.line), [302, 402]);
  assert.match(errors[0].error!, /1 cell\(s\) where the header has 2/);
  assert.match(errors[1].error!, /not valid CSV/);
  assert.deepEqual(out[600].cells, ['r599', '599']);
});
