/**
 * Where list queries run (src/records/records-list.ts): searches and vector queries always go to
 * the reader pool (never the main thread); other pages let the plan decide (Reader.allAuto,
 * getAuto), and a plain page whose id query is expensive finds its ids on the pool; an
 * unfiltered COUNT(*) runs on the main thread.
 * Uses a stand-in list repository (ListRepository) that records which reader entry point each query took.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Collection } from '../../../src/model/schema.js';
import type { ListRepository } from '../../../src/records/record-repositories.js';
import { buildCodec } from '../../../src/records/record-codec.js';
import * as sqliteJson from '../../../src/store/sqlite/record-json.js';
import { RecordLister } from '../../../src/records/records-list.js';
import { CursorCodec } from '../../../src/records/cursor.js';

import { Caches } from '../../../src/cache/caches.js';
import { parseListQuery } from '../../../src/records/list-query.js';
import { ChangeFeed } from '../../../src/store/change-feed.js';
import { sqliteStores } from '../../../src/store/sqlite/sql-stores.js';
import type { Reader } from '../../../src/store/sqlite/reader.js';
const c: Collection = {
  id: 'pbc_lister0', name: 'docs', type: 'base', system: false, indexes: [], options: {},
  fields: [{ id: 'ft', name: 'title', type: 'text', options: { searchable: true } }, { id: 'fe', name: 'emb', type: 'json', options: {} }],
  listRule: '@public', viewRule: null, createRule: null, updateRule: null, deleteRule: null, created: '', updated: '',
};

function lister(): { list: (q: string) => Promise<string>; calls: Array<[string, string]> } {
  const calls: Array<[string, string]> = [];
  const store = {
    rules: { check: () => ({ kind: 'all' }) },
    registry: { version: () => 1, schemaGeneration: () => 1, byId: () => undefined, byName: () => undefined },
    codec: () => buildCodec(c, sqliteJson),
    sql: sqliteStores(null as unknown as Reader),
    caches: new Caches(new ChangeFeed()),
    writer: { commits: 0 },
    reader: {
      allAuto: (sql: string) => (calls.push(['auto', sql]), []),
      getAuto: (sql: string) => (calls.push(['auto', sql]), undefined),
      all: async (sql: string, _params: unknown[], pool?: { pool: true }) => (pool ? (calls.push(['pool', sql]), sql.startsWith('SELECT COUNT') ? [[0n]] : []) : (calls.push(['main', sql]), [[0n]])),
      get: async (sql: string, _params: unknown[], pool?: { pool: true }) => (pool ? (calls.push(['pool', sql]), sql.startsWith('SELECT COUNT') ? [0n] : undefined) : (calls.push(['main', sql]), [0n])),
      workerFree: () => true,
      // plain pages ask SQLite's plan (its synchronous reads) before assembling cached renderings; "expensive" sends them on
      sync: { isExpensive: () => true },
    },
  } as unknown as ListRepository;
  const l = new RecordLister(store, { offset: true, cursor: true, fts: true, vector: true, tokens: new CursorCodec('stateless', null, 60, null) }, async (_c, recs) => recs);
  return { list: (q) => l.list(c, null, parseListQuery(q)), calls };
}

test('search and vector queries run on the reader pool; plain pages where the plan says', async () => {
  for (const q of ['search=hello', 'search=hello&cursor=', 'q=hello&skipTotal=true', 'vector=emb:[1,2]']) {
    const { list, calls } = lister();
    await list(q);
    assert.ok(calls.length > 0);
    for (const [where, sql] of calls) {
      // An unfiltered COUNT(*) (a vector query filters nothing) is cheap and stays on the main thread.
      const unfilteredCount = sql.startsWith('SELECT COUNT(*)') && !/ WHERE | JOIN /.test(sql);
      assert.equal(where, unfilteredCount ? 'main' : 'pool', `${q}: ${sql}`);
    }
    if (q.startsWith('search') || q.startsWith('q=')) assert.ok(calls.some(([, sql]) => sql.includes('MATCH ?')), q);
  }
  const { list, calls } = lister();
  await list('perPage=5&skipTotal=true');
  assert.deepEqual(calls.map(([w]) => w), ['pool']);
});
