/**
 * Keyset predicates (src/store/sql/keyset.ts in SQLite's dialect) against an in-memory oracle
 * of SQLite's order: NULL first ascending and last descending, mixed directions, duplicate
 * values. Random sorts are walked forward and backward page by page on a real libsql table, with rows inserted and
 * deleted between pages: every row present throughout must come exactly once, in order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import type { Collection } from '../../../src/model/schema.js';
import type { SchemaLookup } from '../../../src/store/rule-types.js';
import type { KeyValue, SortKey } from '../../../src/store/sql/keyset.js';
import { sqliteKeyset } from '../../../src/store/sqlite/list-dialect.js';
import type { SqlValue } from '../../../src/store/bind.js';
import { renderSlots } from '../../../src/store/slots.js';

const { beyondBoundary, cursorSortKeys, orderBy, segments } = sqliteKeyset;

const col: Collection = {
  id: 'pbc_keyset0', name: 'items', type: 'base', system: false, indexes: [], options: {},
  fields: [
    { id: 'fa', name: 'a', type: 'number', options: {} },
    { id: 'fb', name: 'b', type: 'text', options: {} },
    { id: 'fc', name: 'c', type: 'bool', options: {} },
  ],
  listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
};
const schema: SchemaLookup = { byId: () => undefined, byName: () => undefined };

interface Row { id: string; a: number | null; b: string | null; c: number }

/** A deterministic PRNG (mulberry32) so failures reproduce. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** SQLite's order of values: NULL < numbers < text (binary). */
function cmpValue(x: unknown, y: unknown): number {
  const rank = (v: unknown) => (v === null ? 0 : typeof v === 'number' ? 1 : 2);
  if (rank(x) !== rank(y)) return rank(x) - rank(y);
  if (x === null) return 0;
  return (x as never) < (y as never) ? -1 : (x as never) > (y as never) ? 1 : 0;
}

function comparator(sort: string[]): (p: Row, q: Row) => number {
  const terms = [...sort, ...(sort.some((s) => s.replace('-', '') === 'id') ? [] : ['id'])];
  return (p, q) => {
    for (const t of terms) {
      const desc = t.startsWith('-');
      const k = t.replace('-', '') as keyof Row;
      const c = cmpValue(p[k], q[k]);
      if (c !== 0) return desc ? -c : c;
    }
    return 0;
  };
}

function setup(rand: () => number): { db: InstanceType<typeof Database>; rows: Map<string, Row>; insert: () => void } {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE items (id TEXT PRIMARY KEY NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL, a REAL, b TEXT, c INTEGER)');
  db.exec('CREATE INDEX items_a ON items (a)');
  const rows = new Map<string, Row>();
  let seq = 0;
  const insert = () => {
    const id = `r${String(seq++).padStart(4, '0')}${Math.floor(rand() * 1e9).toString(36)}`.slice(0, 15);
    const a = rand() < 0.25 ? null : Math.floor(rand() * 5);
    const b = rand() < 0.25 ? null : ['x', 'y', 'z', 'é'][Math.floor(rand() * 4)];
    const row: Row = { id, a, b, c: rand() < 0.5 ? 1 : 0 };
    db.prepare('INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)').run([id, '2026', '2026', a, b, row.c]);
    rows.set(id, row);
  };
  for (let i = 0; i < 60; i++) insert();
  return { db, rows, insert };
}

/** The same fetch as records-list.ts: disjoint segments in walk order until the page is full. */
function fetch(db: InstanceType<typeof Database>, keys: SortKey[], values: KeyValue[] | null, backward: boolean, limit: number): unknown[][] {
  const select = `SELECT r.id, ${keys.map((k) => k.sql).join(', ')} FROM items r`;
  const tail = ` ORDER BY ${orderBy(keys, backward)} LIMIT ?`;
  // the keyset terms' SLOTs rendered as the list builders render them (src/store/slots.ts)
  const run = (where: string, params: SqlValue[]) => db.prepare(renderSlots.sqlite(`${select}${where}${tail}`)).raw(true).all([...params, limit - out.length]) as unknown[][];
  const out: unknown[][] = [];
  if (!values) return run('', []);
  for (const seg of segments(keys, values, backward)) {
    out.push(...run(` WHERE ${seg.sql}`, seg.params));
    if (out.length >= limit) break;
  }
  return out;
}

const SORT_TERMS = ['a', '-a', 'b', '-b', 'c', '-c'];

function randomSort(rand: () => number): string[] {
  const n = 1 + Math.floor(rand() * 3);
  const out: string[] = [];
  while (out.length < n) {
    const t = SORT_TERMS[Math.floor(rand() * SORT_TERMS.length)];
    if (!out.some((x) => x.replace('-', '') === t.replace('-', ''))) out.push(t);
  }
  if (rand() < 0.15) out.push(rand() < 0.5 ? 'id' : '-id');
  return out;
}

test('forward and backward walks match the oracle for random mixed sorts with NULLs', () => {
  for (let seed = 1; seed <= 60; seed++) {
    const rand = rng(seed);
    const { db, rows } = setup(rand);
    const sort = randomSort(rand);
    const keys = cursorSortKeys(sort.join(','), col, schema);
    const expected = [...rows.values()].sort(comparator(sort)).map((r) => r.id);
    const size = 1 + Math.floor(rand() * 7);
    const got: string[] = [];
    let boundary: KeyValue[] | null = null;
    for (let guard = 0; guard < 200; guard++) {
      const page = fetch(db, keys, boundary, false, size);
      got.push(...page.map((r) => String(r[0])));
      if (page.length < size) break;
      boundary = page[page.length - 1].slice(1) as KeyValue[];
    }
    assert.deepEqual(got, expected, `seed ${seed} sort ${sort.join(',')} forward`);
    // backward from beyond the last row: everything, reversed
    const back: string[] = [];
    boundary = null;
    for (let guard = 0; guard < 200; guard++) {
      const page = fetch(db, keys, boundary, true, size);
      back.push(...page.map((r) => String(r[0])));
      if (page.length < size) break;
      boundary = page[page.length - 1].slice(1) as KeyValue[];
    }
    assert.deepEqual(back, [...expected].reverse(), `seed ${seed} sort ${sort.join(',')} backward`);
    db.close();
  }
});

test('rows inserted or deleted during a walk never repeat or skip the rows present throughout', () => {
  for (let seed = 100; seed < 140; seed++) {
    const rand = rng(seed);
    const { db, rows, insert } = setup(rand);
    const sort = randomSort(rand);
    const keys = cursorSortKeys(sort.join(','), col, schema);
    const cmp = comparator(sort);
    const initial = new Set(rows.keys());
    const deleted = new Set<string>();
    const seen: string[] = [];
    let boundary: KeyValue[] | null = null;
    for (let guard = 0; guard < 500; guard++) {
      const page = fetch(db, keys, boundary, false, 4);
      seen.push(...page.map((r) => String(r[0])));
      if (page.length < 4) break;
      boundary = page[page.length - 1].slice(1) as KeyValue[];
      // churn: two inserts and one delete (often the boundary row itself) per page
      insert();
      insert();
      const ids = [...rows.keys()];
      const victim = rand() < 0.4 ? String(page[page.length - 1][0]) : ids[Math.floor(rand() * ids.length)];
      db.prepare('DELETE FROM items WHERE id = ?').run([victim]);
      rows.delete(victim);
      deleted.add(victim);
    }
    assert.equal(new Set(seen).size, seen.length, `seed ${seed}: a row was returned twice`);
    for (const id of initial) if (!deleted.has(id)) assert.ok(seen.includes(id), `seed ${seed} sort ${sort.join(',')}: row ${id} present throughout was skipped`);
    const ordered = seen.map((id) => rows.get(id)).filter((r): r is Row => !!r);
    for (let i = 1; i < ordered.length; i++) assert.ok(cmp(ordered[i - 1], ordered[i]) < 0, `seed ${seed}: out of order at ${i}`);
    db.close();
  }
});

test('segments are disjoint and together equal the exact predicate, for real and made-up boundaries', () => {
  for (let seed = 200; seed < 240; seed++) {
    const rand = rng(seed);
    const { db, rows } = setup(rand);
    const sort = randomSort(rand);
    const keys = cursorSortKeys(sort.join(','), col, schema);
    const all = [...rows.values()];
    const ids = (where: string, params: SqlValue[]) => (db.prepare(renderSlots.sqlite(`SELECT id FROM items r WHERE ${where}`)).raw(true).all(params) as unknown[][]).map((r) => String(r[0])).sort();
    for (let i = 0; i < 10; i++) {
      const row = all[Math.floor(rand() * all.length)];
      const values = keys.map((k) => {
        const name = k.sql.slice(3, -1) as keyof Row;
        return rand() < 0.2 ? null : rand() < 0.2 ? Math.floor(rand() * 5) : (row[name] as KeyValue);
      });
      for (const backward of [false, true]) {
        const exact = beyondBoundary(keys, values, backward);
        const union = segments(keys, values, backward).flatMap((seg) => ids(seg.sql, seg.params));
        assert.equal(new Set(union).size, union.length, `seed ${seed}: segments overlap`);
        assert.deepEqual(union.sort(), ids(exact.sql, exact.params), `seed ${seed} sort ${sort.join(',')} values ${JSON.stringify(values)} backward ${backward}`);
      }
    }
    db.close();
  }
});

test('cursor sort keys: id appended once, @random refused, sort validated', () => {
  assert.deepEqual(cursorSortKeys('-a,b', col, schema).map((k) => [k.sql, k.desc]), [['r."a"', true], ['r."b"', false], ['r."id"', false]]);
  assert.deepEqual(cursorSortKeys('-id', col, schema).map((k) => [k.sql, k.desc]), [['r."id"', true]]);
  assert.deepEqual(cursorSortKeys(null, col, schema).map((k) => k.sql), ['r."id"']);
  assert.throws(() => cursorSortKeys('@random', col, schema), /@random/);
  assert.throws(() => cursorSortKeys('-@random', col, schema), /@random/);
  assert.throws(() => cursorSortKeys('nope', col, schema), /Invalid sort/);
});
