/**
 * The PostgreSQL statements of record lists and record services: src/store/pg/
 * record-json.ts, list-dialect.ts (src/store/sql/list-sql.ts and keyset.ts in PostgreSQL's
 * spelling) and record-sql.ts, run for real against a throw-away
 * PostgreSQL (test/helpers/postgres.ts) over tables made by bootstrap.ts and collection-sql.ts.
 * Oracles: the JavaScript record codec (src/records/record-codec.ts) for renderings, and sorts
 * done in JavaScript with SQLite's order (NULL lowest, text bytewise) for pages and walks; for
 * full-text search, the matches FTS5 gives the same search text (test/e2e/search.test.ts runs
 * the grammar on both backends end to end).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import type { Collection, Field } from '../../../src/model/schema.js';
import type { WriteStep } from '../../../src/store/write-job.js';
import type { SqlValue } from '../../../src/store/bind.js';
import { encodeValue } from '../../../src/collections/fields/index.js';
import { buildCodec } from '../../../src/records/record-codec.js';
import * as sqliteJson from '../../../src/store/sqlite/record-json.js';
import { bindParams } from '../../../src/rules/compiler.js';
import type { CompiledExpr } from '../../../src/store/rule-types.js';
import { parseFilter } from '../../../src/rules/parser.js';
import { createSteps } from '../../../src/store/pg/collection-sql.js';
import { bootstrapSteps } from '../../../src/store/pg/bootstrap.js';
import { emitSort } from '../../../src/store/pg/rule-sql.js';
import { pgEmitExpression as emitExpression } from '../../../src/rules/emitters.js';
import { buildJsonSql, jsNumberSql, recordColumns } from '../../../src/store/pg/record-json.js';
import { SEARCH_MATCH, SEARCH_RANK, pgKeyset, pgList, searchJoin } from '../../../src/store/pg/list-dialect.js';
import type { KeyValue, SortKey } from '../../../src/store/sql/keyset.js';
import { lowerTsquery } from '../../../src/records/search.js';
import { pgRecordSql as R } from '../../../src/store/pg/record-sql.js';
import { renderSlots } from '../../../src/store/slots.js';

const {
  ID_EQUALS, ID_ORDER, ID_SEPARATOR, ITEM_SEPARATOR, boundarySql, boundedCountSql, countSql, fromRecords, hasNullSql, hasRandomOrder, idIn, keysetPageSql,
  offsetPageSql, pageAggregateSql, pageIdsSql, pageOrderBy, renderByIdsSql, walkAfter, walkOrder, walkStepSql,
} = pgList;
const { beyondBoundary, cursorSortKeys, orderBy, segments, sortKeyOf, sortSignature } = pgKeyset;

const skip = postgresSkipReason() ?? false;
const T = '2024-01-02 03:04:05.678Z';

function field(id: string, name: string, type: Field['type'], options: Field['options'] = {}): Field {
  return { id, name, type, options };
}

function coll(id: string, name: string, fields: Field[], extra: Partial<Collection> = {}): Collection {
  return {
    id, name, type: 'base', system: false, fields, indexes: [], options: {},
    listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: T, updated: T, ...extra,
  };
}

/** A record id: 15 characters of [a-z0-9]. */
const rid = (n: number, prefix = 'r'): string => `${prefix}${String(n).padStart(14 - prefix.length + 1, '0')}`.slice(0, 15).padEnd(15, 'x');

const targets = coll('pbc_targets', 'targets', [field('t_name', 'name', 'text')]);
const items = coll('pbc_items', 'items', [
  field('f_title', 'title', 'text'),
  field('f_body', 'body', 'editor'),
  field('f_mail', 'mail', 'email'),
  field('f_link', 'link', 'url'),
  field('f_due', 'due', 'date'),
  field('f_stamp', 'stamp', 'autodate', { onCreate: true, onUpdate: true }),
  field('f_n', 'n', 'number'),
  field('f_flag', 'flag', 'bool'),
  field('f_kind', 'kind', 'select', { values: ['x', 'y', '[z]'], maxSelect: 1 }),
  field('f_tags', 'tags', 'select', { values: ['a', 'b', 'c', 'd'], maxSelect: 3 }),
  field('f_owner', 'owner', 'relation', { collectionId: 'pbc_targets', maxSelect: 1 }),
  field('f_refs', 'refs', 'relation', { collectionId: 'pbc_targets', maxSelect: 5 }),
  field('f_pic', 'pic', 'file', { maxSelect: 1 }),
  field('f_docs', 'docs', 'file', { maxSelect: 3 }),
  field('f_meta', 'meta', 'json'),
  field('f_secret', 'secret', 'text', { hidden: true }),
], { viewRule: 'n > 0 && owner.name = "t1"', updateRule: 'flag = true', deleteRule: 'title = "gone"' });
const fixedColl = coll('pbc_fixed', 'fixed', [field('x_price', 'price', 'number', { mode: 'fixed', scale: 2 })]);
const expiring = coll('pbc_exp', 'expiring', [field('e_until', 'until', 'date'), field('e_doc', 'doc', 'json')], { options: { ttl_field: 'until' } });
const users = coll('pbc_users', 'users', [field('u_email', 'email', 'email'), field('u_vis', 'emailVisibility', 'bool'), field('u_verified', 'verified', 'bool')], { type: 'auth', updateRule: 'verified = true' });
const notes = coll('pbc_notes', 'notes', [field('o_title', 'title', 'text', { searchable: true }), field('o_body', 'body', 'editor', { searchable: true })]);
const ALL = [targets, items, fixedColl, expiring, users, notes];
const schema = { byId: (id: string) => ALL.find((c) => c.id === id), byName: (n: string) => ALL.find((c) => c.name === n) };

const TITLES = ['alpha', 'Alpha', 'beta', 'ünïcödé', 'emoji 😀 𝄞', 'quote " and \' and \\ /', 'ctl \u0001\u001f\u007f\n\t\r\b\f', '', null, 'zeta', 'a\u2028b\u2029', 'gone'];
const NUMBERS = [0, 1, -1, 0.1, 0.1 + 0.2, 1e21, 1.5e-7, 123456789012345680, 1e15, 1e-5, 1e-6, 9.999999999999999e-7, 5e-324, 1.7976931348623157e308, -2.5, null, 42, 1e20, 2 ** 53 + 2, -1e-300, 0.0001, 999999999999999.9, 1e16, null];
const JSONS: unknown[] = [
  null, 0, 1e21, 1.5e-7, -1e-7, 123.456, 'str "q" \u0001 ü \\ /', true, false, [], {}, '1e+21', [[[]]], 2 ** 60,
  { b: 1, a: [1, 2, { z: null, aa: 'x' }], ccc: { d: 1e-7, e: -0.5 } },
  [1, 'two', null, true, { k: 'v', 'key, with: punct': ' x ' }],
  { 'key with space': 'v, w: x', '': 1, '"': '"', 'ü': ['é', 1e300] },
  { x: 'a\\b"c/\n', deep: { deeper: { deepest: [0.1, 1e-10, 12345678901234567890] } } },
];

/** Finite random doubles of every magnitude, from random bits. */
function randomDoubles(n: number): number[] {
  const out: number[] = [];
  while (out.length < n) {
    const v = new Float64Array(randomBytes(8).buffer)[0];
    if (Number.isFinite(v)) out.push(v);
  }
  return out;
}

/** SQLite's order of two sort values: NULL lowest, numbers by value, text bytewise. */
function cmpValue(a: unknown, b: unknown): number {
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)));
}

describe('PostgreSQL list and record statements', { skip }, () => {
  let server: Postgres;
  let db: pg.Client;
  /** the stored rows of `items` by id: column values as selected by recordColumns, plus `_rowid` */
  let stored: Array<Record<string, unknown>> = [];

  /** Runs a statement; one put together here from fragments gets its SLOTs numbered as a builder's would be. */
  async function query(sql: string, params: unknown[] = []): Promise<unknown[][]> {
    return (await db.query({ text: renderSlots.postgres(sql), values: params, rowMode: 'array' })).rows as unknown[][];
  }

  async function run(steps: WriteStep[]): Promise<void> {
    await db.query('BEGIN');
    try {
      for (const s of steps) await db.query(s.sql, s.params as unknown[]);
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK');
      throw err;
    }
  }

  /** Inserts a record through RecordSql.insert with the codecs' stored values. */
  async function insert(c: Collection, id: string, body: Record<string, unknown>, extra: Record<string, SqlValue> = {}): Promise<void> {
    const cols = ['id', 'created', 'updated'];
    const vals: unknown[] = [id, T, T];
    for (const f of c.fields) {
      const r = encodeValue(f, body[f.name], 'create');
      if ('error' in r) throw new Error(`${f.name}: ${r.error.message}`);
      cols.push(f.name);
      vals.push(r.value);
    }
    for (const [k, v] of Object.entries(extra)) {
      cols.push(k);
      vals.push(v);
    }
    await query(R.insert(c, cols), vals);
  }

  /** A rule or filter compiled by the PostgreSQL emitter, bound for `auth`. */
  function compile(src: string, c: Collection, auth: Record<string, unknown> | null = null, mode: 'rule' | 'filter' = 'rule'): { sql: string; params: SqlValue[]; readsRecord: boolean } {
    const e = emitExpression(parseFilter(src), c, schema, { mode, alias: 'r' });
    return { sql: e.sql, params: bindParams({ ...e, owner: null } as CompiledExpr, { auth, data: null, method: 'GET' }), readsRecord: e.readsRecord };
  }

  before(async () => {
    server = await startPostgres();
    db = new pg.Client({ connectionString: await server.createDatabase('lists') });
    await db.connect();
    await run(bootstrapSteps());
    let before: Collection[] = [];
    for (const c of ALL) {
      const after = [...before, c];
      await run(createSteps(c, before, after));
      before = after;
    }
    for (let i = 0; i < 6; i++) await insert(targets, rid(i, 't'), { name: `t${i}` });
    const doubles = randomDoubles(30);
    const n = 90;
    for (let i = 0; i < n; i++) {
      const pick = <T>(xs: T[], k: number): T => xs[k % xs.length];
      await insert(items, rid(i), {
        title: pick(TITLES, i * 7),
        body: i % 5 === 0 ? null : `<p>${pick(TITLES, i) ?? ''}</p>`,
        mail: i % 3 === 0 ? null : `u${i}@example.com`,
        link: i % 4 === 0 ? null : `https://example.com/?q=${i}&x="y"`,
        due: i % 6 === 0 ? null : `2024-0${1 + (i % 9)}-1${i % 10} 10:00:00.000Z`,
        n: i < 30 ? pick(NUMBERS, i) : i < 60 ? doubles[i - 30] : pick(NUMBERS, i % 7),
        flag: i % 3 === 1,
        kind: pick(['x', 'y', '[z]', null], i),
        tags: pick([[], ['a'], ['b', 'a'], ['d', 'c', 'a']], i),
        owner: i % 4 === 3 ? null : rid(i % 6, 't'),
        refs: pick([[], [rid(1, 't')], [rid(2, 't'), rid(0, 't')]], i),
        pic: i % 2 ? `pic_${'abcdefghij'}.png` : null,
        docs: pick([[], ['doc_abcdefghij.pdf'], ['a_0123456789.txt', 'b_0123456789.txt']], i),
        meta: pick(JSONS, i),
        secret: `s${i}`,
      });
    }
    // shapes the codecs tolerate: values written under another maxSelect, and jsonb that is no array
    await query(`UPDATE "items" SET "kind" = '["x", "y"]', "tags" = '"str"', "pic" = '["f1.png","f2.png"]', "docs" = '{"a": 1}' WHERE "id" = $1`, [rid(1)]);
    await query(`UPDATE "items" SET "kind" = '[ ]', "tags" = '[1, "a", null, "b"]', "pic" = '[not json', "docs" = '[]' WHERE "id" = $1`, [rid(2)]);
    await query(`UPDATE "items" SET "kind" = '["a\\"b", "c\\\\d\\n"]', "pic" = '', "docs" = 'null', "meta" = '"only a string"' WHERE "id" = $1`, [rid(3)]);
    await query(`UPDATE "items" SET "n" = '-0'::float8, "flag" = 7, "kind" = '["k"]' WHERE "id" = $1`, [rid(4)]);
    const NOTES = [
      ['São Paulo travel guide', '<p>Coffee and football in Brazil</p>'], ['Paris in spring', '<p>Coffee on the Seine</p>'],
      ['Parma ham', '<p>Curing pork in Italy</p>'], ['zebra', '<p>zebra zebra zebra</p>'], ['A zebra once', '<p>mail ann@example.com or see example.org</p>'],
    ];
    for (const [i, [title, body]] of NOTES.entries()) await insert(notes, rid(i, 'n'), { title, body });
    const rows = await query(`SELECT ${recordColumns(items).join(', ')}, r."_rowid" FROM "items" r`);
    stored = rows.map((row) => ({ row: row.slice(0, -1), rowid: Number(row[row.length - 1]), id: row[0] }));
  });

  after(async () => {
    await db?.end();
    await server?.stop();
  });

  test('full-text search: the lowered tsquery matches as FTS5 does, ranked; hostile text never errors', async () => {
    const from = fromRecords('notes', searchJoin());
    /** The titles a search finds, most relevant first (ties by _rowid). */
    const search = async (text: string): Promise<string[]> => {
      const tsq = lowerTsquery(text);
      if (tsq === null) return [];
      return (await query(`SELECT r."title"${from} WHERE ${SEARCH_MATCH} ORDER BY ${SEARCH_RANK}, r."_rowid"`, [tsq])).map((row) => String(row[0]));
    };
    assert.deepEqual(await search('zebra'), ['zebra', 'A zebra once']);
    assert.deepEqual(await search('brazil OR italy'), ['São Paulo travel guide', 'Parma ham']);
    assert.deepEqual(await search('coffee NOT brazil'), ['Paris in spring']);
    assert.deepEqual(await search('PAR*'), ['Paris in spring', 'Parma ham']);
    assert.deepEqual(await search('sao-pau*'), ['São Paulo travel guide']);
    assert.deepEqual(await search('paulo-sao'), []);
    // PostgreSQL's parser keeps an e-mail address or host name as one word: the whole term finds it
    assert.deepEqual(await search('ann@example.com'), ['A zebra once']);
    assert.deepEqual(await search('example.org'), ['A zebra once']);
    assert.deepEqual(await search("paris' OR \\ham"), ['Paris in spring', 'Parma ham']);
    assert.deepEqual(await search("paris & !spring | ham <-> x:* (y"), []);
    // quote, backslash and tsquery syntax in the text are inert: every string runs without an error
    const alphabet = ["'", '"', '\\', '&', '|', '!', '<', '-', '>', ':', '*', '(', ')', ' ', 'a', 'Z', 'é', '1', '😀', '\u0000', '\t', 'OR ', 'NOT ', 'AND ', 'A', 'B'];
    for (let i = 0; i < 400; i++) {
      const bytes = randomBytes(1 + (i % 24));
      const text = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
      const tsq = lowerTsquery(text);
      if (tsq !== null) await query(`SELECT count(*)${from} WHERE ${SEARCH_MATCH}`, [tsq]).catch((err: Error) => assert.fail(`${JSON.stringify(text)} → ${tsq}: ${err.message}`));
    }
  });

  test('doubles print as JSON.stringify prints them', async () => {
    const values = [...NUMBERS.filter((v): v is number => v !== null), ...randomDoubles(2000), -0, 1e21 - 65536, 1e-7, 2e-7, 1.2345e-300, 2 ** -1074, 2 ** 1023 * 1.5];
    for (let p = -330; p <= 310; p++) values.push(Number(`1e${p}`), Number(`-3.7e${p}`), Number(`9.999999999999999e${p}`));
    const finite = values.filter((v) => Number.isFinite(v));
    const rows = await query(`SELECT ${jsNumberSql('v')} FROM unnest($1::float8[]) AS t(v)`, [finite.map(String)]);
    const got = rows.map((r) => r[0]);
    assert.deepEqual(got, finite.map((v) => JSON.stringify(v)));
    const special = await query(`SELECT ${jsNumberSql('v')} FROM unnest(ARRAY['NaN', 'Infinity', '-Infinity', NULL]::float8[]) AS t(v)`);
    assert.deepEqual(special.map((r) => r[0]), ['null', 'null', 'null', null]);
  });

  test('a record renders in SQL exactly as the JavaScript codec renders it', async () => {
    const rendered = buildJsonSql(items)!;
    assert.ok(rendered && !rendered.includes('secret'), 'hidden fields are never rendered');
    const codec = buildCodec(items, sqliteJson);
    const rows = await query(`SELECT ${recordColumns(items).join(', ')}, ${rendered} FROM "items" r ORDER BY r."_rowid"`);
    assert.equal(rows.length, stored.length);
    for (const row of rows) {
      const sql = row[row.length - 1] as string;
      const js = codec.stringify(codec.fromRow(row.slice(0, -1)));
      assert.deepEqual(JSON.parse(sql), JSON.parse(js), `record ${String(row[0])}`);
      assert.equal(sql, js, `record ${String(row[0])}, byte for byte`);
    }
    const legacy = JSON.parse(rows.find((r) => r[0] === rid(1))!.at(-1) as string);
    assert.deepEqual([legacy.kind, legacy.tags, legacy.pic, legacy.docs], ['y', ['"str"'], 'f2.png', ['{"a": 1}']]);
    const odd = JSON.parse(rows.find((r) => r[0] === rid(4))!.at(-1) as string);
    assert.deepEqual([odd.n, odd.flag, odd.kind], [0, true, 'k']);
  });

  test('collections JavaScript renders: fixed-point, encrypted, auth', () => {
    assert.equal(buildJsonSql(fixedColl), null);
    assert.equal(buildJsonSql(users), null);
    assert.equal(buildJsonSql(coll('e', 'enc', [field('x', 'x', 'json', { encrypted: true })])), null);
    assert.ok(buildJsonSql(expiring));
  });

  /** `items` ids in SQLite's page order of sort terms `spec` (`-name` descending), _rowid last. */
  function bruteOrder(spec: string[], rows = stored): string[] {
    const keys = spec.map((s) => ({ name: s.replace(/^-/, ''), desc: s.startsWith('-') }));
    const idx = (name: string) => 3 + items.fields.findIndex((f) => f.name === name);
    const value = (r: Record<string, unknown>, name: string): unknown => {
      const v = (r.row as unknown[])[name === 'created' ? 1 : name === 'id' ? 0 : idx(name)];
      return typeof v === 'number' && Number.isNaN(v) ? Infinity : v; // PostgreSQL sorts NaN above every number
    };
    const lastDesc = keys.length > 0 && keys[keys.length - 1].desc;
    return [...rows].sort((a, b) => {
      for (const k of keys) {
        const c = cmpValue(value(a, k.name), value(b, k.name));
        if (c) return k.desc ? -c : c;
      }
      return lastDesc ? (b.rowid as number) - (a.rowid as number) : (a.rowid as number) - (b.rowid as number);
    }).map((r) => r.id as string);
  }

  const SORTS = [['title'], ['-title'], ['n'], ['-n'], ['flag', '-due'], ['title', '-n', 'flag'], ['-flag', 'kind', 'title'], ['due'], ['created']];

  test('offset pages: sorts, ties, DESC and NULLs agree with a sort in JavaScript', async () => {
    const from = fromRecords('items');
    for (const spec of SORTS) {
      const order = [emitSort(spec.join(','), items, schema, 'r')];
      assert.ok(!hasRandomOrder(order));
      const expected = bruteOrder(spec);
      const ids: string[] = [];
      for (let page = 0; page * 13 < stored.length; page++) {
        const rows = await query(offsetPageSql('r."id"', from, '', [pageOrderBy(order)]), [13, page * 13]);
        ids.push(...rows.map((r) => r[0] as string));
        const pageIds = await query(pageIdsSql(from, '', order), [13, page * 13]);
        assert.deepEqual(pageIds.map((r) => r[0]), rows.map((r) => r[0]), `pageIdsSql ${spec.join(',')} page ${page}`);
        const agg = await query(pageAggregateSql('items', from, '', order, ID_ORDER, ID_SEPARATOR), [13, page * 13]);
        assert.deepEqual((agg[0][0] as string).split('\u001f'), rows.map((r) => r[0]), `aggregate ${spec.join(',')} page ${page}`);
      }
      assert.deepEqual(ids, expected, `sort ${spec.join(',')}`);
    }
    assert.ok(hasRandomOrder([emitSort('@random', items, schema, 'r')]));
  });

  test('rendered page aggregates: the bytes variant equals the text one and the codec', async () => {
    const rendered = buildJsonSql(items)!;
    const codec = buildCodec(items, sqliteJson);
    const from = fromRecords('items');
    const where = compile('flag = false || n > 0', items, null, 'filter');
    const whereSql = ` WHERE (${where.sql})`;
    for (const order of [[], [emitSort('-n,title', items, schema, 'r')]]) {
      for (const offset of [0, 20, 1000]) {
        const params = [...where.params, 20, offset];
        const [[text]] = await query(pageAggregateSql('items', from, whereSql, order, rendered, ITEM_SEPARATOR), params);
        const [[bytes]] = await query(pageAggregateSql('items', from, whereSql, order, rendered, ITEM_SEPARATOR, true), params);
        if (offset === 1000) {
          assert.equal(text, null);
          assert.equal(bytes, null);
          continue;
        }
        assert.ok(Buffer.isBuffer(bytes));
        assert.equal((bytes as Buffer).toString('utf8'), text);
        const items_ = JSON.parse(`[${text as string}]`) as Array<{ id: string }>;
        assert.equal(items_.length, 20);
        const ids = items_.map((x) => x.id);
        const rows = await query(`SELECT ${recordColumns(items).join(', ')} FROM "items" r WHERE ${idIn(ids.length)}`, ids);
        const byId = new Map(rows.map((r) => [r[0], codec.stringify(codec.fromRow(r))]));
        assert.equal(text, ids.map((id) => byId.get(id)).join(','));
        if (order.length) {
          const [, ...rest] = await query(offsetPageSql('r."id"', from, whereSql, [pageOrderBy(order)]), params).then((r) => [null, ...r.map((x) => x[0])]);
          assert.deepEqual(ids, rest);
        }
      }
    }
    const some = stored.slice(0, 5).map((r) => r.id as string);
    const [[byIds]] = await query(renderByIdsSql('items', rendered, some.length), some);
    const parts = new Map((byIds as string).split('\u001e').map((p) => [p.slice(0, p.indexOf('\u001f')), p.slice(p.indexOf('\u001f') + 1)]));
    for (const id of some) {
      const row = stored.find((r) => r.id === id)!.row as unknown[];
      assert.equal(parts.get(id), codec.stringify(codec.fromRow(row)));
    }
  });

  test('counts, bounded counts and boundaries', async () => {
    const from = fromRecords('items');
    const [[all]] = await query(countSql(from, ''));
    assert.equal(Number(all), stored.length);
    const f = compile('n > 0 && title != null', items, null, 'filter');
    const [[filtered]] = await query(countSql(from, ` WHERE (${f.sql})`), f.params);
    const nIdx = 3 + items.fields.findIndex((x) => x.name === 'n');
    const tIdx = 3 + items.fields.findIndex((x) => x.name === 'title');
    assert.equal(Number(filtered), stored.filter((r) => { const row = r.row as unknown[]; return (row[nIdx] as number) > 0 && row[tIdx] !== null; }).length);
    const [[bounded]] = await query(boundedCountSql('items', 'r."flag" = 1'), [5]);
    assert.equal(Number(bounded), 5);
    const [[few]] = await query(boundedCountSql('items', 'r."flag" = 1'), [10_000]);
    assert.equal(Number(few), stored.filter((r) => (r.row as unknown[])[3 + items.fields.findIndex((x) => x.name === 'flag')] === 1).length);
    const keys = cursorSortKeys('-n,title', items, schema);
    const [b] = await query(boundarySql(keys.map((k) => k.sql), from, ` WHERE (${ID_EQUALS})`), [rid(7)]);
    assert.deepEqual(b, [(stored.find((r) => r.id === rid(7))!.row as unknown[])[nIdx], (stored.find((r) => r.id === rid(7))!.row as unknown[])[tIdx], rid(7)]);
  });

  test('offset walk: steps and seeks with row-value comparisons on (column, _rowid)', async () => {
    const from = fromRecords('items');
    for (const [sort, where] of [['n', ''], ['title', ''], ['-n', ' WHERE (r."n" IS NOT NULL)'], ['-title', ' WHERE (r."title" IS NOT NULL)'], ['due', ' WHERE (r."flag" = 0)']] as const) {
      const order = [emitSort(sort, items, schema, 'r')];
      const by = walkOrder(order);
      assert.ok(by, sort);
      assert.equal(by.desc, sort.startsWith('-'));
      const [[hasNull]] = [await query(hasNullSql(by.column, from, where))].map((r) => [r.length > 0]);
      const scope = where === '' ? stored : (await query(`SELECT r."id"${from}${where}`)).map((r) => stored.find((s) => s.id === r[0])!);
      assert.equal(hasNull, bruteOrder([sort], scope).some((id) => { const r = stored.find((s) => s.id === id)!; const v = (r.row as unknown[])[3 + items.fields.findIndex((x) => x.name === sort.replace('-', ''))]; return v === null; }));
      const expected = bruteOrder([sort], scope);
      // checkpoints every 7 rows, each found from the one before, as records-list.ts walks
      let last: unknown[] | null = null;
      const points: unknown[][] = [];
      for (let guard = 0; ; guard++) {
        assert.ok(guard < 100, `${sort}: the walk does not advance (${JSON.stringify(last)})`);
        const w = last ? `${where ? `${where} AND` : ' WHERE'} ${walkAfter(by.column, by.desc)}` : where;
        const rows = await query(walkStepSql(by.column, from, w, order), [...(last ? [last[0], last[1]] : []), 6]);
        if (!rows.length || rows[0][0] === null) break;
        points.push(rows[0]);
        last = rows[0];
      }
      const firstNonNull = expected.findIndex((id) => (stored.find((s) => s.id === id)!.row as unknown[])[3 + items.fields.findIndex((x) => x.name === sort.replace('-', ''))] !== null);
      // ascending walks start after the NULLs only when the first checkpoint lies past them
      for (let i = 0; i < points.length; i++) {
        const at = expected.indexOf(String((await query(`SELECT "id" FROM "items" WHERE "_rowid" = $1`, [points[i][1]]))[0][0]));
        assert.equal(at, 7 * (i + 1) - 1, `${sort}: checkpoint ${i}`);
        const w = `${where ? `${where} AND` : ' WHERE'} ${walkAfter(by.column, by.desc)}`;
        const page = await query(pageIdsSql(from, w, order), [points[i][0], points[i][1], 10, 0]);
        assert.deepEqual(page.map((r) => r[0]), expected.slice(at + 1, at + 11), `${sort}: page after checkpoint ${i}`);
      }
      // a walk ends at a checkpoint without a sort value (NULLs first ascending), as records-list.ts's does
      let want = 0;
      while (7 * (want + 1) - 1 < expected.length && 7 * (want + 1) - 1 >= firstNonNull) want++;
      assert.equal(points.length, want, `${sort}: checkpoints`);
    }
    assert.equal(walkOrder([emitSort('n,title', items, schema, 'r')]), null);
    assert.equal(walkOrder([emitSort('tags', items, schema, 'r')]), null);
  });

  /** `items` ids in cursor order of `keys` (id last), by the values keysetPageSql selects. */
  async function cursorOrder(keys: SortKey[], whereSql = '', params: SqlValue[] = []): Promise<{ ids: string[]; values: Map<string, KeyValue[]> }> {
    const rows = await query(`SELECT r."id", ${keys.map((k) => k.sql).join(', ')} FROM "items" r${whereSql}`, params);
    const values = new Map(rows.map((r) => [r[0] as string, r.slice(1) as KeyValue[]]));
    const norm = (v: KeyValue) => (typeof v === 'number' && Number.isNaN(v) ? Infinity : v);
    const ids = rows.map((r) => r[0] as string).sort((a, b) => {
      const va = values.get(a)!;
      const vb = values.get(b)!;
      for (let i = 0; i < keys.length; i++) {
        const c = cmpValue(norm(va[i]), norm(vb[i]));
        if (c) return keys[i].desc ? -c : c;
      }
      return 0;
    });
    return { ids, values };
  }

  test('keyset pages forward and backward across ties agree with a sort in JavaScript', async () => {
    const codec = buildCodec(items, sqliteJson);
    const from = fromRecords('items');
    for (const sort of ['title', '-title', 'n', '-n', 'flag,-due', '-flag,title,-n', 'kind,-tags', 'meta', '-created', 'id', '-id', '', 'owner,-mail']) {
      const keys = cursorSortKeys(sort, items, schema);
      assert.equal(keys[keys.length - 1].sql.startsWith('r."id"'), true);
      const { ids: expected } = await cursorOrder(keys);
      const by = orderBy(keys, false);
      const back = orderBy(keys, true);
      const fetch = async (values: KeyValue[] | null, backward: boolean, limit: number): Promise<unknown[][]> => {
        const keySqls = keys.map((k) => k.sql);
        if (!values) return query(keysetPageSql(recordColumns(items).join(', '), keySqls, from, '', backward ? back : by), [limit]);
        const out: unknown[][] = [];
        for (const seg of segments(keys, values, backward)) {
          out.push(...(await query(keysetPageSql('r."id"', keySqls, from, ` WHERE (${seg.sql})`, backward ? back : by), [...seg.params, limit - out.length])));
          if (out.length >= limit) break;
        }
        return out;
      };
      const bound = (row: unknown[], width: number) => row.slice(width, width + keys.length) as KeyValue[];
      // forward
      const first = await fetch(null, false, 6);
      const got = first.map((r) => r[0] as string);
      let boundary = bound(first[first.length - 1], codec.width);
      for (;;) {
        const rows = await fetch(boundary, false, 6);
        if (!rows.length) break;
        got.push(...rows.map((r) => r[0] as string));
        boundary = bound(rows[rows.length - 1], 1);
      }
      assert.deepEqual(got, expected, `forward ${sort}`);
      // backward from the last row
      const lastValues = (await query(`SELECT ${keys.map((k) => k.sql).join(', ')} FROM "items" r WHERE r."id" = $1`, [expected[expected.length - 1]]))[0] as KeyValue[];
      const backIds: string[] = [];
      boundary = lastValues;
      for (;;) {
        const rows = await fetch(boundary, true, 5);
        if (!rows.length) break;
        backIds.push(...rows.map((r) => r[0] as string));
        boundary = bound(rows[rows.length - 1], 1);
      }
      assert.deepEqual(backIds.reverse(), expected.slice(0, -1), `backward ${sort}`);
      // the one-predicate form agrees with the segments from a boundary in the middle
      const mid = (await query(`SELECT ${keys.map((k) => k.sql).join(', ')} FROM "items" r WHERE r."id" = $1`, [expected[40]]))[0] as KeyValue[];
      for (const backward of [false, true]) {
        const b = beyondBoundary(keys, mid, backward);
        const rows = await query(keysetPageSql('r."id"', keys.map((k) => k.sql), from, ` WHERE (${b.sql})`, backward ? back : by), [...b.params, 1000]);
        assert.deepEqual(rows.map((r) => r[0]), backward ? expected.slice(0, 40).reverse() : expected.slice(41), `beyondBoundary ${sort} ${backward}`);
      }
    }
    // the binding reads as on SQLite (no collation), so a key's signature is the same on both
    assert.equal(sortSignature(cursorSortKeys('-n,title', items, schema)), '-r."n",r."title",r."id"');
    assert.deepEqual(sortKeyOf('r."created" COLLATE "C" DESC NULLS LAST'), { sql: 'r."created" COLLATE "C"', desc: true, notNull: true, term: '-r."created" COLLATE "C"' });
    assert.throws(() => cursorSortKeys('@random', items, schema), /cursor paging/);
    assert.equal(beyondBoundary([{ sql: 'r."n"', desc: true, notNull: false, term: '-r."n"' }], [null], false).sql, 'false');
    assert.equal((await query(`SELECT 1 FROM "items" r WHERE false`)).length, 0);
  });

  test('every RecordSql statement runs', async () => {
    const cols = recordColumns(items).join(', ');
    const one = stored.find((r) => r.id === rid(0))!;
    const byId = await query(R.rowById(items, cols), [rid(0)]);
    assert.deepEqual(byId[0], one.row);
    // view under the rule `n > 0 && owner.name = "t1"`
    const view = compile(items.viewRule!, items);
    const visible = stored.filter((r) => {
      const row = r.row as unknown[];
      const n = row[3 + items.fields.findIndex((f) => f.name === 'n')] as number;
      return n > 0 && !Number.isNaN(n) && row[3 + items.fields.findIndex((f) => f.name === 'owner')] === rid(1, 't');
    }).map((r) => r.id);
    assert.ok(visible.length > 0);
    for (const r of stored) {
      const rows = await query(R.view(items, 'r."id"', view.sql, null), [r.id, ...view.params]);
      assert.equal(rows.length, visible.includes(r.id as string) ? 1 : 0, `view ${String(r.id)}`);
    }
    assert.equal((await query(R.view(items, 'r."id"', '', null), [rid(0)])).length, 1);
    // selectOne with holds() columns, selectAll
    const upd = compile(items.updateRule!, items);
    const del = compile(items.deleteRule!, items);
    const [ab] = await query(R.selectOne(items, `${R.holds(upd.sql)}, ${R.holds(del.sql)}`, ` WHERE ${ID_EQUALS}`), [...upd.params, ...del.params, rid(1)]);
    assert.deepEqual(ab, [1, 0]);
    assert.equal((await query(R.selectAll(items, 'r."id"', ` WHERE (${idIn(3)})`), [rid(1), rid(2), 'nope'])).length, 2);
    // rowHolds: a deleted row rebuilt from bound values, typed by the collection
    const rowCols = ['id', 'n', 'flag', 'tags', 'meta', 'owner'];
    const rowVals = [rid(99), 5, 1, '["a","b"]', '{"k":1}', rid(1, 't')];
    const holds = compile('n > 4 && flag = true && tags ~ "b" && meta.k = 1 && owner.name = "t1"', items);
    assert.equal((await query(R.rowHolds(rowCols, ` WHERE (${holds.sql})`, items), [...rowVals, ...holds.params])).length, 1);
    const fails = compile('n > 5', items);
    assert.equal((await query(R.rowHolds(rowCols, ` WHERE (${fails.sql})`, items), [...rowVals, ...fails.params])).length, 0);
    // create: rule guard, identity guard, a rule on request data alone
    const create = compile('title != "" && @request.auth.id != ""', items, { id: 'someone' });
    assert.equal((await query(R.createRuleGuard(items, create.sql), [rid(0), ...create.params])).length, 1);
    assert.equal((await query(R.idFreeIn([items, targets]), [rid(0), rid(0)])).length, 0);
    assert.equal((await query(R.idFreeIn([items, targets]), ['zzzzzzzzzzzzzzz', 'zzzzzzzzzzzzzzz'])).length, 1);
    const reqOnly = compile('@request.auth.id != ""', items, { id: 'someone' });
    assert.equal(reqOnly.readsRecord, false);
    assert.equal((await query(R.requestRuleHolds(reqOnly.sql), reqOnly.params)).length, 1);
    const anon = compile('@request.auth.id != ""', items, null);
    assert.equal((await query(R.requestRuleHolds(anon.sql), anon.params)).length, 0);
    // update with the rule `flag = true`: applies to a flagged record only
    const sets = ['title', 'n', 'tags', 'meta', 'flag'].map(R.setTerm);
    const values = ['new title', 2.5, '["c"]', '{"z":[1,2]}', 1];
    const flagged = stored.find((r) => (r.row as unknown[])[3 + items.fields.findIndex((f) => f.name === 'flag')] === 1)!.id;
    const unflagged = stored.find((r) => (r.row as unknown[])[3 + items.fields.findIndex((f) => f.name === 'flag')] === 0)!.id;
    assert.equal((await db.query(R.update(items, sets, upd.sql), [...values, unflagged, ...upd.params])).rowCount, 0);
    assert.equal((await db.query(R.update(items, sets, upd.sql), [...values, flagged, ...upd.params])).rowCount, 1);
    const [after] = await query(R.rowById(items, 'r."title", r."n", r."tags"::text, r."meta"::text'), [flagged]);
    assert.deepEqual(after, ['new title', 2.5, '["c"]', '{"z": [1, 2]}']);
    // delete with the rule `title = "gone"`
    const gone = stored.find((r) => (r.row as unknown[])[3] === 'gone')!.id;
    assert.equal((await db.query(R.delete(items, del.sql), [rid(0), ...del.params])).rowCount, 0);
    assert.equal((await db.query(R.delete(items, del.sql), [gone, ...del.params])).rowCount, 1);
    stored = stored.filter((r) => r.id !== gone);
    // relation targets
    assert.equal((await query(R.relationTargetsExist('targets', 2), [rid(0, 't'), rid(1, 't'), 2])).length, 1);
    assert.equal((await query(R.relationTargetsExist('targets', 2), [rid(0, 't'), 'missingmissingm', 2])).length, 0);
    // auth: password hash and the update rule
    await insert(users, rid(1, 'u'), { email: 'a@b.co', emailVisibility: true, verified: true }, { passwordHash: 'phc$1', tokenKey: 'k' });
    await insert(users, rid(2, 'u'), { email: 'c@b.co', emailVisibility: false, verified: false }, { passwordHash: 'phc$2', tokenKey: 'k' });
    const uu = compile(users.updateRule!, users);
    assert.deepEqual((await query(R.passwordAndRule(users, uu.sql), [...uu.params, rid(1, 'u')]))[0], ['phc$1', 1]);
    assert.deepEqual((await query(R.passwordAndRule(users, uu.sql), [...uu.params, rid(2, 'u')]))[0], ['phc$2', 0]);
    assert.deepEqual((await query(R.passwordAndRule(users, ''), [rid(2, 'u')]))[0], ['phc$2', 1]);
    // expiry: view hides expired rows, deleteExpired removes them
    await insert(expiring, rid(1, 'e'), { until: '2020-01-01 00:00:00.000Z', doc: { a: 1 } });
    await insert(expiring, rid(2, 'e'), { until: '2999-01-01 00:00:00.000Z', doc: null });
    await insert(expiring, rid(3, 'e'), { until: null, doc: 'enc:v1:abc' });
    const now = '2024-06-01 00:00:00.000Z';
    assert.equal((await query(R.view(expiring, 'r."id"', '', 'until'), [rid(1, 'e'), now])).length, 0);
    assert.equal((await query(R.view(expiring, 'r."id"', '', 'until'), [rid(2, 'e'), now])).length, 1);
    assert.equal((await query(R.view(expiring, 'r."id"', '', 'until'), [rid(3, 'e'), now])).length, 1);
    assert.equal((await db.query(R.deleteExpired(expiring, 'until'), [now])).rowCount, 1);
    // encryption migration: read non-null values as the codecs read them, replace if unchanged
    const nn = await query(R.nonNullColumn(expiring, 'doc'));
    assert.deepEqual(nn, [[rid(3, 'e'), 'enc:v1:abc']]);
    assert.equal((await db.query(R.replaceValue(expiring, 'doc'), ['{"b":2}', rid(3, 'e'), 'stale'])).rowCount, 0);
    assert.equal((await db.query(R.replaceValue(expiring, 'doc'), ['{"b":2}', rid(3, 'e'), 'enc:v1:abc'])).rowCount, 1);
    assert.deepEqual(await query(R.nonNullColumn(expiring, 'doc')), [[rid(3, 'e'), '{"b": 2}']]);
    assert.equal((await db.query(R.replaceValue(items, 'title'), ['T2', unflagged, (stored.find((r) => r.id === unflagged)!.row as unknown[])[3]])).rowCount, 1);
    assert.equal((await db.query(R.replaceValue(items, 'title'), ['T3', unflagged, 'not T2'])).rowCount, 0);
    assert.equal(R.ident('a"b'), '"a""b"');
  });
});
