/**
 * The SQL builders of the list plans (src/store/sql/list-sql.ts in SQLite's dialect): the
 * semi-join row count, unindexable sort terms, and the offset walk's order, seek condition and
 * step, run against an in-memory table so the seek is checked against plain OFFSET paging.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'libsql';
import { sqliteList } from '../../../src/store/sqlite/list-dialect.js';
import { WalkCache, CountCache, WALK_CACHE_MAX } from '../../../src/cache/caches.js';
import { renderSlots } from '../../../src/store/slots.js';

const { boundedCountSql, fromRecords, hasNullSql, pageOrderBy, unindexedOrder, walkAfter, walkOrder, walkStepSql } = sqliteList;

test('walkOrder accepts one plain column sort, either direction, and nothing else', () => {
  assert.deepEqual(walkOrder(['r."name" ASC']), { column: 'r."name"', desc: false });
  assert.deepEqual(walkOrder(['r."population" DESC']), { column: 'r."population"', desc: true });
  assert.equal(walkOrder([]), null);
  assert.equal(walkOrder(['r."a" ASC', 'r."b" ASC']), null);
  assert.equal(walkOrder([unindexedOrder('r."name" ASC')]), null);
  assert.equal(walkOrder(['(CASE WHEN r."emailVisibility" <> 0 THEN r."email" END) ASC']), null);
  assert.equal(walkOrder(['RANDOM() ASC']), null);
});

test('unindexedOrder and boundedCountSql', () => {
  assert.equal(unindexedOrder('r."population" DESC'), '+r."population" DESC');
  assert.equal(boundedCountSql('cities', 'r."country" IN (SELECT 1)'), 'SELECT COUNT(*) FROM (SELECT 1 FROM "cities" r WHERE r."country" IN (SELECT 1) LIMIT ?)');
});

test('a page after a checkpoint equals the same page by OFFSET, both directions, with ties and NULLs', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE "t" ("id" TEXT PRIMARY KEY, "v" REAL)');
  db.exec('CREATE INDEX "t_v" ON "t" ("v")');
  const ins = db.prepare('INSERT INTO "t" VALUES (?, ?)');
  // values with long runs of ties, and a few NULLs
  for (let i = 0; i < 3000; i++) ins.run([`r${i}`, i % 7 === 0 ? null : Math.floor((i * 7919) % 600)]);
  // statements put together here from fragments get their SLOTs rendered as a builder's would
  const all = (sql: string, params: unknown[]) => db.prepare(renderSlots.sqlite(sql)).raw(true).all(params) as unknown[][];
  const from = fromRecords('t');
  for (const desc of [false, true]) {
    const order = [`r."v" ${desc ? 'DESC' : 'ASC'}`];
    const by = walkOrder(order)!;
    const whereNotNull = desc ? ' WHERE (r."v" IS NOT NULL)' : '';
    if (desc) assert.equal(all(hasNullSql(by.column, from, ''), []).length, 1);
    const scopeWhere = whereNotNull;
    // the checkpoint: the row 999 rows in
    const [value, rowid] = all(walkStepSql(by.column, from, scopeWhere, order), [999])[0];
    for (const rest of [0, 1, 137, 500]) {
      const seekWhere = `${scopeWhere ? `${scopeWhere} AND` : ' WHERE'} ${walkAfter(by.column, by.desc)}`;
      const seek = all(`SELECT r.rowid${from}${seekWhere} ORDER BY ${pageOrderBy(order)} LIMIT 20 OFFSET ?`, [value, rowid, rest]);
      const plain = all(`SELECT r.rowid${from}${scopeWhere} ORDER BY ${pageOrderBy(order)} LIMIT 20 OFFSET ?`, [1000 + rest]);
      assert.deepEqual(seek, plain, `${desc ? 'DESC' : 'ASC'} rest ${rest}`);
    }
    const plan = (db.prepare(renderSlots.sqlite(`EXPLAIN QUERY PLAN SELECT r.rowid${from} WHERE ${walkAfter(by.column, by.desc)} ORDER BY ${pageOrderBy(order)} LIMIT 20`)).raw(true).all([1, 1]) as unknown[][]).map((r) => String(r[3]));
    assert.ok(plan.some((d) => /SEARCH r USING COVERING INDEX t_v \(v[<>]\?\)/.test(d)), plan.join('\n'));
  }
  db.close();
});

test('WalkCache and CountCache: an entry is valid for its generation only, and the caches are bounded', () => {
  const walks = new WalkCache();
  const w = { points: [], end: false, pending: null };
  walks.set('k', 'g1', w);
  assert.equal(walks.get('k', 'g1'), w);
  assert.equal(walks.get('k', 'g2'), undefined);
  for (let i = 0; i < WALK_CACHE_MAX + 1; i++) walks.set(`k${i}`, 'g', w);
  assert.equal(walks.get('k', 'g1'), undefined); // forgotten all at once past the bound
  const counts = new CountCache();
  counts.set('q', '1:0', 42);
  assert.equal(counts.get('q', '1:0'), 42);
  assert.equal(counts.get('q', '1:0:7'), undefined);
});
