/**
 * Sorted lists on PostgreSQL walk an index instead of sorting the filtered scan (docs/internals.md,
 * "PostgreSQL"), on a real PostgreSQL (test/helpers/postgres.ts) opened as `svc serve` opens it
 * (src/store/pg/open.ts): a collection made by the DDL of collection-sql.ts, its page statement
 * built as records-list.ts builds it (the list builder and the sort emitter of the backend), and
 * EXPLAIN of that statement. Ascending and descending sorts on the never-null base columns walk
 * the primary key, the `created` index or the identity index; on a collection index, in both
 * directions.
 *
 * A database made by an earlier version (text columns under the database's collation, indexes
 * without NULLS FIRST, no index on `created`, a full-text column over a text field) is brought to
 * that shape when it is opened again, and keeps its rows and its search.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, postgresSkipReason, type Postgres } from '../../helpers/postgres.js';
import { openPostgres, type OpenedPostgres } from '../../../src/store/pg/open.js';
import { CollectionRegistry } from '../../../src/collections/collection-registry.js';
import { RateLimiter } from '../../../src/auth/rate-limit.js';
import { createLogger } from '../../../src/log/logger.js';
import { createSteps, createdIndexName, indexSqlName } from '../../../src/store/pg/collection-sql.js';
import { pgList } from '../../../src/store/pg/list-dialect.js';
import { emitSort } from '../../../src/store/pg/rule-sql.js';
import { SLOT } from '../../../src/store/slots.js';
import type { Collection, Field, FieldType } from '../../../src/model/schema.js';
import type { SchemaLookup } from '../../../src/rules/compiler.js';

const skip = postgresSkipReason() ?? false;
let server: Postgres | null = null;
const opened: OpenedPostgres[] = [];
const lines: string[] = [];
const logger = createLogger({ format: 'json', level: 'info', requests: false, write: (l) => lines.push(l) });

const f = (name: string, type: FieldType, options: Field['options'] = {}): Field => ({ id: `f_${name}`, name, type, options });
const posts: Collection = {
  id: 'c_posts', name: 'posts', type: 'base', system: false,
  fields: [f('title', 'text', { searchable: true }), f('views', 'number')],
  indexes: [{ name: 'by_views', fields: ['views'] }, { name: 'by_title', fields: ['title'] }],
  options: {}, listRule: null, viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
};
const schema: SchemaLookup = { byId: (id) => (id === posts.id ? posts : undefined), byName: (n) => (n === posts.name ? posts : undefined) };

before(async () => {
  if (!skip) server = await startPostgres();
});

after(async () => {
  for (const o of opened) await o.close().catch(() => undefined);
  if (server) await server.stop();
});

/** A database with `posts` and 20,000 rows (one a second from 2026-01-01, views 0..999, a tenth without a title), analyzed. */
async function seeded(name: string): Promise<string> {
  const url = await server!.createDatabase(name);
  const o = await openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter());
  await o.store.writer.write(createSteps(posts, [], [posts]));
  await o.store.writer.write([{ sql: `INSERT INTO "posts" ("id", "created", "updated", "title", "views") SELECT lpad(g::text, 15, '0'), to_char(timestamp '2026-01-01' + g * interval '1 second', 'YYYY-MM-DD HH24:MI:SS.MS"Z"'), '2026-01-01 00:00:00.000Z', CASE WHEN g % 10 = 0 THEN NULL ELSE 'title ' || (g % 977) END, g % 1000 FROM generate_series(1, 20000) g`, params: [] }]);
  await o.store.writer.write([{ sql: 'ANALYZE "posts"', params: [] }]);
  await o.close();
  return url;
}

/** EXPLAIN of a page of `posts` filtered by `views > 500` and sorted by `sort`, as the lister asks for it. */
async function plan(url: string, sort: string): Promise<string> {
  const sql = pgList.pageIdsSql(' FROM "posts" r', ` WHERE r."views" > ${SLOT}`, [emitSort(sort, posts, schema, 'r')]);
  const client = new pg.Client(url);
  await client.connect();
  try {
    const r = await client.query(`EXPLAIN ${sql}`, [500, 20, 0]);
    return r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
  } finally {
    await client.end();
  }
}

/** True when the plan reads rows in order from an index (no full sort of the scan; an incremental one for the tiebreak is fine). */
const walksIndex = (p: string): boolean => /Index Scan/.test(p) && !/(^|->\s+)Sort\s+\(/m.test(p);

test('a filtered page sorted on id, created, @rowid or an indexed field walks an index, in both directions', { skip }, async () => {
  const url = await seeded('sorts');
  for (const sort of ['-id', 'id', '-created', 'created', '-@rowid', '@rowid', '-views', 'views', '-title', 'title']) {
    const p = await plan(url, sort);
    assert.ok(walksIndex(p), `sort=${sort}:\n${p}`);
  }
  // the rows come back in SQLite's order: NULL titles first ascending, last descending
  const client = new pg.Client(url);
  await client.connect();
  try {
    const page = async (sort: string) => (await client.query(pgList.pageIdsSql(' FROM "posts" r', ` WHERE r."views" > ${SLOT}`, [emitSort(sort, posts, schema, 'r')]), [995, 3, 0])).rows.map((r: { id: string }) => r.id);
    const asc = (await client.query(`SELECT r."id" FROM "posts" r WHERE r."views" > 995 ORDER BY r."title" IS NOT NULL, r."title" COLLATE "C", r."_rowid" LIMIT 3`)).rows.map((r: { id: string }) => r.id);
    assert.deepEqual(await page('title'), asc);
    const desc = (await client.query(`SELECT r."id" FROM "posts" r WHERE r."views" > 995 ORDER BY r."title" IS NULL, r."title" COLLATE "C" DESC, r."_rowid" DESC LIMIT 3`)).rows.map((r: { id: string }) => r.id);
    assert.deepEqual(await page('-title'), desc);
  } finally {
    await client.end();
  }
});

test('a database made before: its text columns move under COLLATE "C", its indexes are re-created NULLS FIRST, rows and search kept', { skip }, async () => {
  const url = await seeded('upgrade');
  // what an earlier version made: text under the database's collation, plain indexes
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query('ALTER TABLE "posts" DROP COLUMN "_fts"');
    await client.query('ALTER TABLE "posts" ALTER COLUMN "id" TYPE text COLLATE "default", ALTER COLUMN "created" TYPE text COLLATE "default", ALTER COLUMN "updated" TYPE text COLLATE "default", ALTER COLUMN "title" TYPE text COLLATE "default"');
    await client.query(`ALTER TABLE "posts" ADD COLUMN "_fts" tsvector GENERATED ALWAYS AS (to_tsvector('svc_search'::regconfig, coalesce("title", ''))) STORED`);
    await client.query(`DROP INDEX "${createdIndexName(posts)}"`);
    for (const ix of posts.indexes) {
      await client.query(`DROP INDEX "${indexSqlName(posts, ix.name)}"`);
      await client.query(`CREATE INDEX "${indexSqlName(posts, ix.name)}" ON "posts" ("${ix.fields[0]}")`);
    }
    assert.ok(!walksIndex(await plan(url, '-id')), 'the old shape sorts the scan (the test would prove nothing otherwise)');
    assert.ok(!walksIndex(await plan(url, '-title')));
    assert.ok(!walksIndex(await plan(url, '-created')));

    const at = lines.length;
    const o = await openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter());
    opened.push(o);
    const said = lines.slice(at).map((l) => String(JSON.parse(l).msg));
    assert.ok(said.some((m) => m.startsWith('upgrading collection "posts"') && m.includes('id, created, updated, title') && m.includes('2 index') && m.includes('an index on created')), said.join('\n'));
    for (const sort of ['-id', 'id', '-created', '-title', 'title', '-views']) assert.ok(walksIndex(await plan(url, sort)), `sort=${sort}`);
    const collations = (await client.query(`SELECT a.attname, co.collname FROM pg_attribute a JOIN pg_collation co ON co.oid = a.attcollation WHERE a.attrelid = '"posts"'::regclass AND a.atttypid = 'text'::regtype AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`)).rows;
    assert.deepEqual(collations.map((r: { collname: string }) => r.collname), ['C', 'C', 'C', 'C']);
    assert.equal(Number((await client.query('SELECT count(*) FROM "posts"')).rows[0].count), 20000);
    const found = await client.query(`SELECT count(*) FROM "posts" WHERE "_fts" @@ to_tsquery('svc_search', 'title & 976')`);
    assert.ok(Number(found.rows[0].count) > 0, 'the full-text column was generated again');
    // opened once more: nothing left to do
    const again = lines.length;
    opened.push(await openPostgres(url, logger, undefined, new CollectionRegistry(), new RateLimiter()));
    assert.ok(!lines.slice(again).some((l) => String(JSON.parse(l).msg).startsWith('upgrading collection')));
  } finally {
    await client.end();
  }
});
