/**
 * The slow-query log (src/ops/slow-queries.ts): query shapes never hold a value, one line per
 * shape per minute, plans from EXPLAIN QUERY PLAN, mode 0600, rotation; and the doctor's
 * `missing-index` judgment of its lines (src/ops/doctor.ts).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import {
  SlowQueryLog, describeSample, filterFields, filterShape, readSlowQueries, scrubLiterals, slowQueryPath, sortFields, sortShape,
  type SlowQueryEntry, type SlowQuerySample,
} from '../../../src/ops/slow-queries.js';
import { checkMissingIndexes, type CheckedCollection } from '../../../src/ops/doctor.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory with a `posts` table of a few rows and an index on `slug`. */
function dataDir(): { dir: string; db: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-slowq-'));
  dirs.push(dir);
  const db = join(dir, 'data.db');
  const conn = new Database(db);
  conn.exec('PRAGMA journal_mode = WAL');
  conn.exec('CREATE TABLE "posts" ("id" TEXT PRIMARY KEY NOT NULL, "title" TEXT, "views" REAL, "slug" TEXT)');
  conn.exec('CREATE INDEX "by_slug" ON "posts" ("slug")');
  conn.exec(`INSERT INTO "posts" VALUES ('a', 't', 1, 's')`);
  conn.close();
  return { dir, db };
}

const sample = (over: Partial<SlowQuerySample> = {}): SlowQuerySample => ({
  collection: 'posts', filter: "title = 'secret-title' && views > 42", sort: '-views', search: false, vector: false,
  sql: 'SELECT r."id" FROM "posts" r WHERE (r."title" = ? AND r."views" > ?) ORDER BY r."views" DESC LIMIT ? OFFSET ?',
  params: ['secret-title', 42, 30, 0], generation: 1, ...over,
});

test('filterShape: every literal is ?, canonical spacing, in-lists collapse, names and macros stay', () => {
  assert.equal(filterShape("title = 'x' && views > 10"), 'title = ? && views > ?');
  assert.equal(filterShape('title="it\'s \\"q\\""&&views>=-1.5'), 'title = ? && views >= ?');
  assert.equal(filterShape("  (a ~ 'x'  ||b!=true) && c = null "), '(a ~ ? || b != ?) && c = null');
  assert.equal(filterShape("kind in ('a', 'b', 3) && k2 in ()"), 'kind in (?) && k2 in (?)');
  assert.equal(filterShape('owner = @request.auth.id && team in @request.account.ids'), 'owner = @request.auth.id && team in @request.account.ids');
  assert.equal(filterShape('author.name ~ "Ann" && false = flag'), 'author.name ~ ? && ? = flag');
  // shapes of filters differing in values or spacing are equal
  assert.equal(filterShape("a='1'&&b>2"), filterShape("a = 'zzz'  &&  b > 99.5"));
});

test('scrubLiterals: the fallback for text the lexer rejects keeps no value', () => {
  assert.equal(scrubLiterals("title = 'abc' && n > 12.5 && x ^ 7"), 'title = ? && n > ? && x ^ ?');
  assert.equal(scrubLiterals('name = "unterminated secret'), 'name = ?');
  assert.equal(scrubLiterals("a1 = 'x\\'y' && b = -3e5"), 'a1 = ? && b = ?');
  // the lexer rejects `^`: filterShape falls back, and the value still goes
  const s = filterShape("a = 'hush-123' ^ 99");
  assert.ok(!s.includes('hush') && !s.includes('99'), s);
});

test('fields of filters and sorts', () => {
  assert.deepEqual(filterFields("author.name = 'x' && views > 1 || author.id = 'y' && @request.auth.id != ''"), ['author', 'views']);
  assert.deepEqual(sortShape(' -views , title,+created '), '-views,title,+created');
  assert.equal(sortShape("title,'secret'"), 'title,?');
  assert.deepEqual(sortFields('-views,@random,author.name'), ['views', 'author']);
});

test('describeSample: shape parts, no values anywhere in the entry', () => {
  const e = describeSample(sample({ search: true }), 12.345, Date.UTC(2025, 0, 2, 3, 4, 5));
  assert.deepEqual(e, {
    ts: '2025-01-02T03:04:05.000Z', collection: 'posts', shape: 'filter: title = ? && views > ? | sort: -views | search: ?',
    filter: 'title = ? && views > ?', sort: '-views', search: true, vector: false, fields: ['title', 'views'], sort_fields: ['views'], duration_ms: 12.3, plan: [],
  });
  assert.ok(!JSON.stringify(e).includes('secret') && !JSON.stringify(e).includes('42'));
  assert.equal(describeSample(sample({ filter: '', sort: null, vector: true }), 1, 0).shape, 'vector: ?');
});

test('SlowQueryLog: one line per shape per minute, the plan, mode 0600, no values; a new generation logs again', async () => {
  const { dir, db } = dataDir();
  const log = new SlowQueryLog({ dataDir: dir, dbPath: db, thresholdMs: 5 });
  log.record(50, sample());
  log.record(60, sample({ filter: "title = 'other' && views > 7", params: ['other', 7, 30, 0] })); // same shape
  log.record(70, sample({ filter: "slug = 'x'", sort: null, sql: 'SELECT r."id" FROM "posts" r WHERE r."slug" = ? LIMIT ? OFFSET ?', params: ['x', 30, 0] }));
  await log.flush();
  let lines = readSlowQueries(dir);
  assert.equal(lines.skipped, 0);
  assert.deepEqual(lines.entries.map((e) => [e.shape, e.duration_ms]), [['filter: title = ? && views > ? | sort: -views', 50], ['filter: slug = ?', 70]]);
  assert.ok(lines.entries[0].plan.includes('SCAN r'), JSON.stringify(lines.entries[0].plan));
  assert.ok(lines.entries[0].plan.some((l) => l.includes('TEMP B-TREE FOR ORDER BY')));
  assert.deepEqual(lines.entries[1].plan, ['SEARCH r USING INDEX by_slug (slug=?)']);
  const file = slowQueryPath(dir);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  // the timestamps are left out of the check: a time such as 20:31:42 is not a leaked value
  const raw = readFileSync(file, 'utf8').replace(/"ts":"[^"]*"/g, '');
  for (const v of ['secret-title', 'other', '42']) assert.ok(!raw.includes(v), v);

  log.record(80, sample({ generation: 2 })); // the schema changed: the plan may too
  log.record(90, sample({ sql: 'SELECT nonsense FROM "gone"' , generation: 3 })); // a plan that cannot be had
  await log.close();
  log.record(99, sample({ generation: 4 })); // closed: dropped
  await log.flush();
  lines = readSlowQueries(dir);
  assert.deepEqual(lines.entries.map((e) => e.duration_ms), [50, 70, 80, 90]);
  assert.deepEqual(lines.entries[3].plan, []);
});

test('SlowQueryLog: the list path is not kept waiting, and the threshold must be positive', async () => {
  const { dir, db } = dataDir();
  const log = new SlowQueryLog({ dataDir: dir, dbPath: db, thresholdMs: 1 });
  log.record(5, sample());
  assert.ok(!existsSync(slowQueryPath(dir)), 'nothing is written synchronously');
  await log.close();
  assert.equal(readSlowQueries(dir).entries.length, 1);
  assert.throws(() => new SlowQueryLog({ dataDir: dir, dbPath: db, thresholdMs: 0 }), RangeError);
});

test('SlowQueryLog: rotates to .1 past maxBytes; readSlowQueries reads both, oldest first, skipping bad lines', async () => {
  const { dir, db } = dataDir();
  const log = new SlowQueryLog({ dataDir: dir, dbPath: db, thresholdMs: 1, maxBytes: 1200 });
  for (let i = 0; i < 8; i++) {
    log.record(10 + i, sample({ generation: i }));
    await log.flush();
  }
  await log.close();
  const file = slowQueryPath(dir);
  assert.ok(existsSync(`${file}.1`), 'rotated');
  assert.ok(statSync(file).size <= 1200 && statSync(`${file}.1`).size <= 1200);
  writeFileSync(file, 'not json\n{"collection": 1}\n', { flag: 'a' });
  const read = readSlowQueries(dir);
  assert.equal(read.skipped, 2);
  const ms = read.entries.map((e) => e.duration_ms);
  assert.deepEqual(ms, [...ms].sort((a, b) => a - b), 'oldest first');
  assert.equal(ms[ms.length - 1], 17);
  assert.ok(ms.length >= 2 && ms.length < 8, `older lines beyond one rotation are gone (${ms.length} kept)`);
});

const posts = (over: Partial<CheckedCollection> = {}): CheckedCollection => ({
  id: 'p1', name: 'posts', type: 'base', system: false, indexes: [], options: {}, listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null,
  created: '2025-01-01 00:00:00.000Z', updated: '2025-01-01 00:00:00.000Z',
  fields: [{ id: 'f1', name: 'title', type: 'text', options: {} }, { id: 'f2', name: 'views', type: 'number', options: {} }, { id: 'f3', name: 'secret', type: 'text', options: { encrypted: true } }],
  ...over,
});

function logWith(entries: Partial<SlowQueryEntry>[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-slowq-'));
  dirs.push(dir);
  const base: SlowQueryEntry = { ts: '2025-02-01T00:00:00.000Z', collection: 'posts', shape: '', filter: null, sort: null, search: false, vector: false, fields: [], sort_fields: [], duration_ms: 300, plan: [] };
  writeFileSync(slowQueryPath(dir), entries.map((e) => JSON.stringify({ ...base, ...e })).join('\n') + '\n');
  return dir;
}

test('missing-index: scans name the filter fields (equality first), sorts the sort fields; indexed, encrypted and stale lines are left out', () => {
  const none = () => new Set(['id']);
  const scan = { shape: 'filter: views > ? && title = ?', filter: 'views > ? && title = ?', fields: ['views', 'title'], plan: ['SCAN r'] };
  let f = checkMissingIndexes(logWith([scan, { ...scan, ts: '2025-02-01T00:01:00.000Z', duration_ms: 900 }]), [posts()], none);
  assert.equal(f.length, 1);
  assert.match(f[0].message, /^collection "posts": slow lists \(2 logged, up to 900 ms, last 2025-02-01T00:01:00.000Z\) read the whole table: no index leads with any of "title", "views"/);
  assert.match(f[0].fix, /add an index on "title"/);

  // the newest line of a shape decides: an index in its plan ends the finding
  f = checkMissingIndexes(logWith([scan, { ...scan, ts: '2025-02-01T00:02:00.000Z', plan: ['SEARCH r USING INDEX by_title (title=?)'] }]), [posts()], none);
  assert.deepEqual(f, []);
  // a field that leads an index now is not suggested
  f = checkMissingIndexes(logWith([scan]), [posts()], () => new Set(['id', 'title']));
  assert.match(f[0].message, /no index leads with "views";/);
  assert.match(f[0].fix, /CREATE INDEX posts_views ON \\"posts\\" \(\\"views\\"\)/);
  // a collection changed after the line: its plan may be different now
  assert.deepEqual(checkMissingIndexes(logWith([scan]), [posts({ updated: '2025-03-01 00:00:00.000Z' })], none), []);
  // encrypted fields, unknown names and relation paths' other segments are never suggested
  assert.deepEqual(checkMissingIndexes(logWith([{ ...scan, fields: ['secret', 'nope'] }]), [posts()], none), []);
  // a sort through a temporary b-tree over an index walk
  f = checkMissingIndexes(logWith([{ shape: 'sort: -views', sort: '-views', sort_fields: ['views'], plan: ['SCAN r USING INDEX by_title', 'USE TEMP B-TREE FOR ORDER BY'] }]), [posts()], none);
  assert.match(f[0].message, /sort every matching row in a temporary b-tree: no index leads with "views"/);
  // a search's scan of its full-text table and dropped collections say nothing
  assert.deepEqual(checkMissingIndexes(logWith([{ shape: 'search: ?', search: true, plan: ['SCAN f VIRTUAL TABLE INDEX 0:M1'] }]), [posts()], none), []);
  assert.deepEqual(checkMissingIndexes(logWith([{ ...scan, collection: 'gone' }]), [posts()], none), []);
});
