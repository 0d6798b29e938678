/**
 * Full-text search end to end (spec 1-core-api.md "Search"; 0-conventions.md `options.searchable`):
 * the `<col>_fts` external-content index and its sync on create, update, delete, cascade, field
 * rename, collection rename and fields made searchable later; operators, prefixes, terms that
 * reduce to nothing, malformed input, relevance order, `q`, with the same assertions on both
 * backends (docs/lists.md, "Full-text search"; a tsquery on PostgreSQL, whose tsvector column is
 * checked in test/unit/pg/); search ANDed with the filter and the list rule; the
 * `fts5-off` feature (400, and no start over a schema with searchable fields). Plus unit checks of
 * the query lowering.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { startSvc, type Svc } from '../helpers/server.js';
import { assertError, dumpServerLog, qs, seed, signup, type User } from '../helpers/records-fixtures.js';
import { lowerSearch, lowerTsquery } from '../../src/records/search.js';
import { databasePath } from '../../src/files/data-paths.js';
import { TEST_BACKEND } from '../helpers/backend.js';

/** Skip reason of the checks of the FTS5 index itself (SQLite only). */
const FTS5 = TEST_BACKEND === 'postgres'
  ? 'the FTS5 index (<col>_fts table, triggers, DDL, integrity-check) is the SQLite backend\'s (PostgreSQL: a generated tsvector column, tested in test/unit/pg/)'
  : false;

const dataDir = mkdtempSync(join(tmpdir(), 'svc-search-'));
let srv: Svc;
let ann: User;
let ben: User;
let collectionId = '';
const URL = '/api/collections/articles/records';

before(async () => {
  srv = await startSvc({ dataDir });
  const users = await srv.createCollection({ name: 'users', type: 'auth', fields: [], listRule: '@public', viewRule: '@public', createRule: '@public' });
  ann = await signup(srv, 'users', 'ann@example.com');
  ben = await signup(srv, 'users', 'ben@example.com');
  const c = await srv.createCollection({
    name: 'articles', type: 'base',
    listRule: 'public = true || owner = @request.auth.id', viewRule: 'public = true || owner = @request.auth.id',
    fields: [
      { name: 'title', type: 'text', options: { searchable: true } },
      { name: 'body', type: 'editor', options: { searchable: true } },
      { name: 'note', type: 'text' },
      { name: 'public', type: 'bool' },
      { name: 'owner', type: 'relation', options: { collectionId: users.id, cascadeDelete: true } },
    ],
  });
  collectionId = c.id;
  await srv.createCollection({ name: 'plain', type: 'base', listRule: '@public', fields: [{ name: 'title', type: 'text' }] });
  const rows = [
    { title: 'São Paulo travel guide', body: '<p>Coffee and football in Brazil</p>', note: 'quartz', public: true, owner: ann.id },
    { title: 'Paris in spring', body: '<p>Coffee on the Seine</p>', note: 'quartz', public: true, owner: ann.id },
    { title: 'Parma ham', body: '<p>Curing pork in Italy</p>', note: 'basalt', public: false, owner: ann.id },
    { title: 'Secret Paris diary', body: '<p>Private notes</p>', note: 'basalt', public: false, owner: ben.id },
    { title: 'zebra', body: '<p>zebra zebra zebra</p>', note: null, public: true, owner: ben.id },
    { title: 'A long essay that mentions a zebra once among very many other words about savannah animals', body: '<p>lions giraffes elephants</p>', note: null, public: true, owner: ben.id },
  ];
  for (const r of rows) await seed(srv, 'articles', r);
});
after(async () => {
  dumpServerLog(srv);
  await srv?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const find = (search: string, token: string | null = srv.suToken, extra: Record<string, string | number> = {}, path = URL) =>
  srv.api('GET', `${path}${qs({ search, perPage: 100, ...extra })}`, { token });
const titles = async (search: string, token: string | null = srv.suToken, extra: Record<string, string | number> = {}) => {
  const r = await find(search, token, extra);
  assert.equal(r.status, 200, r.text);
  return (r.body.items as any[]).map((x) => x.title).sort();
};

/** Reads the schema of the live database (WAL allows a second reader). */
function master(name: string): string | undefined {
  const db = new Database(databasePath(dataDir), { readonly: true });
  try {
    const row = db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').raw(true).get([name]) as unknown[] | undefined;
    return row ? String(row[0]) : undefined;
  } finally {
    db.close();
  }
}

test('lowering: operators, prefixes, quoting, terms that reduce to nothing', () => {
  assert.equal(lowerSearch('coffee brazil'), '("coffee" AND "brazil")');
  assert.equal(lowerSearch('coffee AND brazil'), '("coffee" AND "brazil")');
  assert.equal(lowerSearch('paris OR parma NOT ham'), '("paris") OR ("parma" NOT ("ham"))');
  assert.equal(lowerSearch('par*'), '("par" *)');
  assert.equal(lowerSearch('say "hi" NEAR(x)'), '("say" AND """hi""" AND "NEAR(x)")');
  for (const empty of ['AND', 'OR NOT', '***', ' ; - ', 'NOT paris', '']) assert.equal(lowerSearch(empty), null, empty);
  assert.throws(() => lowerSearch('a'.repeat(1001)), /at most/);
  assert.throws(() => lowerSearch(Array(65).fill('w').join(' ')), /at most/);
  // a control character separates terms (a NUL inside an FTS5 string ends it: "unterminated string")
  assert.equal(lowerSearch('paris\u0000spring\u0001'), '("paris" AND "spring")');
  // the same grammar as a PostgreSQL tsquery: every term quoted, its words adjacent, prefix on the last
  assert.equal(lowerTsquery('coffee brazil'), "('coffee' & 'brazil')");
  assert.equal(lowerTsquery('paris OR parma NOT ham'), "('paris') | ('parma' & !('ham'))");
  assert.equal(lowerTsquery('par* NOT x NOT y'), "('par':* & !('x' | 'y'))");
  assert.equal(lowerTsquery("sao-pau* o'neil a\\b:*"), "(('sao' <-> 'pau':* | 'sao-pau':*) & ('o' <-> 'neil' | 'o''neil') & ('a' <-> 'b':* | 'a\\\\b:':*))");
  assert.equal(lowerTsquery('x & !y | z <-> w'), "('x' & ('y' | '!y') & 'z' & 'w')");
  for (const empty of ['AND', 'OR NOT', '***', ' ; - ', 'NOT paris', '', '&|!', "'"]) assert.equal(lowerTsquery(empty), null, empty);
  assert.throws(() => lowerTsquery(Array(65).fill('w').join(' ')), /at most/);
});

test('the index is an FTS5 external-content table named <col>_fts', { skip: FTS5 }, () => {
  const sql = master('articles_fts') ?? '';
  assert.match(sql, /^CREATE VIRTUAL TABLE "articles_fts" USING fts5\("title", "body"/);
  assert.match(sql, /content='articles'/);
});

test('operators, prefix, diacritics, q alias, relevance order', async () => {
  assert.deepEqual(await titles('coffee'), ['Paris in spring', 'São Paulo travel guide']);
  assert.deepEqual(await titles('coffee brazil'), ['São Paulo travel guide']);
  assert.deepEqual(await titles('coffee AND seine'), ['Paris in spring']);
  assert.deepEqual(await titles('brazil OR italy'), ['Parma ham', 'São Paulo travel guide']);
  assert.deepEqual(await titles('coffee NOT brazil'), ['Paris in spring']);
  assert.deepEqual(await titles('par*'), ['Paris in spring', 'Parma ham', 'Secret Paris diary']);
  // diacritics fold on both backends (FTS5 remove_diacritics 2; PostgreSQL through unaccent)
  assert.deepEqual(await titles('sao paulo'), ['São Paulo travel guide']);
  assert.deepEqual(await titles('SÃO'), ['São Paulo travel guide']);
  assert.deepEqual(await titles('PARIS'), ['Paris in spring', 'Secret Paris diary']);
  const q = await srv.api('GET', `${URL}${qs({ q: 'ham' })}`, { token: srv.suToken });
  assert.deepEqual(q.body.items.map((x: any) => x.title), ['Parma ham']);
  const ranked = await find('zebra');
  assert.deepEqual(ranked.body.items.map((x: any) => x.title)[0], 'zebra', 'most relevant first');
  assert.equal(ranked.body.items.length, 2);
  assert.equal(ranked.body.totalItems, 2);
  const sorted = await find('zebra', srv.suToken, { sort: '-title' });
  assert.equal(sorted.body.items[0].title, 'zebra', 'an explicit sort wins over relevance');
});

test('one query grammar on both backends: OR, prefix, operator binding, inert punctuation, malformed input', async () => {
  const paris = ['Paris in spring', 'Secret Paris diary'];
  const cases: [string, string[]][] = [
    // OR binds loosest; AND is implied; NOT applies to the next term within its OR group
    ['coffee seine OR ham', ['Paris in spring', 'Parma ham']],
    ['brazil OR italy OR zebra', ['A long essay that mentions a zebra once among very many other words about savannah animals', 'Parma ham', 'São Paulo travel guide', 'zebra']],
    ['paris NOT spring', ['Secret Paris diary']],
    ['paris NOT NOT spring', ['Secret Paris diary']],
    ['coffee OR NOT brazil', ['Paris in spring', 'São Paulo travel guide']],
    ['zeb* NOT essay', ['zebra']],
    // a trailing * is a prefix (of the last word of a hyphenated term); elsewhere it separates words
    ['pa*', ['Paris in spring', 'Parma ham', 'Secret Paris diary', 'São Paulo travel guide']],
    ['PAR**', ['Paris in spring', 'Parma ham', 'Secret Paris diary']],
    ['sao-pau*', ['São Paulo travel guide']],
    ['p*ris', []],
    ['paris:*', paris],
    // a term with punctuation inside is its words in that order, adjacent
    ['são-paulo', ['São Paulo travel guide']],
    ['paulo-são', []],
    ['travel-coffee', []],
    // quotes are punctuation, not phrases: the words match in any order
    ['"diary paris"', ['Secret Paris diary']],
    // operators are upper case only; other operator syntax (FTS5's, tsquery's) is inert punctuation
    ['paris or parma', []],
    ['(paris OR parma)', ['Paris in spring', 'Parma ham', 'Secret Paris diary']],
    ['paris & !spring', ['Paris in spring']],
    ['paris | parma', []],
    ['paris <-> spring', ['Paris in spring']],
    ['NEAR(paris spring)', []],
    ['spring:A', []],
    // malformed: dangling operators and unbalanced quotes or parentheses
    ['paris OR', paris],
    ['OR paris', paris],
    ['paris NOT', paris],
    ['paris AND', paris],
    ['"paris', paris],
    ['paris"', paris],
    ["paris'", paris],
    ["'paris", paris],
    ["o'paris", []],
    ['paris\\', paris],
    ['\\paris', paris],
    ['(paris', paris],
    ['* paris *', paris],
  ];
  for (const [s, expected] of cases) assert.deepEqual(await titles(s), expected, s);
  for (const s of ["'", '\\', "''", '\\\'', ':*', '&', '!', '|', '()', '"OR"']) {
    const r = await find(s);
    assert.equal(r.status, 200, `${JSON.stringify(s)}: ${r.text}`);
    assert.equal(r.body.totalItems, 0, s);
  }
  // cursor paging takes the same grammar
  const c = await srv.api('GET', `${URL}${qs({ search: 'brazil OR ital*', cursor: '', limit: 10 })}`, { token: srv.suToken });
  assert.equal(c.status, 200, c.text);
  assert.deepEqual(c.body.items.map((x: any) => x.title).sort(), ['Parma ham', 'São Paulo travel guide']);
});

test('terms that reduce to nothing match no rows; no searchable field or bad input is 400', async () => {
  const nothing = async (s: string) => {
    const r = await find(s);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.items.length, r.body.totalItems], [0, 0], s);
    const c = await srv.api('GET', `${URL}${qs({ search: s, cursor: '', skipTotal: 'false' })}`, { token: srv.suToken });
    assert.deepEqual([c.status, c.body.items.length, c.body.nextCursor, c.body.totalItems], [200, 0, null, 0]);
  };
  // no word at all: nothing on both backends
  for (const s of ['***', '"', ' - ']) await nothing(s);
  // operators alone or a leading NOT: nothing
  for (const s of ['AND', 'NOT paris', 'OR OR', 'NOT', '*', 'OR NOT *']) await nothing(s);
  const r = await find('x', srv.suToken, {}, '/api/collections/plain/records');
  assertError(r, 400, 'bad_request');
  assert.match(r.body.message, /searchable/);
  assertError(await find('a'.repeat(1001)), 400, 'bad_request');
  assertError(await find(Array(65).fill('w').join(' ')), 400, 'bad_request');
  assert.equal((await find('   ')).body.totalItems, 6, 'a blank search is no search');
});

test('control characters separate terms: a NUL is no 500 and breaks no later search', async () => {
  assert.deepEqual(await titles('paris\u0000'), ['Paris in spring', 'Secret Paris diary']);
  assert.deepEqual(await titles('paris\u0000spring\u0007'), ['Paris in spring']);
  const r = await find('\u0000');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.totalItems, 0);
  assert.deepEqual(await titles('coffee'), ['Paris in spring', 'São Paulo travel guide']);
});

test('search is ANDed with the filter and the list rule: it never widens visibility', async () => {
  assert.deepEqual(await titles('paris', null), ['Paris in spring']);
  assert.deepEqual(await titles('paris', ben.token), ['Paris in spring', 'Secret Paris diary']);
  assert.deepEqual(await titles('paris', ann.token), ['Paris in spring']);
  assert.deepEqual(await titles('par*', ann.token), ['Paris in spring', 'Parma ham']);
  assert.deepEqual(await titles('paris OR ham OR diary', null), ['Paris in spring']);
  assert.deepEqual(await titles('ham', null), [], 'a private row is not found by others');
  assert.deepEqual(await titles('ham', ann.token), ['Parma ham'], '…and is by its owner');
  assert.deepEqual(await titles('coffee', srv.suToken, { filter: "title ~ 'Paris'" }), ['Paris in spring']);
  assert.equal((await find('paris', null)).body.totalItems, 1, 'the total counts only visible rows');
  assert.equal((await find('par*', null)).body.totalItems, 1, 'a prefix search counts only visible rows');
});

test('the index follows creates, updates and deletes', async () => {
  const rec = await seed(srv, 'articles', { title: 'Kyoto temples', body: '<p>maples</p>', public: true, owner: ann.id });
  assert.deepEqual(await titles('kyoto'), ['Kyoto temples']);
  const up = await srv.api('PATCH', `${URL}/${rec.id}`, { token: srv.suToken, body: { title: 'Osaka castles' } });
  assert.equal(up.status, 200, up.text);
  assert.deepEqual(await titles('kyoto'), []);
  assert.deepEqual(await titles('osaka'), ['Osaka castles']);
  assert.deepEqual(await titles('maples'), ['Osaka castles'], 'the untouched field stays indexed');
  await srv.api('PATCH', `${URL}/${rec.id}`, { token: srv.suToken, body: { note: 'unrelated change' } });
  assert.deepEqual(await titles('osaka'), ['Osaka castles']);
  assert.equal((await srv.api('DELETE', `${URL}/${rec.id}`, { token: srv.suToken })).status, 204);
  assert.deepEqual(await titles('osaka'), []);
  // a cascade delete (relation trigger) keeps the index in sync too
  const carl = await signup(srv, 'users', 'carl@example.com');
  await seed(srv, 'articles', { title: 'Carl writes about lighthouses', public: true, owner: carl.id });
  assert.deepEqual(await titles('lighthouses'), ['Carl writes about lighthouses']);
  assert.equal((await srv.api('DELETE', `/api/collections/users/records/${carl.id}`, { token: srv.suToken })).status, 204);
  assert.deepEqual(await titles('lighthouses'), []);
});

test('schema changes: field rename, a field made searchable later, collection rename, searchable removed', async (t) => {
  const col = (await srv.api('GET', '/api/collections/articles', { token: srv.suToken })).body;
  const fields = col.schema.map((f: any) => (f.name === 'title' ? { ...f, name: 'headline' } : f));
  let r = await srv.api('PATCH', '/api/collections/articles', { token: srv.suToken, body: { fields } });
  assert.equal(r.status, 200, r.text);
  const byHeadline = await find('brazil');
  assert.deepEqual(byHeadline.body.items.map((x: any) => x.headline), ['São Paulo travel guide']);
  await t.test('the FTS5 table follows the field rename', { skip: FTS5 }, () => {
    assert.match(master('articles_fts') ?? '', /fts5\("headline", "body"/);
  });

  assert.equal((await find('quartz')).body.items.length, 0, 'note is not searchable yet');
  const withNote = fields.map((f: any) => (f.name === 'note' ? { ...f, options: { ...f.options, searchable: true } } : f));
  r = await srv.api('PATCH', '/api/collections/articles', { token: srv.suToken, body: { fields: withNote } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual((await find('quartz')).body.items.map((x: any) => x.headline).sort(), ['Paris in spring', 'São Paulo travel guide'], 'existing rows are found');

  r = await srv.api('PATCH', '/api/collections/articles', { token: srv.suToken, body: { name: 'stories' } });
  assert.equal(r.status, 200, r.text);
  await t.test('the FTS5 table follows the collection rename', { skip: FTS5 }, () => {
    assert.equal(master('articles_fts'), undefined);
    assert.match(master('stories_fts') ?? '', /content='stories'/);
  });
  const renamed = await srv.api('GET', `/api/collections/stories/records${qs({ search: 'basalt' })}`, { token: srv.suToken });
  assert.equal(renamed.body.items.length, 2);
  r = await srv.api('PATCH', '/api/collections/stories', { token: srv.suToken, body: { name: 'articles' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(collectionId, r.body.id);
});

test('collection and field names the index needs are reserved', async () => {
  for (const name of ['notes_fts', 'Notes_FTS', 'notes_fts_data', 'x_fts_idx']) {
    const r = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name, type: 'base', fields: [] } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.data.name.code, 'validation_reserved_suffix', name);
  }
  const rank = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'ranked', type: 'base', fields: [{ name: 'rank', type: 'text', options: { searchable: true } }] } });
  assert.equal(rank.status, 400, rank.text);
  assert.equal(rank.body.data['fields.0.name'].code, 'validation_reserved_name');
  const num = await srv.api('POST', '/api/collections', { token: srv.suToken, body: { name: 'nums', type: 'base', fields: [{ name: 'n', type: 'number', options: { searchable: true } }] } });
  assert.equal(num.status, 400, num.text);
});

test('deleting a searchable collection drops its index; the index passes FTS5 integrity-check', async (t) => {
  await srv.createCollection({ name: 'scratch', type: 'base', fields: [{ name: 't', type: 'text', options: { searchable: true } }] });
  await t.test('the FTS5 table exists', { skip: FTS5 }, () => {
    assert.ok(master('scratch_fts'));
  });
  assert.equal((await srv.api('DELETE', '/api/collections/scratch', { token: srv.suToken })).status, 204);
  await t.test('the FTS5 table is dropped with the collection', { skip: FTS5 }, () => {
    assert.equal(master('scratch_fts'), undefined);
  });
  await srv.stop();
  await t.test('FTS5 integrity-check', { skip: FTS5 }, () => {
    const db = new Database(databasePath(dataDir));
    try {
      db.exec(`INSERT INTO "articles_fts" ("articles_fts", rank) VALUES ('integrity-check', 1)`);
    } finally {
      db.close();
    }
  });
});

test('fts5-off: the server refuses a schema with searchable fields (exit 1)', async () => {
  await assert.rejects(startSvc({ dataDir, args: ['--features=fts5-off'] }), (err: Error) => {
    assert.match(err.message, /exited with 1/);
    assert.match(err.message, /fts5-off/);
    assert.match(err.message, /articles/);
    return true;
  });
});

test('startup rebuilds a missing or stale index (e.g. a data directory from before search existed)', { skip: FTS5 }, async () => {
  const db = new Database(databasePath(dataDir));
  try {
    db.exec(`DROP TRIGGER "_fts_${collectionId}_au"; DROP TABLE "articles_fts"`);
  } finally {
    db.close();
  }
  const again = await startSvc({ dataDir });
  try {
    assert.match(again.stderr(), /built the full-text index of collection \\"articles\\"/);
    const r = await again.api('GET', `${URL}${qs({ search: 'brazil' })}`, { token: again.suToken });
    assert.equal(r.body.items.length, 1, r.text);
    const up = await again.api('PATCH', `${URL}/${r.body.items[0].id}`, { token: again.suToken, body: { body: 'now about Chile' } });
    assert.equal(up.status, 200, up.text);
    assert.equal((await again.api('GET', `${URL}${qs({ search: 'chile' })}`, { token: again.suToken })).body.items.length, 1);
  } finally {
    await again.stop();
  }
});

test('fts5-off: search is 400 and fields cannot be made searchable', async () => {
  const off = await startSvc({ args: ['--features=fts5-off'] });
  try {
    await off.createCollection({ name: 'posts', type: 'base', listRule: '@public', fields: [{ name: 'title', type: 'text' }] });
    await seed(off, 'posts', { title: 'hello' });
    assertError(await off.api('GET', `/api/collections/posts/records${qs({ search: 'hello' })}`), 400, 'bad_request');
    assertError(await off.api('GET', `/api/collections/posts/records${qs({ q: 'hello', cursor: '' })}`), 400, 'bad_request');
    const r = await off.api('POST', '/api/collections', { token: off.suToken, body: { name: 'docs', type: 'base', fields: [{ name: 't', type: 'text', options: { searchable: true } }] } });
    assertError(r, 400);
    assert.match(r.body.message, /fts5-off/);
    assert.equal((await off.api('GET', '/api/meta')).body.capabilities.fts, false);
  } finally {
    await off.stop();
  }
});
